#pragma once
// Turning a Selection (selection.h) into this rank's backend and communication. Host code (target
// dps::cuda): the cuda backend and NCCL come from the CUDA module's table (cudamodule.h, loaded at run time);
// without the module, asking for them throws RuntimeError("CUDA backend not available: …").
#include "runtime/backend.h"
#include "runtime/comm.h"
#include "schedule/schedule.h"
#include "selection.h"
#include "transfersequencer.h"

#include <cstddef>
#include <functional>
#include <memory>

namespace dps::runtime {

struct Transfer;

/// The compute backend of `rank`: CpuBackend(cpuThreads) for "cpu", CudaBackend on deviceOfRank[rank] for
/// "cuda" (bf16 tensors with fp32 accumulation when `bf16`, else fp32). Throws RuntimeError when the
/// selection needs CUDA and the module is not available (cudaWhyNot()), or the device cannot be used.
std::unique_ptr<Backend> makeBackend(const Selection& selection, int rank, bool bf16, int cpuThreads);

/// The communication the selection chose, on top of `mpi` (which must outlive it):
///   "nccl"     → an NcclComm on `backend`'s device (collective: every rank calls this together);
///   "mpi-host" → `mpi` itself under the name "mpi-host" (host buffers), so the measured trace says so;
///   "mpi"      → nullptr: use `mpi` as it is.
std::unique_ptr<Comm> makeComm(const Selection& selection, Comm& mpi, Backend& backend);

/// A rank's backend and communication as the job decided them.
struct Job {
    Selection selection;
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Comm> ownComm; ///< an NcclComm or the "mpi-host" renaming; null when `mpi` serves as is
    Comm* comm = nullptr; ///< what the executor talks through: ownComm, or `mpi`

    /// The line to print and record: "backend cuda, comm nccl: auto: cuda, nccl: every rank has its own GPU".
    std::string describe() const;
};

/// Collective over `mpi`: names this rank in check failures (nameCheckRank), agrees on the selection
/// (selectForJob with cudaRequest() and localRankDevices()), then builds the backend and the comm.
/// Throws RuntimeError (the same text on every rank for a selection that cannot be met).
Job setUpJob(Comm& mpi, BackendChoice backend, bool bf16, int cpuThreads);

/// The selection request for `backend` with this process's abilities: cudaBuilt(), ncclBuilt() and
/// cudaWhyNot() of gpuinfo.h (loading the CUDA module when this build has one).
SelectionRequest cudaRequest(BackendChoice backend);

/// setCheckRank(rank) in this program and in the CUDA module, when it is loaded (it has its own copy).
void nameCheckRank(int rank);

/// What NcclComm::setTransfers needs on comm rank `rank` of a job with `replicas` data-parallel replicas (comm
/// rank = pipeline rank × replicas + replica, ExecutorOptions::replicas): its pipeline rank's transfers in the
/// order of the schedule's transfer plan (deriveTransferPlan), each with the executor's tag (`tagOf`) and
/// `messageBytes` and its peer turned into the comm rank of the same replica, and the comm ranks to connect
/// to: those peers and every holder of one of its stages in every replica (the replica gradient sum:
/// replicaPeers and the other replicas), ascending, without `rank`. With one replica the comm rank is the
/// pipeline rank. Throws RuntimeError for replicas < 1, a rank outside ranks × replicas, or a plan that cannot
/// be derived.
struct NcclTransfers {
    std::vector<PlannedTransfer> transfers;
    std::vector<int> peers;
};
NcclTransfers ncclTransfersOf(const Schedule& schedule, int rank, const std::function<int(const Transfer&)>& tagOf,
    std::size_t messageBytes, int replicas = 1);

/// Gives an NcclComm the schedule's transfer order (ncclTransfersOf, with comm.size() / schedule.ranks
/// replicas; collective: opens its connections); a no-op for any other comm. `tagOf` is the executor's tag of
/// a transfer: RankExecutor::messageTag(consumer stage, consumer microbatch, gradient ? 1 : 0). Throws
/// RuntimeError when the comm's size is not a multiple of the schedule's ranks.
void prepareTransfers(
    Comm& comm, const Schedule& schedule, const std::function<int(const Transfer&)>& tagOf, std::size_t messageBytes);

} // namespace dps::runtime
