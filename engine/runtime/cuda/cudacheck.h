#pragma once
// DPS_CUDA_CHECK, DPS_CUBLAS_CHECK, DPS_NCCL_CHECK: evaluate a CUDA runtime / cuBLAS / NCCL call and throw
// RuntimeError naming the rank, host, call, file and line when it fails (check.h). Internal to dps::cuda.
#include "check.h"
#include "runtime/backend.h"

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#ifdef DPS_HAVE_NCCL
#include <nccl.h>
#endif

namespace dps::runtime::detail {

inline void checkCuda(cudaError_t code, const char* call, const char* file, int line)
{
    if (code != cudaSuccess)
        throw RuntimeError(
            checkFailureText(call, file, line, std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code)));
}

inline void checkCublas(cublasStatus_t code, const char* call, const char* file, int line)
{
    if (code != CUBLAS_STATUS_SUCCESS)
        throw RuntimeError(checkFailureText(
            call, file, line, std::string(cublasGetStatusName(code)) + ": " + cublasGetStatusString(code)));
}

#ifdef DPS_HAVE_NCCL
inline void checkNccl(ncclResult_t code, const char* call, const char* file, int line)
{
    if (code != ncclSuccess && code != ncclInProgress)
        throw RuntimeError(checkFailureText(call, file, line,
            std::string(ncclGetErrorString(code))
                + (ncclGetLastError(nullptr) ? std::string(" (") + ncclGetLastError(nullptr) + ")" : std::string())));
}
#endif

} // namespace dps::runtime::detail

#define DPS_CUDA_CHECK(call) ::dps::runtime::detail::checkCuda((call), #call, __FILE__, __LINE__)
#define DPS_CUBLAS_CHECK(call) ::dps::runtime::detail::checkCublas((call), #call, __FILE__, __LINE__)
#define DPS_NCCL_CHECK(call) ::dps::runtime::detail::checkNccl((call), #call, __FILE__, __LINE__)
