#include "costmodel.h"

namespace dps {

double CostModel::overlapTime(int fStage, int bStage) const
{
    const StageCost& f = stages.at(static_cast<std::size_t>(fStage));
    if (f.overlapUs)
        return *f.overlapUs;
    const StageCost& b = stages.at(static_cast<std::size_t>(bStage));
    return overlapFactor * (f.forwardUs + b.backward());
}

double CostModel::transferTime(double bytes) const
{
    const double wire = bandwidthBytesPerUs > 0.0 ? bytes / bandwidthBytesPerUs : 0.0;
    return latencyUs + wire;
}

void applyOverride(StageCost& stage, const StageCostOverride& o)
{
    stage.forwardUs = o.forwardUs.value_or(stage.forwardUs);
    stage.inputGradUs = o.inputGradUs.value_or(stage.inputGradUs);
    stage.weightGradUs = o.weightGradUs.value_or(stage.weightGradUs);
    if (o.backwardUs)
        stage.backwardUs = o.backwardUs;
    if (o.overlapUs)
        stage.overlapUs = o.overlapUs;
}

CostModel uniformCostModel(int stages, const UniformCosts& costs)
{
    StageCost stage;
    stage.forwardUs = costs.f;
    stage.inputGradUs = costs.i;
    stage.weightGradUs = costs.w;
    stage.backwardUs = costs.b;
    stage.overlapUs = costs.fb;
    stage.activationBytes = 1.0;
    stage.weightGradKeptBytes = 0.0;
    stage.messageBytes = 1.0;

    CostModel model;
    model.stages.assign(static_cast<std::size_t>(stages > 0 ? stages : 0), stage);
    model.latencyUs = costs.latencyUs;
    model.bandwidthBytesPerUs = costs.bandwidthBytesPerUs;
    model.overlapFactor = costs.overlapFactor;
    return model;
}

} // namespace dps
