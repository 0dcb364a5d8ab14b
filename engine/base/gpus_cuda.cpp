// listGpus() for a build with the CUDA backend (DPS_HAVE_CUDA): asks the CUDA runtime.
#include "gpus.h"

#include <cuda_runtime_api.h>

namespace dps {

namespace {

std::string versionText(int version)
{
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

} // namespace

GpuStatus listGpus()
{
    GpuStatus status;
    status.cudaBuilt = true;
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
        status.runtimeVersion = versionText(runtime);
    int count = 0; // a stub driver fails here without touching count
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count <= 0) {
        status.message = rc == cudaSuccess ? "no GPU" : std::string("no GPU (") + cudaGetErrorString(rc) + ")";
        return status;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop {};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess)
            continue;
        status.gpus.push_back({ i, prop.name, static_cast<std::int64_t>(prop.totalGlobalMem), prop.major, prop.minor });
    }
    if (status.gpus.empty())
        status.message = "no GPU";
    return status;
}

} // namespace dps
