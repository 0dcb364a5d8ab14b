#include "compare.h"

#include "base/errors.h"
#include "schedule/generator.h"
#include "schedule/validator.h"

#include <algorithm>
#include <set>

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

namespace {

/// Parameters (elements) of the stages each rank runs, largest over ranks.
double parametersPerDevice(const Schedule& schedule, const CostModel& costs)
{
    double most = 0.0;
    for (const auto& row : schedule.order) {
        std::set<int> held;
        for (const auto& action : row)
            for (int k = 0; k < action.size(); ++k)
                held.insert(action.at(k).stage);
        double sum = 0.0;
        for (int s : held)
            if (s >= 0 && s < static_cast<int>(costs.stages.size()))
                sum += costs.stages[static_cast<std::size_t>(s)].parameterCount;
        most = std::max(most, sum);
    }
    return most;
}

std::string invalidReason(const ValidationReport& report)
{
    for (const auto& d : report.diagnostics)
        if (d.severity == Severity::Error) {
            const std::size_t more = report.errorCount() - 1;
            return "invalid schedule: " + format(d) + (more ? " (+" + std::to_string(more) + " more)" : "");
        }
    return "invalid schedule";
}

void fillFigures(VariantComparison& row, const Schedule& schedule, const CostModel& costs, const SimResult& result)
{
    row.parametersPerDevice = parametersPerDevice(schedule, costs);
    for (const auto& r : result.ranks) {
        row.peakActivationBytes = std::max(row.peakActivationBytes, r.peakActivationBytes);
        row.peakMemoryBytes = std::max(row.peakMemoryBytes, r.peakMemoryBytes);
        row.largestIdleUs = std::max(row.largestIdleUs, r.idleUs);
    }
    row.makespanUs = result.makespanUs;
    row.bubbleRate = result.bubbleRate;
    row.p2pBytes = result.totalP2pBytes;
    row.closedForm = closedFormLargestIdle(schedule, costs);
}

void simulateRow(VariantComparison& row, const Project& project, const Variant& variant, const CostAdjuster& adjust)
{
    const Schedule schedule = buildSchedule(project, variant);
    row.stages = schedule.stages;
    const ValidationReport report = validate(schedule);
    if (!report.valid()) {
        row.error = invalidReason(report);
        return;
    }
    CostModel costs = buildCostModel(project, variant);
    if (adjust)
        adjust(costs);
    const SimResult result = simulate(schedule, costs, { false, false });
    if (result.deadlocked) {
        row.error = "deadlock: " + result.deadlockMessage;
        return;
    }
    fillFigures(row, schedule, costs, result);
}

} // namespace

VariantComparison compareVariant(const Project& project, const Variant& variant, const CostAdjuster& adjust)
{
    VariantComparison row;
    row.variant = variant.name;
    row.kind = variant.kind;
    row.ranks = variant.ranks;
    row.microbatches = variant.microbatches;
    try {
        row.stages = stageCount(variant);
        simulateRow(row, project, variant, adjust);
    } catch (const Error& e) {
        row.error = e.what();
    }
    return row;
}

} // namespace dps
