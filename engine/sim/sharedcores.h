#pragma once
// Timing of a run whose ranks share fewer cores than they have threads (e.g. 8 ranks on a 2-core machine):
// processor sharing, simulated as a fluid. The model, its assumptions and the formula: docs/shared-cores.md.
#include "simulator.h"

namespace dps {

/// What a rank does while it waits for a message (docs/shared-cores.md, "Waiting ranks").
enum class WaitingRanks {
    Auto, ///< Open MPI 4.1's rule: Yield when ranks > cores (the node is oversubscribed), else Spin
    Yield, ///< a waiting rank gives its core away (mpi_yield_when_idle on): it takes no share
    Spin, ///< a waiting rank polls at full speed (mpi_yield_when_idle off): it takes one thread's share
};

/// How the ranks share the cores.
struct SharedCoresOptions {
    int cores = 1; ///< cores all ranks run on (one host), ≥ 1
    WaitingRanks waiting = WaitingRanks::Auto;
};

/// The most threads the schedule's ranks can compute with at once: one per rank, two for a rank whose list
/// holds an overlapped F&B slot (the CPU backend runs its halves on two threads). Never throws.
int peakComputeThreads(const Schedule& schedule);

/// Whether waiting ranks spin under `waiting` for `ranks` ranks on `cores` cores (Auto: ranks ≤ cores, which
/// is when Open MPI 4.1 leaves mpi_yield_when_idle off). Never throws.
bool waitingRanksSpin(WaitingRanks waiting, int ranks, int cores);

/// Simulates one step of `schedule` with every rank on one host of options.cores cores, shared by processor
/// sharing: at any time the k threads that compute (a rank inside a single slot: 1; inside an overlapped F&B
/// slot: 2 while both halves run, then 1; a waiting rank: 1 when waiting ranks spin, else 0) each progress at
/// rate min(1, cores / k) µs of work per µs. A slot starts when its rank is free and its inputs have arrived
/// (the dependency rules, transfer times and tie-breaks of simulate(); a transfer needs no core) and ends when
/// its work is done: a single slot has the op's time of work; an overlapped slot whose flat time is D (µs,
/// CostModel::overlapTime) has two halves of work D and clamp(F + B − D, 0, D), F the forward half's forwardUs
/// and B the backward stage's backward(), so that it lasts D when each half has a core and F + B on one core.
/// The result has simulate()'s fields: timing, makespan, bubble rate, each rank's busy (time inside slots) and
/// idle; the memory figures and p2p bytes are simulate()'s (a rank's memory ledger depends only on its own
/// order), with the memory curve's times moved to the slot ends of this timing. When cores ≥
/// peakComputeThreads(schedule), or simulate() reports a deadlock, the result is exactly simulate()'s.
/// O((slots + ranks) log ranks) beyond simulate(). Throws ConstraintError ("cores: must be at least 1, got 0")
/// for options.cores < 1.
SimResult simulateSharedCores(const Schedule& schedule, const CostModel& costs, const SharedCoresOptions& options,
    const SimOptions& simOptions = {});

} // namespace dps
