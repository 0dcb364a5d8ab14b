#include "compare.h"

#include "base/errors.h"
#include "schedule/generator.h"

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
    return row;
}

} // namespace dps
