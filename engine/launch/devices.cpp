#include "devices.h"

#include "launcher.h"

#include "base/hostinfo.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>

namespace dps::launch {

namespace {

using ordered = nlohmann::ordered_json;

ordered textOrNull(const std::string& text)
{
    return text.empty() ? ordered() : ordered(text);
}

} // namespace

DeviceReport probeDevices()
{
    DeviceReport report;
    report.cpuCores = cpuCoreCount();
    report.cpuModel = cpuModelName();
    report.gpus = gpuStatus();
    if (const auto mpirun = findMpirun()) {
        if (::access(mpirun->c_str(), X_OK) == 0) {
            report.mpirunPath = mpirun->string();
            report.mpirunVersion = mpirunVersion(*mpirun);
        } else {
            report.mpirunProblem = "DPSTUDIO_MPIRUN=" + mpirun->string() + " is not an executable file";
        }
    }
    if (const auto worker = findWorker())
        report.workerPath = worker->string();
    return report;
}

std::string formatDevices(const DeviceReport& r)
{
    std::string text = "cpu: " + std::to_string(r.cpuCores) + " cores, " + r.cpuModel + "\n";
    if (!r.gpus.message.empty())
        text += r.gpus.message + "\n";
    else if (!r.gpus.runtimeVersion.empty())
        text += "cuda: runtime " + r.gpus.runtimeVersion + "\n";
    for (const GpuInfo& gpu : r.gpus.gpus)
        text += "gpu " + describeGpu(gpu) + "\n";
    if (r.mpirunPath.empty())
        text += "mpirun: not found (" + (r.mpirunProblem.empty() ? "" : r.mpirunProblem + "; ")
            + "install openmpi-bin or set DPSTUDIO_MPIRUN)\n";
    else
        text += "mpirun: " + r.mpirunPath + " (" + (r.mpirunVersion.empty() ? "version unknown" : r.mpirunVersion)
            + ")\n";
    text += "worker: " + (r.workerPath.empty() ? std::string("not found (set DPSTUDIO_WORKER)") : r.workerPath) + "\n";
    return text;
}

std::string devicesJson(const DeviceReport& r)
{
    ordered j;
    j["format_version"] = 1;
    j["cpu"] = ordered { { "cores", r.cpuCores }, { "model", r.cpuModel } };
    j["cuda"] = ordered { { "built", r.gpus.cudaBuilt }, { "runtime_version", textOrNull(r.gpus.runtimeVersion) },
        { "message", textOrNull(r.gpus.message) } };
    j["gpus"] = ordered::array();
    for (const GpuInfo& g : r.gpus.gpus)
        j["gpus"].push_back(ordered { { "index", g.index }, { "name", g.name }, { "memory_bytes", g.totalBytes },
            { "compute_capability", std::to_string(g.computeMajor) + "." + std::to_string(g.computeMinor) } });
    j["mpirun"] = ordered { { "path", textOrNull(r.mpirunPath) }, { "version", textOrNull(r.mpirunVersion) },
        { "problem", textOrNull(r.mpirunProblem) } };
    j["worker"] = ordered { { "path", textOrNull(r.workerPath) } };
    return j.dump(2) + "\n";
}

} // namespace dps::launch
