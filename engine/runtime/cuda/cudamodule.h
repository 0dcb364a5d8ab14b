#pragma once
// The runtime half of the CUDA module's table (the base half, the loader and the search order are in
// base/gpus_module.h): what the worker needs from libdpstudio-cuda.so to run on GPUs. The module fills it in
// cudamodule.cpp; the host reaches it through cudaRuntime() (gpuinfo.h) and uses it in jobsetup.cpp only, so
// nothing outside the module names CudaBackend's or NcclComm's symbols.
//
// Changing this struct, or the Backend/Comm interfaces the module's objects implement, means bumping
// kCudaModuleAbiVersion (base/gpus_module.h). Every function may throw
// RuntimeError (naming rank, call, file and line for a failing CUDA, cuBLAS or NCCL call); the objects it
// creates are destroyed by the host through their virtual destructors, which run the module's code.
#include "cudabackend.h"
#include "runtime/backend.h"
#include "runtime/comm.h"
#include "transfersequencer.h"

#include <memory>
#include <string>
#include <vector>

namespace dps::runtime {

struct CudaRuntimeApi {
    /// Whether the module has NCCL communication.
    bool ncclBuilt = false;
    /// Version texts for measured traces: "CUDA runtime 13.0, driver 13.0", "cuBLAS 13.1.0", "NCCL 2.28.9"
    /// ("NCCL not built" without NCCL). Never throw.
    std::string (*cudaVersionText)() = nullptr;
    std::string (*cublasVersionText)() = nullptr;
    std::string (*ncclVersionText)() = nullptr;
    /// The rank the module's check failures name (check.h's setCheckRank, for the module's copy).
    void (*setCheckRank)(int rank) = nullptr;
    /// A CudaBackend (cudabackend.h). Throws RuntimeError when the device cannot be used.
    std::unique_ptr<Backend> (*createBackend)(const CudaBackendOptions& options) = nullptr;
    /// An NcclComm over `bootstrap` on `backend`'s device; collective (ncclcomm.h). Throws RuntimeError when
    /// `backend` is not one createBackend made, the module has no NCCL, or NCCL fails.
    std::unique_ptr<Comm> (*createNcclComm)(Comm& bootstrap, Backend& backend) = nullptr;
    /// NcclComm::setTransfers on `comm` and returns true; false (nothing done) when `comm` is not an NcclComm.
    /// Collective: opens the connections to `peers`.
    bool (*setNcclTransfers)(Comm& comm, const std::vector<PlannedTransfer>& transfers, const std::vector<int>& peers)
        = nullptr;
    // Device timing needs no entry: it is Backend's virtual interface (lastActionDeviceUs), which the
    // executor calls on whatever backend it has.
};

} // namespace dps::runtime
