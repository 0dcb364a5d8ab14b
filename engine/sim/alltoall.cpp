#include "alltoall.h"

namespace dps {

namespace {

/// The communication chunks of `chain` together, µs.
double communicationUs(const std::vector<Chunk>& chain)
{
    double us = 0.0;
    for (const Chunk& c : chain)
        if (c.lane == Chunk::Comm)
            us += c.us;
    return us;
}

} // namespace

std::vector<RankAllToAll> allToAllPerRank(const Schedule& schedule, const CostModel& costs)
{
    std::vector<RankAllToAll> result(schedule.order.size());
    for (std::size_t r = 0; r < schedule.order.size(); ++r) {
        RankAllToAll& rank = result[r];
        for (const Action& a : schedule.order[r]) {
            if (a.overlapped) {
                const OverlapLayout layout = costs.overlapLayout(a.op.stage, a.backward.stage);
                rank.commUs += layout.commUs;
                rank.hiddenUs += layout.hiddenCommUs;
                continue;
            }
            const StageCost& stage = costs.stages.at(static_cast<std::size_t>(a.op.stage));
            switch (a.op.kind) {
            case OpKind::F:
                rank.commUs += communicationUs(stage.forwardChain);
                break;
            case OpKind::I:
            case OpKind::B:
                rank.commUs += communicationUs(stage.backwardChain);
                break;
            case OpKind::W:
                break;
            }
        }
    }
    return result;
}

} // namespace dps
