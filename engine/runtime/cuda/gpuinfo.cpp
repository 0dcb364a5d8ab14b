#include "gpuinfo.h"

#include "base/gpus_module.h"
#include "cudamodule.h"

namespace dps::runtime {

const CudaRuntimeApi* cudaRuntime()
{
    const CudaModuleLoad& loaded = cudaModule();
    return loaded.module ? static_cast<const CudaRuntimeApi*>(loaded.module->runtimeApi) : nullptr;
}

bool cudaBuilt()
{
    return cudaRuntime() != nullptr;
}

bool ncclBuilt()
{
    const CudaRuntimeApi* api = cudaRuntime();
    return api && api->ncclBuilt;
}

std::string cudaWhyNot()
{
    return cudaBuilt() ? std::string() : cudaModule().whyNot;
}

std::string cudaVersionText()
{
    const CudaRuntimeApi* api = cudaRuntime();
    return api ? api->cudaVersionText() : "CUDA not available";
}

std::string cublasVersionText()
{
    const CudaRuntimeApi* api = cudaRuntime();
    return api ? api->cublasVersionText() : "cuBLAS not available";
}

std::string ncclVersionText()
{
    const CudaRuntimeApi* api = cudaRuntime();
    return api ? api->ncclVersionText() : "NCCL not available";
}

} // namespace dps::runtime
