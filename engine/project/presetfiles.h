#pragma once
// Internal to engine/project: the preset files embedded at configure time (engine/project/CMakeLists.txt
// generates presetfiles.cpp from resources/presets/models/*.json and resources/presets/devices/*.json).

namespace dps::detail {

struct EmbeddedPresetFile {
    const char* group; ///< "models" or "devices" (the folder)
    const char* path; ///< relative to the source tree, e.g. "resources/presets/devices/h800.json"
    const char* text; ///< the file's content
};

/// Every embedded file, sorted by path, ended by an entry whose group is nullptr.
extern const EmbeddedPresetFile kPresetFiles[];

} // namespace dps::detail
