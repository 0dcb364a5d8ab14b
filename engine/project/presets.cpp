#include "presets.h"

#include "base/errors.h"
#include "jsonreader.h"
#include "presetfiles.h"
#include "projectreaders.h"

#include <algorithm>

namespace dps {

using detail::JsonReader;
using json = nlohmann::json;

namespace {

/// One embedded preset file, read.
struct Preset {
    PresetInfo info;
    ModelPreset model; ///< model files
    ClusterDesc cluster; ///< device files
};

struct PresetTables {
    std::vector<Preset> models; ///< sorted by id
    std::vector<Preset> devices;
};

/// Reads one file: {"format_version", "id", "title", "sources", and "model" (+ "training") or "cluster"}.
Preset readPreset(const detail::EmbeddedPresetFile& file, bool isModel)
{
    const std::string source = file.path;
    const json j = JsonReader::parse(file.text, source);
    JsonReader::checkVersion(j, source, kProjectFormatVersion);
    const JsonReader root(j, "", source);
    if (isModel)
        root.allowOnly({ "format_version", "id", "title", "sources", "model", "training" });
    else
        root.allowOnly({ "format_version", "id", "title", "sources", "cluster" });
    Preset p;
    p.info.id = root.string("id");
    if (p.info.id.empty())
        root.fail("id", "must not be empty");
    p.info.title = root.string("title");
    const json& sources = root.array("sources");
    for (std::size_t i = 0; i < sources.size(); ++i) {
        const json& s = sources[i];
        if (!s.is_string())
            root.element(sources, i, "sources").failHere("must be a string, got " + JsonReader::shown(s));
        p.info.sources.push_back(s.get<std::string>());
    }
    if (isModel) {
        p.model.model = detail::readModel(root.object("model"), source);
        if (p.model.model.preset.empty())
            p.model.model.preset = p.info.id;
        else if (p.model.model.preset != p.info.id)
            root.object("model").fail(
                "preset", "\"" + p.model.model.preset + "\" differs from the file's id \"" + p.info.id + "\"");
        if (root.has("training"))
            p.model.training = detail::readTraining(root.object("training"));
    } else {
        p.cluster = detail::readCluster(root.object("cluster"));
        if (p.cluster.device.empty())
            p.cluster.device = p.info.id;
        else if (p.cluster.device != p.info.id)
            root.object("cluster").fail(
                "device", "\"" + p.cluster.device + "\" differs from the file's id \"" + p.info.id + "\"");
    }
    return p;
}

/// Every embedded preset, read once (a broken file throws on every call, naming it).
const PresetTables& tables()
{
    static const PresetTables all = [] {
        PresetTables t;
        for (const detail::EmbeddedPresetFile* f = detail::kPresetFiles; f->group; ++f) {
            const bool isModel = std::string_view(f->group) == "models";
            (isModel ? t.models : t.devices).push_back(readPreset(*f, isModel));
        }
        for (auto* list : { &t.models, &t.devices }) {
            std::sort(
                list->begin(), list->end(), [](const Preset& a, const Preset& b) { return a.info.id < b.info.id; });
            for (std::size_t i = 1; i < list->size(); ++i)
                if ((*list)[i].info.id == (*list)[i - 1].info.id)
                    throw FormatError("preset id \"" + (*list)[i].info.id + "\" is given by two files");
        }
        return t;
    }();
    return all;
}

std::vector<PresetInfo> infos(const std::vector<Preset>& list)
{
    std::vector<PresetInfo> out;
    for (const Preset& p : list)
        out.push_back(p.info);
    return out;
}

/// The preset `id` of `list`; throws FormatError "unknown <what> preset "x" (presets: a, b, ...)".
const Preset& find(const std::vector<Preset>& list, const std::string& id, const char* what)
{
    for (const Preset& p : list)
        if (p.info.id == id)
            return p;
    std::string ids;
    for (const Preset& p : list)
        ids += (ids.empty() ? "" : ", ") + p.info.id;
    throw FormatError("unknown " + std::string(what) + " preset \"" + id + "\" (presets: " + ids + ")");
}

} // namespace

std::vector<PresetInfo> modelPresets()
{
    return infos(tables().models);
}

std::vector<PresetInfo> devicePresets()
{
    return infos(tables().devices);
}

ModelPreset modelPreset(const std::string& id)
{
    return find(tables().models, id, "model").model;
}

ClusterDesc devicePreset(const std::string& id)
{
    return find(tables().devices, id, "device").cluster;
}

} // namespace dps
