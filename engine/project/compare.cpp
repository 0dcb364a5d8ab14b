#include "compare.h"

#include "base/errors.h"
#include "schedule/generator.h"
#include "transformercost.h"

namespace dps {

Variant variantForKind(const Project& project, ScheduleKind kind, const Variant& like)
{
    const int stages = stageCount(like);
    const int perRank = stageCountFor(kind, 1, defaultStagesPerRank(kind));
    if (perRank <= 0 || stages % perRank != 0)
        throw ConstraintError("compare.stage-count",
            std::string(kindDisplayName(kind)) + " holds " + std::to_string(perRank)
                + " stages per rank; the project's " + std::to_string(stages) + " stages do not divide");
    Variant v;
    v.name = std::string(kindName(kind));
    v.kind = kind;
    v.ranks = stages / perRank;
    v.microbatches = like.microbatches;
    v.layerPartition = effectivePartition(project, like);
    return v;
}

int devicesOf(const Project& project, const Variant& variant)
{
    return variant.ranks * placementOf(project, variant).replicas;
}

Variant onSameDevices(const Project& project, const Variant& variant, int devices)
{
    const int own = devicesOf(project, variant);
    if (own == devices)
        return variant;
    if (own <= 0 || devices % own != 0)
        throw ConstraintError("compare.same-devices",
            "its " + std::to_string(own) + " devices do not divide the " + std::to_string(devices)
                + " devices compared");
    const int k = devices / own;
    if (variant.microbatches % k != 0)
        throw ConstraintError("compare.same-devices",
            std::to_string(variant.microbatches) + " microbatches cannot be split over " + std::to_string(k)
                + " times the data-parallel replicas at the same global batch");
    Variant v = variant;
    v.dp = std::max(1, variant.dp) * k;
    v.microbatches = variant.microbatches / k;
    v.order.reset(); // a hand-edited order (and its sends and receives) is for the old microbatch count
    v.commOrder.reset();
    return v;
}

VariantComparison compareVariant(const Project& project, const Variant& variant, const CostAdjuster& adjust)
{
    return compareVariant(project, variant, PredictOptions::peaksOnly(adjust));
}

VariantComparison compareVariant(const Project& project, const Variant& variant, const PredictOptions& options)
{
    VariantComparison row;
    row.variant = variant.name;
    row.kind = variant.kind;
    row.ranks = variant.ranks;
    row.microbatches = variant.microbatches;
    row.tp = std::max(1, variant.tp);
    row.cp = std::max(1, variant.cp);
    row.zero = project.training.present ? project.training.zero : 0;
    const Prediction p = predict(project, variant, options);
    if (p.schedule) {
        row.stages = p.schedule->stages;
    } else {
        try {
            row.stages = stageCount(variant);
        } catch (const Error&) {
            row.stages = 0; // the sizes cannot even give a stage count: p.error says why
        }
    }
    row.error = p.error;
    if (!p.valid())
        return row;
    row.parametersPerDevice = p.parametersPerDevice;
    row.peakActivationBytes = p.peakActivationBytes;
    row.peakMemoryBytes = p.peakMemoryBytes;
    row.makespanUs = p.makespanUs;
    row.bubbleRate = p.bubbleRate;
    row.largestIdleUs = p.largestIdleUs;
    row.p2pBytes = p.p2pBytes;
    row.closedForm = p.closedForm;
    row.dp = p.dp;
    row.mfu = p.mfu;
    row.devices = p.devices;
    row.stepUs = p.stepUs;
    row.tokensPerStep = p.tokensPerStep;
    row.tokensPerSecond = p.tokensPerSecond();
    row.tokensPerSecondPerDevice = p.tokensPerSecondPerDevice();
    return row;
}

} // namespace dps
