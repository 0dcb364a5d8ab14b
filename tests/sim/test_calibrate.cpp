// Calibration: measured slots made from a known cost model give that model back.
#include "project/project.h"
#include "schedule/generator.h"
#include "sim/calibrate.h"
#include "sim/simulator.h"
#include "support/synthetic.h"
#include "trace/measured.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace dps;

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

/// The slots of a synthetic run, through measured.json text as calibrate reads them in practice.
std::vector<MeasuredSlot> throughText(const MeasuredTrace& trace)
{
    return measuredSlots(parseMeasured(serializeMeasured(trace)));
}

/// A single-op slot.
MeasuredSlot slot(int rank, const std::string& action, double startUs, double endUs, double waitUs = 0.0,
    std::int64_t bytesReceived = 0)
{
    return { rank, 0, parseAction(action), startUs, endUs, waitUs, bytesReceived };
}

} // namespace

TEST(Calibrate, MedianOfOddAndEvenCounts)
{
    EXPECT_DOUBLE_EQ(median({}), 0.0);
    EXPECT_DOUBLE_EQ(median({ 5, 1, 3 }), 3.0);
    EXPECT_DOUBLE_EQ(median({ 4, 1, 3, 2 }), 2.0); // the low median (base/stats.h)
}

TEST(Calibrate, RecoversKnownFIWAndBExactly)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 2, 8, 0 });
    const CostModel model = knownModel(schedule.stages);
    const Calibration c = calibrate(throughText(test::syntheticTrace(schedule, model, 3)), schedule.stages);
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
    // F&B of each forward stage: DualPipeV on 2 ranks pairs the forward of stage s with the backward of 3 − s,
    // 0.75 × (F + I + W): (0F;3B) 0.75 × (40 + 76) = 87 µs, (3F;0B) 0.75 × (52 + 52) = 78 µs.
    for (int s = 0; s < 4; ++s) {
        SCOPED_TRACE("stage " + std::to_string(s));
        const StageCostOverride& o = c.costs.stages[static_cast<std::size_t>(s)];
        ASSERT_TRUE(o.overlapUs);
        EXPECT_EQ(*o.overlapUs,
            0.75 * (model.stages[static_cast<std::size_t>(s)].forwardUs + model.stages[std::size_t(3 - s)].backward()));
        EXPECT_GT(c.samples[static_cast<std::size_t>(s)][4], 0);
    }
    EXPECT_EQ(*c.costs.stages[0].overlapUs, 87.0);
    EXPECT_EQ(*c.costs.stages[3].overlapUs, 78.0);
    // Every slot is its fitted time exactly: all residuals 0, one per slot of the 3 steps.
    EXPECT_EQ(c.residuals.size(), 3 * (schedule.order[0].size() + schedule.order[1].size()));
    for (double r : c.residuals)
        EXPECT_EQ(r, 0.0);
}

TEST(Calibrate, KeepsEachSlotsResidualAgainstItsFit)
{
    // Three 0F slots of 10, 10 and 14 µs (10 % of 3 cuts none: fitted at their mean, 34 / 3) and an overlapped slot
    // of 30 µs, its own fit.
    const std::vector<MeasuredSlot> slots { slot(0, "0F0", 0, 10), slot(0, "0F1", 10, 20), slot(0, "0F2", 20, 34),
        slot(0, "(0F3;0B0)OVERLAP_F_B", 34, 64) };
    const Calibration c = calibrate(slots, 1);
    ASSERT_TRUE(c.costs.stages[0].forwardUs);
    EXPECT_DOUBLE_EQ(*c.costs.stages[0].forwardUs, 11.333); // rounded to 1 ns
    ASSERT_EQ(c.residuals.size(), 4u);
    EXPECT_NEAR(c.residuals[0], 10.0 / 11.333 - 1.0, 1e-12);
    EXPECT_NEAR(c.residuals[1], 10.0 / 11.333 - 1.0, 1e-12);
    EXPECT_NEAR(c.residuals[2], 14.0 / 11.333 - 1.0, 1e-12);
    EXPECT_EQ(c.residuals[3], 0.0);
    // Their percentiles are the fit's slot variation, rounded to 1e-4: sorted, the residuals are r0 = r1 < r3 = 0 < r2,
    // so p0 is r0, p50 lies halfway between r1 (index 1) and r3 (index 2), and p100 is r2.
    const double low = std::round((10.0 / 11.333 - 1.0) * 1e4) / 1e4;
    ASSERT_EQ(c.costs.slotVariation.size(), 101u);
    EXPECT_DOUBLE_EQ(c.costs.slotVariation.front(), low);
    EXPECT_DOUBLE_EQ(c.costs.slotVariation[50], std::round((10.0 / 11.333 - 1.0) / 2.0 * 1e4) / 1e4);
    EXPECT_DOUBLE_EQ(c.costs.slotVariation.back(), std::round((14.0 / 11.333 - 1.0) * 1e4) / 1e4);
    EXPECT_TRUE(std::is_sorted(c.costs.slotVariation.begin(), c.costs.slotVariation.end()));
}

TEST(Calibrate, FitsTheMeanOfASlotKindWithoutItsLowestAndHighestTenth)
{
    // Ten 0F slots: 9 of 10 µs and one of 100 µs (other work held the rank): the 100 and one 10 are left out, so F
    // is 10 µs. Eight of 10 and two of 20 give 11.25 (one 10 and one 20 left out), where the median stays 10.
    std::vector<MeasuredSlot> held, slower;
    for (int m = 0; m < 10; ++m) {
        held.push_back(slot(0, "0F" + std::to_string(m), 100.0 * m, 100.0 * m + (m == 4 ? 100.0 : 10.0)));
        slower.push_back(slot(0, "0F" + std::to_string(m), 100.0 * m, 100.0 * m + (m >= 8 ? 20.0 : 10.0)));
    }
    EXPECT_DOUBLE_EQ(*calibrate(held, 1).costs.stages[0].forwardUs, 10.0);
    EXPECT_DOUBLE_EQ(*calibrate(slower, 1).costs.stages[0].forwardUs, 11.25); // (7 × 10 + 20) / 8
}

TEST(Calibrate, RecoversLatencyAndBandwidthFromWaitedMessages)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 2, 8, 0 });
    const CostModel model = knownModel(schedule.stages);
    const Calibration c = calibrate(throughText(test::syntheticTrace(schedule, model, 3)), schedule.stages);
    ASSERT_EQ(c.p2pSizes, 2) << formatCalibration(c);
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
        const Calibration c = calibrate(measuredSlots(trace), schedule.stages);
        CostSettings settings;
        applyCostsFile(settings, c.costs);
        CostModel fitted = knownModel(schedule.stages);
        for (StageCost& s : fitted.stages)
            s.forwardUs = s.inputGradUs = s.weightGradUs = 1; // must come from the fit
        applyCostSettings(fitted, settings);
        EXPECT_NEAR(simulate(schedule, fitted).makespanUs, trace.medianMakespanUs(), 1e-6) << formatCalibration(c);
    }
}

TEST(Calibrate, OneMessageSizeBecomesLatencyWithUnlimitedBandwidth)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 4, 0 });
    CostModel model = knownModel(schedule.stages);
    for (StageCost& s : model.stages)
        s.messageBytes = 500;
    const Calibration c = calibrate(measuredSlots(test::syntheticTrace(schedule, model, 1)), 0);
    ASSERT_EQ(c.p2pSizes, 1);
    EXPECT_NEAR(*c.costs.latencyUs, 12.0, 1e-9);
    EXPECT_EQ(*c.costs.bandwidthBytesPerUs, 0.0);
    EXPECT_FALSE(c.notes.empty());
}

TEST(Calibrate, WritesTheProjectsCostFileFormat)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 2, 8, 0 });
    const Calibration c = calibrate(measuredSlots(test::syntheticTrace(schedule, knownModel(4), 1)), 4);
    const CostsFile back = parseCostsFile(serializeCostsFile(c.costs));
    ASSERT_EQ(back.stages.size(), 4u);
    EXPECT_EQ(back.stages[2].forwardUs, c.costs.stages[2].forwardUs);
    EXPECT_EQ(back.overlapFactor, c.costs.overlapFactor);
    EXPECT_EQ(back.latencyUs, c.costs.latencyUs);
    EXPECT_EQ(back.slotVariation, c.costs.slotVariation); // every slot at its fit: 101 zeros
    EXPECT_EQ(back.slotVariation, std::vector<double>(101, 0.0));
}

TEST(Calibrate, FitsHandMadeSlotsWithoutATrace)
{
    // Two ranks, stages 0 and 1, one step: 1F0 waits for 0F0's activation (2000 bytes) from rank 0.
    const std::vector<MeasuredSlot> slots {
        slot(0, "0F0", 0, 10),
        slot(1, "1F0", 0, 28.5, 12.5, 2000), // arrives at 12.5: transfer 2.5 µs; busy 16 µs
        slot(1, "1B0", 28.5, 58.5), // busy 30 µs
        slot(0, "0I0", 10, 75, 45, 2000), // arrives at 55: transfer 55 − 58.5 < 0 → clamped in the fit
        slot(0, "0W0", 75, 80),
    };
    EXPECT_EQ(slotStageCount(slots), 2);
    const Calibration c = calibrate(slots);
    ASSERT_EQ(c.costs.stages.size(), 2u);
    EXPECT_EQ(c.costs.stages[0].forwardUs, 10.0);
    EXPECT_EQ(c.costs.stages[0].inputGradUs, 20.0);
    EXPECT_EQ(c.costs.stages[0].weightGradUs, 5.0);
    EXPECT_FALSE(c.costs.stages[0].backwardUs);
    EXPECT_EQ(c.costs.stages[1].forwardUs, 16.0);
    EXPECT_EQ(c.costs.stages[1].backwardUs, 30.0);
    EXPECT_EQ(c.samples[0], (std::array<int, 5> { 1, 1, 1, 0, 0 }));
    EXPECT_EQ(c.samples[1], (std::array<int, 5> { 1, 0, 0, 1, 0 }));
    EXPECT_EQ(c.p2pSamples, 2);
    EXPECT_EQ(c.p2pSizes, 1);
    EXPECT_EQ(c.costs.latencyUs, 0.0); // the low median of 2.5 and −3.5 = −3.5, clamped
    EXPECT_EQ(c.costs.bandwidthBytesPerUs, 0.0);
    EXPECT_FALSE(c.costs.overlapFactor);
    EXPECT_EQ(c.overlapSamples, 0);
}

TEST(Calibrate, AMessageThatWasAlreadyThereIsNoTransferSample)
{
    // 1F0 waits for 0F0 (ends at 10) from t = 0: a transfer of 2.5 µs. 1F1 starts at 40, after 0F1 ended at 20:
    // its 0.5 µs "wait" is the receive call's, and 40.5 − 20 = 20.5 µs is no transfer time.
    const std::vector<MeasuredSlot> slots {
        slot(0, "0F0", 0, 10),
        slot(0, "0F1", 10, 20),
        slot(1, "1F0", 0, 40, 12.5, 2000),
        slot(1, "1F1", 40, 60.5, 0.5, 2000),
    };
    const Calibration c = calibrate(slots, 2);
    EXPECT_EQ(c.p2pSamples, 1);
    EXPECT_EQ(c.costs.latencyUs, 2.5);
}

TEST(Calibrate, FormatsTheFitWithTheOneTimeRule)
{
    const std::vector<MeasuredSlot> slots {
        slot(0, "0F0", 0, 10),
        slot(1, "1F0", 0, 1520.25, 12.5, 2000), // arrives at 12.5: transfer 2.5 µs; busy 1507.75 µs
        slot(1, "1B0", 1520.25, 1550.25), // busy 30 µs
        slot(0, "0B0", 10, 1600.25, 1560.25, 2000), // arrives at 1570.25: transfer 20 µs; busy 30 µs
        // The latency: the low median of the transfers 2.5 and 20 µs (one message size).
        slot(0, "(0F1;1B1)OVERLAP_F_B", 1600.25, 1630.25), // busy 30 = 0.75 × (F0 10 + B1 30)
    };
    const Calibration c = calibrate(slots, 2);
    EXPECT_EQ(formatCalibration(c),
        "stage           F           I           W           B         F&B   samples F/I/W/B/F&B\n"
        "    0       10 µs           -           -       30 µs       30 µs   1/0/0/1/1\n"
        "    1     1.51 ms           -           -       30 µs           -   1/0/0/1/0\n"
        "overlap factor: 0.75 (1 overlapped slot)\n"
        "p2p latency: 2.5 µs, bandwidth: unlimited (2 messages, 1 size)\n"
        "note: one message size: its whole transfer time taken as latency, bandwidth unlimited\n");
}

TEST(Calibrate, NeverThrowsOnNothingMeasured)
{
    const Calibration c = calibrate({}, 0);
    EXPECT_TRUE(c.costs.stages.empty());
    EXPECT_EQ(formatCalibration(c),
        "stage           F           I           W           B         F&B   samples F/I/W/B/F&B\n"
        "overlap factor: - (0 overlapped slots)\n"
        "p2p latency: -, bandwidth: - (0 messages, 0 sizes)\n"
        "note: no overlapped slot could be fitted: overlap factor kept\n"
        "note: no slot waited for a message from another rank: latency and bandwidth kept from the project\n");
}
