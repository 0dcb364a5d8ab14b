#include "transferorder.h"

#include "runtime/backend.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace dps::runtime {

namespace {

/// Where an op runs: rank, slot index in that rank's order, half (0, or 1 for an overlapped backward).
struct Location {
    int rank = -1;
    int slot = -1;
    int half = 0;
};

using OpKey = std::tuple<int, int, int>; // stage, microbatch, kind

OpKey keyOf(const Op& op)
{
    return { op.stage, op.microbatch, static_cast<int>(op.kind) };
}

/// Every op of the schedule and where it runs.
class OpIndex {
public:
    explicit OpIndex(const Schedule& schedule)
    {
        for (int r = 0; r < static_cast<int>(schedule.order.size()); ++r) {
            const auto& order = schedule.order[static_cast<std::size_t>(r)];
            for (int k = 0; k < static_cast<int>(order.size()); ++k)
                for (int h = 0; h < order[static_cast<std::size_t>(k)].size(); ++h)
                    m_where[keyOf(order[static_cast<std::size_t>(k)].at(h))] = Location { r, k, h };
        }
    }

    std::optional<Location> find(int stage, int microbatch, OpKind kind) const
    {
        const auto it = m_where.find(OpKey { stage, microbatch, static_cast<int>(kind) });
        return it == m_where.end() ? std::nullopt : std::optional<Location>(it->second);
    }

    /// The op computing the input gradient of (stage, microbatch): its I, else its B.
    std::optional<std::pair<Op, Location>> backwardOf(int stage, int microbatch) const
    {
        for (const OpKind kind : { OpKind::I, OpKind::B })
            if (const auto where = find(stage, microbatch, kind))
                return std::pair { Op { stage, microbatch, kind }, *where };
        return std::nullopt;
    }

private:
    std::map<OpKey, Location> m_where;
};

/// The ops an op needs before it can run (local and cross-rank), as (op, location); throws when missing.
std::vector<std::pair<Op, Location>> producersOf(const Op& op, const OpIndex& index, int stages)
{
    std::vector<std::pair<Op, Location>> needs;
    auto require = [&](const Op& producer) {
        const auto where = index.find(producer.stage, producer.microbatch, producer.kind);
        if (!where)
            throw RuntimeError(
                "transfer plan: " + toString(op) + " needs " + toString(producer) + ", which is not in the schedule");
        needs.emplace_back(producer, *where);
    };
    if (op.kind == OpKind::F && op.stage > 0)
        require(Op { op.stage - 1, op.microbatch, OpKind::F });
    if (op.kind == OpKind::I || op.kind == OpKind::B) {
        require(Op { op.stage, op.microbatch, OpKind::F });
        if (op.stage + 1 < stages) {
            const auto grad = index.backwardOf(op.stage + 1, op.microbatch);
            if (!grad)
                throw RuntimeError("transfer plan: " + toString(op) + " needs the backward of stage "
                    + std::to_string(op.stage + 1) + " for microbatch " + std::to_string(op.microbatch)
                    + ", which is not in the schedule");
            needs.push_back(*grad);
        }
    }
    if (op.kind == OpKind::W)
        require(Op { op.stage, op.microbatch, OpKind::I });
    return needs;
}

/// The op that consumes an op's output on another stage (F → F of s+1, I/B → I/B of s−1), if any.
std::optional<std::pair<Op, Location>> consumerOf(const Op& op, const OpIndex& index, int stages)
{
    if (op.kind == OpKind::F && op.stage + 1 < stages) {
        const Op next { op.stage + 1, op.microbatch, OpKind::F };
        if (const auto where = index.find(next.stage, next.microbatch, next.kind))
            return std::pair { next, *where };
    }
    if ((op.kind == OpKind::I || op.kind == OpKind::B) && op.stage > 0)
        return index.backwardOf(op.stage - 1, op.microbatch);
    return std::nullopt;
}

/// Lockstep as-soon-as-possible execution of a schedule: which slot each rank runs in which round.
class LockstepRun {
public:
    LockstepRun(const Schedule& schedule, const OpIndex& index)
        : m_schedule(schedule)
        , m_index(index)
        , m_next(schedule.order.size(), 0)
    {
    }

    /// Runs one round; returns the (rank, slot) pairs executed, in rank order. Empty when stuck or done.
    std::vector<std::pair<int, int>> round()
    {
        std::vector<std::pair<int, int>> ran;
        for (int r = 0; r < static_cast<int>(m_next.size()); ++r)
            if (!finished(r) && ready(r))
                ran.emplace_back(r, m_next[static_cast<std::size_t>(r)]);
        for (const auto& [r, slot] : ran) {
            const Action& action = m_schedule.order[static_cast<std::size_t>(r)][static_cast<std::size_t>(slot)];
            for (int h = 0; h < action.size(); ++h)
                m_done.insert(keyOf(action.at(h)));
            ++m_next[static_cast<std::size_t>(r)];
        }
        return ran;
    }

    bool allFinished() const
    {
        for (int r = 0; r < static_cast<int>(m_next.size()); ++r)
            if (!finished(r))
                return false;
        return true;
    }

    std::string stuckText() const
    {
        std::string text;
        for (int r = 0; r < static_cast<int>(m_next.size()); ++r)
            if (!finished(r))
                text += (text.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " at "
                    + toString(m_schedule.order[static_cast<std::size_t>(r)][nextOf(r)]);
        return text;
    }

private:
    std::size_t nextOf(int r) const { return static_cast<std::size_t>(m_next[static_cast<std::size_t>(r)]); }
    bool finished(int r) const { return nextOf(r) >= m_schedule.order[static_cast<std::size_t>(r)].size(); }

    bool ready(int r) const
    {
        const Action& action = m_schedule.order[static_cast<std::size_t>(r)][nextOf(r)];
        for (int h = 0; h < action.size(); ++h)
            for (const auto& [producer, where] : producersOf(action.at(h), m_index, m_schedule.stages))
                if (!m_done.count(keyOf(producer)))
                    return false;
        return true;
    }

    const Schedule& m_schedule;
    const OpIndex& m_index;
    std::vector<int> m_next;
    std::set<OpKey> m_done;
};

/// The cross-rank transfers a slot produces, in half order.
std::vector<Transfer> transfersOfSlot(const Schedule& schedule, const OpIndex& index, int rank, int slot)
{
    std::vector<Transfer> out;
    const Action& action = schedule.order[static_cast<std::size_t>(rank)][static_cast<std::size_t>(slot)];
    for (int h = 0; h < action.size(); ++h) {
        const auto consumer = consumerOf(action.at(h), index, schedule.stages);
        if (!consumer || consumer->second.rank == rank)
            continue;
        const Location& to = consumer->second;
        out.push_back(Transfer { rank, to.rank, action.at(h), consumer->first, slot, h, to.slot, to.half, 0 });
    }
    return out;
}

std::vector<RankTransfers> sliceByRank(const std::vector<Transfer>& transfers, int ranks)
{
    std::vector<RankTransfers> slices(static_cast<std::size_t>(ranks));
    for (int i = 0; i < static_cast<int>(transfers.size()); ++i) {
        const Transfer& t = transfers[static_cast<std::size_t>(i)];
        slices[static_cast<std::size_t>(t.from)].entries.push_back({ i, true, t.to });
        slices[static_cast<std::size_t>(t.to)].entries.push_back({ i, false, t.from });
    }
    return slices;
}

} // namespace

std::vector<const Transfer*> TransferPlan::pair(int from, int to) const
{
    std::vector<const Transfer*> out;
    for (const auto& t : transfers)
        if (t.from == from && t.to == to)
            out.push_back(&t);
    return out;
}

std::vector<int> TransferPlan::peersOf(int rank) const
{
    std::set<int> peers;
    for (const auto& e : ranks.at(static_cast<std::size_t>(rank)).entries)
        peers.insert(e.peer);
    return { peers.begin(), peers.end() };
}

std::vector<int> replicaPeers(const Schedule& schedule, int rank)
{
    std::vector<std::set<int>> holders(static_cast<std::size_t>(std::max(schedule.stages, 0)));
    for (int r = 0; r < static_cast<int>(schedule.order.size()); ++r)
        for (const Action& a : schedule.order[static_cast<std::size_t>(r)])
            for (int h = 0; h < a.size(); ++h)
                if (a.at(h).stage >= 0 && a.at(h).stage < schedule.stages)
                    holders[static_cast<std::size_t>(a.at(h).stage)].insert(r);
    std::set<int> peers;
    for (const auto& stageHolders : holders)
        if (stageHolders.count(rank))
            peers.insert(stageHolders.begin(), stageHolders.end());
    peers.erase(rank);
    return { peers.begin(), peers.end() };
}

TransferPlan deriveTransferPlan(const Schedule& schedule)
{
    const OpIndex index(schedule);
    LockstepRun run(schedule, index);
    TransferPlan plan;
    for (auto ran = run.round(); !ran.empty(); ran = run.round())
        for (const auto& [rank, slot] : ran)
            for (Transfer& t : transfersOfSlot(schedule, index, rank, slot)) {
                t.sequence = static_cast<int>(plan.transfers.size());
                plan.transfers.push_back(t);
            }
    if (!run.allFinished())
        throw RuntimeError("transfer plan: the schedule cannot complete; stuck: " + run.stuckText());
    plan.ranks = sliceByRank(plan.transfers, static_cast<int>(schedule.order.size()));
    return plan;
}

namespace {

std::string describe(const Transfer& t)
{
    return toString(t.producer) + " (rank " + std::to_string(t.from) + ") -> " + toString(t.consumer) + " (rank "
        + std::to_string(t.to) + ")";
}

/// The k-th send from p to q in p's sequence must be the k-th receive from p in q's sequence.
std::string fifoMismatch(const TransferPlan& plan)
{
    std::map<std::pair<int, int>, std::vector<int>> sent;
    std::map<std::pair<int, int>, std::vector<int>> received;
    for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r)
        for (const auto& e : plan.ranks[static_cast<std::size_t>(r)].entries)
            (e.send ? sent[{ r, e.peer }] : received[{ e.peer, r }]).push_back(e.transfer);
    for (const auto& [pair, sends] : sent)
        if (received[pair] != sends)
            return "ranks " + std::to_string(pair.first) + " -> " + std::to_string(pair.second)
                + " issue their sends and receives in different orders";
    return {};
}

/// One step of the replay: hosts run slots, each rank's transfers complete in order by rendezvous.
class Replay {
public:
    Replay(const Schedule& schedule, const TransferPlan& plan, ReceivePosting posting)
        : m_schedule(schedule)
        , m_plan(plan)
        , m_posting(posting)
        , m_slot(schedule.order.size(), 0)
        , m_front(schedule.order.size(), 0)
        , m_produced(plan.transfers.size(), false)
        , m_received(plan.transfers.size(), false)
        , m_inputs(schedule.order.size())
    {
        for (const auto& t : plan.transfers) {
            auto& inputs = m_inputs[static_cast<std::size_t>(t.to)];
            inputs.emplace(t.consumerSlot, t.sequence);
        }
    }

    /// Advances until nothing moves; returns the number of transfers matched.
    int run()
    {
        int matched = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (int r = 0; r < ranks(); ++r)
                while (runSlot(r))
                    moved = true;
            for (int r = 0; r < ranks(); ++r)
                while (matchFront(r)) {
                    ++matched;
                    moved = true;
                }
        }
        return matched;
    }

    bool completed() const
    {
        for (int r = 0; r < ranks(); ++r)
            if (!hostDone(r) || !commDone(r))
                return false;
        return true;
    }

    std::string diagnostic() const
    {
        std::string text;
        for (int r = 0; r < ranks(); ++r) {
            if (hostDone(r) && commDone(r))
                continue;
            text += (text.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": ";
            text += hostDone(r) ? "all slots run" : "waits to run " + toString(action(r));
            if (!commDone(r)) {
                const auto& e = front(r);
                text += std::string(", front transfer ") + (e.send ? "send " : "receive ")
                    + describe(m_plan.transfers[static_cast<std::size_t>(e.transfer)]);
            }
        }
        return text;
    }

private:
    int ranks() const { return static_cast<int>(m_schedule.order.size()); }
    std::size_t at(int r) const { return static_cast<std::size_t>(r); }
    bool hostDone(int r) const { return m_slot[at(r)] >= static_cast<int>(m_schedule.order[at(r)].size()); }
    bool commDone(int r) const { return m_front[at(r)] >= static_cast<int>(m_plan.ranks[at(r)].entries.size()); }
    const Action& action(int r) const { return m_schedule.order[at(r)][static_cast<std::size_t>(m_slot[at(r)])]; }
    const RankTransfers::Entry& front(int r) const
    {
        return m_plan.ranks[at(r)].entries[static_cast<std::size_t>(m_front[at(r)])];
    }

    /// Runs rank r's next slot when every input it receives has arrived; marks its sends produced.
    bool runSlot(int r)
    {
        if (hostDone(r))
            return false;
        const int slot = m_slot[at(r)];
        const auto [first, last] = m_inputs[at(r)].equal_range(slot);
        for (auto it = first; it != last; ++it)
            if (!m_received[static_cast<std::size_t>(it->second)])
                return false;
        for (const auto& t : m_plan.transfers)
            if (t.from == r && t.producerSlot == slot)
                m_produced[static_cast<std::size_t>(t.sequence)] = true;
        ++m_slot[at(r)];
        return true;
    }

    /// Whether rank r has issued its front transfer (a send once produced; a receive per the posting).
    bool issued(int r, const RankTransfers::Entry& e) const
    {
        const Transfer& t = m_plan.transfers[static_cast<std::size_t>(e.transfer)];
        if (e.send)
            return m_produced[static_cast<std::size_t>(e.transfer)];
        return m_posting == ReceivePosting::Eager || m_slot[at(r)] >= t.consumerSlot;
    }

    /// Completes rank r's front transfer when its peer has the same transfer at its front (rendezvous).
    bool matchFront(int r)
    {
        if (commDone(r) || commDone(front(r).peer))
            return false;
        const auto& mine = front(r);
        const auto& theirs = front(mine.peer);
        if (theirs.transfer != mine.transfer || !issued(r, mine) || !issued(mine.peer, theirs))
            return false;
        m_received[static_cast<std::size_t>(mine.transfer)] = true;
        ++m_front[at(r)];
        ++m_front[at(mine.peer)];
        return true;
    }

    const Schedule& m_schedule;
    const TransferPlan& m_plan;
    ReceivePosting m_posting;
    std::vector<int> m_slot; ///< per rank: next slot its host runs
    std::vector<int> m_front; ///< per rank: index of its first unfinished transfer
    std::vector<bool> m_produced;
    std::vector<bool> m_received;
    std::vector<std::multimap<int, int>> m_inputs; ///< per rank: consumer slot → transfer
};

} // namespace

ReplayResult simulateTransfers(const Schedule& schedule, const TransferPlan& plan, ReceivePosting posting)
{
    ReplayResult result;
    if (plan.ranks.size() != schedule.order.size()) {
        result.diagnostic = "the plan has " + std::to_string(plan.ranks.size()) + " ranks, the schedule "
            + std::to_string(schedule.order.size());
        return result;
    }
    if (const std::string mismatch = fifoMismatch(plan); !mismatch.empty()) {
        result.diagnostic = mismatch;
        return result;
    }
    Replay replay(schedule, plan, posting);
    result.matched = replay.run();
    result.completed = replay.completed();
    if (!result.completed)
        result.diagnostic = replay.diagnostic();
    return result;
}

} // namespace dps::runtime
