// Calibration: a trace made from a known cost model gives that model back.
#include "launch/calibrate.h"
#include "schedule/generator.h"
#include "support/synthetic.h"

#include <gtest/gtest.h>

using namespace dps;
using launch::calibrate;

namespace {

/// Integer times throughout (so every measured time is exact): F, I, W per stage, B = I + W, overlap
/// factor 0.75 over F + B sums divisible by 4, latency 7 µs, 100 bytes/µs, message sizes 1000·(s+1).
CostModel knownModel(int stages)
{
    CostModel m;
    for (int s = 0; s < stages; ++s) {
        StageCost c;
        c.forwardUs = 40 + 4 * s;
        c.inputGradUs = 32 + 4 * s;
        c.weightGradUs = 20 + 4 * s;
        c.messageBytes = 1000.0 * (s + 1);
        m.stages.push_back(c);
    }
    m.overlapFactor = 0.75;
    m.latencyUs = 7;
    m.bandwidthBytesPerUs = 100;
    return m;
}

/// A trace through measured.json text, as calibrate reads it in practice.
MeasuredTrace throughText(const MeasuredTrace& trace)
{
    return parseMeasured(serializeMeasured(trace));
}

} // namespace

TEST(Calibrate, MedianOfOddAndEvenCounts)
{
    EXPECT_DOUBLE_EQ(launch::median({}), 0.0);
    EXPECT_DOUBLE_EQ(launch::median({ 5, 1, 3 }), 3.0);
    EXPECT_DOUBLE_EQ(launch::median({ 4, 1, 3, 2 }), 2.5);
}

TEST(Calibrate, RecoversKnownFIWAndBExactly)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 2, 8, 0 });
    const CostModel model = knownModel(schedule.stages);
    const launch::Calibration c = calibrate(throughText(test::syntheticTrace(schedule, model, 3)), schedule.stages);
    ASSERT_EQ(c.costs.stages.size(), 4u);
    for (int s = 0; s < 4; ++s) {
        SCOPED_TRACE("stage " + std::to_string(s));
        const StageCostOverride& o = c.costs.stages[static_cast<std::size_t>(s)];
        const StageCost& want = model.stages[static_cast<std::size_t>(s)];
        ASSERT_TRUE(o.forwardUs && o.inputGradUs && o.weightGradUs);
        EXPECT_EQ(*o.forwardUs, want.forwardUs);
        EXPECT_EQ(*o.inputGradUs, want.inputGradUs);
        EXPECT_EQ(*o.weightGradUs, want.weightGradUs);
        if (o.backwardUs) {
            EXPECT_EQ(*o.backwardUs, want.backward());
        }
    }
    ASSERT_TRUE(c.costs.overlapFactor);
    EXPECT_EQ(*c.costs.overlapFactor, 0.75);
    EXPECT_GT(c.overlapSamples, 0);
}

TEST(Calibrate, RecoversLatencyAndBandwidthFromWaitedMessages)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 2, 8, 0 });
    const CostModel model = knownModel(schedule.stages);
    const launch::Calibration c = calibrate(throughText(test::syntheticTrace(schedule, model, 3)), schedule.stages);
    ASSERT_EQ(c.p2pSizes, 2) << launch::formatCalibration(c);
    ASSERT_TRUE(c.costs.latencyUs && c.costs.bandwidthBytesPerUs);
    EXPECT_NEAR(*c.costs.latencyUs, 7.0, 1e-9);
    EXPECT_NEAR(*c.costs.bandwidthBytesPerUs, 100.0, 1e-9);
}

TEST(Calibrate, CalibratedModelPredictsTheMeasuredMakespan)
{
    for (const auto kind : { ScheduleKind::DualPipeV, ScheduleKind::ZBH1, ScheduleKind::OneFOneB }) {
        const Schedule schedule = generate({ kind, kind == ScheduleKind::DualPipeV ? 2 : 4, 8, 0 });
        SCOPED_TRACE(std::string(kindName(kind)));
        const CostModel model = knownModel(schedule.stages);
        const MeasuredTrace trace = test::syntheticTrace(schedule, model, 1);
        const launch::Calibration c = calibrate(trace, schedule.stages);
        CostSettings settings;
        applyCostsFile(settings, c.costs);
        CostModel fitted = knownModel(schedule.stages);
        for (StageCost& s : fitted.stages)
            s.forwardUs = s.inputGradUs = s.weightGradUs = 1; // must come from the fit
        applyCostSettings(fitted, settings);
        EXPECT_NEAR(simulate(schedule, fitted).makespanUs, trace.medianMakespanUs(), 1e-6)
            << launch::formatCalibration(c);
    }
}

TEST(Calibrate, OneMessageSizeBecomesLatencyWithUnlimitedBandwidth)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 4, 0 });
    CostModel model = knownModel(schedule.stages);
    for (StageCost& s : model.stages)
        s.messageBytes = 500;
    const launch::Calibration c = calibrate(test::syntheticTrace(schedule, model, 1), 0);
    ASSERT_EQ(c.p2pSizes, 1);
    EXPECT_NEAR(*c.costs.latencyUs, 12.0, 1e-9);
    EXPECT_EQ(*c.costs.bandwidthBytesPerUs, 0.0);
    EXPECT_FALSE(c.notes.empty());
}

TEST(Calibrate, WritesTheProjectsCostFileFormat)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 2, 8, 0 });
    const launch::Calibration c = calibrate(test::syntheticTrace(schedule, knownModel(4), 1), 4);
    const CostsFile back = parseCostsFile(serializeCostsFile(c.costs));
    ASSERT_EQ(back.stages.size(), 4u);
    EXPECT_EQ(back.stages[2].forwardUs, c.costs.stages[2].forwardUs);
    EXPECT_EQ(back.overlapFactor, c.costs.overlapFactor);
    EXPECT_EQ(back.latencyUs, c.costs.latencyUs);
}

TEST(Calibrate, StageCountComesFromTheRecordedProject)
{
    Project p = defaultProject();
    MeasuredTrace t;
    t.projectJson = serializeProject(p);
    t.variant = "dualpipev";
    EXPECT_EQ(launch::measuredStageCount(t), 8);
    EXPECT_EQ(launch::measuredStageCount(MeasuredTrace {}), 0);
}
