// Overlapped F&B slots laid on two lanes (compute, expert all-to-all), node-aware transfers, per-stage
// optimizer bytes, and the lanes in the exported Chrome trace. Every expected number is computed by hand in
// the comment above it.
#include "project/predict.h"
#include "sim/alltoall.h"
#include "simtest.h"
#include "trace/chrometrace.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace dps;
using namespace dps::test;

namespace {

Chunk compute(double us, int layer)
{
    return Chunk { Chunk::Compute, us, layer };
}

Chunk comm(double us, int layer)
{
    return Chunk { Chunk::Comm, us, layer };
}

/// A stage of two MoE layers (L, L+1): F [C 10, M 4, C 10, M 4] = 28 µs, B [M 4, C 20, M 4, C 20] = 48 µs
/// (I = W = 24).
StageCost moeStage(int firstLayer)
{
    StageCost s;
    s.forwardChain
        = { compute(10, firstLayer), comm(4, firstLayer), compute(10, firstLayer + 1), comm(4, firstLayer + 1) };
    s.backwardChain
        = { comm(4, firstLayer + 1), compute(20, firstLayer + 1), comm(4, firstLayer), compute(20, firstLayer) };
    s.forwardUs = 28.0;
    s.inputGradUs = 24.0;
    s.weightGradUs = 24.0;
    return s;
}

/// A flat stage: F 5, I = W = 5 (B 10).
StageCost flatStage()
{
    StageCost s;
    s.forwardUs = 5.0;
    s.inputGradUs = 5.0;
    s.weightGradUs = 5.0;
    return s;
}

void expectSegment(const LaneSegment& s, double start, double end, Chunk::Lane lane, bool backward, int layer)
{
    EXPECT_DOUBLE_EQ(s.startUs, start);
    EXPECT_DOUBLE_EQ(s.endUs, end);
    EXPECT_EQ(s.lane, lane);
    EXPECT_EQ(s.backwardHalf, backward);
    EXPECT_EQ(s.layer, layer);
}

} // namespace

// Share 0. Placement order (each lane takes the chunk that can start first, the forward half on a tie):
// F C10 [0,10] (tie at 0 with B's M4: forward first); B M4 [0,4]; F M4 [10,14] (ready 10; B's C20 could also
// start at 10: tie, forward first); B C20 [10,30]; F C10 [30,40] (ready 14, lane free 30; B's M4 ready 30:
// tie); B M4 [30,34]; F M4 [40,44] (B's C20 also at 40: tie); B C20 [40,60]. Duration 60 (flat: 76);
// communication 16, all of it under compute: [0,4] ⊂ [0,10], [10,14] ⊂ [10,30], [30,34] ⊂ [30,40],
// [40,44] ⊂ [40,60].
TEST(OverlapLanes, TwoChainsShareZero)
{
    CostModel c;
    c.stages = { moeStage(0) };
    const OverlapLayout l = c.overlapLayout(0, 0);
    EXPECT_DOUBLE_EQ(l.durationUs, 60.0);
    EXPECT_DOUBLE_EQ(c.overlapTime(0, 0), 60.0);
    EXPECT_DOUBLE_EQ(l.commUs, 16.0);
    EXPECT_DOUBLE_EQ(l.hiddenCommUs, 16.0);
    ASSERT_EQ(l.segments.size(), 8u);
    expectSegment(l.segments[0], 0, 10, Chunk::Compute, false, 0);
    expectSegment(l.segments[1], 0, 4, Chunk::Comm, true, 1);
    expectSegment(l.segments[2], 10, 14, Chunk::Comm, false, 0);
    expectSegment(l.segments[3], 10, 30, Chunk::Compute, true, 1);
    expectSegment(l.segments[4], 30, 40, Chunk::Compute, false, 1);
    expectSegment(l.segments[5], 30, 34, Chunk::Comm, true, 0);
    expectSegment(l.segments[6], 40, 44, Chunk::Comm, false, 1);
    expectSegment(l.segments[7], 40, 60, Chunk::Compute, true, 0);
}

// Share 0.25: a compute chunk runs at 0.75 of its speed while an all-to-all is in flight, at full speed
// otherwise. F C10 from 0: 4 µs beside B's M4 [0,4] do 3 µs of work, the other 7 at full speed: [0,11]. At 11
// B's C20 (F's next is communication) and F's M4 [11,15]: 3 µs of work by 15, 17 more: [11,32]. At 32 F's C10
// and B's M4 [32,36]: [32,43]. At 43 B's C20 and F's M4 [43,47]: [43,64]. Duration 64 (share 0: 60; slowing
// every compute chunk of the slot would give 80); communication 16, all hidden.
TEST(OverlapLanes, TwoChainsComputeSlowedWhileTheAllToAllRuns)
{
    CostModel c;
    c.stages = { moeStage(0) };
    c.commComputeShare = 0.25;
    const OverlapLayout l = c.overlapLayout(0, 0);
    EXPECT_DOUBLE_EQ(l.durationUs, 64.0);
    EXPECT_DOUBLE_EQ(c.overlapTime(0, 0), l.durationUs);
    EXPECT_DOUBLE_EQ(l.commUs, 16.0);
    EXPECT_DOUBLE_EQ(l.hiddenCommUs, 16.0);
    ASSERT_EQ(l.segments.size(), 8u);
    expectSegment(l.segments[0], 0, 11, Chunk::Compute, false, 0);
    expectSegment(l.segments[1], 0, 4, Chunk::Comm, true, 1);
    expectSegment(l.segments[2], 11, 15, Chunk::Comm, false, 0);
    expectSegment(l.segments[3], 11, 32, Chunk::Compute, true, 1);
    expectSegment(l.segments[4], 32, 43, Chunk::Compute, false, 1);
    expectSegment(l.segments[5], 32, 36, Chunk::Comm, true, 0);
    expectSegment(l.segments[6], 43, 47, Chunk::Comm, false, 1);
    expectSegment(l.segments[7], 43, 64, Chunk::Compute, true, 0);
}

// F chain [C 2, M 8, C 2]; the backward stage has no chain: one compute chunk of B = 3 (I 1 + W 2).
// F C [0,2] (tie with B's C at 0); F M [2,10] and B C [2,5] (both can start at 2, different lanes); F C
// [10,12]. Duration 12; communication 8, of it [2,5] = 3 under compute.
TEST(OverlapLanes, ChainlessHalfIsOneComputeChunk)
{
    CostModel c;
    c.stages.resize(2);
    c.stages[0].forwardChain = { compute(2, 4), comm(8, 4), compute(2, 4) };
    c.stages[0].forwardUs = 12.0;
    c.stages[1].inputGradUs = 1.0;
    c.stages[1].weightGradUs = 2.0;
    const OverlapLayout l = c.overlapLayout(0, 1);
    EXPECT_DOUBLE_EQ(l.durationUs, 12.0);
    EXPECT_DOUBLE_EQ(l.commUs, 8.0);
    EXPECT_DOUBLE_EQ(l.hiddenCommUs, 3.0);
    ASSERT_EQ(l.segments.size(), 4u);
    expectSegment(l.segments[0], 0, 2, Chunk::Compute, false, 4);
    expectSegment(l.segments[1], 2, 10, Chunk::Comm, false, 4);
    expectSegment(l.segments[2], 2, 5, Chunk::Compute, true, -1);
    expectSegment(l.segments[3], 10, 12, Chunk::Compute, false, 4);
}

// Without chains, or with chains of compute only, the slot is overlapFactor × (F + B): 0.8 × (5 + 10) = 12.
TEST(OverlapLanes, FlatSlotsKeepTheFactorFormula)
{
    CostModel c;
    c.overlapFactor = 0.8;
    c.commComputeShare = 0.25;
    c.stages = { flatStage(), flatStage() };
    OverlapLayout l = c.overlapLayout(0, 1);
    EXPECT_DOUBLE_EQ(l.durationUs, 12.0);
    EXPECT_DOUBLE_EQ(c.overlapTime(0, 1), 12.0);
    EXPECT_TRUE(l.segments.empty());
    EXPECT_DOUBLE_EQ(l.commUs, 0.0);

    c.stages[0].forwardChain = { compute(2, 0), compute(3, 1) };
    c.stages[1].backwardChain = { compute(10, 1) };
    l = c.overlapLayout(0, 1);
    EXPECT_DOUBLE_EQ(l.durationUs, 12.0);
    EXPECT_TRUE(l.segments.empty());
    EXPECT_FALSE(hasCommunication(c.stages[0].forwardChain));
    EXPECT_TRUE(hasCommunication(moeStage(0).backwardChain));
}

// A typed F&B time of the forward stage wins over the chains (flat, no segments).
TEST(OverlapLanes, TypedOverlapTimeWins)
{
    CostModel c;
    c.stages = { moeStage(0), moeStage(2) };
    c.stages[0].overlapUs = 33.0;
    const OverlapLayout l = c.overlapLayout(0, 1);
    EXPECT_DOUBLE_EQ(l.durationUs, 33.0);
    EXPECT_TRUE(l.segments.empty());
    EXPECT_DOUBLE_EQ(c.overlapTime(0, 1), 33.0);
    // The backward stage's typed time does not apply: the slot's forward half is stage 1, backward stage 0.
    EXPECT_DOUBLE_EQ(c.overlapTime(1, 0), 60.0);
}

TEST(OverlapLanes, StageIndexOutOfRangeThrows)
{
    CostModel c;
    c.stages = { moeStage(0) };
    EXPECT_THROW((void)c.overlapLayout(0, 1), std::out_of_range);
    EXPECT_THROW((void)c.overlapTime(1, 0), std::out_of_range);
    // The StageCost overload takes defaults for such a stage: F C10 [0,10], M4 [10,14], C10 [14,24] against a
    // default B = 2 (one compute chunk, [10,12] while F's M4 runs, F's C10 then [14,24]), M4 [24,28].
    EXPECT_DOUBLE_EQ(c.overlapTime(c.stages[0], StageCost {}), 28.0);
}

TEST(OverlapLanes, TypedTimesClearTheChainsTheyReplace)
{
    StageCost s = moeStage(0);
    applyOverride(s, StageCostOverride { std::nullopt, std::nullopt, std::nullopt, std::nullopt, 40.0 });
    EXPECT_EQ(s.forwardChain.size(), 4u); // fb_us keeps both chains (it wins anyway)
    EXPECT_EQ(s.backwardChain.size(), 4u);
    applyOverride(s, StageCostOverride { 30.0, std::nullopt, std::nullopt, std::nullopt, std::nullopt });
    EXPECT_TRUE(s.forwardChain.empty());
    EXPECT_EQ(s.backwardChain.size(), 4u);
    EXPECT_DOUBLE_EQ(s.forwardUs, 30.0);

    for (int field = 0; field < 3; ++field) {
        StageCost t = moeStage(0);
        StageCostOverride o;
        (field == 0 ? o.inputGradUs : field == 1 ? o.weightGradUs : o.backwardUs) = 7.0;
        applyOverride(t, o);
        EXPECT_TRUE(t.backwardChain.empty()) << field;
        EXPECT_EQ(t.forwardChain.size(), 4u) << field;
    }
}

// Intra-node: 1 + 20 / 10 = 3 µs; inter-node: 5 + 20 / 2 = 15 µs.
TEST(OverlapLanes, TransferTimeByNode)
{
    CostModel c;
    c.latencyUs = 1.0;
    c.bandwidthBytesPerUs = 10.0;
    c.interNodeLatencyUs = 5.0;
    c.interNodeBandwidthBytesPerUs = 2.0;
    EXPECT_FALSE(c.crossesNodes(0, 3)); // no rankNode: one node
    EXPECT_DOUBLE_EQ(c.transferTime(20.0, 0, 3), 3.0);
    c.rankNode = { 0, 0, 1, 1 };
    EXPECT_FALSE(c.crossesNodes(0, 1));
    EXPECT_TRUE(c.crossesNodes(1, 2));
    EXPECT_TRUE(c.crossesNodes(3, 0));
    EXPECT_FALSE(c.crossesNodes(2, 7)); // a rank rankNode does not list shares the node
    EXPECT_DOUBLE_EQ(c.transferTime(20.0, 0, 1), 3.0);
    EXPECT_DOUBLE_EQ(c.transferTime(20.0, 1, 2), 15.0);
    EXPECT_DOUBLE_EQ(c.transferTime(20.0, 2, 1), 15.0);
    EXPECT_DOUBLE_EQ(c.transferTime(20.0), 3.0);
    c.interNodeBandwidthBytesPerUs = 0.0; // unlimited
    EXPECT_DOUBLE_EQ(c.transferTime(20.0, 1, 2), 5.0);
}

namespace {

/// 1F1B on 4 ranks, 2 microbatches; F 1, B 2 (I = W = 1); 20-byte messages; intra link 1 + 20/10 = 3 µs,
/// inter link 5 + 20/2 = 15 µs.
Schedule fourRanks()
{
    return handBuilt({ "0F0 0F1 0B0 0B1", "1F0 1F1 1B0 1B1", "2F0 2F1 2B0 2B1", "3F0 3B0 3F1 3B1" });
}

CostModel fourRankCosts()
{
    UniformCosts u;
    u.latencyUs = 1.0;
    u.bandwidthBytesPerUs = 10.0;
    CostModel c = uniformCostModel(4, u);
    for (StageCost& s : c.stages)
        s.messageBytes = 20.0;
    c.interNodeLatencyUs = 5.0;
    c.interNodeBandwidthBytesPerUs = 2.0;
    return c;
}

} // namespace

// One node: r0 F0 [0,1] F1 [1,2]; r1 [4,5] [5,6]; r2 [8,9] [9,10]; r3 F0 [12,13] B0 [13,15] F1 [15,16] B1
// [16,18]; r2 B0 [18,20] B1 [21,23]; r1 B0 [23,25] B1 [26,28]; r0 B0 [28,30] B1 [31,33]: makespan 33.
// rankNode {0,0,1,1}: the hop r1 ↔ r2 takes 15 µs: r2 F0 [20,21] F1 [21,22]; r3 F0 [24,25] B0 [25,27]
// F1 [27,28] B1 [28,30]; r2 B0 [30,32] B1 [33,35]; r1 B0 [47,49] B1 [50,52]; r0 B0 [52,54] B1 [55,57]:
// makespan 57.
TEST(OverlapLanes, OneFOneBAcrossTwoNodes)
{
    const Schedule s = fourRanks();
    CostModel c = fourRankCosts();
    EXPECT_DOUBLE_EQ(simulate(s, c).makespanUs, 33.0);

    c.rankNode = { 0, 0, 1, 1 };
    const SimResult r = simulate(s, c);
    ASSERT_FALSE(r.deadlocked);
    EXPECT_DOUBLE_EQ(r.makespanUs, 57.0);
    EXPECT_DOUBLE_EQ(r.timing[2][0].startUs, 20.0);
    EXPECT_DOUBLE_EQ(r.timing[2][0].readyUs, 20.0);
    EXPECT_EQ(r.timing[2][0].waitedOnRank, 1);
    EXPECT_DOUBLE_EQ(r.timing[3][0].startUs, 24.0);
    EXPECT_DOUBLE_EQ(r.timing[1][2].startUs, 47.0);
    EXPECT_DOUBLE_EQ(r.timing[0][3].startUs, 55.0);
    // Bytes do not depend on the link: 3 boundaries × 2 microbatches × 2 directions × 20.
    EXPECT_DOUBLE_EQ(r.totalP2pBytes, 240.0);

    // The exported flows use the same links: 1F0 ends at 5, arrives on rank 2 at 5 + 15 = 20.
    const Timeline t = timelineFromSimulation(s, c, r);
    bool found = false;
    for (const TimelineFlow& f : t.flows)
        if (f.fromRank == 1 && f.toRank == 2 && f.fromSlice == 0) {
            found = true;
            EXPECT_DOUBLE_EQ(f.sendUs, 5.0);
            EXPECT_DOUBLE_EQ(f.arriveUs, 20.0);
        }
    EXPECT_TRUE(found);

    // rankNode listing fewer ranks: the unlisted ones share every node, so only r0 → r1 would cross; here
    // {0, 1}: the hop r0 ↔ r1 is inter-node, r1 ↔ r2 intra. r1 F0 [16,17] F1 [17,18]; r2 [20,21] [21,22];
    // r3 F0 [24,25] B0 [25,27] F1 [27,28] B1 [28,30]; r2 B0 [30,32] B1 [33,35]; r1 B0 [35,37] B1 [38,40];
    // r0 B0 [52,54] B1 [55,57]: makespan 57 too, with the crossing moved to r0 ↔ r1.
    c.rankNode = { 0, 1 };
    const SimResult partial = simulate(s, c);
    EXPECT_DOUBLE_EQ(partial.makespanUs, 57.0);
    EXPECT_DOUBLE_EQ(partial.timing[1][0].startUs, 16.0);
    EXPECT_DOUBLE_EQ(partial.timing[1][2].startUs, 35.0);
}

namespace {

/// One rank holding stages 0 (flat: F 5, B 10) and 1 (two MoE layers: F 28, B 48, chains as moeStage).
Schedule oneRankTwoStages()
{
    return handBuilt({ "0F0 1F0 0F1 1F1 (0F2;1B0)OVERLAP_F_B (1F2;1B1)OVERLAP_F_B 0B0 0B1 1B2 0B2" });
}

CostModel oneRankCosts()
{
    CostModel c;
    c.stages = { flatStage(), moeStage(2) };
    return c;
}

} // namespace

// 0F0 [0,5], 1F0 [5,33], 0F1 [33,38], 1F1 [38,66]; (0F2;1B0): F single C5 [0,5] (tie with B's M4 at 0),
// B M4 [0,4], C20 [5,25], M4 [25,29], C20 [29,49]: 49 → [66,115]; (1F2;1B1): 60 (TwoChainsShareZero) →
// [115,175]; 0B0 [175,185], 0B1 [185,195], 1B2 [195,243], 0B2 [243,253]. Makespan 253.
TEST(OverlapLanes, SimulatorTimesLaidSlotsByTheLayout)
{
    const Schedule s = oneRankTwoStages();
    const CostModel c = oneRankCosts();
    EXPECT_DOUBLE_EQ(c.overlapTime(0, 1), 49.0);
    const SimResult r = simulate(s, c);
    ASSERT_FALSE(r.deadlocked);
    EXPECT_DOUBLE_EQ(r.makespanUs, 253.0);
    EXPECT_DOUBLE_EQ(r.timing[0][4].startUs, 66.0);
    EXPECT_DOUBLE_EQ(r.timing[0][4].endUs, 115.0);
    EXPECT_DOUBLE_EQ(r.timing[0][5].endUs, 175.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].busyUs, 253.0);
}

namespace {

/// One rank, n stages, 2 microbatches: every F of microbatch 0, then n overlapped slots (kF1; (n−1−k)B0),
/// then every B of microbatch 1: n distinct (forward, backward) stage pairs.
Schedule oneRankManyPairs(int n)
{
    std::string row;
    for (int k = 0; k < n; ++k)
        row += std::to_string(k) + "F0 ";
    for (int k = 0; k < n; ++k)
        row += "(" + std::to_string(k) + "F1;" + std::to_string(n - 1 - k) + "B0)OVERLAP_F_B ";
    for (int k = n - 1; k >= 0; --k)
        row += std::to_string(k) + "B1 ";
    return handBuilt({ row });
}

} // namespace

// Every stage as moeStage: n × (F 28 + F&B 60 + B 48) = 136 n. 200 stages: pairs cached in the flat table
// (200² entries); 300 stages: past 2^16 entries, in the hash map.
TEST(OverlapLanes, ManyStagePairsTableAndMap)
{
    for (const int n : { 200, 300 }) {
        CostModel c;
        c.stages.assign(static_cast<std::size_t>(n), moeStage(0));
        const SimResult r = simulate(oneRankManyPairs(n), c);
        ASSERT_FALSE(r.deadlocked) << r.deadlockMessage;
        EXPECT_DOUBLE_EQ(r.makespanUs, 136.0 * n) << n;
        EXPECT_DOUBLE_EQ(r.timing[0][static_cast<std::size_t>(n)].endUs, 28.0 * n + 60.0) << n;
    }
}

// Static memory: stage 0 parameters 20 + gradients 40 + typed optimizer 100 = 160; stage 1 20 + 40 + 10
// parameters × 12 = 120 → 180. The peak adds the activations (1 byte per live microbatch, here 1).
TEST(OverlapLanes, StaticBytesUseOptimizerBytesWhenSet)
{
    const Schedule s = handBuilt({ "0F0 0B0", "1F0 1B0" });
    CostModel c = uniformCostModel(2);
    c.optimizerBytesPerParameter = 12.0;
    for (StageCost& st : c.stages) {
        st.parameterCount = 10.0;
        st.parameterBytes = 20.0;
        st.gradientBytes = 40.0;
    }
    c.stages[0].optimizerBytes = 100.0;
    const SimResult r = simulate(s, c);
    EXPECT_DOUBLE_EQ(r.ranks[0].staticBytes, 160.0);
    EXPECT_DOUBLE_EQ(r.ranks[1].staticBytes, 180.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].peakMemoryBytes, 161.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].parameterBytes, 20.0);

    const std::vector<StaticMemory> m = staticMemoryPerRank(s, c);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_DOUBLE_EQ(m[0].optimizer, 100.0);
    EXPECT_DOUBLE_EQ(m[1].optimizer, 120.0);
    EXPECT_DOUBLE_EQ(m[0].total(), 160.0);
    EXPECT_DOUBLE_EQ(m[1].total(), 180.0);
}

// Memory in an overlapped slot: the same two points (after its F, after its backward) with or without lanes.
// Stage 0 keeps 1 byte per microbatch, stage 1 too: after 1F1 2 + 2 = 4 bytes live; the slot (0F2;1B0) ends
// at 115: +1 (0F2) → 5, −1 (1B0) → 4.
TEST(OverlapLanes, MemoryOfALaidSlotIsUnchanged)
{
    const SimResult r = simulate(oneRankTwoStages(), oneRankCosts());
    const std::vector<MemoryPoint>& m = r.ranks[0].memory;
    ASSERT_GE(m.size(), 7u);
    EXPECT_DOUBLE_EQ(m[4].timeUs, 66.0);
    EXPECT_DOUBLE_EQ(m[4].activationBytes, 4.0);
    EXPECT_DOUBLE_EQ(m[5].timeUs, 115.0);
    EXPECT_DOUBLE_EQ(m[5].activationBytes, 5.0);
    EXPECT_DOUBLE_EQ(m[6].timeUs, 115.0);
    EXPECT_DOUBLE_EQ(m[6].activationBytes, 4.0);
    EXPECT_EQ(r.ranks[0].peakInflight, 5);
}

TEST(OverlapLanes, ClosedFormNotApplicableWithAllToAll)
{
    const Schedule s = gen(ScheduleKind::DualPipe, 4, 8);
    CostModel c = uniformCostModel(s.stages);
    EXPECT_TRUE(closedFormLargestIdle(s, c).applicable);
    for (StageCost& st : c.stages) {
        st.forwardChain = { compute(0.5, 0), comm(0.5, 0) };
    }
    const ClosedForm f = closedFormLargestIdle(s, c);
    EXPECT_TRUE(f.available);
    EXPECT_FALSE(f.applicable);
    EXPECT_EQ(f.reason, "expert all-to-all in the slots; simulated value only");
}

TEST(OverlapLanes, ClosedFormNeedsAFreeInterNodeLink)
{
    const Schedule s = gen(ScheduleKind::OneFOneB, 4, 8);
    CostModel c = uniformCostModel(s.stages);
    c.rankNode = { 0, 0, 1, 1 };
    EXPECT_TRUE(closedFormLargestIdle(s, c).applicable); // inter-node link free too
    c.interNodeLatencyUs = 2.0;
    const ClosedForm f = closedFormLargestIdle(s, c);
    EXPECT_FALSE(f.applicable);
    EXPECT_EQ(
        f.reason, "the form assumes free communication; latency or bandwidth adds transfer time; simulated value only");
    c.rankNode = { 0, 0, 0, 0 }; // one node: the inter-node link is never used
    EXPECT_TRUE(closedFormLargestIdle(s, c).applicable);
}

// The slot (0F2;1B0) at [66,115]: its forward half holds one chunk "F compute" [66,71] (stage 0 has no
// chain), its backward half the four chunks of layers 3 and 2 at 66 + [0,4], [5,25], [25,29], [29,49].
TEST(OverlapLanes, ChromeTraceShowsTheLanes)
{
    const Schedule s = oneRankTwoStages();
    const CostModel c = oneRankCosts();
    const SimResult r = simulate(s, c);
    const Timeline t = timelineFromSimulation(s, c, r);
    const TimelineSlice& slot = t.ranks[0].slices[4];
    ASSERT_EQ(slot.halves.size(), 2u);
    ASSERT_EQ(slot.halves[0].lanes.size(), 1u);
    EXPECT_EQ(slot.halves[0].lanes[0].action, "F compute");
    EXPECT_DOUBLE_EQ(slot.halves[0].lanes[0].startUs, 66.0);
    EXPECT_DOUBLE_EQ(slot.halves[0].lanes[0].endUs, 71.0);
    const std::vector<TimelineSlice>& b = slot.halves[1].lanes;
    ASSERT_EQ(b.size(), 4u);
    EXPECT_EQ(b[0].action, "L3 B all-to-all");
    EXPECT_EQ(b[0].kind, "all-to-all");
    EXPECT_DOUBLE_EQ(b[0].startUs, 66.0);
    EXPECT_DOUBLE_EQ(b[0].endUs, 70.0);
    EXPECT_EQ(b[1].action, "L3 B compute");
    EXPECT_DOUBLE_EQ(b[1].startUs, 71.0);
    EXPECT_DOUBLE_EQ(b[1].endUs, 91.0);
    EXPECT_EQ(b[3].action, "L2 B compute");
    EXPECT_DOUBLE_EQ(b[3].endUs, 115.0);
    EXPECT_EQ(b[3].stage, 1);
    EXPECT_EQ(b[3].microbatch, 0);
    EXPECT_TRUE(t.ranks[0].slices[0].halves.empty());

    // In the Chrome JSON, each chunk follows its half on the half's track (tid 1 forward, 2 backward).
    const nlohmann::json trace = chromeTrace(t);
    int lanes = 0;
    for (const nlohmann::json& e : trace["traceEvents"]) {
        if (e.value("cat", "") != "lane")
            continue;
        ++lanes;
        if (e["name"] == "L2 B all-to-all" && e["ts"] == 66.0 + 25.0) {
            EXPECT_EQ(e["tid"], 2);
            EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 4.0);
            EXPECT_EQ(e["args"]["lane"], "all-to-all");
            EXPECT_EQ(e["args"]["layer"], 2);
        }
        if (e["name"] == "F compute") {
            EXPECT_EQ(e["tid"], 1);
        }
    }
    // (0F2;1B0): 1 + 4 chunks; (1F2;1B1): 4 + 4.
    EXPECT_EQ(lanes, 13);
}

// The all-to-all per rank (sim/alltoall.h). Rank 0: 0F0 (plain: its chain's communication, 8), (0F1;0B0) (the
// TwoChainsShareZero layout: 16, all hidden), 0I1 (the backward chain's, 8), 0W1 (none). Rank 1 holds the
// flat stage: no all-to-all. So rank 0 has 32 µs, 16 of it hidden (50 %); rank 1 none (share 0, no division).
TEST(OverlapLanes, AllToAllPerRankCountsPlainSlotsAsExposed)
{
    const Schedule s = handBuilt({ "0F0 (0F1;0B0)OVERLAP_F_B 0I1 0W1", "1F0 1F1 1B0 1B1" });
    CostModel c;
    c.stages = { moeStage(0), flatStage() };
    const std::vector<RankAllToAll> a = allToAllPerRank(s, c);
    ASSERT_EQ(a.size(), 2u);
    EXPECT_DOUBLE_EQ(a[0].commUs, 32.0);
    EXPECT_DOUBLE_EQ(a[0].hiddenUs, 16.0);
    EXPECT_DOUBLE_EQ(a[0].hiddenShare(), 0.5);
    EXPECT_DOUBLE_EQ(a[1].commUs, 0.0);
    EXPECT_DOUBLE_EQ(a[1].hiddenShare(), 0.0);
    // The chainless half of ChainlessHalfIsOneComputeChunk hides 3 of its 8.
    CostModel d;
    d.stages.resize(2);
    d.stages[0].forwardChain = { compute(2, 4), comm(8, 4), compute(2, 4) };
    d.stages[1].inputGradUs = 1.0;
    d.stages[1].weightGradUs = 2.0;
    const auto b = allToAllPerRank(handBuilt({ "0F0 (0F1;1B0)OVERLAP_F_B", "1F0 1B1" }), d);
    EXPECT_DOUBLE_EQ(b[0].commUs, 16.0);
    EXPECT_DOUBLE_EQ(b[0].hiddenUs, 3.0);
}
