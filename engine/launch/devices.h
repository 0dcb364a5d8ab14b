#pragma once
// `dpstudio devices`: what can run here (CPU cores, GPUs, mpirun), as the GUI's run panel shows it.
#include "base/gpus.h"

#include <string>

namespace dps::launch {

struct DeviceReport {
    int cpuCores = 0; ///< std::thread::hardware_concurrency (≥ 1)
    std::string cpuModel; ///< /proc/cpuinfo "model name"; "unknown" when absent
    GpuStatus gpus;
    std::string mpirunPath; ///< empty when not found (or not executable)
    std::string mpirunProblem; ///< why DPSTUDIO_MPIRUN is unusable; empty otherwise
    std::string mpirunVersion; ///< first line of `mpirun --version`; empty when it cannot run
    std::string workerPath; ///< dpstudio-worker as `dpstudio run` would find it; empty when not found
};

/// Probes everything (runs `mpirun --version`, at most 10 s). Never throws.
DeviceReport probeDevices();
/// Human text, one fact per line.
std::string formatDevices(const DeviceReport& report);
/// JSON object: {"format_version":1,"cpu":{"cores","model"},"cuda":{"built","runtime_version","message"},
/// "gpus":[{"index","name","memory_bytes","compute_capability"}],"mpirun":{"path","version","problem"},"worker":{"path"}};
/// absent things are null.
std::string devicesJson(const DeviceReport& report);

} // namespace dps::launch
