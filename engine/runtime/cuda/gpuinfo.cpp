#include "gpuinfo.h"

#include <cstdio>

#ifdef DPS_HAVE_CUDA
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#endif
#ifdef DPS_HAVE_NCCL
#include <nccl.h>
#endif

namespace dps::runtime {

namespace {

#ifdef DPS_HAVE_CUDA
/// "13.0" from CUDA's integer version 13000.
std::string versionText(int version)
{
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

#endif

} // namespace

bool cudaBuilt()
{
#ifdef DPS_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

bool ncclBuilt()
{
#ifdef DPS_HAVE_NCCL
    return true;
#else
    return false;
#endif
}

std::string cudaVersionText()
{
#ifdef DPS_HAVE_CUDA
    int runtime = 0;
    int driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess)
        runtime = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess)
        driver = 0;
    cudaGetLastError();
    return "CUDA runtime " + versionText(runtime) + ", driver " + (driver > 0 ? versionText(driver) : "none");
#else
    return "CUDA not built";
#endif
}

std::string cublasVersionText()
{
#ifdef DPS_HAVE_CUDA
    int major = 0;
    int minor = 0;
    int patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
#else
    return "cuBLAS not built";
#endif
}

std::string ncclVersionText()
{
#ifdef DPS_HAVE_NCCL
    int version = 0;
    if (ncclGetVersion(&version) != ncclSuccess)
        return "NCCL (version unknown)";
    // NCCL ≥ 2.9 encodes major·10000 + minor·100 + patch.
    return "NCCL " + std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "."
        + std::to_string(version % 100);
#else
    return "NCCL not built";
#endif
}

} // namespace dps::runtime
