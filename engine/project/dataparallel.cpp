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
    const model::Transformer t = transformerFor(project, variant);
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
    const int cp = std::max(1, variant.cp);
    const int shards = result.dp * cp; // gradients are summed over dp × cp (the context ranks too)
    const std::size_t ranks = static_cast<std::size_t>(std::max(0, schedule.ranks));
    result.denseBytes.assign(ranks, 0.0);
    result.expertBytes.assign(ranks, 0.0);
    result.us.assign(ranks, 0.0);
    result.interNode.assign(ranks, 0);
    if (shards <= 1)
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
    const int expertReplicas = std::max(1, shards / ep); // the replicas holding one expert (dp × cp ÷ ep)
    // Bytes of one gradient element: the training's gradient dtype for a transformer (its ZeRO-2/3 costs hold a
    // shard only), the stage's own ratio for the block model (4 on a CPU run).
    const bool transformer = project.model.kind == ModelKind::Transformer;
    const double transformerElement
        = project.training.present ? dtypeBytes(project.training.gradientDtype) : dtypeBytes(project.model.dtype);
    // ZeRO-3 gathers parameters in every F and B: the step end only reduce-scatters the gradients (half the ring).
    const double share = project.training.present && project.training.zero >= 3 ? 0.5 : 1.0;
    const std::int64_t tp = placement.tp;
    const ClusterDesc& cluster = project.cluster;
    const std::int64_t replicas = placement.replicas; // D = dp × cp here (ep divides it)
    for (std::size_t r = 0; r < ranks; ++r) {
        for (int s = 0; s < stages; ++s) {
            if (!held[r * static_cast<std::size_t>(stages) + static_cast<std::size_t>(s)])
                continue;
            const StageCost& c = costs.stages[static_cast<std::size_t>(s)];
            const double perElement = transformer ? transformerElement
                : c.parameterCount > 0.0          ? c.gradientBytes / c.parameterCount
                                                  : 0.0;
            const double expert = std::min(experts[static_cast<std::size_t>(s)], c.parameterCount);
            result.denseBytes[r] += (c.parameterCount - expert) * perElement;
            result.expertBytes[r] += expert * perElement;
        }
        // Device (r, d, t) = (r × D + d) × tp + t: the dense ring of tensor rank 0 is devices r·D·tp, (r·D + 1)·tp,
        // … (r·D + dp·cp − 1)·tp; the ring of one expert every ep-th of them.
        const std::int64_t first = static_cast<std::int64_t>(r) * replicas * tp;
        const bool denseInter = nodeOf(first, cluster.gpusPerNode)
            != nodeOf(first + static_cast<std::int64_t>(shards - 1) * tp, cluster.gpusPerNode);
        const bool expertInter = nodeOf(first, cluster.gpusPerNode)
            != nodeOf(first + static_cast<std::int64_t>(expertReplicas - 1) * ep * tp, cluster.gpusPerNode);
        result.interNode[r] = denseInter ? 1 : 0;
        const auto link = [&](bool inter, double bytes, int n) {
            return inter ? ringAllReduceUs(bytes, n, cluster.interNodeLatencyUs, cluster.interNodeBandwidthBytesPerUs)
                         : ringAllReduceUs(bytes, n, cluster.latencyUs, cluster.bandwidthBytesPerUs);
        };
        result.us[r] = share
            * (link(denseInter, result.denseBytes[r], shards)
                + link(expertInter, result.expertBytes[r], expertReplicas));
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
