#pragma once
// Inside the CUDA module only (libdpstudio-cuda.so): what the CUDA runtime, cuBLAS and NCCL say about
// themselves and the GPUs. Programs reach these through the module's tables (base/gpus_module.h,
// cudamodule.h) and the host functions that wrap them (base/gpus.h, gpuinfo.h). A namespace of their own, so
// no name here equals a host function's: a program that links the module directly (dpstudio-gpucheck, the
// GPU tests) must not have its host functions interpose these.
#include "base/gpus.h"

#include <string>
#include <vector>

namespace dps::cudamodule {

/// The GPUs the CUDA runtime lists, as dps::listGpus() describes them: empty with a reason ("no GPU
/// (cudaGetDeviceCount: …)", "no GPU (0 devices)") when there are none. Never throws.
std::vector<GpuInfo> listGpus(std::string* whyNone, bool freeMemory);

/// The CUDA runtime's version, "13.0"; "" when it cannot say. Never throws.
std::string runtimeVersion();

/// "CUDA runtime 13.0, driver 13.0" (driver "none" without one), "cuBLAS 13.1.0", "NCCL 2.28.9" ("NCCL not
/// built" when the module has no NCCL): recorded in measured traces through the backend's description.
std::string cudaVersionText();
std::string cublasVersionText();
std::string ncclVersionText();

/// Whether the module has NCCL communication (DPS_HAVE_NCCL).
bool ncclBuilt();

/// The toolkit the module was built with: "CUDA 13.0, NCCL 2.28.9" (the headers' versions).
const char* builtWith();

} // namespace dps::cudamodule
