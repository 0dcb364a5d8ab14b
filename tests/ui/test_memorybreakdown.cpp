// Each rank's memory at its peak in parts, and the heaviest rank against the median rank (hand-computed).
#include "document/memorybreakdown.h"

#include "base/format.h"
#include "project/project.h"

#include <gtest/gtest.h>

using namespace dps::ui;

namespace {

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

RankMemoryParts rank(double parameters, double gradients, double optimizer, double activations)
{
    RankMemoryParts p;
    p.bytes[RankMemoryParts::Parameters] = parameters * GiB;
    p.bytes[RankMemoryParts::Gradients] = gradients * GiB;
    p.bytes[RankMemoryParts::Optimizer] = optimizer * GiB;
    p.bytes[RankMemoryParts::Activations] = activations * GiB;
    return p;
}

} // namespace

TEST(MemoryBreakdown, TheHeaviestRankAgainstTheMedianRank)
{
    // Totals 45, 32, 31, 30 GiB: the low median (the lower of 31 and 32) is 31, so rank 0 is 14 GiB over it. By
    // part: parameters 10 vs median 6 (+4), gradients 10 vs 6 (+4), optimizer 20 vs 12 (+8), activations 5 vs
    // (5, 6, 7, 8 → 6): under.
    const std::vector<RankMemoryParts> ranks
        = { rank(10, 10, 20, 5), rank(6, 6, 12, 8), rank(6, 6, 12, 7), rank(6, 6, 12, 6) };
    const HeaviestRank h = heaviestRank(ranks);
    EXPECT_EQ(h.rank, 0);
    EXPECT_EQ(h.sharedWith, 0);
    EXPECT_EQ(h.referenceRank, -1) << "compared with the median rank";
    EXPECT_DOUBLE_EQ(h.peakBytes, 45 * GiB);
    EXPECT_DOUBLE_EQ(h.excessBytes, 14 * GiB);
    ASSERT_EQ(h.byPart.size(), 3u);
    EXPECT_EQ(h.byPart[0].first, RankMemoryParts::Optimizer);
    EXPECT_DOUBLE_EQ(h.byPart[0].second, 8 * GiB);
    EXPECT_EQ(h.byPart[1].first, RankMemoryParts::Parameters) << "ties keep the parts' order";
    EXPECT_EQ(h.byPart[2].first, RankMemoryParts::Gradients);
    EXPECT_EQ(describeHeaviest(h),
        "rank 0 heaviest: peak 45 GiB, +14 GiB over the median rank (optimizer state +8 GiB, parameters +4 GiB)");
}

TEST(MemoryBreakdown, AHeaviestPeakMostRanksShareIsComparedWithTheLightestRank)
{
    // Totals 30, 32, 32, 32 GiB: the median is 32, the heaviest's own peak, so the lightest rank (0) is the
    // reference: +2 GiB, all of it activations (8 vs 6).
    const std::vector<RankMemoryParts> ranks
        = { rank(6, 6, 12, 6), rank(6, 6, 12, 8), rank(6, 6, 12, 8), rank(6, 6, 12, 8) };
    const HeaviestRank h = heaviestRank(ranks);
    EXPECT_EQ(h.rank, 1) << "the first of the heaviest";
    EXPECT_EQ(h.sharedWith, 2);
    EXPECT_EQ(h.referenceRank, 0);
    EXPECT_DOUBLE_EQ(h.excessBytes, 2 * GiB);
    ASSERT_EQ(h.byPart.size(), 1u);
    EXPECT_EQ(h.byPart[0].first, RankMemoryParts::Activations);
    EXPECT_EQ(describeHeaviest(h),
        "rank 1 heaviest, with 2 other ranks: peak 32 GiB, +2 GiB over the lightest, rank 0 (activations +2 GiB)");
}

TEST(MemoryBreakdown, EqualRanksAndNoRanks)
{
    const std::vector<RankMemoryParts> equal(3, rank(1, 1, 2, 0.5));
    const HeaviestRank h = heaviestRank(equal);
    EXPECT_EQ(h.rank, 0) << "the first on a tie";
    EXPECT_EQ(h.sharedWith, 2);
    EXPECT_TRUE(h.byPart.empty());
    EXPECT_EQ(describeHeaviest(h), "every rank peaks at 4.5 GiB");
    EXPECT_EQ(heaviestRank({}).rank, -1);
    EXPECT_EQ(describeHeaviest(heaviestRank({})), "");
    // An odd count: the median is the middle rank. 3 GiB vs 2 GiB: +1 GiB, all of it activations.
    const HeaviestRank odd = heaviestRank({ rank(1, 0, 0, 1), rank(1, 0, 0, 2), rank(1, 0, 0, 0.5) });
    EXPECT_EQ(odd.rank, 1);
    EXPECT_DOUBLE_EQ(odd.excessBytes, 1 * GiB);
    EXPECT_EQ(describeHeaviest(odd), "rank 1 heaviest: peak 3 GiB, +1 GiB over the median rank (activations +1 GiB)");
}

TEST(MemoryBreakdown, PartsOfASnapshotAddUpToEachRanksPeak)
{
    dps::Project project = dps::defaultProject();
    project.costs.optimizerBytesPerParameter = 12;
    const auto snapshot = computeSnapshot(project, "dualpipe", 1);
    ASSERT_TRUE(snapshot->valid());
    const auto parts = memoryParts(*snapshot);
    ASSERT_EQ(parts.size(), 8u);
    for (int r = 0; r < 8; ++r) {
        EXPECT_DOUBLE_EQ(parts[r].bytes[RankMemoryParts::Parameters], snapshot->staticMemory[r].parameters);
        EXPECT_DOUBLE_EQ(parts[r].bytes[RankMemoryParts::Optimizer], 12 * snapshot->staticMemory[r].parameterCount);
        EXPECT_DOUBLE_EQ(parts[r].total(), snapshot->sim.ranks[r].peakMemoryBytes) << "rank " << r;
    }
    // Default project: 2 layers per stage, 2·512·2048 fp32 parameters per layer: 4 layers per DualPipe rank =
    // 4 × 2097152 × 4 bytes = 32 MiB of parameters on every rank.
    EXPECT_DOUBLE_EQ(parts[3].bytes[RankMemoryParts::Parameters], 32.0 * 1024 * 1024);
    // The engine's buffers at rank 0's peak (docs/memory.md; tests/project/test_predict.cpp): 10 MiB of inputs
    // and targets, 5 MiB of messages, the overlapped slot's 9.5 MiB of high-water marks less the 5 MiB of them
    // that are its forward half's activations (in the activations part): 19.5 MiB.
    EXPECT_DOUBLE_EQ(parts[0].bytes[RankMemoryParts::Buffers], 19.5 * 1024 * 1024);
}
