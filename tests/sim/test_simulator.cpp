// The simulator's semantics on hand-built schedules: timing, transfers, p2p bytes, the memory ledger,
// deadlock reports and the options.
#include "base/fileio.h"
#include "simtest.h"

#include "schedule/csvio.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace dps;
using namespace dps::test;

namespace {

// Two stages on two ranks, one microbatch: F0 [0,1], F1 [1+L, 2+L], B1 [2+L, 4+L], B0 [4+2L, 6+2L].
Schedule twoStages()
{
    return handBuilt({ "0F0 0B0", "1F0 1B0" });
}

} // namespace

TEST(CostModel, UnitDefaults)
{
    const CostModel c = uniformCostModel(3);
    ASSERT_EQ(c.stages.size(), 3u);
    EXPECT_DOUBLE_EQ(c.stages[0].forwardUs, 1.0);
    EXPECT_DOUBLE_EQ(c.stages[0].backward(), 2.0);
    EXPECT_DOUBLE_EQ(c.overlapTime(0, 2), 3.0);
    EXPECT_DOUBLE_EQ(c.stages[1].activationBytes, 1.0);
    EXPECT_DOUBLE_EQ(c.stages[1].weightGradKeptBytes, 0.0);
    EXPECT_DOUBLE_EQ(c.stages[2].messageBytes, 1.0);
    EXPECT_DOUBLE_EQ(c.transferTime(1.0), 0.0);
}

TEST(CostModel, OverlapTypedWinsOverFactor)
{
    UniformCosts u;
    u.overlapFactor = 0.8;
    CostModel c = uniformCostModel(2, u);
    EXPECT_DOUBLE_EQ(c.overlapTime(0, 1), 0.8 * 3.0);
    c.stages[0].overlapUs = 2.5;
    EXPECT_DOUBLE_EQ(c.overlapTime(0, 1), 2.5);
    c.stages[1].backwardUs = 5.0;
    EXPECT_DOUBLE_EQ(c.overlapTime(1, 1), 0.8 * 6.0);
}

TEST(CostModel, TransferTimeIsLatencyPlusBytesOverBandwidth)
{
    UniformCosts u;
    u.latencyUs = 3.0;
    u.bandwidthBytesPerUs = 100.0;
    const CostModel c = uniformCostModel(1, u);
    EXPECT_DOUBLE_EQ(c.transferTime(1000.0), 13.0);
}

TEST(Simulator, TwoStagesUnitCosts)
{
    const Schedule s = twoStages();
    const SimResult r = simulate(s, unitCosts(s));
    ASSERT_FALSE(r.deadlocked);
    EXPECT_DOUBLE_EQ(r.makespanUs, 6.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].busyUs, 3.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].idleUs, 3.0);
    EXPECT_DOUBLE_EQ(r.ranks[1].idleUs, 3.0);
    EXPECT_DOUBLE_EQ(r.bubbleRate, 0.5);
    EXPECT_DOUBLE_EQ(r.timing[1][0].startUs, 1.0);
    EXPECT_DOUBLE_EQ(r.timing[0][1].startUs, 4.0);
    EXPECT_DOUBLE_EQ(r.timing[0][1].endUs, 6.0);
}

TEST(Simulator, LatencyDelaysEveryCrossRankMessage)
{
    const Schedule s = twoStages();
    UniformCosts u;
    u.latencyUs = 0.5;
    const SimResult r = simulate(s, uniformCostModel(2, u));
    EXPECT_DOUBLE_EQ(r.makespanUs, 7.0);
    EXPECT_DOUBLE_EQ(r.timing[1][0].readyUs, 1.5);
    EXPECT_EQ(r.timing[1][0].waitedOnRank, 0);
    EXPECT_EQ(r.timing[0][1].waitedOnRank, 1);
    EXPECT_EQ(r.timing[0][0].waitedOnRank, -1);
}

TEST(Simulator, BandwidthAddsBytesOverBandwidth)
{
    const Schedule s = twoStages();
    UniformCosts u;
    u.latencyUs = 1.0;
    u.bandwidthBytesPerUs = 100.0;
    CostModel c = uniformCostModel(2, u);
    c.stages[0].messageBytes = 400.0; // boundary 0 ↔ 1: 1 + 4 µs each way
    c.stages[1].messageBytes = 1e9; // no boundary after the last stage: never sent
    const SimResult r = simulate(s, c);
    EXPECT_DOUBLE_EQ(r.makespanUs, 16.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].p2pBytesSent, 400.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].p2pBytesReceived, 400.0);
    EXPECT_DOUBLE_EQ(r.ranks[1].p2pBytesSent, 400.0);
    EXPECT_DOUBLE_EQ(r.totalP2pBytes, 800.0);
}

TEST(Simulator, SameRankMessagesAreFreeAndNotCounted)
{
    const Schedule s = handBuilt({ "0F0 1F0 1B0 0B0" });
    UniformCosts u;
    u.latencyUs = 10.0;
    const SimResult r = simulate(s, uniformCostModel(2, u));
    EXPECT_DOUBLE_EQ(r.makespanUs, 6.0);
    EXPECT_DOUBLE_EQ(r.totalP2pBytes, 0.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].idleUs, 0.0);
}

TEST(Simulator, GPipeWithBlankCellsCase)
{
    const CsvImport in = readCsv(readTextFile(std::string(DPS_TEST_DATA) + "/cases/gpipe_with_blank_cells.csv"));
    const SimResult r = simulate(in.schedule, unitCosts(in.schedule));
    ASSERT_FALSE(r.deadlocked);
    EXPECT_DOUBLE_EQ(r.makespanUs, 15.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].p2pBytesSent, 4.0);
}

TEST(Simulator, OverlappedSlotWaitsForBothHalvesAndTakesOverlapTime)
{
    // Rank 0: F of microbatch 1 overlapped with B of microbatch 0, whose gradient comes from rank 1.
    const Schedule s = handBuilt({ "0F0 (0F1;0B0)OVERLAP_F_B 0B1", "1F0 1B0 1F1 1B1" });
    const SimResult r = simulate(s, unitCosts(s, 2.5));
    ASSERT_FALSE(r.deadlocked);
    EXPECT_DOUBLE_EQ(r.timing[0][1].startUs, 4.0); // 1B0 ends at 4
    EXPECT_DOUBLE_EQ(r.timing[0][1].endUs, 6.5);
    EXPECT_DOUBLE_EQ(r.ranks[0].busyUs, 1.0 + 2.5 + 2.0);
}

TEST(Simulator, MemoryLedgerIThenW)
{
    const Schedule s = handBuilt({ "0F0 0F1 0I0 0W0 0I1 0W1" });
    CostModel c = uniformCostModel(1);
    c.stages[0].activationBytes = 10.0;
    c.stages[0].weightGradKeptBytes = 4.0;
    c.stages[0].parameterCount = 25.0;
    c.stages[0].parameterBytes = 100.0;
    c.stages[0].gradientBytes = 100.0;
    c.optimizerBytesPerParameter = 8.0;
    const SimResult r = simulate(s, c);
    const RankResult& rr = r.ranks[0];
    EXPECT_DOUBLE_EQ(rr.staticBytes, 400.0);
    EXPECT_DOUBLE_EQ(rr.parameterBytes, 100.0);
    const std::vector<double> total { 400, 410, 420, 414, 410, 404, 400 };
    const std::vector<int> inflight { 0, 1, 2, 1, 1, 0, 0 };
    const std::vector<double> times { 0, 1, 2, 3, 4, 5, 6 };
    ASSERT_EQ(rr.memory.size(), total.size());
    for (std::size_t i = 0; i < total.size(); ++i) {
        EXPECT_DOUBLE_EQ(rr.memory[i].totalBytes, total[i]) << i;
        EXPECT_DOUBLE_EQ(rr.memory[i].activationBytes, total[i] - 400.0) << i;
        EXPECT_EQ(rr.memory[i].inflight, inflight[i]) << i;
        EXPECT_DOUBLE_EQ(rr.memory[i].timeUs, times[i]) << i;
    }
    EXPECT_DOUBLE_EQ(rr.peakMemoryBytes, 420.0);
    EXPECT_DOUBLE_EQ(rr.peakActivationBytes, 20.0);
    EXPECT_EQ(rr.peakInflight, 2);
}

TEST(Simulator, BackwardFreesEverything)
{
    const Schedule s = handBuilt({ "0F0 0F1 0B0 0B1" });
    CostModel c = uniformCostModel(1);
    c.stages[0].activationBytes = 7.0;
    const SimResult r = simulate(s, c);
    EXPECT_DOUBLE_EQ(r.ranks[0].peakActivationBytes, 14.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].memory.back().totalBytes, 0.0);
}

TEST(Simulator, OverlappedForwardCountsBeforeBackward)
{
    // In-flight after 0F0 is 1; the overlapped slot makes it 2 (F) before its B brings it back to 1.
    const Schedule s = handBuilt({ "0F0 (0F1;0B0)OVERLAP_F_B 0B1" });
    const SimResult r = simulate(s, unitCosts(s));
    const RankResult& rr = r.ranks[0];
    EXPECT_EQ(rr.peakInflight, 2);
    EXPECT_DOUBLE_EQ(rr.peakActivationBytes, 2.0);
    ASSERT_EQ(rr.memory.size(), 5u); // time 0, after F, the overlapped slot's two points, after B
    EXPECT_EQ(rr.memory[2].inflight, 2);
    EXPECT_EQ(rr.memory[3].inflight, 1);
    EXPECT_DOUBLE_EQ(rr.memory[2].timeUs, rr.memory[3].timeUs);
}

TEST(Simulator, RecordOptionsKeepPeaks)
{
    const Schedule s = gen(ScheduleKind::DualPipe, 4, 8);
    const CostModel c = unitCosts(s);
    const SimResult full = simulate(s, c);
    const SimResult bare = simulate(s, c, SimOptions { false, false });
    EXPECT_TRUE(bare.timing.empty());
    ASSERT_EQ(bare.ranks.size(), full.ranks.size());
    for (std::size_t r = 0; r < bare.ranks.size(); ++r) {
        EXPECT_TRUE(bare.ranks[r].memory.empty());
        EXPECT_FALSE(full.ranks[r].memory.empty());
        EXPECT_EQ(bare.ranks[r].peakInflight, full.ranks[r].peakInflight);
        EXPECT_DOUBLE_EQ(bare.ranks[r].peakMemoryBytes, full.ranks[r].peakMemoryBytes);
        EXPECT_DOUBLE_EQ(bare.ranks[r].idleUs, full.ranks[r].idleUs);
    }
    EXPECT_DOUBLE_EQ(bare.makespanUs, full.makespanUs);
}

TEST(Simulator, DeadlockCaseNamesEveryStuckRank)
{
    const CsvImport in = readCsv(readTextFile(std::string(DPS_TEST_DATA) + "/cases/deadlock_three_ranks.csv"));
    const SimResult r = simulate(in.schedule, unitCosts(in.schedule));
    ASSERT_TRUE(r.deadlocked);
    ASSERT_EQ(r.stuck.size(), 3u);
    EXPECT_EQ(r.stuck[0].rank, 0);
    EXPECT_EQ(r.stuck[0].action, "0B0");
    EXPECT_EQ(r.stuck[1].action, "1F1");
    EXPECT_EQ(r.stuck[2].action, "2F1");
    EXPECT_NE(r.stuck[0].waitsFor.find("1B0"), std::string::npos) << r.stuck[0].waitsFor;
    EXPECT_NE(r.stuck[1].waitsFor.find("0F1"), std::string::npos) << r.stuck[1].waitsFor;
    EXPECT_NE(r.deadlockMessage.find("rank 2 at position 0 (2F1)"), std::string::npos) << r.deadlockMessage;
}

TEST(Simulator, MissingProducerAndOutOfRangeAreDeadlocks)
{
    Schedule s = handBuilt({ "0F0 0W0" });
    SimResult r = simulate(s, unitCosts(s));
    ASSERT_TRUE(r.deadlocked);
    EXPECT_EQ(r.stuck[0].position, 1);
    EXPECT_NE(r.stuck[0].waitsFor.find("0I0"), std::string::npos);

    s.microbatches = 1;
    s.order[0].push_back(Action::single(0, OpKind::F, 5));
    s.order[0].erase(s.order[0].begin() + 1);
    r = simulate(s, unitCosts(s));
    ASSERT_TRUE(r.deadlocked);
    EXPECT_NE(r.deadlockMessage.find("outside"), std::string::npos) << r.deadlockMessage;
}

TEST(Simulator, EmptyScheduleIsNotADeadlock)
{
    Schedule s;
    s.order.resize(2);
    const SimResult r = simulate(s, uniformCostModel(0));
    EXPECT_FALSE(r.deadlocked);
    EXPECT_DOUBLE_EQ(r.makespanUs, 0.0);
    EXPECT_DOUBLE_EQ(r.bubbleRate, 0.0);
    EXPECT_EQ(r.ranks.size(), 2u);
}

TEST(Simulator, UnevenStagesUseTheirOwnCosts)
{
    const Schedule s = twoStages();
    CostModel c = uniformCostModel(2);
    c.stages[1].forwardUs = 3.0;
    c.stages[1].backwardUs = 4.0;
    const SimResult r = simulate(s, c);
    // F0 [0,1], F1 [1,4], B1 [4,8], B0 [8,10]
    EXPECT_DOUBLE_EQ(r.makespanUs, 10.0);
    EXPECT_DOUBLE_EQ(r.ranks[1].busyUs, 7.0);
}
