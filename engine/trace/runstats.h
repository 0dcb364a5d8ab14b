#pragma once
// Analyses of a measured run (definitions in docs/analysis.md): its critical path, and stragglers and
// variance across its measured steps.
#include "sim/alltoall.h"
#include "sim/criticalpath.h"
#include "trace/measured.h"

#include <string>
#include <vector>

namespace dps {

/// The timed run of one measured step: each rank's actions of that step in file order, start, end and wait as
/// measured; no transfer records (TimedRun::transferUs is empty). Ranks are indexed by their rank number, from 0
/// to the number of ranks in the file − 1 (a rank numbered outside that range is left out; one the trace lacks
/// is empty). Never throws.
TimedRun measuredTimedRun(const MeasuredTrace& trace, int step);

/// The critical path of measured step `step` (criticalPath(measuredTimedRun(trace, step))). Empty when the
/// step has no action. Never throws.
CriticalPath measuredCriticalPath(const MeasuredTrace& trace, int step);

/// The expert all-to-all of measured step `step`, per rank indexed by rank number as measuredTimedRun: Σ a2a_us
/// and Σ a2a_hidden_us of the rank's actions of that step (all 0 for a run without expert parallelism). Never
/// throws.
std::vector<RankAllToAll> measuredAllToAll(const MeasuredTrace& trace, int step);

/// What runStats() groups durations by: a slot's kind, an overlapped F&B slot being its own kind.
enum class SlotKind { F, I, W, B, FB };

/// Name of a slot kind: "F", "I", "W", "B", "F&B".
const char* slotKindName(SlotKind kind);
/// The kind of an action's slot.
SlotKind slotKindOf(const Action& action);

/// Median and spread of a set of durations (µs): the median (the low median, base/stats.h) and the 10th and
/// 90th percentiles, each by linear interpolation between the closest ranks (numpy's default "linear" method:
/// position q × (n − 1) of the sorted values).
struct Spread {
    int count = 0; ///< samples (0: none, every figure 0)
    double medianUs = 0.0;
    double p10Us = 0.0;
    double p90Us = 0.0;
    double minUs = 0.0; ///< the least sample
    double maxUs = 0.0; ///< the greatest sample
    double spreadUs() const { return p90Us - p10Us; } ///< p90 − p10 (µs)
    double rangeUs() const { return maxUs - minUs; } ///< max − min (µs)
};

/// Spread of `values` (µs), as Spread describes. Never throws.
Spread spreadOf(std::vector<double> values);

/// The measured steps' makespans (steps[].makespan_us: the latest end over all ranks of each step), as a
/// Spread: median, p10, p90, least and greatest (µs). Never throws.
Spread stepMakespans(const MeasuredTrace& trace);

/// One rank's busy and idle time over the measured steps (docs/running.md, "Idle, measured and predicted").
/// In step s: busy = Σ (end − start − wait) of the rank's slots of s, idle = the step's makespan − busy, the
/// time before its first slot, between its slots (waits and the executor's own gaps) and after its last slot
/// up to the step's end. This is the simulator's RankResult::idleUs (makespan − Σ slot time, a slot starting
/// when its inputs have arrived) of one step; each figure here is its Spread over the steps, whose median one
/// unusual step moves little.
struct RankIdle {
    int rank = 0;
    Spread busy; ///< µs
    Spread idle; ///< µs
};

/// Per rank, in rank order, busy and idle over every measured step as RankIdle describes; a step the trace
/// lists (steps[]) without actions of the rank counts its whole makespan as idle. Never throws.
std::vector<RankIdle> measuredIdle(const MeasuredTrace& trace);

/// One rank's statistics over the measured steps.
struct RankStats {
    int rank = 0;
    /// Per slot kind (index = SlotKind): the busy time (end − start − wait, µs) of every slot of that kind in
    /// every measured step.
    Spread byKind[5];
    Spread stepCompute; ///< Σ busy time of the rank's slots in one step, over the steps (µs)
    /// (stepCompute median ÷ median of the other ranks' stepCompute medians) − 1; 0 with a single rank.
    double excess = 0.0;
    bool straggler = false; ///< excess > RunStats::threshold
};

/// Stragglers and variance of a measured run.
struct RunStats {
    int steps = 0; ///< measured steps found in the actions
    double threshold = 0.1; ///< the share above the others' median compute that flags a rank
    std::vector<RankStats> ranks; ///< in the trace's rank order
    /// Names of the flagged ranks ("rank 3"), in rank order.
    std::vector<std::string> stragglerNames() const;
};

/// Per rank, the median and p10–p90 spread of each slot kind's busy time over all measured steps, and the
/// median over steps of its compute per step; a rank whose median compute exceeds the median of the other
/// ranks' medians by more than `threshold` (a share: 0.1 = 10 %) is flagged a straggler. Throws
/// ConstraintError naming "threshold" when it is negative or not finite.
RunStats runStats(const MeasuredTrace& trace, double threshold = 0.1);

/// One action of two runs' steps: when it started and how long it took in each (µs from the step's start).
struct ActionDiff {
    int rank = 0;
    Action action;
    double startA = 0.0;
    double startB = 0.0;
    double durationA = 0.0; ///< end − start (waiting included)
    double durationB = 0.0;
    double startDeltaUs() const { return startB - startA; } ///< B − A (µs)
    double durationDeltaUs() const { return durationB - durationA; } ///< B − A (µs)
};

/// Step `stepA` of run A against step `stepB` of run B.
struct RunDiff {
    int stepA = 0;
    int stepB = 0;
    double makespanA = 0.0; ///< the latest end of the step's actions (µs)
    double makespanB = 0.0;
    /// Actions both steps ran (same rank and action; the k-th occurrence matches the k-th), largest
    /// |start delta| first, then by rank and run A's order.
    std::vector<ActionDiff> actions;
    int onlyInA = 0; ///< actions of A's step that B's lacks
    int onlyInB = 0;
};

/// The per-action start and duration differences of two measured steps (docs/analysis.md, "Diff of two
/// runs"). Never throws.
RunDiff diffRuns(const MeasuredTrace& a, int stepA, const MeasuredTrace& b, int stepB);

} // namespace dps
