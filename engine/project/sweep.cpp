#include "sweep.h"

#include "predict.h"

#include <algorithm>
#include <cmath>

namespace dps {

std::vector<double> sweepValues(const Project& project, SweepParameter parameter)
{
    std::vector<double> values;
    if (parameter == SweepParameter::OverlapRatio) {
        for (int i = 0; i <= 10; ++i)
            values.push_back(0.5 + 0.05 * i);
        return values;
    }
    int top = 8;
    for (const auto& v : project.variants)
        top = std::max({ top, 2 * v.microbatches, 4 * v.ranks });
    top = std::min(top, 128);
    for (int m = 2; m <= top; m += 2)
        values.push_back(m);
    return values;
}

namespace {

/// The project with the swept value applied to `variant` (and, for the ratio, to the costs).
Project withValue(Project project, Variant& variant, SweepParameter parameter, double x)
{
    if (parameter == SweepParameter::Microbatches) {
        variant.microbatches = static_cast<int>(std::lround(x));
    } else {
        project.costs.overlapFactor = x;
        for (auto& stage : project.costs.stages)
            stage.overlapUs.reset();
    }
    variant.order.reset();
    variant.commOrder.reset();
    return project;
}

SweepSeries sweepVariant(
    const Project& project, const Variant& original, SweepParameter parameter, const std::vector<double>& values)
{
    SweepSeries series { original.name, {} };
    const PredictOptions options = PredictOptions::peaksOnly();
    for (double x : values) {
        Variant variant = original;
        const Project p = withValue(project, variant, parameter, x);
        const Prediction prediction = predict(p, variant, options);
        if (prediction.valid()) // a size this kind refuses, an invalid schedule or a deadlock has no point
            series.points.push_back({ x, prediction.makespanUs, prediction.bubbleRate });
    }
    return series;
}

} // namespace

SweepResult runSweep(const Project& project, SweepParameter parameter)
{
    SweepResult result { parameter, {} };
    const auto values = sweepValues(project, parameter);
    for (const auto& variant : project.variants)
        result.series.push_back(sweepVariant(project, variant, parameter, values));
    return result;
}

std::string sweepParameterName(SweepParameter parameter)
{
    return parameter == SweepParameter::Microbatches ? "microbatches" : "F&B / (F + B)";
}

} // namespace dps
