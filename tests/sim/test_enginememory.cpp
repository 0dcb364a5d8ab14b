// The engine's buffers in the simulator (docs/memory.md): the message plan (which receives a rank posts in
// which order, at which receive each send's buffer goes) and the memory it counts slot by slot, hand-computed.
#include "sim/messageplan.h"
#include "sim/sharedcores.h"
#include "simtest.h"

#include <gtest/gtest.h>

using namespace dps;
using namespace dps::test;

namespace {

/// Two stages on two ranks, two microbatches: rank 0 runs F F B B, rank 1 alternates F B.
Schedule twoRanks()
{
    return handBuilt({ "0F0 0F1 0B0 0B1", "1F0 1B0 1F1 1B1" });
}

/// The total of each memory point of a rank.
std::vector<double> totals(const RankResult& r)
{
    std::vector<double> t;
    for (const MemoryPoint& p : r.memory)
        t.push_back(p.totalBytes);
    return t;
}

/// Unit costs with messages of 10 bytes, F keeping 100 bytes until B, and engine buffers with numbers that tell
/// the ops apart: stage 0 (first) F high-water 130 / net +100 (its input copy in, its output out), B 7 / −110
/// (the gradient it consumes, no input gradient out); the last stage's F 120 / +90 (it consumes its input),
/// B 5 / −90 (the gradient it makes stays). Inputs on stage 0 and targets on stage 1 of 10 bytes.
CostModel engineCosts(const Schedule& s, int window)
{
    CostModel c = unitCosts(s);
    for (std::size_t st = 0; st < c.stages.size(); ++st) {
        StageCost& stage = c.stages[st];
        stage.messageBytes = 10.0;
        stage.activationBytes = 100.0;
        EngineBuffers b;
        b.firstStageOps[static_cast<int>(OpKind::F)] = { 130.0, 100.0 };
        b.firstStageOps[static_cast<int>(OpKind::B)] = { 7.0, -110.0 };
        b.ops[static_cast<int>(OpKind::F)] = { 120.0, 90.0 };
        b.ops[static_cast<int>(OpKind::B)] = { 5.0, -90.0 };
        b.inputBytes = st == 0 ? 10.0 : 0.0;
        b.targetBytes = st + 1 == c.stages.size() ? 10.0 : 0.0;
        stage.engine = b;
    }
    c.receiveWindow = window;
    return c;
}

} // namespace

TEST(MessagePlan, ReceivesInConsumptionOrderAndSendsFreedByTheReplyThatProvesThemConsumed)
{
    const auto plans = planMessages(twoRanks());
    ASSERT_EQ(plans.size(), 2u);
    // Rank 0 receives the gradients of 1B0 (its slot 1) and 1B1 (slot 3) at 0B0 (slot 2) and 0B1 (slot 3).
    const RankMessagePlan& r0 = plans[0];
    ASSERT_EQ(r0.receives.size(), 2u);
    EXPECT_EQ(r0.receives[0].stage, 0);
    EXPECT_EQ(r0.receives[0].microbatch, 0);
    EXPECT_TRUE(r0.receives[0].gradient);
    EXPECT_EQ(r0.receives[0].peer, 1);
    EXPECT_EQ(r0.receives[0].position, 2);
    EXPECT_EQ(r0.receives[0].peerPosition, 1);
    EXPECT_EQ(r0.receives[1].position, 3);
    EXPECT_EQ(r0.receives[1].peerPosition, 3);
    // It sends the activations into 1F0 (consumed at rank 1's slot 0) and 1F1 (slot 2): the first is freed by
    // the gradient 1B0 made at slot 1 ≥ 0, the second only by 1B1's (slot 3 ≥ 2).
    ASSERT_EQ(r0.sends.size(), 2u);
    EXPECT_FALSE(r0.sends[1].gradient);
    EXPECT_EQ(r0.sends[1].stage, 1);
    EXPECT_EQ(r0.sends[1].position, 1);
    EXPECT_EQ(r0.sends[1].peerPosition, 2);
    EXPECT_EQ(r0.releasedBy, (std::vector<int> { 0, 1 }));
    // Rank 1's gradients get no reply: freed at the step's end.
    const RankMessagePlan& r1 = plans[1];
    ASSERT_EQ(r1.receives.size(), 2u);
    EXPECT_EQ(r1.receives[1].position, 2);
    EXPECT_EQ(r1.receives[1].peerPosition, 1);
    EXPECT_EQ(r1.releasedBy, (std::vector<int> { -1, -1 }));
}

TEST(MessagePlan, HandoversOnOneRankAreNotPlanned)
{
    const auto plans = planMessages(handBuilt({ "0F0 1F0 1B0 0B0" }));
    ASSERT_EQ(plans.size(), 1u);
    EXPECT_TRUE(plans[0].receives.empty());
    EXPECT_TRUE(plans[0].sends.empty());
}

TEST(EngineMemory, EachSlotHoldsItsHighWaterMarkHandComputed)
{
    const Schedule s = twoRanks();
    const SimResult r = simulate(s, engineCosts(s, 1));
    ASSERT_FALSE(r.deadlocked);
    // Rank 0 starts with its 2 inputs and the first receive posted (window 1): 30. 0F0: input copy +10, then
    // F's 130 above: 170; after it keeps 100 and holds its output (10). 0F1: 140 + 10 + 130 = 280. 0B0: its
    // receive (nothing more to post) frees the first send (250 − 10), B's 7 above stays under 250. 0B1: posts
    // the second receive (130 + 10 = 140), frees the second send, 7 above: 137 < 140.
    EXPECT_EQ(totals(r.ranks[0]), (std::vector<double> { 30, 170, 280, 250, 140 }));
    EXPECT_DOUBLE_EQ(r.ranks[0].peakMemoryBytes, 280);
    EXPECT_DOUBLE_EQ(r.ranks[0].dataBytes, 20);
    EXPECT_DOUBLE_EQ(r.ranks[0].peakActivationBytes, 200);
    // Rank 1: 2 targets + 1 posted receive = 30. 1F0: 30 + 120 = 150, after 120. 1B0: 120 + 5 = 125, after
    // 30 with its gradient held. 1F1: posts the second receive (40), + 120 = 160. 1B1: 130 + 5 = 135.
    EXPECT_EQ(totals(r.ranks[1]), (std::vector<double> { 30, 150, 125, 160, 135 }));
    EXPECT_DOUBLE_EQ(r.ranks[1].peakMemoryBytes, 160);
}

TEST(EngineMemory, AWindowPostsReceivesAtTheStart)
{
    const Schedule s = twoRanks();
    const SimResult r = simulate(s, engineCosts(s, 8));
    // Both receives posted when the step starts: 10 more until each is consumed. Rank 0's 0B0 now peaks where
    // it starts (260: B's 7 above it come after its receive freed a send).
    EXPECT_EQ(totals(r.ranks[0]), (std::vector<double> { 40, 180, 290, 260, 140 }));
    EXPECT_EQ(totals(r.ranks[1]), (std::vector<double> { 40, 160, 135, 160, 135 }));
}

TEST(EngineMemory, OverlappedHalvesAddTheirHighWaterMarksAndReplicasAreSummedAtTheEnd)
{
    // Each rank runs both stages for its own microbatch (a replica of both): no messages between ranks, the
    // F of stage 1 overlapped with nothing, then an overlapped slot (0F1 runs beside 1B0 on rank 0).
    const Schedule s = handBuilt({ "0F0 1F0 (0F1;1B0)OVERLAP_F_B 1F1 1B1 0B0 0B1", "0F2 1F2 1B2 0B2" });
    CostModel c = engineCosts(s, 1);
    c.stages[0].parameterBytes = c.stages[0].gradientBytes = 1000.0;
    c.stages[1].parameterBytes = c.stages[1].gradientBytes = 2000.0;
    const SimResult r = simulate(s, c);
    ASSERT_FALSE(r.deadlocked) << r.deadlockMessage;
    // Rank 0: static 6000, inputs 2 × 10 (0F0, 0F1), targets 2 × 10: 6040. 0F0: + copy 10 + 130 = 6180, after
    // 6150 (keeps 100, hands 10 over). 1F0: + 120 = 6270, after 6240. The overlapped slot: 0F1's copy (6250),
    // then both halves at their high-water marks at once, 130 + 5: 6385 (a point per half); after 6260 (the
    // ledger 200, 1B0's gradient and 0F1's output handed over). 1F1: 6380, after 6350. 1B1: 6355, after 6260.
    // 0B0: 6267, after 6150. 0B1: 6157, after 6040; then the replica sum receives both stages' gradients from
    // rank 1: 6040 + 3000 = 9040.
    EXPECT_EQ(totals(r.ranks[0]), (std::vector<double> { 6040, 6180, 6270, 6385, 6385, 6380, 6355, 6267, 9040 }));
    EXPECT_DOUBLE_EQ(r.ranks[0].peakMemoryBytes, 9040);
    // Rank 1: 6000 + 10 + 10 = 6020: 0F2 6160 (after 6130), 1F2 6250 (after 6220), 1B2 6225 (after 6130), 0B2
    // 6137, after 6020 + 3000.
    EXPECT_EQ(totals(r.ranks[1]), (std::vector<double> { 6020, 6160, 6250, 6225, 9020 }));
}

TEST(EngineMemory, WithoutBuffersOnEveryStageTheLedgerAloneCounts)
{
    const Schedule s = twoRanks();
    CostModel c = engineCosts(s, 1);
    c.stages[1].engine.reset();
    const SimResult r = simulate(s, c);
    EXPECT_EQ(totals(r.ranks[0]), (std::vector<double> { 0, 100, 200, 100, 0 }));
    EXPECT_DOUBLE_EQ(r.ranks[0].peakMemoryBytes, 200);
    EXPECT_DOUBLE_EQ(r.ranks[0].dataBytes, 0);
}

// A transformer run of our engine (no EngineBuffers, CostModel::engineReplicaSum): the replica gradient sum at
// each rank's last slot, with expert parallelism. DualPipe on 2 ranks: both ranks hold both stages, and with dp 2
// and ep 2 each stage has 2 × 2 = 4 holders, of which this process and one other hold the same experts. A stage
// of gradientBytes 100 with 80 of routed experts (dense 20) receives the whole 100 from the same-experts holder
// and the dense 20 from each of the other 2, and packs its own dense 20 for them: 100 + 40 + 20 = 160 a stage,
// 320 a rank. Static 2 × 100 (gradients only), the ledger empty at the end: peak 200 + 320 = 520, above static +
// the activations (1 byte a microbatch and stage). Without experts the sum receives 3 × 100 a stage: 200 + 600 =
// 800. Without engineReplicaSum the ledger alone counts.
TEST(EngineMemory, ATransformerRunCountsTheReplicaSumOfItsExpertParallelGroups)
{
    const Schedule s = gen(ScheduleKind::DualPipe, 2, 4);
    ASSERT_EQ(s.stages, 2);
    CostModel c = unitCosts(s);
    for (StageCost& stage : c.stages) {
        stage.activationBytes = 1.0;
        stage.gradientBytes = 100.0;
        stage.expertGradientBytes = 80.0;
    }
    c.gradientReplicas = 2;
    c.expertParallel = 2;
    c.engineReplicaSum = true;
    const SimResult r = simulate(s, c);
    ASSERT_FALSE(r.deadlocked) << r.deadlockMessage;
    EXPECT_DOUBLE_EQ(r.ranks[0].peakMemoryBytes, 520.0);
    EXPECT_DOUBLE_EQ(r.ranks[1].peakMemoryBytes, 520.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].memory.back().totalBytes, 520.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].memory.back().timeUs, r.ranks[0].endUs);
    // Timed on one core shared by both ranks: the step's end point moves to the rank's end with the slots.
    const SimResult shared = simulateSharedCores(s, c, SharedCoresOptions { 1 });
    EXPECT_GT(shared.ranks[0].endUs, r.ranks[0].endUs);
    EXPECT_DOUBLE_EQ(shared.ranks[0].memory.back().timeUs, shared.ranks[0].endUs);
    EXPECT_DOUBLE_EQ(shared.ranks[0].memory.back().totalBytes, 520.0);
    c.expertParallel = 1;
    EXPECT_DOUBLE_EQ(simulate(s, c).ranks[0].peakMemoryBytes, 800.0);
    c.engineReplicaSum = false;
    const SimResult ledger = simulate(s, c);
    EXPECT_DOUBLE_EQ(ledger.ranks[0].peakMemoryBytes, 200.0 + ledger.ranks[0].peakActivationBytes);
    EXPECT_LT(ledger.ranks[0].peakMemoryBytes, 220.0);
}
