#pragma once
// The critical path of one step's timeline: the chain of actions and transfers that set the step's end,
// found by walking back from the last-ending action (definitions in docs/analysis.md). It works on the
// simulator's result (criticalPath(schedule, sim, costs)) and, through the neutral TimedRun, on a measured
// run (dps::measuredCriticalPath in trace/runstats.h).
#include "costmodel.h"
#include "schedule/action.h"
#include "schedule/schedule.h"
#include "simulator.h"

#include <functional>
#include <string>
#include <vector>

namespace dps {

/// One slot of a timed run. Times in µs from the step's start (on its rank's clock for a measured run).
struct TimedSlot {
    Action action;
    double startUs = 0.0;
    double endUs = 0.0;
    double waitUs = 0.0; ///< part of [start, end] spent waiting for incoming data (measured); 0 for a simulation
};

/// A step's timeline in the form criticalPath() walks: each rank's slots in execution order, and how long a
/// message takes between two ranks.
struct TimedRun {
    std::vector<std::vector<TimedSlot>> ranks; ///< ranks[r] = rank r's slots in execution order
    /// Transfer time (µs) of the message across the boundary stage s → s+1 (activation or gradient) from rank
    /// `from` to rank `to` (different ranks). Empty: the run has no transfer records (a measured run); a
    /// message then arrives at the consumer's measured end of waiting (start + wait) when the consumer waited,
    /// else at its producer's end.
    std::function<double(int boundaryStage, int from, int to)> transferUs;
};

/// What an element of the path is.
enum class PathElementKind {
    Action, ///< a slot a rank ran
    Transfer, ///< a message from `fromRank` to `rank` (the producer's end to its arrival)
    Gap, ///< time on `rank` between the deciding predecessor's end (or arrival) and the slot's start
};

/// One element of the critical path, in time order.
struct PathElement {
    PathElementKind kind = PathElementKind::Action;
    int rank = -1; ///< the rank that ran the action; for a transfer, the receiving rank
    int fromRank = -1; ///< for a transfer, the sending rank; else = rank
    int slot = -1; ///< index in ranks[rank] of the action (a transfer or gap: of the action it leads to)
    Action action; ///< the action (a transfer or gap: the action it leads to)
    double startUs = 0.0;
    double endUs = 0.0;
    /// endUs − startUs (µs).
    double durationUs() const { return endUs - startUs; }
};

/// The critical path of a step and its share per rank.
struct CriticalPath {
    std::vector<PathElement> elements; ///< in time order: first the action that started the chain
    double startUs = 0.0; ///< start of the chain's first action
    double endUs = 0.0; ///< end of the last-ending action (the step's end)
    double lengthUs = 0.0; ///< endUs − startUs; the makespan for a simulated step (µs)
    /// Per rank: time of the path spent on that rank (its actions and gaps), µs; index = rank.
    std::vector<double> rankUs;
    double transferUs = 0.0; ///< time of the path spent in transfers between ranks (µs)
    /// Share of the path on `rank` (rankUs ÷ lengthUs; 0 for an empty path).
    double rankShare(int rank) const;
    /// Share of the path in transfers (transferUs ÷ lengthUs).
    double transferShare() const;
    /// Whether the slot `slot` of `rank` is on the path.
    bool containsSlot(int rank, int slot) const;
};

/// The critical path of `run` (docs/analysis.md): starting at the last-ending slot (ties: the lower rank),
/// repeatedly step to the predecessor that determined the slot's start, among the rank's previous slot (its
/// end) and the producers of the slot's inputs (F(s,m) ← F(s−1,m); I/B(s,m) ← F(s,m) and the I or B of
/// (s+1,m); W(s,m) ← I(s,m); arrival = producer end + transferUs across ranks): the latest arrival wins, a tie
/// goes to a data dependency before the rank's previous slot, then to the lower producer rank. Without transfer
/// records (TimedRun::transferUs empty) an input from another rank decides when the slot waited for data
/// (waitUs > 0) or has no previous slot, the latest-ending such producer. Stops at a slot with no predecessor.
/// An input the run does not hold is skipped; a repeated (stage, microbatch, kind) keeps its first slot. Empty
/// for a run with no slots. Never throws (std::bad_alloc aside). O(slots + stages × microbatches).
CriticalPath criticalPath(const TimedRun& run);

/// The timed run of a simulated schedule: each slot's SlotTiming, transfers from `costs`
/// (CostModel::transferTime of the boundary stage's messageBytes between the two ranks). Precondition: sim
/// holds the schedule's timing (SimOptions::recordTiming, not deadlocked); ranks beyond sim.timing are empty.
TimedRun timedRunOf(const Schedule& schedule, const SimResult& sim, const CostModel& costs);

/// criticalPath(timedRunOf(schedule, sim, costs)): its length is the makespan exactly. Never throws.
CriticalPath criticalPath(const Schedule& schedule, const SimResult& sim, const CostModel& costs);

} // namespace dps
