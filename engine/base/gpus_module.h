#pragma once
// The CUDA module: everything that needs the CUDA runtime, cuBLAS or NCCL (the cuda backend, NCCL
// communication, the GPU listing and the version texts) is built into one shared library,
// libdpstudio-cuda.so, that programs load at run time with dlopen. Nothing else links a CUDA library, so
// dpstudio, dpstudio-worker and dualpipe-studio start on machines without CUDA; there `--backend cuda`
// fails with "CUDA backend not available: <why>" and `--backend auto` runs on the CPU.
//
// Where the module is looked for, first match wins:
//   1. $DPSTUDIO_CUDA_MODULE, the module's path (when set, nothing else is tried);
//   2. beside the running executable: <exe dir>/libdpstudio-cuda.so;
//   3. <exe dir>/../<libdir>/dpstudio/libdpstudio-cuda.so: the install layout (bin/ and libexec/ are
//      siblings of lib/) and the build tree's (<build>/bin and <build>/<libdir>/dpstudio).
//
// The module's one exported entry point, `extern "C" const dps::CudaModule* dps_cuda_module(int)`, returns
// its table. The loader accepts it only when the table's ABI version and DualPipe Studio version equal
// this program's: the tables pass C++ types (std::string, std::vector, std::unique_ptr), so the module
// must come from the same build. The runtime's half of the table is runtime/cuda/cudamodule.h.
#include "gpus.h"

#include <string>
#include <vector>

namespace dps {

/// Version of the module tables (CudaModule here, CudaRuntimeApi in runtime/cuda/cudamodule.h). Bump it
/// whenever either table, or an interface the module's objects implement (runtime's Backend, Comm),
/// changes. CudaModule::abiVersion stays the first member in every version. 2: Backend::lastActionDeviceUs.
/// 3: the transformer layers' kernels in Backend (backend.h).
inline constexpr int kCudaModuleAbiVersion = 3;

/// File name of the module.
inline constexpr const char* kCudaModuleFileName = "libdpstudio-cuda.so";

/// Name of the module's entry point: `const CudaModule* dps_cuda_module(int hostAbiVersion)`. It never
/// returns null and never throws; the host compares the table's abiVersion and version with its own.
inline constexpr const char* kCudaModuleEntryPoint = "dps_cuda_module";

/// The module's table, base half: what `dpstudio devices` and the GPU listing need.
struct CudaModule {
    int abiVersion = 0; ///< kCudaModuleAbiVersion of the module's build; the first member, always
    const char* version = ""; ///< DualPipe Studio version of the module's build, e.g. "0.1.0"
    const char* builtWith = ""; ///< toolkit it was built with, e.g. "CUDA 13.0, NCCL 2.28.9"
    /// The GPUs the CUDA runtime lists (listGpus() below describes the arguments). Never throws.
    std::vector<GpuInfo> (*listGpus)(std::string* whyNone, bool freeMemory) = nullptr;
    /// The CUDA runtime's version, "13.0"; "" when it cannot say. Never throws.
    std::string (*runtimeVersion)() = nullptr;
    /// The runtime half: a `const dps::runtime::CudaRuntimeApi*` (runtime/cuda/cudamodule.h).
    const void* runtimeApi = nullptr;
};

/// The outcome of loading the module.
struct CudaModuleLoad {
    const CudaModule* module = nullptr; ///< null when the module is not available
    std::string path; ///< the file loaded, or tried last
    /// Empty when loaded; otherwise one line: "cuda: not built" in a build without the module, else
    /// "CUDA backend not available: <dlerror text or the reason>".
    std::string whyNot;
};

/// Whether this build has the CUDA module at all (the CUDA toolkit was found at configure time).
bool cudaModuleBuilt();

/// The places looked for, in order (the list at the top of this file). With $DPSTUDIO_CUDA_MODULE set, only
/// that path.
std::vector<std::string> cudaModuleCandidates();

/// Loads the module at `path` (dlopen with RTLD_NOW | RTLD_LOCAL; never unloaded once accepted) and checks
/// its entry point, ABI version and DualPipe Studio version. Never throws: failures come back in whyNot,
/// e.g. "CUDA backend not available: /x/libdpstudio-cuda.so: libcudart.so.13: cannot open shared object
/// file: No such file or directory".
CudaModuleLoad loadCudaModuleFrom(const std::string& path);

/// The module of this process: the first of cudaModuleCandidates() that exists, loaded once (thread-safe)
/// and remembered. In a build without the module, whyNot is "cuda: not built". Never throws.
const CudaModuleLoad& cudaModule();

} // namespace dps
