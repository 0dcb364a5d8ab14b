#include "messageplan.h"

#include "simulator.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace dps {

namespace {

/// Where an op runs: its rank (−1: in no list) and slot × 2 + half, 8 bytes.
struct Where {
    std::int32_t rank = -1;
    std::int32_t slotHalf = 0;
    int position() const { return slotHalf >> 1; }
};

} // namespace

/// Each F, and each I or B (the first one a list holds), by (stage, microbatch).
struct MessagePlanner::Index {
    int stages = 0;
    int microbatches = 0;
    std::vector<Where> forward;
    std::vector<Where> backward;

    bool inRange(int stage, int microbatch) const
    {
        return stage >= 0 && stage < stages && microbatch >= 0 && microbatch < microbatches;
    }
    std::size_t key(int stage, int microbatch) const
    {
        return static_cast<std::size_t>(stage) * static_cast<std::size_t>(microbatches)
            + static_cast<std::size_t>(microbatch);
    }
    /// F(stage, m) when `forwardOp`, else I or B of (stage, m); nowhere outside the sizes.
    Where at(bool forwardOp, int stage, int microbatch) const
    {
        if (!inRange(stage, microbatch))
            return {};
        return (forwardOp ? forward : backward)[key(stage, microbatch)];
    }
};

MessagePlanner::MessagePlanner(const Schedule& schedule)
    : m_schedule(schedule)
    , m_index(std::make_unique<Index>())
{
    Index& x = *m_index;
    const SimSizes sizes = simulatedSizes(schedule);
    x.stages = sizes.stages;
    x.microbatches = sizes.microbatches;
    const std::size_t keys
        = static_cast<std::size_t>(std::max(x.stages, 0)) * static_cast<std::size_t>(std::max(x.microbatches, 0));
    x.forward.assign(keys, Where {});
    x.backward.assign(keys, Where {});
    for (std::size_t r = 0; r < schedule.order.size(); ++r) {
        const auto& row = schedule.order[r];
        for (std::size_t p = 0; p < row.size(); ++p)
            for (int h = 0; h < row[p].size(); ++h) {
                const Op& op = row[p].at(h);
                if (!x.inRange(op.stage, op.microbatch) || op.kind == OpKind::W)
                    continue;
                Where& w = (op.kind == OpKind::F ? x.forward : x.backward)[x.key(op.stage, op.microbatch)];
                if (w.rank < 0)
                    w = Where { static_cast<std::int32_t>(r),
                        static_cast<std::int32_t>(2 * p + static_cast<std::size_t>(h)) };
            }
    }
}

MessagePlanner::~MessagePlanner() = default;

namespace {

/// The receives and sends of rank r, in its list's order.
void planRank(const Schedule& schedule, const MessagePlanner::Index& ops, int r, RankMessagePlan& plan)
{
    const auto& row = schedule.order[static_cast<std::size_t>(r)];
    const int last = ops.stages - 1;
    std::size_t count = 0; // at most one receive and one send per op
    for (const Action& a : row)
        count += static_cast<std::size_t>(a.size());
    plan.receives.reserve(count);
    plan.sends.reserve(count);
    for (std::size_t p = 0; p < row.size(); ++p)
        for (int h = 0; h < row[p].size(); ++h) {
            const Op& op = row[p].at(h);
            if (!ops.inRange(op.stage, op.microbatch) || op.kind == OpKind::W)
                continue;
            const bool forward = op.kind == OpKind::F;
            const int position = static_cast<int>(p);
            // What it consumes: the activation of F(s−1) for an F, the gradient of I/B(s+1) for an I or B.
            const int from = forward ? op.stage - 1 : op.stage + 1;
            if (from >= 0 && from <= last) {
                const Where producer = ops.at(forward, from, op.microbatch);
                if (producer.rank >= 0 && producer.rank != r)
                    plan.receives.push_back(
                        { op.stage, op.microbatch, !forward, producer.rank, position, h, producer.position() });
            }
            // What it makes: the activation into F(s+1) for an F, the gradient into I/B(s−1) for an I or B.
            const int to = forward ? op.stage + 1 : op.stage - 1;
            if (to >= 0 && to <= last) {
                const Where consumer = ops.at(forward, to, op.microbatch);
                if (consumer.rank >= 0 && consumer.rank != r)
                    plan.sends.push_back(
                        { to, op.microbatch, !forward, consumer.rank, position, h, consumer.position() });
            }
        }
}

/// The receives from one peer, in consumption order, with the running maximum of the peer's slots.
struct PeerReceives {
    int peer = -1;
    std::vector<int> index; ///< into RankMessagePlan::receives
    std::vector<int> maxPeerPosition; ///< max of peerPosition over index[0..k]
    std::size_t cursor = 0; ///< the last search's answer
    int lastSearched = -1; ///< the peer slot it searched for
};

/// The group of `peer` (a rank talks to a few peers: a linear search).
PeerReceives* findPeer(std::vector<PeerReceives>& groups, int peer)
{
    for (PeerReceives& g : groups)
        if (g.peer == peer)
            return &g;
    return nullptr;
}

/// RankMessagePlan::releasedBy of one rank.
void planReleases(RankMessagePlan& plan)
{
    std::vector<PeerReceives> byPeer;
    for (std::size_t i = 0; i < plan.receives.size(); ++i) {
        PeerReceives* found = findPeer(byPeer, plan.receives[i].peer);
        if (!found) {
            byPeer.push_back(PeerReceives { plan.receives[i].peer, {}, {} });
            found = &byPeer.back();
        }
        PeerReceives& g = *found;
        const int before = g.maxPeerPosition.empty() ? -1 : g.maxPeerPosition.back();
        g.index.push_back(static_cast<int>(i));
        g.maxPeerPosition.push_back(std::max(before, plan.receives[i].peerPosition));
    }
    plan.releasedBy.assign(plan.sends.size(), -1);
    for (std::size_t j = 0; j < plan.sends.size(); ++j) {
        const PlannedMessage& send = plan.sends[j];
        PeerReceives* group = findPeer(byPeer, send.peer);
        if (!group)
            continue;
        PeerReceives& g = *group;
        // The first receive the peer made at or after its consumption of the send (the running maximum is
        // sorted: a walk on from the last answer while the searched slots grow, as they mostly do, else a
        // binary search), then, for a schedule where that one is consumed before the send is made (only an
        // invalid one), the next that qualifies.
        std::size_t k = g.cursor;
        if (send.peerPosition >= g.lastSearched) {
            while (k < g.maxPeerPosition.size() && g.maxPeerPosition[k] < send.peerPosition)
                ++k;
        } else {
            k = static_cast<std::size_t>(
                std::lower_bound(g.maxPeerPosition.begin(), g.maxPeerPosition.end(), send.peerPosition)
                - g.maxPeerPosition.begin());
        }
        g.cursor = k;
        g.lastSearched = send.peerPosition;
        for (; k < g.index.size(); ++k) {
            const PlannedMessage& in = plan.receives[static_cast<std::size_t>(g.index[k])];
            if (in.peerPosition >= send.peerPosition && in.position > send.position) {
                plan.releasedBy[j] = g.index[k];
                break;
            }
        }
    }
}

} // namespace

RankMessagePlan MessagePlanner::plan(int rank) const
{
    RankMessagePlan plan;
    if (rank < 0 || static_cast<std::size_t>(rank) >= m_schedule.order.size())
        return plan;
    planRank(m_schedule, *m_index, rank, plan);
    planReleases(plan);
    return plan;
}

std::vector<RankMessagePlan> planMessages(const Schedule& schedule)
{
    const MessagePlanner planner(schedule);
    std::vector<RankMessagePlan> plans(schedule.order.size());
    for (std::size_t r = 0; r < plans.size(); ++r)
        plans[r] = planner.plan(static_cast<int>(r));
    return plans;
}

} // namespace dps
