#pragma once
// The backends a run may ask for (`dpstudio run --backend`, dpstudio-worker's --backend, the designer's run
// panel) and the one rule "auto" follows, so the worker, the run report's prediction and the designer's
// preflight agree on what a run will use (docs/worker-protocol.md).
#include <array>
#include <string>
#include <string_view>

namespace dps {

/// The --backend values, "auto" first.
inline constexpr std::array<std::string_view, 3> kBackendNames { "auto", "cpu", "cuda" };

/// Whether `name` is one of kBackendNames (case-sensitive).
inline bool isBackendName(std::string_view name)
{
    for (std::string_view b : kBackendNames)
        if (b == name)
            return true;
    return false;
}

/// The backends' names, `last` before the last one: "auto, cpu or cuda" (messages) or "auto, cpu, cuda".
inline std::string backendNameList(std::string_view last = " or ")
{
    std::string out;
    for (std::size_t i = 0; i < kBackendNames.size(); ++i) {
        if (i > 0)
            out += i + 1 == kBackendNames.size() ? last : std::string_view(", ");
        out += kBackendNames[i];
    }
    return out;
}

/// What "auto" runs on: "cuda" when this build has the CUDA backend and every rank sees a GPU, else "cpu".
inline std::string_view autoBackend(bool cudaBuilt, bool everyRankHasGpu)
{
    return cudaBuilt && everyRankHasGpu ? "cuda" : "cpu";
}

} // namespace dps
