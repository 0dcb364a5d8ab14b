#pragma once
// The GPUs this build can use. listGpus() has two implementations, chosen at configure time:
// gpus_none.cpp when the CUDA backend is not built ("cuda: not built"), gpus_cuda.cpp (compile
// definition DPS_HAVE_CUDA, linked with CUDA::cudart) when it is.
#include <cstdint>
#include <string>
#include <vector>

namespace dps {

struct GpuInfo {
    int index = 0;
    std::string name; ///< e.g. "NVIDIA H200"
    std::int64_t memoryBytes = 0; ///< total device memory
    int computeMajor = 0;
    int computeMinor = 0;
};

struct GpuStatus {
    bool cudaBuilt = false; ///< the CUDA backend is compiled in
    std::string runtimeVersion; ///< CUDA runtime version, e.g. "13.0"; empty without CUDA
    std::vector<GpuInfo> gpus;
    /// "cuda: not built", "no GPU" (with the driver's reason when it gave one), or "" when GPUs were found.
    std::string message;
};

/// Lists the GPUs. Never throws; a failing driver gives an empty list and a message.
GpuStatus listGpus();

} // namespace dps
