#pragma once
// Lowering a compute-only schedule to PyTorch's compute_comms form, as torch.distributed.pipelining's
// _PipelineScheduleRuntime does when it loads a compute-only CSV: per rank, FSDP's UNSHARD/RESHARD around
// the stages about to compute (_add_unshard_reshard), a REDUCE_GRAD after each stage's last backward
// (_add_reduce_grad), then the sends and receives of every cross-rank activation and gradient, placed by
// a round-robin over the ranks (_add_send_recv).
#include "schedule.h"

namespace dps {

struct LoweringOptions {
    /// Add UNSHARD/RESHARD (PyTorch adds them always; its runtime skips them for stages without FSDP).
    bool unshardReshard = true;
    /// How many stages a rank keeps unsharded ahead (PyTorch's max_active_stages, 3).
    int maxActiveStages = 3;
    /// Add REDUCE_GRAD after each stage's last B or W.
    bool reduceGrad = true;
};

/// The compute_comms program of a schedule, rank by rank. Sends and receives follow PyTorch's
/// _add_send_recv: ranks are visited in order, each taking at most its next compute action per round once
/// its input is there (its receive, or the producing op on the same rank); a compute action whose output
/// goes to another rank is followed by its SEND on its rank and the matching RECV is appended to the
/// receiving rank's list at that moment. Ops whose neighbour stage is on the same rank (a V's turn) get no
/// comms. A stage on two ranks (DualPipe) uses the rank of the (stage, microbatch). Throws
/// ConstraintError("lowering.stuck") naming each rank's next action when no rank can go on (an order that
/// deadlocks).
TorchSchedule lowerToComms(const Schedule& schedule, const LoweringOptions& options = {});

} // namespace dps
