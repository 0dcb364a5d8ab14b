#pragma once
// Timing of a program in PyTorch's whole action language (a compute_comms CSV, lowerToComms) with its sends and
// receives where they sit, as torch.distributed.pipelining's _PipelineScheduleRuntime issues them.
#include "simulator.h"

namespace dps {

/// Simulates one step of `program`, whose compute actions are `compute` (computeSchedule(program)), timing its
/// sends and receives where they sit in each row (docs/comms.md):
/// - each rank issues its row in order; a compute step starts when the rank's previous compute has ended and its
///   inputs are there: an input with a receive on this rank when that receive has ended, a local one when its
///   producer has;
/// - a send or receive is posted when the rank's compute before it in the row has ended (ProcessGroupNCCL makes
///   its stream wait for the compute stream), and a rank's sends and receives are served in row order on its one
///   communicator (NCCL runs a communicator's operations in order: a receive waiting for its data holds up the
///   sends behind it, pytorch/pytorch#165664, #188833);
/// - a send and its receive run together, from the later of the two sides' turns, for
///   CostModel::transferTime(message bytes of the boundary, sender, receiver);
/// - UNSHARD, RESHARD and REDUCE_GRAD take no time (the cost model has no FSDP or data-parallel costs here).
/// Slot durations, memory and message bytes are simulate(compute)'s; memory points are moved to the new slot
/// ends. The makespan is the last end of a compute or a transfer; idle = makespan − busy. Receives whose
/// lateness made their consumer wait are listed in SimResult::stalledReceives. A program whose order deadlocks
/// is reported deadlocked with the validator's findings (validate(TorchSchedule), rule deadlock.comm-order) as
/// the stuck ranks, never simulated forever. A program without sends and receives gives simulate(compute)'s
/// result. Does not throw for a bad program. O(ranks × steps) in the worst case.
SimResult simulateWithComms(
    const TorchSchedule& program, const Schedule& compute, const CostModel& costs, const SimOptions& options = {});

} // namespace dps
