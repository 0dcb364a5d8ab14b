#pragma once
// Which of dpstudio's JSON files a parsed document is, from its top-level fields, so that a reader given the
// wrong kind of file says so ("this is a cost file …, not a project") instead of naming the first field it
// does not know. The formats themselves: docs/project-format.md, docs/cpu-profile.md, docs/worker-protocol.md
// (measured.json).
#include <nlohmann/json.hpp>

#include <array>
#include <string>
#include <string_view>

namespace dps {

/// The top-level fields of a cost file (docs/project-format.md, "Cost file"): parseCostsFile allows only these.
inline constexpr std::array<std::string_view, 7> kCostsFileFields { "format_version", "stages", "overlap_factor",
    "latency_us", "bandwidth_bytes_per_us", "slot_variation", "info" };

/// The JSON files dpstudio reads or writes.
enum class FileKind {
    Unknown, ///< none of the below (or not an object)
    Project, ///< *.dpstudio.json: `model` and `variants`
    Costs, ///< `dpstudio calibrate`'s costs.json: format_version and only cost fields
    CpuProfile, ///< `dpstudio devices --probe`: kind "dpstudio-cpu-profile"
    ValidatedConfig, ///< `dpstudio export --format validated-config`: kind "dpstudio-validated-config"
    Measured, ///< `dpstudio run`'s or `import-trace`'s measured.json: `ranks` and `steps`
    ChromeTrace, ///< a Chrome / PyTorch profiler trace: `traceEvents`
};

/// The kind of `root` by its top-level fields. Never throws.
FileKind fileKindOf(const nlohmann::json& root);

/// "a cost file (what `dpstudio calibrate` writes; give it with --costs)", for FileKind::Costs and the others;
/// "" for Unknown. Never throws.
std::string fileKindText(FileKind kind);

/// Throws FormatError "<source>: this is <fileKindText>, not <what>" when `root` is recognisably another kind than
/// `expected`; returns otherwise (an unrecognised file is left to the reader's own field errors).
void refuseOtherFileKind(
    const nlohmann::json& root, FileKind expected, const std::string& what, const std::string& source);

} // namespace dps
