#pragma once
// Whether this process can use the CUDA backend and NCCL, and their versions, for backend selection and
// measured traces. The GPUs themselves are listed by engine/base/gpus.h. Host code (target dps::cuda, no CUDA
// library): everything is asked of the CUDA module, loaded at run time (base/gpus_module.h); without it every
// query says why.
#include "base/gpus.h"

#include <cstddef>
#include <string>
#include <vector>

namespace dps::runtime {

struct CudaRuntimeApi;

/// Whether the CUDA backend can be used in this process: this build has the CUDA module and it loaded.
bool cudaBuilt();
/// Whether it can use NCCL as well: cudaBuilt() and the module has NCCL.
bool ncclBuilt();
/// Why cudaBuilt() is false: "cuda: not built" (a build without the CUDA toolkit) or
/// "CUDA backend not available: <dlerror text or the reason>" (base/gpus_module.h); "" when it is true.
std::string cudaWhyNot();

/// The module's runtime table (cudamodule.h); nullptr when cudaBuilt() is false.
const CudaRuntimeApi* cudaRuntime();

/// Versions recorded in measured traces: "CUDA runtime 13.0, driver 13.0" (driver "none" without one),
/// "cuBLAS 13.1.0", "NCCL 2.28.9"; without the module "CUDA not available", "cuBLAS not available", "NCCL
/// not available", and "NCCL not built" from a module without NCCL.
std::string cudaVersionText();
std::string cublasVersionText();
std::string ncclVersionText();

} // namespace dps::runtime
