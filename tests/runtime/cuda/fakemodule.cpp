// Fake CUDA modules for the loader's tests (test_cudamodule.cpp), one per DPS_FAKE_MODULE_<kind>:
//   none     a shared library without the entry point
//   abi      an entry point whose table has another ABI version (999)
//   version  the right ABI version, but from DualPipe Studio "0.0.0-fake"
#include "base/gpus_module.h"

#if defined(DPS_FAKE_MODULE_none)
extern "C" __attribute__((visibility("default"))) int dps_not_a_cuda_module()
{
    return 0;
}
#else
#if defined(DPS_FAKE_MODULE_abi)
constexpr int kAbiVersion = 999;
#else
constexpr int kAbiVersion = dps::kCudaModuleAbiVersion;
#endif

extern "C" __attribute__((visibility("default"))) const dps::CudaModule* dps_cuda_module(int) noexcept
{
    static const dps::CudaModule module { .abiVersion = kAbiVersion, .version = "0.0.0-fake", .builtWith = "nothing" };
    return &module;
}
#endif
