// The GPU listing and the CUDA module's loader (gpus.h, gpus_module.h). Links no CUDA library: the listing
// asks libdpstudio-cuda.so, loaded here with dlopen the first time anything needs it.
#include "gpus.h"

#include "base/version.h"
#include "format.h"
#include "gpus_module.h"

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <system_error>

#ifndef DPS_CUDA_MODULE_SUBDIR
#define DPS_CUDA_MODULE_SUBDIR "lib/dpstudio"
#endif

namespace dps {

namespace {

namespace fs = std::filesystem;

using EntryPoint = const CudaModule* (*)(int);

constexpr const char* kUnavailable = "CUDA backend not available: ";

CudaModuleLoad failure(const std::string& path, const std::string& why)
{
    return CudaModuleLoad { nullptr, path, kUnavailable + why };
}

/// The environment override; "" when unset.
std::string moduleOverride()
{
    const char* value = std::getenv("DPSTUDIO_CUDA_MODULE");
    return value ? std::string(value) : std::string();
}

fs::path executableDirectory()
{
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
}

CudaModuleLoad findAndLoad()
{
    if (!cudaModuleBuilt())
        return CudaModuleLoad { nullptr, "", "cuda: not built" };
    const std::string env = moduleOverride();
    if (!env.empty())
        return loadCudaModuleFrom(env);
    const std::vector<std::string> candidates = cudaModuleCandidates();
    for (const std::string& candidate : candidates) {
        std::error_code ec;
        if (fs::is_regular_file(candidate, ec))
            return loadCudaModuleFrom(candidate);
    }
    std::string places;
    for (const std::string& candidate : candidates)
        places += (places.empty() ? "" : " or ") + fs::path(candidate).parent_path().string();
    return failure("",
        std::string(kCudaModuleFileName) + " not found in " + (places.empty() ? "?" : places)
            + " (set DPSTUDIO_CUDA_MODULE to its path)");
}

} // namespace

bool cudaModuleBuilt()
{
#ifdef DPS_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

std::vector<std::string> cudaModuleCandidates()
{
    const std::string env = moduleOverride();
    if (!env.empty())
        return { env };
    const fs::path dir = executableDirectory();
    if (dir.empty())
        return {};
    return { (dir / kCudaModuleFileName).string(),
        (dir / ".." / DPS_CUDA_MODULE_SUBDIR / kCudaModuleFileName).lexically_normal().string() };
}

CudaModuleLoad loadCudaModuleFrom(const std::string& path)
{
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        // dlerror names the file it could not open: the module itself, or a library it needs (then without
        // the module's path, added here so the line says which file needs it).
        const char* error = ::dlerror();
        const std::string text = error ? error : "dlopen failed";
        return failure(path, text.rfind(path, 0) == 0 ? text : path + ": " + text);
    }
    const auto entry = reinterpret_cast<EntryPoint>(::dlsym(handle, kCudaModuleEntryPoint));
    const CudaModule* module = entry ? entry(kCudaModuleAbiVersion) : nullptr;
    std::string why;
    if (!entry)
        why = path + " has no " + kCudaModuleEntryPoint + "() (not a DualPipe Studio CUDA module)";
    else if (!module)
        why = path + ": " + kCudaModuleEntryPoint + "() returned no table";
    else if (module->abiVersion != kCudaModuleAbiVersion)
        why = path + " has module ABI version " + std::to_string(module->abiVersion) + ", this program needs "
            + std::to_string(kCudaModuleAbiVersion) + " (install the dualpipe-studio-cuda of the same version)";
    else if (std::string(module->version) != DPS_VERSION)
        why = path + " is from DualPipe Studio " + module->version + ", this program is " + DPS_VERSION
            + " (install the dualpipe-studio-cuda of the same version)";
    else if (!module->listGpus || !module->runtimeVersion || !module->runtimeApi)
        why = path + ": the module's table is incomplete";
    if (!why.empty()) {
        ::dlclose(handle);
        return failure(path, why);
    }
    // Accepted: never unloaded (the CUDA libraries do not support being unloaded while in use).
    return CudaModuleLoad { module, path, "" };
}

const CudaModuleLoad& cudaModule()
{
    static const CudaModuleLoad loaded = findAndLoad();
    return loaded;
}

std::vector<GpuInfo> listGpus(std::string* whyNone, bool freeMemory)
{
    const CudaModuleLoad& loaded = cudaModule();
    if (!loaded.module) {
        if (whyNone)
            *whyNone = loaded.whyNot;
        return {};
    }
    return loaded.module->listGpus(whyNone, freeMemory);
}

GpuStatus gpuStatus()
{
    GpuStatus status;
    const CudaModuleLoad& loaded = cudaModule();
    if (!loaded.module) {
        // "cuda: not built" already names CUDA; "CUDA backend not available: …" gets the "cuda: " prefix.
        status.message = cudaModuleBuilt() ? "cuda: " + loaded.whyNot : loaded.whyNot;
        return status;
    }
    status.cudaBuilt = true;
    status.runtimeVersion = loaded.module->runtimeVersion();
    status.gpus = loaded.module->listGpus(&status.message, false);
    return status;
}

std::string describeGpu(const GpuInfo& gpu)
{
    return std::to_string(gpu.index) + ": " + gpu.name + ", " + formatBytes(static_cast<double>(gpu.totalBytes))
        + ", sm_" + std::to_string(gpu.computeMajor) + std::to_string(gpu.computeMinor) + ", " + gpu.pciBusId;
}

} // namespace dps
