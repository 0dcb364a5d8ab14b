#pragma once
// Timed discrete-event simulator of a schedule under a cost model.
#include "costmodel.h"
#include "schedule/schedule.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dps {

/// Timing of one slot (an overlapped pair is one slot). All times in µs from the start of the step.
/// The two lanes of an overlapped slot are not stored here: CostModel::overlapLayout(fStage, bStage) of the
/// slot's forward and backward stages gives its lane segments in µs from the slot's start (add startUs), and
/// its durationUs is exactly endUs − startUs (the simulator times the slot with the same layout). A timeline
/// calls it once per distinct (fStage, bStage) pair, as timelineFromSimulation does.
struct SlotTiming {
    double startUs = 0.0;
    double endUs = 0.0;
    double readyUs = 0.0; ///< when its last input arrived (0 if none); start = max(rank free, ready)
    int waitedOnRank = -1; ///< rank whose message arrived last (-1: none or same rank)
};

/// One point of a rank's memory curve: the value holds from timeUs until the next point. With the engine's
/// buffers (EngineBuffers on every stage) a slot's point holds the slot's high-water mark, as the measured
/// trace's memory_bytes does (docs/memory.md).
struct MemoryPoint {
    double timeUs = 0.0;
    /// static (parameters + gradients + optimizer) + activations; with the engine's buffers: the most the
    /// rank held during the slot ending here (+ data, messages, workspaces), at time 0 what it holds at the start
    double totalBytes = 0.0;
    double activationBytes = 0.0; ///< live activations only
    int inflight = 0; ///< (stage, microbatch) activations made live by F not yet consumed by I or B
};

struct RankResult {
    double busyUs = 0.0;
    double idleUs = 0.0; ///< makespan − busy, idle before the first and after the last slot included
    double endUs = 0.0; ///< end of the rank's last slot, µs (≤ makespan; where its gradient all-reduce can start)
    double p2pBytesSent = 0.0;
    double p2pBytesReceived = 0.0;
    double staticBytes = 0.0; ///< parameters + gradients + optimizer state of the stages the rank holds
    double parameterBytes = 0.0; ///< parameters of the stages the rank holds (DualPipe/V: two stages)
    /// static + peak activations; with the engine's buffers, the rank's high-water mark of everything the
    /// runtime allocates (docs/memory.md): what a run measures, to the byte
    double peakMemoryBytes = 0.0;
    double peakActivationBytes = 0.0;
    double dataBytes = 0.0; ///< inputs and targets the rank holds for the step (with the engine's buffers only)
    int peakInflight = 0;
    std::vector<MemoryPoint> memory; ///< empty unless SimOptions::recordMemory
};

struct SimOptions {
    bool recordTiming = true; ///< fill SimResult::timing
    bool recordMemory = true; ///< fill RankResult::memory (the peaks are always computed)
    /// 0: every slot takes its cost model's time. k ≥ 1, with CostModel::slotVariation: the slot at position p of
    /// rank r takes its time × slotVariationFactor(costs.slotVariation, k, r, p), draw k of the machine's variation.
    std::uint64_t variationDraw = 0;
};

/// The factor draw `draw` gives the slot at `position` of `rank`: 1 + the quantile function of `quantiles`
/// (evenly spaced, p0 … p100, linear between them) at a uniform number in [0, 1) that is a hash of (draw, rank,
/// position) (splitmix64, so the same on every platform and independent of the order slots are simulated in),
/// at least 0. 1 when quantiles has fewer than 2 values. Never throws.
double slotVariationFactor(const std::vector<double>& quantiles, std::uint64_t draw, int rank, int position);

/// A rank that cannot progress in a deadlocked schedule.
struct StuckRank {
    int rank = -1;
    int position = -1; ///< index of the slot it is stuck on in order[rank]
    std::string action; ///< PyTorch text of that slot
    std::string waitsFor; ///< the input that never arrives, e.g. "the gradient of 1I0 or 1B0 on rank 1"
};

/// One send or receive of a program timed where it sits (simulateWithComms). Times in µs from the step's start.
struct CommTiming {
    int position = -1; ///< cell index in the program's row of its rank
    CommOp op;
    double postedUs = 0.0; ///< when the rank's compute before it in the row had ended
    double readyUs = 0.0; ///< max(posted, the end of the rank's previous send or receive): its turn on the communicator
    double startUs = 0.0; ///< max of the two sides' readyUs: a send and its receive run together
    double endUs = 0.0; ///< start + CostModel::transferTime of the message
};

/// A receive whose placement made its rank wait (simulateWithComms).
struct StalledReceive {
    int rank = -1;
    int position = -1; ///< cell index in the program's row
    std::string action; ///< e.g. "1RECV_F1"
    std::string consumer; ///< the compute that waited for it, e.g. "1F1"
    double lateUs = 0.0; ///< how long the send waited for this receive: receive ready − send ready, µs
    double stallUs = 0.0; ///< of the consumer's wait, what the late receive caused: min(lateUs, its wait), µs
    std::string cause; ///< "posted only after 1B0 (position 2) ended" or "queued behind 1SEND_B0 (position 4) …"
};

struct SimResult {
    bool deadlocked = false;
    std::string deadlockMessage; ///< which ranks are stuck on which action, when deadlocked
    std::vector<StuckRank> stuck; ///< one entry per rank that did not finish its list, when deadlocked
    double makespanUs = 0.0;
    double bubbleRate = 0.0; ///< Σ idle / (ranks × makespan)
    double totalP2pBytes = 0.0;
    std::vector<RankResult> ranks;
    std::vector<std::vector<SlotTiming>> timing; ///< timing[r][i] for schedule.order[r][i]
    // Filled by simulateWithComms only (empty, 0 otherwise):
    bool commsTimed = false; ///< the sends and receives were timed where they sit
    double computeOnlyMakespanUs = 0.0; ///< simulate()'s makespan of the same compute order (messages sent when made)
    std::vector<std::vector<CommTiming>> comms; ///< comms[r]: rank r's sends and receives in row order
    std::vector<StalledReceive> stalledReceives; ///< in rank, then position order
};

/// The stages and microbatches a simulation uses: the schedule's own, or, where one is 0, inferred from its
/// ops (the highest stage and microbatch + 1).
struct SimSizes {
    int stages = 0;
    int microbatches = 0;
};
SimSizes simulatedSizes(const Schedule& schedule);

/// Simulates one step. Each rank runs its list in order; a slot starts when the rank is free and all its
/// inputs have arrived: F of stage s needs F of stage s−1 (same microbatch), I/B of stage s need F of s
/// on this rank and (unless s is the last stage) the gradient from the I/B of stage s+1; W needs I of the
/// same (stage, microbatch). An input from another rank arrives at producer end +
/// CostModel::transferTime(bytes, producer rank, consumer rank) (latency + bytes ÷ bandwidth of the link
/// inside a node, or of the inter-node link when rankNode puts the two ranks on different nodes); sends never
/// block the sender. A slot lasts its op's time; an overlapped F&B slot lasts CostModel::overlapTime (flat,
/// or laid on two lanes when the stages' chains hold communication; computed once per stage pair). A rank's
/// static memory counts each stage's StageCost::optimizerBytes when set. Ties break by rank, then list position. A
/// deadlock is reported in the result (never simulated forever). Does not throw for bad schedules; behaviour on a
/// schedule the validator rejects for structural reasons (duplicates, out-of-range) is a deadlock report.
/// Stages and microbatches are the schedule's (inferred from its ops when 0); stages the cost model does
/// not list get StageCost's defaults. Whether a message crosses ranks is decided by the rank that ran its
/// producer (F for an activation, I or B for a gradient) — the placement's rank for a valid schedule, as
/// tests/tools/refsim.py decides it. Memory
/// points are recorded at time 0 and at every slot end (an overlapped slot records two: after its F,
/// then after its backward), so the curve's maximum is the peak. When every stage has EngineBuffers the memory
/// counts our runtime's buffers too (docs/memory.md): the inputs and targets, the receives posted
/// CostModel::receiveWindow ahead, each op's workspaces and messages, sends held until the receive
/// planMessages() (messageplan.h) frees them at, an overlapped slot's two halves at their high-water marks at
/// once (the larger order of their allocations), the replica gradient sum after the rank's last slot.
/// O(ops + stages × microbatches) time; memory O(ops) with recordTiming.
SimResult simulate(const Schedule& schedule, const CostModel& costs, const SimOptions& options = {});

/// A closed-form largest per-rank idle time and whether it applies.
struct ClosedForm {
    bool available = false; ///< the kind has a closed form at all
    bool applicable = false; ///< the costs are inside the form's range
    double valueUs = 0.0;
    std::string formula; ///< e.g. "(PP/2−1)(F&B+B−3W)"
    std::string reason; ///< why not applicable (e.g. "F&B outside [B, F+B]"), or its validity range
};

/// The closed form of the schedule's largest per-rank idle time, from the costs of stage 0 (the forms
/// assume uniform stages and free communication, inside and across nodes, and no expert all-to-all in the
/// slots; otherwise applicable is false): 1F1B and interleaved
/// (p−1)(F+B) (interleaved: /v of a 1F1B stage = (p−1)(F+B) of its own stages, for microbatches ≥ ranks),
/// GPipe (p−1)(F+B), ZB-H1 (p−1)(F+B−2W) (for W ≤ F, W ≤ I), DualPipe/DualPipeV (PP/2−1)(F&B+B−3W), PP =
/// model stages, valid for B ≤ F&B ≤ F+B (DeepSeek's DualPipe README table) and exact only for F = I,
/// W ≤ F, B = I + W (checked against the simulator). ZB-V and Custom: available is false.
ClosedForm closedFormLargestIdle(const Schedule& schedule, const CostModel& costs);

} // namespace dps
