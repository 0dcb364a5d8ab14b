// The timed discrete-event simulator.
//
// A slot's start time is max(its rank free, the arrival of each input), so the timeline is the longest
// path through the dependency graph (per-rank order + data dependencies) and does not depend on the order
// in which ready slots are processed. The kernel therefore keeps, per rank, a pointer into its list and a
// stack of ranks that may progress; a rank runs slots until one lacks an input, then parks on the
// (stage, microbatch) key it waits for. Completing a slot wakes only the ranks parked on the keys it
// produced. Every slot runs once and a rank is woken at most once per production it waits for, so the
// work is O(ops + stages × microbatches). State lives in flat arrays indexed by stage × microbatches +
// microbatch; nothing is allocated per action.
#include "simulator.h"

#include "messageplan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_map>

namespace dps {

namespace {

/// A time not produced yet (every produced time compares greater).
constexpr double kNotYet = -std::numeric_limits<double>::infinity();

bool produced(double t)
{
    return t > kNotYet;
}

/// Asks for the cache line at p ahead of its use (a hint; nothing where the compiler has no builtin).
inline void prefetch(const void* p)
{
#if defined(__GNUC__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

/// What a parked rank waits for (for the deadlock report).
enum class WaitKind : std::uint8_t { None, PrevForward, OwnForward, NextGradient, InputGrad, OutOfRange };

/// Per-stage costs flattened for the hot loop (µs and bytes).
struct StageTable {
    double durationUs[4] = { 0.0, 0.0, 0.0, 0.0 }; ///< by OpKind: F, I, W, B
    double liveBytesDelta[4] = { 0.0, 0.0, 0.0, 0.0 }; ///< by OpKind: the memory ledger's change
    bool overlapTyped = false; ///< an F&B time is typed for slots whose forward is this stage
    double overlapUs = 0.0; ///< that time
    bool forwardComm = false; ///< the forward chain holds communication (its F&B slots are laid on lanes)
    bool backwardComm = false; ///< the backward chain holds communication
    double messageBytes = 0.0; ///< across the boundary s ↔ s+1, each direction
    double transferUs = 0.0; ///< latency + messageBytes / bandwidth, ranks on one node
    double interNodeTransferUs = 0.0; ///< the same over the inter-node link
    double staticBytes = 0.0; ///< parameters + gradients + optimizer state
    double parameterBytes = 0.0;
    double gradientBytes = 0.0; ///< what the replica gradient sum receives per other holder (engine buffers)
    double expertGradientBytes = 0.0; ///< of it, the routed experts' (CostModel::expertParallel)
    const EngineBuffers* engine = nullptr; ///< the runtime's buffers, when the cost model has them
};

/// One production of a (stage, microbatch) — its forward, or its gradient (I or B) — with the ranks
/// parked waiting for it: 16 bytes, read and written together, mostly shortly after each other.
struct Production {
    double endUs = kNotYet; ///< when it ended, or kNotYet
    std::int32_t rank = -1; ///< rank that ran it
    std::int32_t waitHead = -1; ///< first rank parked waiting for it, −1 none
};

/// Inputs of one slot: the latest arrival and the cross-rank messages it consumes (at most one per
/// half: the activation of F(s−1) for an F, the gradient of stage s+1 for an I or B).
struct Arrival {
    double readyUs = 0.0;
    int fromRank = -1;
    int messages = 0;
    int sender[2];
    double bytes[2];

    /// An input produced at timeUs by producerRank (+ transferUs when that is another rank).
    void add(double timeUs, int producerRank, int consumerRank, double transferUs, double messageBytes)
    {
        int src = -1;
        if (producerRank != consumerRank) {
            src = producerRank;
            timeUs += transferUs;
            if (messages < 2) {
                sender[messages] = src;
                bytes[messages++] = messageBytes;
            }
        }
        const bool tieToRank = timeUs == readyUs && src >= 0 && (fromRank < 0 || src < fromRank);
        if (timeUs > readyUs || tieToRank) {
            readyUs = timeUs;
            fromRank = src;
        }
    }
};

/// In-flight change by OpKind: F +1, I −1, W 0, B −1.
constexpr int kInflightDelta[4] = { 1, -1, 0, -1 };

/// Per-rank state of the run.
struct RankState {
    std::size_t pos = 0; ///< next slot in the rank's list
    std::size_t limit = 0; ///< first slot with an op outside the schedule's sizes (else the list size)
    double freeUs = 0.0; ///< end of the last slot
    double busyUs = 0.0;
    double activationBytes = 0.0;
    double peakActivationBytes = 0.0;
    int inflight = 0;
    int peakInflight = 0;
    WaitKind waitKind = WaitKind::None;
    Op waitOp; ///< the op whose input is missing
};

/// A receive of the engine's message plan, compacted for the hot loop.
struct EngineReceive {
    std::int32_t slotHalf = 0; ///< the consuming slot × 2 + half
    double bytes = 0.0; ///< its buffer
    double releaseBytes = 0.0; ///< the send buffers it frees (planMessages' releasedBy)
};

/// Per-rank state of the engine's buffers (CostModel with EngineBuffers on every stage; docs/memory.md).
struct EngineRank {
    double dataBytes = 0.0; ///< inputs and targets held for the step
    double replicaBytes = 0.0; ///< what the replica gradient sum receives at the step's end
    double buffers = 0.0; ///< live beyond static, data and ledger: posted receives, messages, held sends
    std::size_t nextReceive = 0; ///< index in the plan's receives of the next to consume
    std::size_t posted = 0; ///< receives posted so far
    double slotPeak = 0.0; ///< the total's high-water mark in the slot being recorded
    double peak = 0.0; ///< the rank's peak so far
};

/// State of I(s, m) for the W that needs it.
constexpr std::uint8_t kInputGradNotYet = 0;
constexpr std::uint8_t kInputGradDone = 1;

class Kernel {
public:
    Kernel(const Schedule& schedule, const CostModel& costs, const SimOptions& options)
        : m_schedule(schedule)
        , m_costs(costs)
        , m_options(options)
    {
    }

    SimResult run()
    {
        inferSizes();
        prepareStages();
        prepareRanks();
        drain();
        finish();
        return std::move(m_result);
    }

private:
    // ---- setup ----

    /// Stages and microbatches: the schedule's own, or inferred from its ops when unset.
    void inferSizes()
    {
        const SimSizes sizes = simulatedSizes(m_schedule);
        m_stages = sizes.stages;
        m_microbatches = sizes.microbatches;
    }

    /// Flattens the cost model; stages beyond it get StageCost's defaults (unit costs).
    void prepareStages()
    {
        prepareNodes();
        m_table.resize(static_cast<std::size_t>(std::max(m_stages, 0)));
        for (std::size_t s = 0; s < m_table.size(); ++s) {
            const StageCost& c = stageCost(s);
            StageTable& t = m_table[s];
            t.durationUs[static_cast<int>(OpKind::F)] = c.forwardUs;
            t.durationUs[static_cast<int>(OpKind::I)] = c.inputGradUs;
            t.durationUs[static_cast<int>(OpKind::W)] = c.weightGradUs;
            t.durationUs[static_cast<int>(OpKind::B)] = c.backward();
            t.overlapTyped = c.overlapUs.has_value();
            t.overlapUs = c.overlapUs.value_or(0.0);
            t.forwardComm = hasCommunication(c.forwardChain);
            t.backwardComm = hasCommunication(c.backwardChain);
            // F makes the activation live; I frees it and keeps what W needs; W frees that; B frees all.
            t.liveBytesDelta[static_cast<int>(OpKind::F)] = c.activationBytes;
            t.liveBytesDelta[static_cast<int>(OpKind::I)] = c.weightGradKeptBytes - c.activationBytes;
            t.liveBytesDelta[static_cast<int>(OpKind::W)] = -c.weightGradKeptBytes;
            t.liveBytesDelta[static_cast<int>(OpKind::B)] = -c.activationBytes;
            t.messageBytes = c.messageBytes;
            t.transferUs = m_costs.transferTime(c.messageBytes);
            if (m_otherNodeRank > 0)
                t.interNodeTransferUs = m_costs.transferTime(c.messageBytes, 0, m_otherNodeRank);
            t.parameterBytes = c.parameterBytes;
            t.gradientBytes = c.gradientBytes;
            t.expertGradientBytes = c.expertGradientBytes;
            t.engine = s < m_costs.stages.size() && c.engine ? &*c.engine : nullptr;
            t.staticBytes = c.parameterBytes + c.gradientBytes
                + c.optimizerBytes.value_or(c.parameterCount * m_costs.optimizerBytesPerParameter);
        }
        m_engine = !m_table.empty()
            && std::all_of(m_table.begin(), m_table.end(), [](const StageTable& t) { return t.engine != nullptr; });
        const std::size_t keys = m_table.size() * static_cast<std::size_t>(std::max(m_microbatches, 0));
        m_forward.assign(keys, Production {});
        m_gradient.assign(keys, Production {});
        m_inputGrad.assign(keys, kInputGradNotYet);
    }

    /// The cost model's stage s, or StageCost's defaults for a stage it does not list.
    const StageCost& stageCost(std::size_t s) const
    {
        static const StageCost defaults {};
        return s < m_costs.stages.size() ? m_costs.stages[s] : defaults;
    }

    /// Node of each rank rankNode lists (a rank it does not list shares every rank's node), kept only when
    /// some two ranks sit on different nodes.
    void prepareNodes()
    {
        const std::size_t ranks = m_schedule.order.size();
        const std::size_t listed = std::min(ranks, m_costs.rankNode.size());
        for (std::size_t r = 1; r < listed && m_otherNodeRank < 0; ++r)
            if (m_costs.rankNode[r] != m_costs.rankNode[0])
                m_otherNodeRank = static_cast<int>(r);
        if (m_otherNodeRank < 0)
            return;
        m_rankNode.assign(m_costs.rankNode.begin(), m_costs.rankNode.begin() + static_cast<std::ptrdiff_t>(listed));
    }

    /// Transfer time (µs) across the boundary of `boundary` from rank `from` to rank `to` (different ranks):
    /// the inter-node link when their nodes differ (CostModel::transferTime(bytes, from, to)), O(1).
    double transferUs(const StageTable& boundary, int from, int to) const
    {
        if (m_rankNode.empty())
            return boundary.transferUs;
        const std::size_t a = static_cast<std::size_t>(from);
        const std::size_t b = static_cast<std::size_t>(to);
        const bool crosses = a < m_rankNode.size() && b < m_rankNode.size() && m_rankNode[a] != m_rankNode[b];
        return crosses ? boundary.interNodeTransferUs : boundary.transferUs;
    }

    /// Rank states, static memory of the stages each rank holds, result vectors (reserved exactly: the
    /// timeline and the memory curve of a rank are appended in its list order).
    void prepareRanks()
    {
        const std::size_t ranks = m_schedule.order.size();
        m_state.assign(ranks, RankState {});
        m_nextWaiter.assign(ranks, -1);
        m_result.ranks.assign(ranks, RankResult {});
        if (m_options.recordTiming)
            m_result.timing.resize(ranks);
        std::vector<int> heldBy(m_table.size(), -1);
        std::vector<std::size_t> ops(ranks);
        for (std::size_t r = 0; r < ranks; ++r)
            ops[r] = scanRow(static_cast<int>(r), heldBy);
        if (m_engine)
            prepareEngine();
        else if (m_costs.engineReplicaSum)
            m_replicaSum = replicaSumBytes();
        for (std::size_t r = 0; r < ranks; ++r) {
            RankResult& rr = m_result.ranks[r];
            if (m_options.recordTiming)
                m_result.timing[r].reserve(m_schedule.order[r].size());
            if (m_options.recordMemory) {
                rr.memory.reserve(ops[r] + 1);
                const double total = m_engine ? startBytes(static_cast<int>(r)) : rr.staticBytes;
                rr.memory.push_back(MemoryPoint { 0.0, total, 0.0, 0 });
            }
        }
    }

    /// The engine's buffers (docs/memory.md): each rank's data, replica-sum bytes, message plan (what it
    /// receives, in order; at which receive each send's buffer is freed) and the receives it posts when the
    /// step starts (the first CostModel::receiveWindow of its plan).
    void prepareEngine()
    {
        const std::size_t ranks = m_schedule.order.size();
        m_engineRank.assign(ranks, EngineRank {});
        m_receives.assign(ranks, {});
        m_endReleaseBytes.assign(ranks, 0.0);
        const MessagePlanner planner(m_schedule);
        const int last = m_stages - 1;
        const std::vector<double> replicaSum = replicaSumBytes();
        for (std::size_t r = 0; r < ranks; ++r) {
            EngineRank& e = m_engineRank[r];
            e.replicaBytes = replicaSum[r];
            for (std::size_t p = 0; p < m_state[r].limit; ++p) {
                const Action& a = m_schedule.order[r][p];
                for (int h = 0; h < a.size(); ++h) {
                    const Op& op = a.at(h);
                    if (op.kind != OpKind::F)
                        continue;
                    const EngineBuffers& b = *m_table[static_cast<std::size_t>(op.stage)].engine;
                    e.dataBytes += (op.stage == 0 ? b.inputBytes : 0.0) + (op.stage == last ? b.targetBytes : 0.0);
                }
            }
            const RankMessagePlan plan = planner.plan(static_cast<int>(r));
            std::vector<EngineReceive>& receives = m_receives[r];
            receives.reserve(plan.receives.size());
            for (const PlannedMessage& m : plan.receives)
                receives.push_back({ 2 * m.position + m.half, messageBytes(m), 0.0 });
            for (std::size_t j = 0; j < plan.sends.size(); ++j) {
                const double bytes = messageBytes(plan.sends[j]);
                if (plan.releasedBy[j] >= 0)
                    receives[static_cast<std::size_t>(plan.releasedBy[j])].releaseBytes += bytes;
                else
                    m_endReleaseBytes[r] += bytes;
            }
            e.posted = std::min(receives.size(), receiveWindow());
            for (std::size_t i = 0; i < e.posted; ++i)
                e.buffers += receives[i].bytes;
            e.peak = startBytes(static_cast<int>(r));
        }
    }

    /// Per rank, what our engine's replica gradient sum receives at the step's end (docs/memory.md): for each
    /// stage it holds, every other holder's gradients (a stage held by k ranks of the schedule has k × replicas
    /// holders), of which a holder of other routed experts (CostModel::expertParallel) sends only the
    /// non-expert part, packed, as the rank sends its own (one packed buffer a stage).
    std::vector<double> replicaSumBytes() const
    {
        const std::size_t ranks = m_schedule.order.size();
        std::vector<int> holders(m_table.size(), 0);
        std::vector<std::vector<int>> held(ranks);
        std::vector<int> seen(m_table.size(), -1);
        for (std::size_t r = 0; r < ranks; ++r)
            for (std::size_t p = 0; p < m_state[r].limit; ++p) {
                const Action& a = m_schedule.order[r][p];
                for (int h = 0; h < a.size(); ++h) {
                    const auto stage = static_cast<std::size_t>(a.at(h).stage);
                    if (seen[stage] == static_cast<int>(r))
                        continue;
                    seen[stage] = static_cast<int>(r);
                    held[r].push_back(a.at(h).stage);
                    ++holders[stage];
                }
            }
        const int replicas = std::max(1, m_costs.gradientReplicas);
        const int ep = std::clamp(m_costs.expertParallel, 1, replicas);
        std::vector<double> bytes(ranks, 0.0);
        for (std::size_t r = 0; r < ranks; ++r)
            for (int stage : held[r]) {
                const StageTable& t = m_table[static_cast<std::size_t>(stage)];
                const int all = holders[static_cast<std::size_t>(stage)] * replicas; // every replica's holders
                if (all < 2)
                    continue;
                if (t.expertGradientBytes <= 0.0 || ep == 1) {
                    bytes[r] += (all - 1) * t.gradientBytes;
                    continue;
                }
                const int same = all / ep; // holders of this rank's experts, itself included
                const int other = all - same;
                const double dense = t.gradientBytes - t.expertGradientBytes;
                bytes[r] += (same - 1) * t.gradientBytes + other * dense + (other > 0 ? dense : 0.0);
            }
        return bytes;
    }

    std::size_t receiveWindow() const { return static_cast<std::size_t>(std::max(1, m_costs.receiveWindow)); }

    /// Bytes of a planned message: the activation into F(s) crosses boundary s−1, the gradient into I/B(s)
    /// boundary s.
    double messageBytes(const PlannedMessage& m) const
    {
        return m_table[static_cast<std::size_t>(m.gradient ? m.stage : m.stage - 1)].messageBytes;
    }

    /// Engine buffers: what rank r holds when its step starts (static, data, the receives posted first).
    double startBytes(int r) const
    {
        const EngineRank& e = m_engineRank[static_cast<std::size_t>(r)];
        return m_result.ranks[static_cast<std::size_t>(r)].staticBytes + e.dataBytes + e.buffers;
    }

    bool inRange(const Op& op) const
    {
        return op.stage >= 0 && op.stage < m_stages && op.microbatch >= 0 && op.microbatch < m_microbatches;
    }

    /// One pass over rank r's list: the static bytes of every distinct stage in it (a DualPipe or V
    /// rank: two) and the first slot with an op outside the sizes (so the hot loop needs no range
    /// checks; the rank is reported stuck there). Returns the number of ops.
    std::size_t scanRow(int r, std::vector<int>& heldBy)
    {
        const std::vector<Action>& row = m_schedule.order[static_cast<std::size_t>(r)];
        RankState& st = m_state[static_cast<std::size_t>(r)];
        st.limit = row.size();
        std::size_t ops = 0;
        for (std::size_t i = 0; i < row.size(); ++i) {
            const bool ok = hold(r, row[i].op, heldBy) && (!row[i].overlapped || hold(r, row[i].backward, heldBy));
            if (!ok && st.limit == row.size())
                st.limit = i;
            ops += row[i].overlapped ? 2 : 1;
        }
        return ops;
    }

    /// Counts op's stage as held by rank r (once); false when op is outside the sizes.
    bool hold(int r, const Op& op, std::vector<int>& heldBy)
    {
        if (!inRange(op))
            return false;
        int& holder = heldBy[static_cast<std::size_t>(op.stage)];
        if (holder != r) {
            holder = r;
            RankResult& rr = m_result.ranks[static_cast<std::size_t>(r)];
            rr.staticBytes += m_table[static_cast<std::size_t>(op.stage)].staticBytes;
            rr.parameterBytes += m_table[static_cast<std::size_t>(op.stage)].parameterBytes;
        }
        return true;
    }

    // ---- execution ----

    /// Runs every rank as far as it goes; ranks parked on a key rejoin the stack when it is produced.
    void drain()
    {
        const int ranks = static_cast<int>(m_state.size());
        m_ready.reserve(static_cast<std::size_t>(ranks));
        for (int r = ranks - 1; r >= 0; --r)
            m_ready.push_back(r);
        while (!m_ready.empty()) {
            const int r = m_ready.back();
            m_ready.pop_back();
            runRank(r);
        }
    }

    /// Runs rank r's slots in order until one lacks an input (the rank parks) or the list ends.
    void runRank(int r)
    {
        RankState& st = m_state[static_cast<std::size_t>(r)];
        const Action* row = m_schedule.order[static_cast<std::size_t>(r)].data();
        if (st.pos + 3 < st.limit)
            prefetch(row + st.pos + 3); // a later visit reads it; a thousand ranks defeat hardware prefetch
        while (st.pos < st.limit && runSlot(r, st, row[st.pos])) {
            if (st.pos < st.limit)
                prefetchOwnKey(row[st.pos]);
        }
        if (st.pos == st.limit && st.limit < m_schedule.order[static_cast<std::size_t>(r)].size()) {
            const Action& bad = row[st.pos];
            park(r, inRange(bad.op) ? bad.backward : bad.op, WaitKind::OutOfRange, nullptr);
        }
    }

    /// Starts loading the productions of the (stage, microbatch) a slot's last half works on: an I/B
    /// reads the forward written long ago and writes a gradient nobody touched yet.
    void prefetchOwnKey(const Action& a) const
    {
        const Op& op = a.overlapped ? a.backward : a.op;
        const std::size_t k = key(op.stage, op.microbatch);
        prefetch(&m_forward[k]);
        prefetch(&m_gradient[k]);
    }

    std::size_t key(int stage, int microbatch) const
    {
        return static_cast<std::size_t>(stage) * static_cast<std::size_t>(m_microbatches)
            + static_cast<std::size_t>(microbatch);
    }

    /// Runs slot `a` of rank r if all its inputs exist; otherwise parks the rank and returns false.
    bool runSlot(int r, RankState& st, const Action& a)
    {
        Arrival arrival;
        if (!gather(r, a.op, arrival) || (a.overlapped && !gather(r, a.backward, arrival)))
            return false;
        const double durationUs
            = (a.overlapped ? overlapUs(a.op.stage, a.backward.stage)
                            : m_table[static_cast<std::size_t>(a.op.stage)].durationUs[static_cast<int>(a.op.kind)])
            * variation(r, st.pos);
        const double startUs = std::max(st.freeUs, arrival.readyUs);
        const double endUs = startUs + durationUs;
        if (m_options.recordTiming)
            m_result.timing[static_cast<std::size_t>(r)].push_back(
                SlotTiming { startUs, endUs, arrival.readyUs, arrival.fromRank });
        for (int i = 0; i < arrival.messages; ++i)
            countMessage(arrival.sender[i], r, arrival.bytes[i]);
        st.freeUs = endUs;
        st.busyUs += durationUs;
        if (m_engine)
            engineSlot(r, st, a);
        st.pos++;
        complete(r, st, a.op, endUs);
        if (a.overlapped)
            complete(r, st, a.backward, endUs);
        return true;
    }

    /// The factor of the slot at `position` of rank r under SimOptions::variationDraw (1 without a draw).
    double variation(int r, int position) const
    {
        return m_options.variationDraw == 0
            ? 1.0
            : slotVariationFactor(m_costs.slotVariation, m_options.variationDraw, r, position);
    }

    /// Engine buffers of slot `a` of rank r, in the executor's order (docs/memory.md): each half fetches its
    /// input (the first stage's F copies its input; a receive posts the receives up to the window ahead of it,
    /// then frees the sends it proves complete), then the halves run (an overlapped slot's two threads: their
    /// high-water marks add up, the larger order), then each op's net change applies; the rank's last slot also
    /// frees the remaining sends and runs the replica gradient sum. Sets the slot's peak (EngineRank::slotPeak).
    void engineSlot(int r, const RankState& st, const Action& a)
    {
        EngineRank& e = m_engineRank[static_cast<std::size_t>(r)];
        const std::vector<EngineReceive>& receives = m_receives[static_cast<std::size_t>(r)];
        const double fixed = m_result.ranks[static_cast<std::size_t>(r)].staticBytes + e.dataBytes;
        double ledger = st.activationBytes;
        double peak = fixed + ledger + e.buffers;
        for (int h = 0; h < a.size(); ++h) {
            const Op& op = a.at(h);
            if (op.kind == OpKind::F && op.stage == 0) {
                e.buffers += m_table[0].engine->inputBytes;
                peak = std::max(peak, fixed + ledger + e.buffers);
            } else if (e.nextReceive < receives.size()
                && receives[e.nextReceive].slotHalf == static_cast<std::int32_t>(2 * st.pos) + h) {
                const std::size_t through = std::min(receives.size(), e.nextReceive + receiveWindow());
                for (; e.posted < through; ++e.posted)
                    e.buffers += receives[e.posted].bytes;
                peak = std::max(peak, fixed + ledger + e.buffers);
                e.buffers -= receives[e.nextReceive++].releaseBytes;
            }
        }
        double high = 0.0;
        for (int h = 0; h < a.size(); ++h) {
            const Op& op = a.at(h);
            high += m_table[static_cast<std::size_t>(op.stage)]
                        .engine->op(static_cast<int>(op.kind), op.stage == 0)
                        .highWaterBytes;
        }
        peak = std::max(peak, fixed + ledger + e.buffers + high);
        for (int h = 0; h < a.size(); ++h) {
            const Op& op = a.at(h);
            const StageTable& t = m_table[static_cast<std::size_t>(op.stage)];
            const double ledgerDelta = t.liveBytesDelta[static_cast<int>(op.kind)];
            ledger += ledgerDelta;
            e.buffers += t.engine->op(static_cast<int>(op.kind), op.stage == 0).netBytes - ledgerDelta;
        }
        if (st.pos + 1 == m_schedule.order[static_cast<std::size_t>(r)].size()) {
            e.buffers -= m_endReleaseBytes[static_cast<std::size_t>(r)];
            peak = std::max(peak, fixed + ledger + e.buffers + e.replicaBytes);
        }
        e.slotPeak = peak;
        e.peak = std::max(e.peak, peak);
    }

    /// CostModel::overlapTime from the flattened table (stages the cost model does not list: defaults).
    /// A slot whose chains hold communication takes CostModel::overlapLayout's duration, computed once per
    /// (fStage, bStage) pair.
    double overlapUs(int fStage, int bStage)
    {
        const StageTable& f = m_table[static_cast<std::size_t>(fStage)];
        if (f.overlapTyped)
            return f.overlapUs;
        const StageTable& b = m_table[static_cast<std::size_t>(bStage)];
        if (f.forwardComm || b.backwardComm)
            return laidOverlapUs(fStage, bStage);
        return m_costs.overlapFactor
            * (f.durationUs[static_cast<int>(OpKind::F)] + b.durationUs[static_cast<int>(OpKind::B)]);
    }

    /// The duration of an overlapped slot laid on two lanes (µs), cached per (fStage, bStage): in a flat
    /// vector of stages² entries (NaN = not yet) up to kPairTableLimit entries, else in a hash map.
    double laidOverlapUs(int fStage, int bStage)
    {
        static constexpr std::size_t kPairTableLimit = std::size_t { 1 } << 16;
        const std::size_t stages = m_table.size();
        const std::size_t pair = static_cast<std::size_t>(fStage) * stages + static_cast<std::size_t>(bStage);
        if (stages * stages <= kPairTableLimit) {
            if (m_pairTable.empty())
                m_pairTable.assign(stages * stages, std::numeric_limits<double>::quiet_NaN());
            double& cached = m_pairTable[pair];
            if (std::isnan(cached))
                cached = m_costs.overlapTime(
                    stageCost(static_cast<std::size_t>(fStage)), stageCost(static_cast<std::size_t>(bStage)));
            return cached;
        }
        const auto [it, inserted] = m_pairMap.try_emplace(pair, 0.0);
        if (inserted)
            it->second = m_costs.overlapTime(
                stageCost(static_cast<std::size_t>(fStage)), stageCost(static_cast<std::size_t>(bStage)));
        return it->second;
    }

    /// Adds op's inputs to `arrival`; false (rank parked) when one has not been produced yet.
    bool gather(int r, const Op& op, Arrival& arrival)
    {
        switch (op.kind) {
        case OpKind::F:
            return op.stage == 0 || gatherPrevForward(r, op, arrival);
        case OpKind::I:
        case OpKind::B:
            return gatherBackward(r, op, arrival);
        case OpKind::W: {
            const std::size_t k = key(op.stage, op.microbatch);
            return m_inputGrad[k] == kInputGradDone || park(r, op, WaitKind::InputGrad, &m_gradient[k]);
        }
        }
        return true;
    }

    /// F(s, m) needs the activation of F(s−1, m) (+ transfer when it ran on another rank).
    bool gatherPrevForward(int r, const Op& op, Arrival& arrival)
    {
        Production& prev = m_forward[key(op.stage - 1, op.microbatch)];
        if (!produced(prev.endUs))
            return park(r, op, WaitKind::PrevForward, &prev);
        const StageTable& boundary = m_table[static_cast<std::size_t>(op.stage - 1)];
        arrival.add(prev.endUs, prev.rank, r, transferUs(boundary, prev.rank, r), boundary.messageBytes);
        return true;
    }

    /// I/B(s, m) need F(s, m) and, below the last stage, the gradient of I/B(s+1, m) (+ transfer when
    /// that ran on another rank; for a valid schedule that is F(s+1, m)'s rank, as refsim.py decides it).
    bool gatherBackward(int r, const Op& op, Arrival& arrival)
    {
        const std::size_t k = key(op.stage, op.microbatch);
        Production& own = m_forward[k];
        if (!produced(own.endUs))
            return park(r, op, WaitKind::OwnForward, &own);
        if (op.stage < m_stages - 1) {
            Production& next = m_gradient[k + static_cast<std::size_t>(m_microbatches)];
            if (!produced(next.endUs))
                return park(r, op, WaitKind::NextGradient, &next);
            const StageTable& boundary = m_table[static_cast<std::size_t>(op.stage)];
            arrival.add(next.endUs, next.rank, r, transferUs(boundary, next.rank, r), boundary.messageBytes);
        }
        arrival.add(own.endUs, r, r, 0.0, 0.0);
        return true;
    }

    /// Parks rank r waiting for `awaited` (nullptr: an input that never comes) and remembers why;
    /// always returns false.
    bool park(int r, const Op& op, WaitKind kind, Production* awaited)
    {
        RankState& st = m_state[static_cast<std::size_t>(r)];
        st.waitKind = kind;
        st.waitOp = op;
        if (awaited) {
            m_nextWaiter[static_cast<std::size_t>(r)] = awaited->waitHead;
            awaited->waitHead = r;
        }
        return false;
    }

    /// Moves every rank parked on `done` back to the ready stack (they re-check their inputs).
    void wake(Production& done)
    {
        int r = done.waitHead;
        done.waitHead = -1;
        while (r >= 0) {
            const int next = m_nextWaiter[static_cast<std::size_t>(r)];
            m_nextWaiter[static_cast<std::size_t>(r)] = -1;
            m_state[static_cast<std::size_t>(r)].waitKind = WaitKind::None;
            m_ready.push_back(r);
            r = next;
        }
    }

    /// Sends never block: bytes count for the sender and the receiver when the receiver consumes them.
    void countMessage(int sender, int receiver, double bytes)
    {
        m_result.ranks[static_cast<std::size_t>(sender)].p2pBytesSent += bytes;
        m_result.ranks[static_cast<std::size_t>(receiver)].p2pBytesReceived += bytes;
    }

    /// Records what op produced, updates rank r's memory ledger and wakes the ranks parked on it.
    void complete(int r, RankState& st, const Op& op, double endUs)
    {
        const std::size_t k = key(op.stage, op.microbatch);
        const int kind = static_cast<int>(op.kind);
        st.activationBytes += m_table[static_cast<std::size_t>(op.stage)].liveBytesDelta[kind];
        st.inflight += kInflightDelta[kind];
        recordMemory(r, st, endUs);
        if (op.kind == OpKind::W)
            return;
        Production& made = op.kind == OpKind::F ? m_forward[k] : m_gradient[k];
        made.endUs = endUs;
        made.rank = r;
        if (op.kind == OpKind::I)
            m_inputGrad[k] = kInputGradDone;
        if (made.waitHead >= 0)
            wake(made);
    }

    /// Updates the peaks; with recordMemory also appends a point (an overlapped slot appends two at
    /// its end: after its F, then after its B, so the curve's maximum is the peak).
    void recordMemory(int r, RankState& st, double timeUs)
    {
        st.peakActivationBytes = std::max(st.peakActivationBytes, st.activationBytes);
        st.peakInflight = std::max(st.peakInflight, st.inflight);
        if (!m_options.recordMemory)
            return;
        RankResult& rr = m_result.ranks[static_cast<std::size_t>(r)];
        const double total
            = m_engine ? m_engineRank[static_cast<std::size_t>(r)].slotPeak : rr.staticBytes + st.activationBytes;
        rr.memory.push_back(MemoryPoint { timeUs, total, st.activationBytes, st.inflight });
    }

    // ---- results ----

    void finish()
    {
        double makespan = 0.0;
        for (const RankState& st : m_state)
            makespan = std::max(makespan, st.freeUs);
        m_result.makespanUs = makespan;
        double idle = 0.0;
        for (std::size_t r = 0; r < m_state.size(); ++r) {
            RankResult& rr = m_result.ranks[r];
            rr.busyUs = m_state[r].busyUs;
            rr.idleUs = makespan - rr.busyUs;
            rr.endUs = m_state[r].freeUs;
            rr.peakActivationBytes = m_state[r].peakActivationBytes;
            rr.peakInflight = m_state[r].peakInflight;
            rr.peakMemoryBytes = m_engine ? m_engineRank[r].peak : rr.staticBytes + rr.peakActivationBytes;
            if (m_engine)
                rr.dataBytes = m_engineRank[r].dataBytes;
            if (!m_replicaSum.empty() && m_replicaSum[r] > 0.0) {
                // The step's end: what is still live, and every other holder's gradients at once.
                const double end = rr.staticBytes + m_state[r].activationBytes + m_replicaSum[r];
                rr.peakMemoryBytes = std::max(rr.peakMemoryBytes, end);
                if (m_options.recordMemory)
                    rr.memory.push_back(
                        MemoryPoint { m_state[r].freeUs, end, m_state[r].activationBytes, m_state[r].inflight });
            }
            idle += rr.idleUs;
            m_result.totalP2pBytes += rr.p2pBytesSent;
        }
        const double capacity = makespan * static_cast<double>(m_result.ranks.size());
        m_result.bubbleRate = capacity > 0.0 ? idle / capacity : 0.0;
        reportDeadlock();
    }

    /// Lists every rank that did not reach the end of its list and what it waits for.
    void reportDeadlock()
    {
        for (std::size_t r = 0; r < m_state.size(); ++r) {
            const RankState& st = m_state[r];
            if (st.pos >= m_schedule.order[r].size())
                continue;
            StuckRank stuck;
            stuck.rank = static_cast<int>(r);
            stuck.position = static_cast<int>(st.pos);
            stuck.action = toString(m_schedule.order[r][st.pos]);
            stuck.waitsFor = describeWait(st);
            m_result.stuck.push_back(std::move(stuck));
        }
        if (m_result.stuck.empty())
            return;
        m_result.deadlocked = true;
        std::string msg = "deadlock: " + std::to_string(m_result.stuck.size()) + " rank(s) cannot progress";
        for (const StuckRank& s : m_result.stuck)
            msg += "; rank " + std::to_string(s.rank) + " at position " + std::to_string(s.position) + " (" + s.action
                + ") waits for " + s.waitsFor;
        m_result.deadlockMessage = std::move(msg);
    }

    /// " on rank R" where the placement knows the producer's rank, else "".
    std::string onRank(int stage, int microbatch) const
    {
        const int rank = m_schedule.placement.rankOf(stage, microbatch);
        return rank >= 0 ? " on rank " + std::to_string(rank) : std::string {};
    }

    std::string describeWait(const RankState& st) const
    {
        const Op& op = st.waitOp;
        const std::string mb = std::to_string(op.microbatch);
        switch (st.waitKind) {
        case WaitKind::PrevForward:
            return "the activation of " + toString(Op { op.stage - 1, op.microbatch, OpKind::F })
                + onRank(op.stage - 1, op.microbatch);
        case WaitKind::OwnForward:
            return toString(Op { op.stage, op.microbatch, OpKind::F }) + ", its forward";
        case WaitKind::NextGradient:
            return "the gradient of " + std::to_string(op.stage + 1) + "I" + mb + " or " + std::to_string(op.stage + 1)
                + "B" + mb + onRank(op.stage + 1, op.microbatch);
        case WaitKind::InputGrad:
            return toString(Op { op.stage, op.microbatch, OpKind::I }) + ", its backward for inputs";
        case WaitKind::OutOfRange:
            return "nothing: " + toString(op) + " is outside the schedule's " + std::to_string(m_stages)
                + " stages and " + std::to_string(m_microbatches) + " microbatches";
        case WaitKind::None:
            break;
        }
        return "an input that never arrives";
    }

    const Schedule& m_schedule;
    const CostModel& m_costs;
    const SimOptions& m_options;
    SimResult m_result;
    int m_stages = 0;
    int m_microbatches = 0;
    std::vector<StageTable> m_table;
    std::vector<int> m_rankNode; ///< node of each listed rank; empty when every rank shares one node
    int m_otherNodeRank = -1; ///< a rank on another node than rank 0 (when m_rankNode is kept)
    std::vector<double> m_pairTable; ///< laidOverlapUs by fStage × stages + bStage, NaN = not yet
    std::unordered_map<std::size_t, double> m_pairMap; ///< the same beyond the table's size
    // Per (stage, microbatch), index stage × microbatches + microbatch:
    std::vector<Production> m_forward; ///< F(s, m)
    std::vector<Production> m_gradient; ///< I or B(s, m): the gradient for stage s−1 (a W waits here for its I)
    std::vector<std::uint8_t> m_inputGrad; ///< whether I(s, m) ran (then W(s, m) may run)
    std::vector<int> m_nextWaiter; ///< next rank parked on the same key, −1 none
    std::vector<RankState> m_state;
    std::vector<int> m_ready; ///< ranks that may progress
    // The engine's buffers (every stage has EngineBuffers):
    bool m_engine = false;
    std::vector<EngineRank> m_engineRank;
    std::vector<std::vector<EngineReceive>> m_receives; ///< per rank: its receives (MessagePlanner), in order
    std::vector<double> m_endReleaseBytes; ///< per rank: send bytes freed at the step's end
    /// Per rank: the replica gradient sum's receives without EngineBuffers (CostModel::engineReplicaSum)
    std::vector<double> m_replicaSum;
};

} // namespace

SimSizes simulatedSizes(const Schedule& schedule)
{
    SimSizes sizes { schedule.stages, schedule.microbatches };
    if (sizes.stages > 0 && sizes.microbatches > 0)
        return sizes;
    int maxStage = -1;
    int maxMicrobatch = -1;
    for (const auto& row : schedule.order)
        for (const Action& a : row)
            for (int i = 0; i < a.size(); ++i) {
                maxStage = std::max(maxStage, a.at(i).stage);
                maxMicrobatch = std::max(maxMicrobatch, a.at(i).microbatch);
            }
    if (sizes.stages <= 0)
        sizes.stages = maxStage + 1;
    if (sizes.microbatches <= 0)
        sizes.microbatches = maxMicrobatch + 1;
    return sizes;
}

double slotVariationFactor(const std::vector<double>& quantiles, std::uint64_t draw, int rank, int position)
{
    if (quantiles.size() < 2)
        return 1.0;
    // splitmix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA
    // 2014), chained over the three keys: a well-mixed 64-bit value per (draw, rank, position).
    const auto mix = [](std::uint64_t z) {
        z += 0x9e3779b97f4a7c15ULL;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    };
    const std::uint64_t x
        = mix(mix(mix(draw) ^ static_cast<std::uint64_t>(rank)) ^ static_cast<std::uint64_t>(position));
    const double u = static_cast<double>(x >> 11) * 0x1.0p-53; // [0, 1)
    const double at = u * static_cast<double>(quantiles.size() - 1);
    const std::size_t i = std::min(static_cast<std::size_t>(at), quantiles.size() - 2); // at may round up to n − 1
    const double q = quantiles[i] + (at - static_cast<double>(i)) * (quantiles[i + 1] - quantiles[i]);
    return std::max(0.0, 1.0 + q);
}

SimResult simulate(const Schedule& schedule, const CostModel& costs, const SimOptions& options)
{
    return Kernel(schedule, costs, options).run();
}

} // namespace dps
