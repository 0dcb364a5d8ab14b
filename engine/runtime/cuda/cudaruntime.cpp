// Inside the CUDA module: the GPU listing and the version texts, from the CUDA runtime, cuBLAS and NCCL.
#include "cudaruntime.h"

#include <cstdio>
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#ifdef DPS_HAVE_NCCL
#include <nccl.h>
#endif

#define DPS_STRINGIFY2(x) #x
#define DPS_STRINGIFY(x) DPS_STRINGIFY2(x)

namespace dps::cudamodule {

namespace {

/// "13.0" from CUDA's integer version 13000.
std::string versionText(int version)
{
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string uuidText(const cudaUUID_t& uuid)
{
    // The form nvidia-smi prints: GPU-8-4-4-4-12 hex digits.
    std::string text = "GPU-";
    char hex[3];
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            text += '-';
        std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
        text += hex;
    }
    return text;
}

GpuInfo describeDevice(int index, const cudaDeviceProp& prop)
{
    GpuInfo gpu;
    gpu.index = index;
    gpu.name = prop.name;
    gpu.uuid = uuidText(prop.uuid);
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    gpu.pciBusId = bus;
    gpu.computeMajor = prop.major;
    gpu.computeMinor = prop.minor;
    gpu.multiprocessors = prop.multiProcessorCount;
    gpu.totalBytes = prop.totalGlobalMem;
    return gpu;
}

/// Free memory of a device; 0 when it cannot be read. Leaves the current device as it was.
std::size_t freeBytesOf(int index)
{
    int previous = 0;
    std::size_t freeBytes = 0;
    std::size_t totalBytes = 0;
    if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(index) != cudaSuccess)
        return 0;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
        freeBytes = 0;
    cudaSetDevice(previous);
    cudaGetLastError();
    return freeBytes;
}

} // namespace

std::vector<GpuInfo> listGpus(std::string* whyNone, bool freeMemory)
{
    std::vector<GpuInfo> gpus;
    std::string why;
    int count = 0; // a stub driver fails without touching it
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
        why = std::string("no GPU (cudaGetDeviceCount: ") + cudaGetErrorString(rc) + ")";
        cudaGetLastError();
        count = 0;
    } else if (count == 0) {
        why = "no GPU (0 devices)";
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop {};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
            cudaGetLastError();
            continue;
        }
        gpus.push_back(describeDevice(i, prop));
        if (freeMemory)
            gpus.back().freeBytes = freeBytesOf(i);
    }
    if (count > 0 && gpus.empty())
        why = "no GPU (cudaGetDeviceProperties failed for every device)";
    if (whyNone)
        *whyNone = gpus.empty() ? why : std::string();
    return gpus;
}

std::string runtimeVersion()
{
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) {
        cudaGetLastError();
        return {};
    }
    return versionText(runtime);
}

std::string cudaVersionText()
{
    int runtime = 0;
    int driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess)
        runtime = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess)
        driver = 0;
    cudaGetLastError();
    return "CUDA runtime " + versionText(runtime) + ", driver " + (driver > 0 ? versionText(driver) : "none");
}

std::string cublasVersionText()
{
    int major = 0;
    int minor = 0;
    int patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    return "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
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

bool ncclBuilt()
{
#ifdef DPS_HAVE_NCCL
    return true;
#else
    return false;
#endif
}

const char* builtWith()
{
    // CUDART_VERSION is major·1000 + minor·10.
    static const std::string text = "CUDA " + versionText(CUDART_VERSION)
#ifdef DPS_HAVE_NCCL
        + ", NCCL " DPS_STRINGIFY(NCCL_MAJOR) "." DPS_STRINGIFY(NCCL_MINOR) "." DPS_STRINGIFY(NCCL_PATCH)
#else
        + ", no NCCL"
#endif
        ;
    return text.c_str();
}

} // namespace dps::cudamodule
