// Slot times drawn from a machine's variation (CostModel::slotVariation): the factor's quantile function and its
// determinism, every simulator scaling a slot by its draw, and predict()'s median of the drawn steps.
#include "project/predict.h"
#include "sim/sharedcores.h"
#include "simtest.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace dps;
using namespace dps::test;

TEST(SlotVariation, FactorIsOneWithoutTwoQuantiles)
{
    EXPECT_EQ(slotVariationFactor({}, 1, 0, 0), 1.0);
    EXPECT_EQ(slotVariationFactor({ 0.5 }, 7, 3, 2), 1.0);
}

TEST(SlotVariation, FactorFollowsTheQuantileFunction)
{
    // All quantiles equal: every draw is that residual exactly.
    for (int position = 0; position < 50; ++position)
        EXPECT_DOUBLE_EQ(slotVariationFactor({ 0.5, 0.5, 0.5 }, 3, 1, position), 1.5);
    // p0 −0.2, p100 +0.2: uniform between, so the factors lie in [0.8, 1.2) and average 1 (10,000 draws: the standard
    // error of the mean is 0.4 ÷ √12 ÷ 100 = 0.0012).
    double sum = 0.0, low = 2.0, high = 0.0;
    constexpr int kDraws = 10000;
    for (int position = 0; position < kDraws; ++position) {
        const double f = slotVariationFactor({ -0.2, 0.2 }, 1, 0, position);
        sum += f;
        low = std::min(low, f);
        high = std::max(high, f);
    }
    EXPECT_NEAR(sum / kDraws, 1.0, 0.005);
    EXPECT_GE(low, 0.8);
    EXPECT_LT(high, 1.2);
    EXPECT_LT(low, 0.81);
    EXPECT_GT(high, 1.19);
    // A residual of −1 or less would be a negative time: the factor stops at 0.
    EXPECT_EQ(slotVariationFactor({ -3.0, -2.0 }, 1, 0, 0), 0.0);
}

TEST(SlotVariation, FactorIsAFunctionOfDrawRankAndPosition)
{
    const std::vector<double> q { -0.1, 0.0, 0.3 };
    EXPECT_EQ(slotVariationFactor(q, 5, 2, 9), slotVariationFactor(q, 5, 2, 9));
    EXPECT_NE(slotVariationFactor(q, 5, 2, 9), slotVariationFactor(q, 6, 2, 9));
    EXPECT_NE(slotVariationFactor(q, 5, 2, 9), slotVariationFactor(q, 5, 3, 9));
    EXPECT_NE(slotVariationFactor(q, 5, 2, 9), slotVariationFactor(q, 5, 2, 10));
}

TEST(SlotVariation, EverySimulatorScalesEachSlotByItsDraw)
{
    // Every slot +50 %, no transfer time: each timeline is the exact one stretched by 1.5.
    const Schedule s = gen(ScheduleKind::DualPipeV, 2, 6);
    CostModel c = unitCosts(s);
    c.slotVariation = { 0.5, 0.5 };
    SimOptions drawn;
    drawn.variationDraw = 4;
    const SimResult exact = simulate(s, c);
    const SimResult stretched = simulate(s, c, drawn);
    EXPECT_DOUBLE_EQ(stretched.makespanUs, 1.5 * exact.makespanUs);
    ASSERT_EQ(stretched.timing.size(), exact.timing.size());
    for (std::size_t r = 0; r < exact.timing.size(); ++r) {
        EXPECT_DOUBLE_EQ(stretched.ranks[r].busyUs, 1.5 * exact.ranks[r].busyUs);
        for (std::size_t i = 0; i < exact.timing[r].size(); ++i)
            EXPECT_DOUBLE_EQ(stretched.timing[r][i].endUs, 1.5 * exact.timing[r][i].endUs);
    }
    // One core shared by 2 ranks: processor sharing of 1.5× the work.
    const SharedCoresOptions oneCore { 1, WaitingRanks::Yield };
    EXPECT_DOUBLE_EQ(
        simulateSharedCores(s, c, oneCore, drawn).makespanUs, 1.5 * simulateSharedCores(s, c, oneCore).makespanUs);
    // Without a draw the variation is not used.
    EXPECT_DOUBLE_EQ(simulate(s, c, SimOptions {}).makespanUs, exact.makespanUs);
}

TEST(SlotVariation, PredictionIsTheMedianOfTheDrawnSteps)
{
    // Slots between −10 % and +30 % of their time (mean +10 %): the drawn steps are longer than the exact one by about
    // that mean, and more where two ranks wait for the longer of their slots; the prediction is the median draw.
    const Schedule s = gen(ScheduleKind::DualPipeV, 2, 10);
    CostModel c = unitCosts(s);
    const Prediction exact = predictSchedule(s, c);
    c.slotVariation = { -0.1, 0.3 };
    const Prediction drawn = predictSchedule(s, c);
    ASSERT_TRUE(drawn.valid());
    ASSERT_TRUE(drawn.drawn);
    EXPECT_FALSE(exact.drawn);
    EXPECT_EQ(drawn.drawn->draws, PredictOptions::kVariationDraws);
    EXPECT_DOUBLE_EQ(drawn.drawn->exactUs, exact.makespanUs);
    EXPECT_GE(drawn.makespanUs, drawn.drawn->p10Us);
    EXPECT_LE(drawn.makespanUs, drawn.drawn->p90Us);
    EXPECT_LT(drawn.drawn->p10Us, drawn.drawn->p90Us);
    EXPECT_GT(drawn.makespanUs, 1.08 * exact.makespanUs);
    EXPECT_LT(drawn.makespanUs, 1.25 * exact.makespanUs);
    EXPECT_DOUBLE_EQ(drawn.sim.makespanUs, drawn.makespanUs); // one drawn step, timed as asked
    EXPECT_FALSE(drawn.sim.timing.empty());
    // Asked for no draws, the costs' times as they are.
    PredictOptions none;
    none.variationDraws = 0;
    const Prediction undrawn = predictSchedule(s, c, none);
    EXPECT_FALSE(undrawn.drawn);
    EXPECT_DOUBLE_EQ(undrawn.makespanUs, exact.makespanUs);
}
