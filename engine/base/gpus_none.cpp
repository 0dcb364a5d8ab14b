// The GPU listing of a build without the CUDA backend: there is nothing to list.
#include "gpus.h"

namespace dps {

std::vector<GpuInfo> listGpus(std::string* whyNone, bool)
{
    if (whyNone)
        *whyNone = "cuda: not built";
    return {};
}

GpuStatus gpuStatus()
{
    GpuStatus status;
    status.message = "cuda: not built";
    return status;
}

} // namespace dps
