#pragma once
// The expert all-to-all a schedule's slots hold on each rank, and how much of it the overlapped F&B slots hide
// behind the other half's compute (DualPipe's reason to exist: DeepSeek-V3 report §3.2.1), from the cost
// model's chains and two-lane layouts (CostModel::overlapLayout). The run report prints it beside what a run
// measured (engine/launch/report.h); docs/layers.md, "Expert parallelism".
#include "costmodel.h"
#include "schedule/schedule.h"

#include <vector>

namespace dps {

/// One rank's expert all-to-all in one step.
struct RankAllToAll {
    double commUs = 0.0; ///< all-to-all time of every slot of the rank, µs
    double hiddenUs = 0.0; ///< of it, the time the other half of an overlapped slot computed meanwhile, µs
    /// hiddenUs ÷ commUs; 0 without all-to-all.
    double hiddenShare() const { return commUs > 0.0 ? hiddenUs / commUs : 0.0; }
};

/// Per rank of `schedule`: a plain slot's all-to-all is its stage chain's communication, waited for (F: the
/// forward chain's, I and B: the backward chain's, where our engine's MoE backward exchanges; W: none); an
/// overlapped slot's is OverlapLayout::commUs, of which hiddenCommUs is hidden. Stages without chains have
/// none, as has a stage the cost model does not list. Never throws.
std::vector<RankAllToAll> allToAllPerRank(const Schedule& schedule, const CostModel& costs);

} // namespace dps
