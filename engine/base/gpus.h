#pragma once
// The GPUs this process can see: the one listing, used by `dpstudio devices`, the worker's backend
// selection, measured traces and the GPU check. It asks the CUDA module (gpus_module.h), loaded at run time,
// so nothing here links the CUDA runtime: without the module the list is empty and says why.
#include <cstddef>
#include <string>
#include <vector>

namespace dps {

/// One visible CUDA device.
struct GpuInfo {
    int index = 0; ///< CUDA device ordinal in this process (after CUDA_VISIBLE_DEVICES)
    std::string name; ///< e.g. "NVIDIA H200"
    std::string uuid; ///< "GPU-xxxxxxxx-…", the same in every process that sees this device
    std::string pciBusId; ///< "0000:1b:00.0"
    int computeMajor = 0; ///< compute capability, e.g. 9
    int computeMinor = 0; ///< e.g. 0
    int multiprocessors = 0;
    std::size_t totalBytes = 0; ///< device memory (bytes)
    std::size_t freeBytes = 0; ///< free device memory (bytes; listGpus with freeMemory, else 0)
};

/// What `dpstudio devices` reports about CUDA.
struct GpuStatus {
    bool cudaBuilt = false; ///< the CUDA backend can be used: this build has its module and it loaded
    std::string runtimeVersion; ///< CUDA runtime version, e.g. "13.0"; empty without CUDA
    std::vector<GpuInfo> gpus;
    /// "cuda: not built", "cuda: CUDA backend not available: <why>" (the module or the CUDA libraries are
    /// missing), "no GPU (…the driver's reason…)", or "" when GPUs were found.
    std::string message;
};

/// The visible GPUs, in device order. Empty when there are none; then `whyNone` (when not null) gets one
/// line a user can act on: "cuda: not built", "CUDA backend not available: <why>", "no GPU
/// (cudaGetDeviceCount: CUDA driver version is insufficient…)", "no GPU (0 devices)". `freeMemory` also
/// reads each device's free memory, which creates a CUDA context on every device (hundreds of MiB each): for
/// tools, not for ranks. Never throws.
std::vector<GpuInfo> listGpus(std::string* whyNone = nullptr, bool freeMemory = false);

/// listGpus() with the runtime version and whether the CUDA backend can be used, for `dpstudio devices`.
/// Never throws.
GpuStatus gpuStatus();

/// One line for humans: "0: NVIDIA H200, 139.8 GiB, sm_90, 0000:1b:00.0".
std::string describeGpu(const GpuInfo& gpu);

} // namespace dps
