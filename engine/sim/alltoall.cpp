#include "alltoall.h"

namespace dps {

std::vector<RankAllToAll> allToAllPerRank(const Schedule& schedule, const CostModel& costs)
{
    // A stage the cost model does not list has no chains (StageCost's defaults), as in the simulator.
    const StageCost unlisted {};
    const auto stageOf = [&](int s) -> const StageCost& {
        return s >= 0 && static_cast<std::size_t>(s) < costs.stages.size() ? costs.stages[static_cast<std::size_t>(s)]
                                                                           : unlisted;
    };
    std::vector<RankAllToAll> result(schedule.order.size());
    for (std::size_t r = 0; r < schedule.order.size(); ++r) {
        RankAllToAll& rank = result[r];
        for (const Action& a : schedule.order[r]) {
            if (a.overlapped) {
                const OverlapLayout layout = costs.overlapLayout(stageOf(a.op.stage), stageOf(a.backward.stage));
                rank.commUs += layout.commUs;
                rank.hiddenUs += layout.hiddenCommUs;
                continue;
            }
            const StageCost& stage = stageOf(a.op.stage);
            switch (a.op.kind) {
            case OpKind::F:
                rank.commUs += laneUs(stage.forwardChain, Chunk::Comm);
                break;
            case OpKind::I:
            case OpKind::B:
                rank.commUs += laneUs(stage.backwardChain, Chunk::Comm);
                break;
            case OpKind::W:
                break;
            }
        }
    }
    return result;
}

} // namespace dps
