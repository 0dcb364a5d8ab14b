// The layer-partition helpers of the planner (engine/project/partitioning.h): even split, cost balance,
// moving a boundary. Plain C++, no Qt.
#include "project/partitioning.h"

#include <gtest/gtest.h>

using namespace dps;

TEST(Partitioning, EvenSplitGivesTheRemainderToEarlierStages)
{
    EXPECT_EQ(evenPartition(16, 8), (std::vector<int>(8, 2)));
    EXPECT_EQ(evenPartition(10, 4), (std::vector<int> { 3, 3, 2, 2 }));
    EXPECT_TRUE(evenPartition(4, 0).empty());
}

TEST(Partitioning, BalanceMinimisesTheSlowestStage)
{
    EXPECT_EQ(balancedPartition(16, std::vector<double>(8, 1.0)), evenPartition(16, 8));
    // Stage 0 is three times slower per layer: it gets fewer layers.
    const auto p = balancedPartition(12, { 3.0, 1.0, 1.0 });
    EXPECT_EQ(totalLayers(p), 12);
    EXPECT_EQ(p, (std::vector<int> { 2, 5, 5 }));
    EXPECT_EQ(balancedPartition(2, { 1.0, 1.0, 1.0 }), (std::vector<int> { 1, 1, 0 })) << "fewer layers than stages";
}

TEST(Partitioning, MovingABoundaryKeepsTheTotal)
{
    const std::vector<int> p { 4, 4, 4, 4 };
    EXPECT_EQ(movedBoundary(p, 1, 10), (std::vector<int> { 4, 6, 2, 4 }));
    EXPECT_EQ(movedBoundary(p, 1, 100), (std::vector<int> { 4, 7, 1, 4 })) << "each side keeps a layer";
    EXPECT_EQ(movedBoundary(p, 0, -3), (std::vector<int> { 1, 7, 4, 4 }));
    EXPECT_EQ(movedBoundary(p, 3, 5), p) << "no boundary after the last stage";
}

TEST(Partitioning, TextShortensRunsOfEqualStages)
{
    EXPECT_EQ(partitionText({ 1, 5, 5, 5, 2 }), "1,5×3,2");
    EXPECT_EQ(partitionText({ 2, 2, 1, 1 }), "2×2,1×2");
    EXPECT_EQ(partitionText({ 4 }), "4");
    EXPECT_EQ(partitionText({ 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3 }), "3×12") << "a count of two digits";
    EXPECT_EQ(partitionText({}), "");
}
