#pragma once
// The data-parallel gradient all-reduce at the end of a step: how long each pipeline rank's takes, and the step
// time it gives (makespan + the part of the all-reduce not hidden behind the cool-down). Formulas and the
// overlap rule: docs/planner.md "The step time".
#include "project.h"
#include "schedule/schedule.h"
#include "sim/costmodel.h"
#include "sim/simulator.h"

#include <vector>

namespace dps {

/// A ring all-reduce of `bytes` over `participants` devices on a link of `latencyUs` µs and
/// `bandwidthBytesPerUs` bytes/µs (0 = unlimited): 2(n − 1)/n × bytes ÷ bandwidth + 2(n − 1) × latency µs
/// (reduce-scatter then all-gather, each n − 1 steps of bytes ÷ n; Patarasuk & Yuan 2009, "Bandwidth optimal
/// all-reduce algorithms for clusters of workstations"; NCCL's ring). 0 when participants ≤ 1 or bytes ≤ 0.
double ringAllReduceUs(double bytes, int participants, double latencyUs, double bandwidthBytesPerUs);

/// The gradient all-reduce of one device of each pipeline rank.
struct DataParallelAllReduce {
    int dp = 1; ///< data-parallel replicas (the variant's dp)
    std::vector<double> denseBytes; ///< per rank: gradient bytes all-reduced over the dp replicas
    std::vector<double> expertBytes; ///< per rank: routed experts' gradient bytes, all-reduced over dp ÷ ep replicas
    std::vector<double> us; ///< per rank: time of both all-reduces, one after the other, µs
    std::vector<char> interNode; ///< per rank: 1 when the dense ring crosses nodes (the inter-node link is used)
};

/// The all-reduce of every rank of `variant`'s schedule: the stages a rank holds (the schedule's placement) give
/// their gradient bytes (costs.stages[s].gradientBytes, the routed experts' part from model::layerCost), the
/// placement rule (transformercost.h placementOf: device = r × D + d) says whether the dp replicas of the rank sit
/// in one node (the cluster's intra-node link) or not (its inter-node link, per device). All zero when dp = 1.
/// Throws FormatError as placementOf and effectivePartition.
DataParallelAllReduce dataParallelAllReduce(
    const Project& project, const Variant& variant, const Schedule& schedule, const CostModel& costs);

/// The step time: max(makespan, max over ranks of (rank's last slot end + its all-reduce)), µs. A rank's
/// all-reduce starts when its own last slot (its last W or B) ends, so the part of it that falls inside other
/// ranks' cool-down is hidden. `allReduceUs` may be empty (= makespan). Ranks of `sim` without an entry count 0.
double stepTimeUs(const SimResult& sim, const std::vector<double>& allReduceUs);

} // namespace dps
