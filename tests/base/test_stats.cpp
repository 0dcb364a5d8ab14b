// The one median rule (base/stats.h): the low median, and the linear quantile of a spread.
#include "base/stats.h"

#include <gtest/gtest.h>

using namespace dps;

TEST(Stats, MedianOfOddAndEvenCountsIsOneOfTheValues)
{
    EXPECT_DOUBLE_EQ(median({}), 0.0);
    EXPECT_DOUBLE_EQ(median({ 7 }), 7.0);
    EXPECT_DOUBLE_EQ(median({ 5, 1, 3 }), 3.0);
    EXPECT_DOUBLE_EQ(median({ 4, 1, 3, 2 }), 2.0); // sorted 1 2 3 4: the lower of the middle two
    EXPECT_DOUBLE_EQ(median({ 90, 70, 120, 80 }), 80.0);
}

TEST(Stats, MedianIndexIsTheLowerMiddle)
{
    EXPECT_EQ(medianIndex(0), 0u);
    EXPECT_EQ(medianIndex(1), 0u);
    EXPECT_EQ(medianIndex(2), 0u);
    EXPECT_EQ(medianIndex(3), 1u);
    EXPECT_EQ(medianIndex(4), 1u);
    EXPECT_EQ(medianIndex(5), 2u);
}

TEST(Stats, QuantileIsLinearBetweenClosestRanks)
{
    const std::vector<double> sorted { 1, 2, 3, 4 };
    EXPECT_DOUBLE_EQ(quantileOfSorted(sorted, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(quantileOfSorted(sorted, 0.1), 1.3); // position 0.3
    EXPECT_DOUBLE_EQ(quantileOfSorted(sorted, 0.9), 3.7); // position 2.7
    EXPECT_DOUBLE_EQ(quantileOfSorted(sorted, 1.0), 4.0);
}

TEST(Stats, TrimmedMeanLeavesOutTheShareAtEachEnd)
{
    // 10 values, 10 %: one cut from each end (100 and -50), the mean of the middle eight.
    const std::vector<double> values { 5, 100, 3, 4, -50, 6, 7, 8, 9, 10 };
    EXPECT_DOUBLE_EQ(trimmedMean(values, 0.1), (3 + 4 + 5 + 6 + 7 + 8 + 9 + 10) / 8.0);
    EXPECT_DOUBLE_EQ(trimmedMean(values, 0.0), (5 + 100 + 3 + 4 - 50 + 6 + 7 + 8 + 9 + 10) / 10.0);
    // 9 values, 10 %: floor(0.9) = 0 cut, the plain mean.
    EXPECT_DOUBLE_EQ(trimmedMean({ 1, 2, 3, 4, 5, 6, 7, 8, 100 }, 0.1), 136.0 / 9.0);
    EXPECT_DOUBLE_EQ(trimmedMean({ 2, 1, 9, 4 }, 0.25), 3.0); // one from each end: (2 + 4) / 2
    EXPECT_DOUBLE_EQ(trimmedMean({}, 0.1), 0.0);
}
