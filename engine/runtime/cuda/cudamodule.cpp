// The CUDA module's entry point (libdpstudio-cuda.so): its two tables, base/gpus_module.h's CudaModule and
// cudamodule.h's CudaRuntimeApi, filled with the module's functions.
#include "cudamodule.h"

#include "base/gpus_module.h"
#include "base/version.h"
#include "check.h"
#include "cudaruntime.h"
#ifdef DPS_HAVE_NCCL
#include "ncclcomm.h"
#endif

namespace dps::runtime {

namespace {

std::unique_ptr<Backend> createBackend(const CudaBackendOptions& options)
{
    return std::make_unique<CudaBackend>(options);
}

std::unique_ptr<Comm> createNcclComm(Comm& bootstrap, Backend& backend)
{
#ifdef DPS_HAVE_NCCL
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (!cuda)
        throw RuntimeError("nccl needs the cuda backend, not " + backend.name());
    return std::make_unique<NcclComm>(bootstrap, *cuda);
#else
    (void)bootstrap;
    (void)backend;
    throw RuntimeError("nccl: not built into this CUDA module (" + std::string(cudamodule::builtWith()) + ")");
#endif
}

bool setNcclTransfers(Comm& comm, const std::vector<PlannedTransfer>& transfers, const std::vector<int>& peers)
{
#ifdef DPS_HAVE_NCCL
    auto* nccl = dynamic_cast<NcclComm*>(&comm);
    if (!nccl)
        return false;
    nccl->setTransfers(transfers, peers);
    return true;
#else
    (void)comm;
    (void)transfers;
    (void)peers;
    return false;
#endif
}

const CudaRuntimeApi kRuntimeApi {
    .ncclBuilt = cudamodule::ncclBuilt(),
    .cudaVersionText = &cudamodule::cudaVersionText,
    .cublasVersionText = &cudamodule::cublasVersionText,
    .ncclVersionText = &cudamodule::ncclVersionText,
    .setCheckRank = &setCheckRank,
    .createBackend = &createBackend,
    .createNcclComm = &createNcclComm,
    .setNcclTransfers = &setNcclTransfers,
};

} // namespace

} // namespace dps::runtime

/// The module's one entry point (base/gpus_module.h): its table, whatever `hostAbiVersion` the host has; the
/// host compares the table's abiVersion and version with its own.
extern "C" __attribute__((visibility("default"))) const dps::CudaModule* dps_cuda_module(int hostAbiVersion) noexcept
{
    (void)hostAbiVersion;
    static const dps::CudaModule module {
        .abiVersion = dps::kCudaModuleAbiVersion,
        .version = DPS_VERSION,
        .builtWith = dps::cudamodule::builtWith(),
        .listGpus = &dps::cudamodule::listGpus,
        .runtimeVersion = &dps::cudamodule::runtimeVersion,
        .runtimeApi = &dps::runtime::kRuntimeApi,
    };
    return &module;
}
