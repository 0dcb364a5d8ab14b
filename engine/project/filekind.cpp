#include "project/filekind.h"

#include "base/errors.h"

#include <algorithm>
#include <span>
#include <string_view>

namespace dps {

namespace {

bool kindIs(const nlohmann::json& root, const char* kind)
{
    const auto it = root.find("kind");
    return it != root.end() && it->is_string() && it->get<std::string>() == kind;
}

/// Every top-level field is one of `known`, and at least one besides format_version and info.
bool onlyFields(const nlohmann::json& root, std::span<const std::string_view> known)
{
    bool content = false;
    for (const auto& item : root.items()) {
        if (std::find(known.begin(), known.end(), item.key()) == known.end())
            return false;
        content = content || (item.key() != "format_version" && item.key() != "info");
    }
    return content;
}

} // namespace

FileKind fileKindOf(const nlohmann::json& root)
{
    if (!root.is_object())
        return FileKind::Unknown;
    if (kindIs(root, "dpstudio-cpu-profile"))
        return FileKind::CpuProfile;
    if (kindIs(root, "dpstudio-validated-config"))
        return FileKind::ValidatedConfig;
    if (root.contains("model") && root.contains("variants"))
        return FileKind::Project;
    if (root.contains("ranks") && root.contains("steps"))
        return FileKind::Measured;
    if (root.contains("traceEvents"))
        return FileKind::ChromeTrace;
    if (root.contains("format_version") && onlyFields(root, kCostsFileFields))
        return FileKind::Costs;
    return FileKind::Unknown;
}

std::string fileKindText(FileKind kind)
{
    switch (kind) {
    case FileKind::Project:
        return "a project (*.dpstudio.json)";
    case FileKind::Costs:
        return "a cost file (what `dpstudio calibrate` writes; give it with --costs)";
    case FileKind::CpuProfile:
        return "a CPU profile (what `dpstudio devices --probe` writes; give it with --profile)";
    case FileKind::ValidatedConfig:
        return "a validated config (what `dpstudio export --format validated-config` writes)";
    case FileKind::Measured:
        return "a measured run (what `dpstudio run` and `import-trace` write; `calibrate` and `analyze` read it)";
    case FileKind::ChromeTrace:
        return "a Chrome trace (a profiler's trace: `dpstudio import-trace` reads PyTorch's)";
    case FileKind::Unknown:
        break;
    }
    return "";
}

void refuseOtherFileKind(
    const nlohmann::json& root, FileKind expected, const std::string& what, const std::string& source)
{
    const FileKind kind = fileKindOf(root);
    if (kind != FileKind::Unknown && kind != expected)
        throw FormatError(source + ": this is " + fileKindText(kind) + ", not " + what);
}

} // namespace dps
