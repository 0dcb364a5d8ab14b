#pragma once
// The worker's platform with everything GPU-related (runtime/worker.h's WorkerPlatform): backend and
// communication selection (selection.h), the cuda backend, NCCL or MPI through host buffers, and NCCL's
// transfer order (jobsetup.h). engine/worker/main.cpp passes it to runWorker; dps::runtime cannot name it
// itself because dps::cuda depends on dps::runtime. Always built, links no CUDA library: the cuda backend
// and NCCL come from the CUDA module, loaded at run time. Without it (a build without the CUDA toolkit, or
// the module or the CUDA libraries missing here) auto picks cpu and says why, and cuda is refused ("--backend
// cuda: cuda: not built", "--backend cuda: CUDA backend not available: <why>").
#include "runtime/worker.h"
#include "selection.h"

namespace dps::runtime {

class CudaWorkerPlatform final : public WorkerPlatform {
public:
    /// Names this rank in check failures (nameCheckRank), then agrees on the selection over `mpi`
    /// (selectForJob with cudaRequest() and localRankDevices()). Throws UsageError for an unknown
    /// name and the same RuntimeError on every rank for a selection that cannot be met, e.g. "--backend
    /// cuda: rank 0 on node7 has no GPU (no GPU (cudaGetDeviceCount: …))".
    JobChoice choose(Comm& mpi, const std::string& backend) override;
    /// makeBackend(): CpuBackend, or CudaBackend on the selected device (bf16 storage when `bf16`).
    std::unique_ptr<Backend> createBackend(bool bf16, int cpuThreads) override;
    /// makeComm(): an NcclComm (collective), `mpi` renamed "mpi-host", or nullptr (`mpi` as it is).
    std::unique_ptr<Comm> createComm(Comm& mpi, Backend& backend) override;
    /// prepareTransfers() of jobsetup.h: the transfer order for NcclComm, nothing for other comms.
    void prepareTransfers(Comm& comm, const Schedule& schedule, const TagOf& tagOf, std::size_t messageBytes) override;

    /// The selection made by choose().
    const Selection& selection() const { return m_selection; }

private:
    Selection m_selection;
    int m_rank = 0;
};

} // namespace dps::runtime
