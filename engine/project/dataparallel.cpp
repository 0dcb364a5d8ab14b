#include "dataparallel.h"

#include "transformercost.h"

#include <algorithm>
#include <cstdint>

// Formulas: docs/planner.md "The step time" (ring all-reduce, Patarasuk & Yuan 2009; placement rule of
// docs/model-library.md).

namespace dps {

double ringAllReduceUs(double bytes, int participants, double latencyUs, double bandwidthBytesPerUs)
{
    if (participants <= 1 || !(bytes > 0.0))
        return 0.0;
    const double n = participants;
    const double wire = bandwidthBytesPerUs > 0.0 ? 2.0 * (n - 1.0) / n * bytes / bandwidthBytesPerUs : 0.0;
    return wire + 2.0 * (n - 1.0) * latencyUs;
}

namespace {

/// Node of device `device` (numbered node by node, gpusPerNode to a node; 0 = one node).
std::int64_t nodeOf(std::int64_t device, int gpusPerNode)
{
    return gpusPerNode > 0 ? device / gpusPerNode : 0;
}

/// Routed experts' parameters (elements) one device holds for each stage of `variant`.
std::vector<double> expertParametersPerStage(
    const Project& project, const Variant& variant, int stages, const DevicePlacement& placement)
{
    std::vector<double> result(static_cast<std::size_t>(std::max(0, stages)), 0.0);
    if (project.model.kind != ModelKind::Transformer || !project.model.transformer.isMoe())
        return result;
    const model::Transformer t = transformerOf(project.model, microbatchSizeOf(project, variant));
    const std::vector<int> partition = effectivePartition(project, variant);
    const model::Recompute recompute = recomputeOf(project, variant);
    int layer = 0;
    for (std::size_t s = 0; s < partition.size() && s < result.size(); ++s)
        for (int i = 0; i < partition[s]; ++i, ++layer)
            if (t.isMoeLayer(layer))
                result[s] += model::layerCost(t, layer, recompute, placement.ep).expertParameters;
    return result;
}

} // namespace

DataParallelAllReduce dataParallelAllReduce(
    const Project& project, const Variant& variant, const Schedule& schedule, const CostModel& costs)
{
    DataParallelAllReduce result;
    result.dp = std::max(1, variant.dp);
    const std::size_t ranks = static_cast<std::size_t>(std::max(0, schedule.ranks));
    result.denseBytes.assign(ranks, 0.0);
    result.expertBytes.assign(ranks, 0.0);
    result.us.assign(ranks, 0.0);
    result.interNode.assign(ranks, 0);
    if (result.dp <= 1)
        return result;
    const DevicePlacement placement = placementOf(project, variant);
    const int stages = std::min(schedule.stages, static_cast<int>(costs.stages.size()));
    const std::vector<double> experts = expertParametersPerStage(project, variant, stages, placement);
    // held[r * stages + s]: rank r runs some microbatch of stage s (as staticMemoryPerRank).
    std::vector<char> held(ranks * static_cast<std::size_t>(std::max(0, stages)), 0);
    for (int s = 0; s < stages; ++s)
        for (int m = 0; m < schedule.microbatches; ++m) {
            const int r = schedule.placement.rankOf(s, m);
            if (r >= 0 && static_cast<std::size_t>(r) < ranks)
                held[static_cast<std::size_t>(r) * static_cast<std::size_t>(stages) + static_cast<std::size_t>(s)] = 1;
        }
    const model::Transformer& t = project.model.transformer;
    const int ep = project.model.kind == ModelKind::Transformer && t.isMoe() ? std::max(1, t.moe.ep) : 1;
    const int expertReplicas = std::max(1, result.dp / ep); // the replicas holding one expert (dp ÷ ep)
    const ClusterDesc& cluster = project.cluster;
    const std::int64_t replicas = placement.replicas; // D = dp here (ep divides dp)
    for (std::size_t r = 0; r < ranks; ++r) {
        for (int s = 0; s < stages; ++s) {
            if (!held[r * static_cast<std::size_t>(stages) + static_cast<std::size_t>(s)])
                continue;
            const StageCost& c = costs.stages[static_cast<std::size_t>(s)];
            const double perElement = c.parameterCount > 0.0 ? c.gradientBytes / c.parameterCount : 0.0;
            const double expert = std::min(experts[static_cast<std::size_t>(s)], c.parameterCount);
            result.denseBytes[r] += (c.parameterCount - expert) * perElement;
            result.expertBytes[r] += expert * perElement;
        }
        // Device (r, d) = r × D + d: the dense ring is devices r·D … r·D + dp − 1; the ring of one expert is
        // every ep-th of them (replica 0's: r·D, r·D + ep, …, r·D + (dp/ep − 1)·ep).
        const std::int64_t first = static_cast<std::int64_t>(r) * replicas;
        const bool denseInter
            = nodeOf(first, cluster.gpusPerNode) != nodeOf(first + result.dp - 1, cluster.gpusPerNode);
        const bool expertInter = nodeOf(first, cluster.gpusPerNode)
            != nodeOf(first + static_cast<std::int64_t>(expertReplicas - 1) * ep, cluster.gpusPerNode);
        result.interNode[r] = denseInter ? 1 : 0;
        const auto link = [&](bool inter, double bytes, int n) {
            return inter ? ringAllReduceUs(bytes, n, cluster.interNodeLatencyUs, cluster.interNodeBandwidthBytesPerUs)
                         : ringAllReduceUs(bytes, n, cluster.latencyUs, cluster.bandwidthBytesPerUs);
        };
        result.us[r] = link(denseInter, result.denseBytes[r], result.dp)
            + link(expertInter, result.expertBytes[r], expertReplicas);
    }
    return result;
}

double stepTimeUs(const SimResult& sim, const std::vector<double>& allReduceUs)
{
    double step = sim.makespanUs;
    for (std::size_t r = 0; r < sim.ranks.size() && r < allReduceUs.size(); ++r)
        step = std::max(step, sim.ranks[r].endUs + allReduceUs[r]);
    return step;
}

} // namespace dps
