#include "modelinfo.h"

#include "predict.h"
#include "transformercost.h"

namespace dps {

namespace {

/// Whole-model figures of the block model: each block holds 2·h·f parameters (W1, W2), all of them active; a
/// token's forward takes 2 FLOPs per parameter (4·h·f per block, modelcost.h) and training 3 × that (F, I and
/// W each 4·h·f, the zero-bubble paper's split).
void blockTotals(const ModelDesc& m, ModelInfo& info)
{
    const double perLayer = 2.0 * m.hidden * static_cast<double>(m.ffn);
    info.parametersTotal = m.layers * perLayer;
    info.parametersActive = info.parametersTotal;
    info.flopsPerTokenTraining = 3.0 * 2.0 * info.parametersTotal;
}

} // namespace

double trainingFlopsPerToken(const Project& project)
{
    if (project.model.kind == ModelKind::Transformer)
        return model::totals(transformerOf(project.model)).flopsPerTokenTraining;
    ModelInfo info;
    blockTotals(project.model, info);
    return info.flopsPerTokenTraining;
}

bool fp8Gemms(const Project& project)
{
    return project.training.present && project.training.gemmBytes == 1 && project.cluster.deviceFlopsFp8 > 0.0;
}

double gemmPeakFlops(const Project& project)
{
    return fp8Gemms(project) ? project.cluster.deviceFlopsFp8 : project.cluster.deviceFlops;
}

ModelInfo modelInfo(const Project& project, const Variant& variant)
{
    ModelInfo info;
    info.tp = variant.tp;
    info.cp = variant.cp;
    info.sequenceParallel = variant.sequenceParallel;
    info.zero = project.training.zero;
    if (project.model.kind == ModelKind::Transformer) {
        const model::Totals totals = model::totals(transformerOf(project.model, microbatchSizeOf(project, variant)));
        info.parametersTotal = totals.parametersTotal;
        info.parametersActive = totals.parametersActive;
        info.flopsPerTokenTraining = totals.flopsPerTokenTraining;
    } else {
        blockTotals(project.model, info);
    }

    const std::vector<int> partition = effectivePartition(project, variant);
    const CostModel costs = buildCostModel(project, variant);
    for (std::size_t s = 0; s < costs.stages.size(); ++s) {
        const StageCost& c = costs.stages[s];
        StageInfo stage;
        stage.stage = static_cast<int>(s);
        stage.layers = s < partition.size() ? partition[s] : 0;
        stage.parameters = c.parameterCount;
        stage.fUs = c.forwardUs;
        stage.iUs = c.inputGradUs;
        stage.wUs = c.weightGradUs;
        stage.bUs = c.backward();
        const OverlapLayout slot = costs.overlapLayout(stage.stage, stage.stage);
        stage.fbUs = slot.durationUs;
        for (const LaneSegment& segment : slot.segments)
            (segment.lane == Chunk::Compute ? stage.fbComputeUs : stage.fbCommUs) += segment.endUs - segment.startUs;
        stage.activationBytes = c.activationBytes;
        stage.a2aBytes = c.a2aBytes;
        info.stages.push_back(stage);
    }

    const Schedule schedule = buildSchedule(project, variant);
    const std::vector<StaticMemory> memory = staticMemoryPerRank(schedule, costs);
    for (std::size_t r = 0; r < memory.size(); ++r)
        info.ranks.push_back({ static_cast<int>(r), memory[r].parameterCount, memory[r].parameters });
    return info;
}

} // namespace dps
