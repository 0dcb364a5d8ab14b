// predict(), the one prediction entry point: the default project's figures, options, and every way there
// are no figures (an invalid order, a deadlock, a size rule, an unknown variant) as data, never exceptions.
#include "project/predict.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "schedule/csvio.h"
#include "schedule/generator.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace dps;

namespace {

// The default project's DualPipe variant (8 ranks, 20 microbatches), as `dpstudio simulate` printed it
// before predict() existed: makespan 2.365 s.
constexpr double kMakespanUs = 2365010.3104;
constexpr double kBubbleRate = 0.09197704612256381;
constexpr double kLargestIdleUs = 217526.6624;
// Ranks 0 and 7: 129 MiB with the engine's buffers (docs/memory.md), in the slot (0F7;7B13): 64 MiB of
// parameters and gradients, 10 MiB of inputs and targets (20 T×h tensors of 512 KiB), 40.5 MiB of activations
// kept before the slot, 5 MiB of messages (posted receives, the input's copy, held sends) and the two halves at
// their high-water marks at once, F of 2 layers 2(tf + th) + tf = 7 MiB and B tf + th = 2.5 MiB (T×f: tf = 2 MiB,
// T×h: th = 512 KiB). Without the message buffers in the memory model it read 109.5 MiB: static + peak activations.
constexpr double kPeakMemoryBytes = 135266304.0;
constexpr double kPeakActivationBytes = 47710208.0; // 45.5 MiB
constexpr double kP2pBytes = 146800640.0; // 140 MiB
constexpr double kParametersPerDevice = 2 * 2 * 2.0 * 512 * 2048; // two stages of two layers of two matrices

} // namespace

TEST(Predict, TheDefaultProjectsActiveVariant)
{
    const Prediction p = predict(defaultProject(), "");
    ASSERT_TRUE(p.valid()) << p.error;
    EXPECT_EQ(p.variantName, "dualpipe");
    EXPECT_TRUE(p.error.empty());
    EXPECT_TRUE(p.built());
    EXPECT_TRUE(p.timed);
    EXPECT_FALSE(p.handEdited);
    EXPECT_EQ(p.schedule->kind, ScheduleKind::DualPipe);
    EXPECT_EQ(p.schedule->ranks, 8);
    EXPECT_EQ(p.schedule->stages, 8);
    EXPECT_EQ(p.schedule->microbatches, 20);
    EXPECT_TRUE(p.report.valid());
    EXPECT_NEAR(p.makespanUs, kMakespanUs, 1e-3);
    EXPECT_DOUBLE_EQ(p.makespanUs, p.sim.makespanUs);
    EXPECT_NEAR(p.bubbleRate, kBubbleRate, 1e-12);
    EXPECT_NEAR(p.largestIdleUs, kLargestIdleUs, 1e-3);
    EXPECT_EQ(p.largestIdleRank, 0) << "every rank idles as long: the first wins";
    EXPECT_DOUBLE_EQ(p.peakMemoryBytes, kPeakMemoryBytes);
    EXPECT_EQ(p.peakMemoryRank, 0) << "ranks 0 and 7 peak as high: the first wins";
    EXPECT_DOUBLE_EQ(p.peakActivationBytes, kPeakActivationBytes);
    EXPECT_DOUBLE_EQ(p.p2pBytes, kP2pBytes);
    EXPECT_DOUBLE_EQ(p.parametersPerDevice, kParametersPerDevice);
    ASSERT_EQ(p.staticMemory.size(), 8u);
    for (const StaticMemory& m : p.staticMemory) {
        EXPECT_DOUBLE_EQ(m.parameterCount, kParametersPerDevice);
        EXPECT_DOUBLE_EQ(m.parameters, 4 * kParametersPerDevice) << "fp32";
        EXPECT_DOUBLE_EQ(m.gradients, 4 * kParametersPerDevice);
        EXPECT_DOUBLE_EQ(m.optimizer, 0.0) << "the default project counts no optimizer state";
    }
    EXPECT_DOUBLE_EQ(p.sim.ranks[0].dataBytes, 20 * 512 * 1024.0) << "10 inputs (stage 0) and 10 targets (stage 7)";
    EXPECT_DOUBLE_EQ(p.sim.ranks[3].dataBytes, 0.0);
    EXPECT_TRUE(p.closedForm.available);
    EXPECT_FALSE(p.closedForm.applicable) << "latency and bandwidth add transfer time";
    EXPECT_EQ(p.closedForm.formula, "(PP/2−1)(F&B+B−3W)");
    ASSERT_EQ(p.sim.timing.size(), 8u) << "full timelines by default";
    EXPECT_EQ(p.sim.timing[0].size(), p.schedule->order[0].size());
    EXPECT_FALSE(p.sim.ranks[0].memory.empty()) << "memory curves by default";
}

TEST(Predict, ByNameAndByVariantAgree)
{
    const Project project = defaultProject();
    const Prediction byName = predict(project, "dualpipev");
    const Prediction byVariant = predict(project, project.variants[1]);
    ASSERT_TRUE(byName.valid()) << byName.error;
    EXPECT_EQ(byName.variantName, "dualpipev");
    EXPECT_EQ(byName.schedule->ranks, 4);
    EXPECT_DOUBLE_EQ(byName.makespanUs, byVariant.makespanUs);
    EXPECT_DOUBLE_EQ(byName.bubbleRate, byVariant.bubbleRate);
    EXPECT_NEAR(byName.makespanUs, 4.513e6, 0.5e3) << "compare prints 4.513 s";
    EXPECT_DOUBLE_EQ(byName.parametersPerDevice, kParametersPerDevice) << "two stages of two layers per rank";
}

TEST(Predict, PeaksOnlyGivesTheSameFiguresWithoutTimelines)
{
    const Prediction full = predict(defaultProject(), "dualpipe");
    const Prediction peaks = predict(defaultProject(), "dualpipe", PredictOptions::peaksOnly());
    ASSERT_TRUE(peaks.valid()) << peaks.error;
    EXPECT_TRUE(peaks.sim.timing.empty());
    EXPECT_TRUE(peaks.sim.ranks[0].memory.empty());
    EXPECT_DOUBLE_EQ(peaks.makespanUs, full.makespanUs);
    EXPECT_DOUBLE_EQ(peaks.bubbleRate, full.bubbleRate);
    EXPECT_DOUBLE_EQ(peaks.largestIdleUs, full.largestIdleUs);
    EXPECT_DOUBLE_EQ(peaks.peakMemoryBytes, full.peakMemoryBytes);
    EXPECT_DOUBLE_EQ(peaks.peakActivationBytes, full.peakActivationBytes);
}

TEST(Predict, TheCostAdjusterComesLast)
{
    // Unit costs and free links: DualPipe 8 × 20 takes 66 and idles (PP/2−1)(F&B+B−3W) = 3 × (3+2−3) = 6.
    const auto unit = [](CostModel& m) {
        for (StageCost& s : m.stages) {
            s.forwardUs = s.inputGradUs = s.weightGradUs = 1.0;
            s.backwardUs.reset();
            s.overlapUs.reset();
        }
        m.latencyUs = 0;
        m.bandwidthBytesPerUs = 0;
    };
    const Prediction p = predict(defaultProject(), "dualpipe", PredictOptions::peaksOnly(unit));
    ASSERT_TRUE(p.valid()) << p.error;
    EXPECT_DOUBLE_EQ(p.makespanUs, 66.0);
    EXPECT_DOUBLE_EQ(p.largestIdleUs, 6.0);
    EXPECT_DOUBLE_EQ(p.costs.stages[0].forwardUs, 1.0) << "the prediction keeps the costs it simulated";
    ASSERT_TRUE(p.closedForm.applicable) << p.closedForm.reason;
    EXPECT_DOUBLE_EQ(p.closedForm.valueUs, 6.0);
}

TEST(Predict, Fp32TensorsForACpuRunOfABf16Project)
{
    Project project = defaultProject();
    project.model.dtype = DType::BF16;
    const Prediction bf16 = predict(project, "dualpipe", PredictOptions::peaksOnly());
    PredictOptions cpu = PredictOptions::peaksOnly();
    cpu.fp32Tensors = true;
    const Prediction fp32 = predict(project, "dualpipe", cpu);
    ASSERT_TRUE(bf16.valid() && fp32.valid()) << bf16.error << fp32.error;
    EXPECT_DOUBLE_EQ(bf16.p2pBytes, kP2pBytes / 2);
    EXPECT_DOUBLE_EQ(fp32.p2pBytes, kP2pBytes);
    EXPECT_DOUBLE_EQ(bf16.staticMemory[0].parameters, 2 * kParametersPerDevice);
    EXPECT_DOUBLE_EQ(fp32.staticMemory[0].parameters, 4 * kParametersPerDevice);
}

TEST(PredictSchedule, AGeneratedScheduleUnderUnitCosts)
{
    const Prediction p = predictSchedule(generate({ ScheduleKind::DualPipe, 8, 20, 0 }), uniformCostModel(8));
    ASSERT_TRUE(p.valid()) << p.error;
    EXPECT_EQ(p.variantName, "");
    EXPECT_DOUBLE_EQ(p.makespanUs, 66.0);
    EXPECT_DOUBLE_EQ(p.largestIdleUs, 6.0);
    EXPECT_EQ(p.sim.ranks[0].peakInflight, 9) << "DualPipe's peak in-flight is PP + 1";
}

TEST(Predict, AnInvalidOrderIsDataNotAnException)
{
    Project project = defaultProject();
    Variant& edited = project.variants[1];
    edited.order = buildSchedule(project, edited).order;
    std::swap(edited.order->at(0).front(), edited.order->at(0).back());
    const Prediction p = predict(project, "dualpipev");
    EXPECT_EQ(p.error,
        "invalid schedule: error: rank 0, position 18 (0B0): 0B0 runs before its forward 0F0 (position 57) (+1 more)");
    EXPECT_TRUE(p.built());
    EXPECT_TRUE(p.handEdited);
    EXPECT_FALSE(p.timed);
    EXPECT_FALSE(p.valid());
    EXPECT_EQ(p.report.errorCount(), 2u);
    EXPECT_TRUE(p.sim.ranks.empty()) << "an invalid schedule is not simulated";
    EXPECT_EQ(p.makespanUs, 0.0);
    EXPECT_EQ(p.largestIdleRank, -1);
    EXPECT_EQ(p.peakMemoryRank, -1);
    EXPECT_EQ(p.staticMemory.size(), 4u) << "what each rank holds is known without a simulation";
}

TEST(PredictSchedule, ADeadlockIsDataNotAnException)
{
    const std::string file = std::string(DPS_TEST_DATA) + "/cases/deadlock_three_ranks.csv";
    Schedule schedule = readCsv(readTextFile(file)).schedule;
    const Prediction p = predictSchedule(std::move(schedule), uniformCostModel(3));
    EXPECT_EQ(p.error,
        "invalid schedule: error: rank 0, position 1 (0B0): rank 0 is stuck at 0B0, waiting for the gradient from "
        "1B0 on rank 1, which is queued behind 1F1 at position 1 (wait-for cycle: rank 0 -> rank 1 -> rank 0) "
        "(+2 more)");
    EXPECT_FALSE(p.timed);
    ASSERT_EQ(p.report.errorCount(), 3u);
    EXPECT_TRUE(std::all_of(p.report.diagnostics.begin(), p.report.diagnostics.end(),
        [](const Diagnostic& d) { return d.rule == "deadlock"; }));
    EXPECT_TRUE(p.sim.ranks.empty());
}

TEST(Predict, ASizeRuleIsDataNotAnException)
{
    Project project = defaultProject();
    project.variants[0].ranks = 7;
    project.variants[0].layerPartition.clear();
    project.model.layers = 14;
    Prediction p;
    EXPECT_NO_THROW(p = predict(project, "dualpipe"));
    EXPECT_EQ(p.error.rfind("variants[0].ranks: DualPipe needs an even number of ranks", 0), 0u) << p.error;
    EXPECT_EQ(p.variantName, "dualpipe");
    EXPECT_FALSE(p.built());
    EXPECT_FALSE(p.valid());
    EXPECT_TRUE(p.staticMemory.empty());
}

TEST(Predict, AnUnknownVariantListsTheVariants)
{
    Project project = defaultProject();
    const Prediction p = predict(project, "zigzag");
    EXPECT_EQ(p.error, "no variant named 'zigzag' (variants: dualpipe, dualpipev)");
    EXPECT_EQ(p.variantName, "zigzag");
    EXPECT_FALSE(p.built());
    EXPECT_THROW(findVariant(project, "zigzag"), FormatError);
    EXPECT_EQ(&findVariant(project, ""), &project.variants[0]) << "empty: the active variant";
    project.activeVariant = "gone";
    EXPECT_EQ(predict(project, "").error, "active_variant: no variant named \"gone\"");
}
