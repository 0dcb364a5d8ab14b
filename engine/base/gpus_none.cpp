// listGpus() for a build without the CUDA backend.
#include "gpus.h"

namespace dps {

GpuStatus listGpus()
{
    GpuStatus status;
    status.message = "cuda: not built";
    return status;
}

} // namespace dps
