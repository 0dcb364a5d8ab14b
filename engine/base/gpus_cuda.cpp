// The GPU listing of a build with the CUDA backend (DPS_HAVE_CUDA): asks the CUDA runtime.
#include "gpus.h"

#include <cstdio>
#include <cuda_runtime_api.h>

namespace dps {

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

GpuStatus gpuStatus()
{
    GpuStatus status;
    status.cudaBuilt = true;
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
        status.runtimeVersion = versionText(runtime);
    status.gpus = listGpus(&status.message);
    return status;
}

} // namespace dps
