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

std::vector<GpuInfo> listGpus(std::string* whyNone, bool freeMemory)
{
    std::vector<GpuInfo> gpus;
    std::string why;
#ifdef DPS_HAVE_CUDA
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
#else
    (void)freeMemory;
    why = "cuda: not built";
#endif
    if (whyNone)
        *whyNone = gpus.empty() ? why : std::string();
    return gpus;
}

std::string describeGpu(const GpuInfo& gpu)
{
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(gpu.totalBytes) / (1024.0 * 1024.0 * 1024.0));
    return std::to_string(gpu.index) + ": " + gpu.name + ", " + memory + ", sm_" + std::to_string(gpu.computeMajor)
        + std::to_string(gpu.computeMinor) + ", " + gpu.pciBusId;
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
