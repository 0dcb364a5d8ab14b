// The comparison of variants: sizes for a kind, figures per variant, reasons instead of exceptions.
#include "project/compare.h"
#include "base/errors.h"

#include <gtest/gtest.h>

using namespace dps;

TEST(VariantForKind, KeepsTheProjectsStageCount)
{
    const Project p = defaultProject();
    const Variant zbv = variantForKind(p, ScheduleKind::ZBV, p.active());
    EXPECT_EQ(zbv.name, "zb-v");
    EXPECT_EQ(zbv.ranks, 4);
    EXPECT_EQ(zbv.microbatches, 20);
    EXPECT_EQ(zbv.layerPartition, std::vector<int>(8, 2));
    EXPECT_EQ(variantForKind(p, ScheduleKind::DualPipe, p.active()).ranks, 8);
    EXPECT_EQ(variantForKind(p, ScheduleKind::OneFOneB, p.active()).ranks, 8);
    EXPECT_EQ(variantForKind(p, ScheduleKind::Interleaved1F1B, p.active()).ranks, 4);
    EXPECT_EQ(stageCount(variantForKind(p, ScheduleKind::DualPipeV, p.active())), 8);
}

TEST(VariantForKind, RefusesAStageCountThatDoesNotDivide)
{
    Project p = defaultProject();
    p.model.layers = 7;
    Variant seven;
    seven.name = "seven";
    seven.kind = ScheduleKind::OneFOneB;
    seven.ranks = 7;
    EXPECT_THROW(variantForKind(p, ScheduleKind::DualPipeV, seven), ConstraintError);
}

TEST(CompareVariant, GivesTheFiguresOfTheDefaultVariants)
{
    const Project p = defaultProject();
    const VariantComparison dp = compareVariant(p, p.variants[0]);
    ASSERT_TRUE(dp.error.empty()) << dp.error;
    EXPECT_EQ(dp.ranks, 8);
    EXPECT_EQ(dp.stages, 8);
    EXPECT_EQ(dp.microbatches, 20);
    EXPECT_DOUBLE_EQ(dp.parametersPerDevice, 2 * 2 * 2.0 * 512 * 2048); // two stages of two layers
    EXPECT_GT(dp.makespanUs, 0.0);
    EXPECT_GT(dp.p2pBytes, 0.0);
    EXPECT_GT(dp.peakActivationBytes, 0.0);
    EXPECT_TRUE(dp.closedForm.available);
    EXPECT_FALSE(dp.closedForm.applicable); // latency and bandwidth add transfer time
    const VariantComparison dv = compareVariant(p, p.variants[1]);
    ASSERT_TRUE(dv.error.empty()) << dv.error;
    EXPECT_EQ(dv.ranks, 4);
    EXPECT_DOUBLE_EQ(dv.parametersPerDevice, dp.parametersPerDevice);
}

TEST(CompareVariant, UnitCostsReproduceTheDualPipeFigure)
{
    const Project p = defaultProject();
    const auto unit = [](CostModel& m) {
        for (StageCost& s : m.stages) {
            s.forwardUs = s.inputGradUs = s.weightGradUs = 1.0;
            s.backwardUs.reset();
        }
        m.latencyUs = 0;
        m.bandwidthBytesPerUs = 0;
    };
    const VariantComparison row = compareVariant(p, p.variants[0], unit);
    ASSERT_TRUE(row.error.empty()) << row.error;
    EXPECT_DOUBLE_EQ(row.makespanUs, 66);
    EXPECT_DOUBLE_EQ(row.largestIdleUs, 6);
    ASSERT_TRUE(row.closedForm.applicable) << row.closedForm.reason;
    EXPECT_DOUBLE_EQ(row.closedForm.valueUs, 6);
}

TEST(CompareVariant, ReportsAConstraintInsteadOfThrowing)
{
    Project p = defaultProject();
    Variant odd = p.variants[0];
    odd.ranks = 3;
    odd.layerPartition.clear();
    const VariantComparison row = compareVariant(p, odd);
    EXPECT_NE(row.error.find("even"), std::string::npos) << row.error;
    EXPECT_EQ(row.ranks, 3);
}

TEST(CompareVariant, ReportsAnInvalidHandEditedOrder)
{
    Project p = defaultProject();
    Variant edited = p.variants[1];
    edited.order = buildSchedule(p, edited).order;
    std::swap(edited.order->at(0).front(), edited.order->at(0).back());
    const VariantComparison row = compareVariant(p, edited);
    EXPECT_EQ(row.error.rfind("invalid schedule: ", 0), 0u) << row.error;
}
