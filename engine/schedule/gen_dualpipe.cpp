// DualPipe and DualPipeV: DeepSeek's reference step() replayed rank by rank (../shared/reference/dualpipe.md
// §2.3 and §3.2). Both schedules run the same eight loops; they differ only in how a rank's two call-site
// phases map to stages and microbatches, which RankPlan captures.
#include "generators_internal.h"

#include <array>
#include <cstddef>
#include <vector>

namespace dps::detail {

namespace {

/// What the eight loops of one rank need to know. Phase 0 is the rank's early stage, phase 1 its late one.
struct RankPlan {
    int half = 0; ///< H: DualPipe N/2, DualPipeV N
    int position = 0; ///< h: DualPipe min(r, N-1-r), DualPipeV r
    int perDirection = 0; ///< microbatches each phase runs: DualPipe C/2, DualPipeV C
    std::array<int, 2> stage {}; ///< global model stage of each phase
    std::array<int, 2> firstMicrobatch {}; ///< global id of each phase's local microbatch 0

    /// Whether this rank runs its first step-4 slot without overlap (DualPipe's middle ranks, DualPipeV's
    /// last rank): in both cases h = H - 1.
    bool splitsFirstMainSlot() const { return position == half - 1; }
};

/// The loop trip counts of step() for one rank, steps 1 to 8.
struct StepCounts {
    int warmupF0, warmupF0F1, warmupZeroBubble, main, cooldownB1, cooldownB1B0, cooldownWB0, cooldownW;

    explicit StepCounts(const RankPlan& plan)
    {
        const int outer = plan.half - plan.position - 1;
        const int inner = plan.position + 1;
        warmupF0 = 2 * outer;
        warmupF0F1 = inner;
        warmupZeroBubble = outer;
        main = plan.perDirection - 2 * plan.half + inner;
        cooldownB1 = outer;
        cooldownB1B0 = inner;
        cooldownWB0 = outer;
        cooldownW = inner;
    }

    /// Number of slots the rank's order will hold (an overlapped pair is one slot).
    std::size_t slots(bool splitFirst) const
    {
        const long total = warmupF0 + 2L * warmupF0F1 + 3L * warmupZeroBubble + 2L * main + (splitFirst ? 1 : 0)
            + 2L * cooldownB1 + 2L * cooldownB1B0 + 2L * cooldownWB0 + cooldownW;
        return total > 0 ? static_cast<std::size_t>(total) : 0;
    }
};

/// Emits one rank's order: FIFO microbatches per phase, and a FIFO of deferred backwards that each W pops.
class RankBuilder {
public:
    explicit RankBuilder(const RankPlan& plan)
        : m_plan(plan)
    {
    }

    /// Runs the eight steps and returns the rank's actions.
    std::vector<Action> build()
    {
        const StepCounts n(m_plan);
        m_order.reserve(n.slots(m_plan.splitsFirstMainSlot()));
        m_deferred.reserve(static_cast<std::size_t>(n.warmupZeroBubble + n.cooldownB1B0 + n.cooldownWB0));
        runWarmup(n);
        runMain(n);
        runCooldown(n);
        return std::move(m_order);
    }

private:
    void runWarmup(const StepCounts& n)
    {
        for (int i = 0; i < n.warmupF0; ++i)
            emitForward(0);
        for (int i = 0; i < n.warmupF0F1; ++i) {
            emitForward(0);
            emitForward(1);
        }
        for (int i = 0; i < n.warmupZeroBubble; ++i) {
            emitBackward(1, true);
            emitWeight();
            emitForward(1);
        }
    }

    void runMain(const StepCounts& n)
    {
        for (int i = 0; i < n.main; ++i) {
            if (i == 0 && m_plan.splitsFirstMainSlot()) {
                emitForward(0);
                emitBackward(1, false);
            } else {
                emitPair(0, 1);
            }
            emitPair(1, 0);
        }
        for (int i = 0; i < n.cooldownB1; ++i) {
            emitBackward(1, false);
            emitPair(1, 0);
        }
    }

    void runCooldown(const StepCounts& n)
    {
        const int switchAt = n.cooldownB1B0 / 2;
        const bool oddPosition = m_plan.position % 2 == 1;
        for (int i = 0; i < n.cooldownB1B0; ++i) {
            emitBackward(1, i > switchAt || (i == switchAt && oddPosition));
            emitBackward(0, i >= switchAt);
        }
        for (int i = 0; i < n.cooldownWB0; ++i) {
            emitWeight();
            emitBackward(0, true);
        }
        for (int i = 0; i < n.cooldownW; ++i)
            emitWeight();
    }

    // The emitters fill each new slot in place, field by field: building an Op in a temporary and copying it
    // stalls on store forwarding (its one-byte kind), which made generation about three times slower.

    /// Appends the next forward of a phase.
    void emitForward(int phase) { fillForward(m_order.emplace_back().op, phase); }

    /// Appends the next backward of a phase: deferred (I, its W queued) or full (B).
    void emitBackward(int phase, bool deferred) { fillBackward(m_order.emplace_back().op, phase, deferred); }

    /// Appends the W of the oldest deferred backward.
    void emitWeight() { m_order.emplace_back().op = m_deferred[m_deferredHead++]; }

    /// Appends one overlapped slot: the next forward of one phase with the next full backward of the other.
    void emitPair(int forwardPhase, int backwardPhase)
    {
        Action& slot = m_order.emplace_back();
        slot.overlapped = true;
        fillForward(slot.op, forwardPhase);
        fillBackward(slot.backward, backwardPhase, false);
    }

    void fillForward(Op& op, int phase)
    {
        op.stage = m_plan.stage[phase];
        op.microbatch = m_plan.firstMicrobatch[phase] + m_nextForward[phase]++;
        op.kind = OpKind::F;
    }

    void fillBackward(Op& op, int phase, bool deferred)
    {
        op.stage = m_plan.stage[phase];
        op.microbatch = m_plan.firstMicrobatch[phase] + m_nextBackward[phase]++;
        op.kind = deferred ? OpKind::I : OpKind::B;
        if (deferred)
            m_deferred.push_back(Op { op.stage, op.microbatch, OpKind::W });
    }

    const RankPlan& m_plan;
    std::vector<Action> m_order;
    std::vector<Op> m_deferred;
    std::size_t m_deferredHead = 0;
    std::array<int, 2> m_nextForward {};
    std::array<int, 2> m_nextBackward {};
};

/// DualPipe rank r: phase 0 is chunk 0 (stage r, forward direction) in the first half, chunk 1 (stage
/// N-1-r, reverse direction, microbatches from C/2) in the second half.
RankPlan dualPipePlan(int ranks, int microbatches, int rank)
{
    const int half = microbatches / 2;
    const std::array<int, 2> chunkStage { rank, ranks - 1 - rank };
    const std::array<int, 2> chunkFirst { 0, half };
    const int early = rank >= ranks / 2 ? 1 : 0;
    RankPlan plan;
    plan.half = ranks / 2;
    plan.position = early == 0 ? rank : ranks - 1 - rank;
    plan.perDirection = half;
    plan.stage = { chunkStage[early], chunkStage[1 - early] };
    plan.firstMicrobatch = { chunkFirst[early], chunkFirst[1 - early] };
    return plan;
}

/// DualPipeV rank r: phase = chunk; chunk 0 is stage r, chunk 1 stage 2N-1-r; both see microbatches 0..C-1.
RankPlan dualPipeVPlan(int ranks, int microbatches, int rank)
{
    RankPlan plan;
    plan.half = ranks;
    plan.position = rank;
    plan.perDirection = microbatches;
    plan.stage = { rank, 2 * ranks - 1 - rank };
    plan.firstMicrobatch = { 0, 0 };
    return plan;
}

template <typename PlanFn> std::vector<std::vector<Action>> buildOrder(int ranks, PlanFn planOf)
{
    std::vector<std::vector<Action>> order(static_cast<std::size_t>(ranks > 0 ? ranks : 0));
    for (int r = 0; r < ranks; ++r) {
        const RankPlan plan = planOf(r);
        order[static_cast<std::size_t>(r)] = RankBuilder(plan).build();
    }
    return order;
}

} // namespace

/// DualPipe on `ranks` (even) ranks and `microbatches` (even, >= 2 x ranks): N stages, each stored on rank s
/// for microbatches [0, C/2) and on rank N-1-s for [C/2, C). Constraints are checked by generate().
Schedule generateDualPipe(int ranks, int microbatches)
{
    Schedule s;
    s.kind = ScheduleKind::DualPipe;
    s.ranks = ranks;
    s.microbatches = microbatches;
    s.stages = ranks;
    s.stagesPerRank = 2;
    s.placement = Placement::mirrored(ranks, microbatches);
    s.order = buildOrder(ranks, [&](int r) { return dualPipePlan(ranks, microbatches, r); });
    return s;
}

/// DualPipeV ("cut-in-half") on `ranks` ranks and `microbatches` (>= 2 x ranks): 2N stages in a V, stage s on
/// rank s for s < N and on rank 2N-1-s otherwise. Constraints are checked by generate().
Schedule generateDualPipeV(int ranks, int microbatches)
{
    Schedule s;
    s.kind = ScheduleKind::DualPipeV;
    s.ranks = ranks;
    s.microbatches = microbatches;
    s.stages = 2 * ranks;
    s.stagesPerRank = 2;
    std::vector<int> rankOfStage(static_cast<std::size_t>(s.stages > 0 ? s.stages : 0));
    for (int stage = 0; stage < s.stages; ++stage)
        rankOfStage[static_cast<std::size_t>(stage)] = stage < ranks ? stage : 2 * ranks - 1 - stage;
    s.placement = Placement::perStage(std::move(rankOfStage));
    s.order = buildOrder(ranks, [&](int r) { return dualPipeVPlan(ranks, microbatches, r); });
    return s;
}

} // namespace dps::detail
