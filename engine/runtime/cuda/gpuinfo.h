#pragma once
// Which CUDA pieces this build has and their versions, for backend selection and measured traces. The GPUs
// themselves are listed by engine/base/gpus.h. Always compiled (target dps::cuda): without the CUDA backend
// every query answers "not built".
#include "base/gpus.h"

#include <cstddef>
#include <string>
#include <vector>

namespace dps::runtime {

/// Whether this build has the CUDA backend (DPS_HAVE_CUDA) and NCCL communication (DPS_HAVE_NCCL).
bool cudaBuilt();
bool ncclBuilt();

/// Versions recorded in measured traces: "CUDA runtime 13.0, driver 13.0" (driver "none" without one),
/// "cuBLAS 13.1.0", "NCCL 2.28.9"; "not built" for pieces this build lacks.
std::string cudaVersionText();
std::string cublasVersionText();
std::string ncclVersionText();

} // namespace dps::runtime
