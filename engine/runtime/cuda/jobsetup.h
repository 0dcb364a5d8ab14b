#pragma once
// Turning a Selection (selection.h) into this rank's backend and communication. Always built (target
// dps::cuda): without the CUDA backend, asking for it throws RuntimeError("cuda: not built …").
#include "actionclock.h"
#include "runtime/backend.h"
#include "runtime/comm.h"
#include "schedule/schedule.h"
#include "selection.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

namespace dps::runtime {

struct Transfer;

/// The compute backend of `rank`: CpuBackend(cpuThreads) for "cpu", CudaBackend on deviceOfRank[rank] for
/// "cuda" (bf16 tensors with fp32 accumulation when `bf16`, else fp32). Throws RuntimeError when the
/// selection needs CUDA and this build lacks it, or the device cannot be used.
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

/// Collective over `mpi`: names this rank in check failures (setCheckRank), agrees on the selection
/// (selectForJob with this build's abilities and localRankDevices()), then builds the backend and the comm.
/// Throws RuntimeError (the same text on every rank for a selection that cannot be met).
Job setUpJob(Comm& mpi, BackendChoice backend, bool bf16, int cpuThreads);

/// Device timing (no-ops unless `backend` is the cuda backend): marks the step's origin right after its
/// barrier, and gives the last action's device times in µs since that origin (after synchronize()).
void markStepStarted(Backend& backend);
std::optional<ActionSpan> lastDeviceSpan(Backend& backend);

/// Gives an NcclComm the schedule's transfer order (collective; opens its connections, including to the
/// ranks that share a stage with this one); a no-op for any other comm. `tagOf` is the executor's tag of a
/// transfer: RankExecutor::messageTag(consumer stage, consumer microbatch, gradient ? 1 : 0).
void prepareTransfers(
    Comm& comm, const Schedule& schedule, const std::function<int(const Transfer&)>& tagOf, std::size_t messageBytes);

} // namespace dps::runtime
