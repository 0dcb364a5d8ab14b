#include "gpus.h"

#include "format.h"

namespace dps {

std::string describeGpu(const GpuInfo& gpu)
{
    return std::to_string(gpu.index) + ": " + gpu.name + ", " + formatBytes(static_cast<double>(gpu.totalBytes))
        + ", sm_" + std::to_string(gpu.computeMajor) + std::to_string(gpu.computeMinor) + ", " + gpu.pciBusId;
}

} // namespace dps
