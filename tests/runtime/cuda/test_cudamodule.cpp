// The CUDA module's loader (base/gpus_module.h): where it looks, what it says for a missing file, a library
// without the entry point, another ABI version and another DualPipe Studio version, and, in a build with the
// module, that the real module loads from the build tree, lists GPUs and creates a backend whose errors reach
// this program (which does not link the module) as RuntimeError.
#include "base/gpus_module.h"
#include "base/version.h"
#include "runtime/backend.h"
#include "runtime/cuda/cudamodule.h"
#include "runtime/cuda/gpuinfo.h"
#include "runtime/cuda/jobsetup.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

using namespace dps;
namespace fs = std::filesystem;

namespace {

const std::string kNeeds = std::string(" (install the dualpipe-studio-cuda of the same version)");

} // namespace

TEST(CudaModuleLoader, AMissingFileGivesDlopensReason)
{
    const CudaModuleLoad load = loadCudaModuleFrom("/nonexistent/dps/libdpstudio-cuda.so");
    EXPECT_EQ(load.module, nullptr);
    EXPECT_EQ(load.path, "/nonexistent/dps/libdpstudio-cuda.so");
    EXPECT_EQ(load.whyNot,
        "CUDA backend not available: /nonexistent/dps/libdpstudio-cuda.so: cannot open shared object file: No such "
        "file or directory");
}

TEST(CudaModuleLoader, ALibraryWithoutTheEntryPointIsRefused)
{
    const std::string path = DPS_FAKE_MODULE_none;
    const CudaModuleLoad load = loadCudaModuleFrom(path);
    EXPECT_EQ(load.module, nullptr);
    EXPECT_EQ(load.whyNot,
        "CUDA backend not available: " + path + " has no dps_cuda_module() (not a DualPipe Studio CUDA module)");
}

TEST(CudaModuleLoader, AnotherAbiVersionIsRefused)
{
    const std::string path = DPS_FAKE_MODULE_abi;
    const CudaModuleLoad load = loadCudaModuleFrom(path);
    EXPECT_EQ(load.module, nullptr);
    EXPECT_EQ(load.whyNot,
        "CUDA backend not available: " + path + " has module ABI version 999, this program needs "
            + std::to_string(kCudaModuleAbiVersion) + kNeeds);
}

TEST(CudaModuleLoader, AnotherVersionIsRefused)
{
    const std::string path = DPS_FAKE_MODULE_version;
    const CudaModuleLoad load = loadCudaModuleFrom(path);
    EXPECT_EQ(load.module, nullptr);
    EXPECT_EQ(load.whyNot,
        "CUDA backend not available: " + path + " is from DualPipe Studio 0.0.0-fake, this program is " DPS_VERSION
            + kNeeds);
}

TEST(CudaModuleLoader, LooksBesideTheExecutableThenInTheLibraryFolder)
{
    const fs::path dir = fs::read_symlink("/proc/self/exe").parent_path();
    ::unsetenv("DPSTUDIO_CUDA_MODULE");
    EXPECT_EQ(cudaModuleCandidates(),
        (std::vector<std::string> { (dir / "libdpstudio-cuda.so").string(),
            (dir.parent_path() / DPS_CUDA_MODULE_SUBDIR / "libdpstudio-cuda.so").string() }));
    ::setenv("DPSTUDIO_CUDA_MODULE", "/opt/x/libdpstudio-cuda.so", 1);
    EXPECT_EQ(cudaModuleCandidates(), (std::vector<std::string> { "/opt/x/libdpstudio-cuda.so" }));
    ::unsetenv("DPSTUDIO_CUDA_MODULE");
}

#ifdef DPS_CUDA_MODULE_FILE

TEST(CudaModuleLoader, TheBuildTreesModuleIsFoundAndLoads)
{
    const CudaModuleLoad& load = cudaModule();
    ASSERT_NE(load.module, nullptr) << load.whyNot;
    EXPECT_EQ(fs::canonical(load.path), fs::canonical(DPS_CUDA_MODULE_FILE));
    EXPECT_EQ(load.whyNot, "");
    EXPECT_EQ(load.module->abiVersion, kCudaModuleAbiVersion);
    EXPECT_EQ(std::string(load.module->version), DPS_VERSION);
    EXPECT_EQ(std::string(load.module->builtWith).rfind("CUDA ", 0), 0u) << load.module->builtWith;
    EXPECT_TRUE(runtime::cudaBuilt());
    EXPECT_EQ(runtime::cudaWhyNot(), "");
    EXPECT_EQ(runtime::cudaVersionText().rfind("CUDA runtime ", 0), 0u) << runtime::cudaVersionText();
    EXPECT_EQ(runtime::cublasVersionText().rfind("cuBLAS ", 0), 0u) << runtime::cublasVersionText();
    EXPECT_EQ(runtime::ncclVersionText().rfind("NCCL ", 0), 0u) << runtime::ncclVersionText();
    // Loading the same file again gives the same table (dlopen counts references).
    EXPECT_EQ(loadCudaModuleFrom(load.path).module, load.module);
}

TEST(CudaModuleLoader, TheModulesErrorsArriveAsRuntimeError)
{
    std::string why;
    if (!listGpus(&why).empty())
        GTEST_SKIP() << "a GPU is present: the no-device path cannot be exercised";
    EXPECT_EQ(why.rfind("no GPU (", 0), 0u) << why;
    const runtime::CudaRuntimeApi* api = runtime::cudaRuntime();
    ASSERT_NE(api, nullptr);
    try {
        api->createBackend(runtime::CudaBackendOptions {});
        FAIL() << "expected RuntimeError";
    } catch (const runtime::RuntimeError& e) {
        EXPECT_NE(std::string(e.what()).find("cudaGetDeviceCount(&count) failed"), std::string::npos) << e.what();
    }
}

#endif
