#pragma once
// What this process can see of the GPUs: for `dpstudio devices`, backend selection and measured traces.
// Always compiled (target dps::cuda): without the CUDA backend every query answers "cuda: not built".
#include <cstddef>
#include <string>
#include <vector>

namespace dps::runtime {

/// One visible CUDA device.
struct GpuInfo {
    int index = 0; ///< CUDA device ordinal in this process (after CUDA_VISIBLE_DEVICES)
    std::string name; ///< e.g. "NVIDIA H200"
    std::string uuid; ///< "GPU-xxxxxxxx-…", the same in every process that sees this device
    std::string pciBusId; ///< "0000:1b:00.0"
    int computeMajor = 0; ///< compute capability, e.g. 9
    int computeMinor = 0; ///< e.g. 0
    int multiprocessors = 0;
    std::size_t totalBytes = 0; ///< device memory
    std::size_t freeBytes = 0; ///< free device memory (listGpus with freeMemory; else 0)
};

/// Whether this build has the CUDA backend (DPS_HAVE_CUDA) and NCCL communication (DPS_HAVE_NCCL).
bool cudaBuilt();
bool ncclBuilt();

/// The visible GPUs, in device order. Empty when there are none; then `whyNone` (when not null) gets one
/// line a user can act on: "cuda: not built", "no GPU (cudaGetDeviceCount: CUDA driver version is
/// insufficient…)", "no GPU (0 devices)". `freeMemory` also reads each device's free memory, which creates
/// a CUDA context on every device (hundreds of MiB each): for tools, not for ranks. Never throws.
std::vector<GpuInfo> listGpus(std::string* whyNone = nullptr, bool freeMemory = false);

/// One line per GPU for humans: "0: NVIDIA H200, 139.8 GiB, sm_90, 0000:1b:00.0".
std::string describeGpu(const GpuInfo& gpu);

/// Versions recorded in measured traces: "CUDA runtime 13.0, driver 13.0" (driver "none" without one),
/// "cuBLAS 13.1.0", "NCCL 2.28.9"; "not built" for pieces this build lacks.
std::string cudaVersionText();
std::string cublasVersionText();
std::string ncclVersionText();

} // namespace dps::runtime
