// The sweep of every variant over the microbatch count or the F&B ratio (engine/project/sweep.h): its x
// values, and points that are predict()'s figures for the swept value.
#include "project/predict.h"
#include "project/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace dps;

TEST(Sweep, ValuesOfEachParameter)
{
    const Project project = defaultProject();
    // Even counts from 2 to max(8, 2 × 20 microbatches, 4 × 8 ranks) = 40.
    std::vector<double> even;
    for (int m = 2; m <= 40; m += 2)
        even.push_back(m);
    EXPECT_EQ(sweepValues(project, SweepParameter::Microbatches), even);
    const auto ratios = sweepValues(project, SweepParameter::OverlapRatio);
    ASSERT_EQ(ratios.size(), 11u);
    EXPECT_DOUBLE_EQ(ratios.front(), 0.5);
    EXPECT_DOUBLE_EQ(ratios.back(), 1.0);
    EXPECT_EQ(sweepParameterName(SweepParameter::Microbatches), "microbatches");
    EXPECT_EQ(sweepParameterName(SweepParameter::OverlapRatio), "F&B / (F + B)");
}

TEST(Sweep, APointIsThePredictionAtThatValue)
{
    const Project project = defaultProject();
    const SweepResult sweep = runSweep(project, SweepParameter::Microbatches);
    ASSERT_EQ(sweep.series.size(), 2u);
    for (std::size_t v = 0; v < 2; ++v) {
        const SweepSeries& series = sweep.series[v];
        EXPECT_EQ(series.variant, project.variants[v].name);
        const auto at20
            = std::find_if(series.points.begin(), series.points.end(), [](const SweepPoint& p) { return p.x == 20.0; });
        ASSERT_NE(at20, series.points.end()) << series.variant;
        const Prediction p = predict(project, project.variants[v]);
        EXPECT_DOUBLE_EQ(at20->makespanUs, p.makespanUs) << series.variant;
        EXPECT_DOUBLE_EQ(at20->bubbleRate, p.bubbleRate) << series.variant;
        if (v == 0) {
            EXPECT_NEAR(at20->makespanUs, 2365010.3104, 1e-3) << "the default DualPipe variant takes 2.365 s";
        }
    }
}

TEST(Sweep, SkipsTheSizesAKindRefuses)
{
    Project project = defaultProject();
    project.variants.resize(1);
    const SweepResult sweep = runSweep(project, SweepParameter::Microbatches);
    ASSERT_EQ(sweep.series.size(), 1u);
    const auto& points = sweep.series[0].points;
    // A point exactly where predict() has figures: a count the generator refuses leaves none (no exception).
    std::size_t refused = 0;
    for (double x : sweepValues(project, SweepParameter::Microbatches)) {
        const bool swept = std::any_of(points.begin(), points.end(), [x](const SweepPoint& p) { return p.x == x; });
        Variant v = project.variants[0];
        v.microbatches = static_cast<int>(x);
        const Prediction p = predict(project, v, PredictOptions::peaksOnly());
        EXPECT_EQ(swept, p.valid()) << x << ": " << p.error;
        refused += p.valid() ? 0 : 1;
    }
    EXPECT_EQ(points.size() + refused, 20u);
}
