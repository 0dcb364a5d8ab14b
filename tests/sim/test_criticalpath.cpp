// The critical path of a timeline (sim/criticalpath.h) on simulated and measured steps, and stragglers and
// variance of measured runs (trace/runstats.h). Definitions in docs/analysis.md.
#include "simtest.h"

#include "base/errors.h"
#include "base/format.h"
#include "project/predict.h"
#include "sim/criticalpath.h"
#include "trace/runstats.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace dps;
using namespace dps::test;

namespace {

/// The path's elements as "kind:text@rank[start,end]" for exact comparison.
std::vector<std::string> describe(const CriticalPath& p)
{
    std::vector<std::string> out;
    for (const PathElement& e : p.elements) {
        std::string s = e.kind == PathElementKind::Action ? "A:" + toString(e.action)
            : e.kind == PathElementKind::Transfer ? "T:" + std::to_string(e.fromRank) + ">" + std::to_string(e.rank)
                                                  : "G:" + toString(e.action);
        s += "@" + std::to_string(e.rank) + "[" + formatNumber(e.startUs) + "," + formatNumber(e.endUs) + "]";
        out.push_back(s);
    }
    return out;
}

/// The path is a chain: every element starts where the one before it ended.
void expectChain(const CriticalPath& p)
{
    for (std::size_t i = 1; i < p.elements.size(); ++i)
        EXPECT_EQ(p.elements[i].startUs, p.elements[i - 1].endUs) << "element " << i;
    const double sum = std::accumulate(p.rankUs.begin(), p.rankUs.end(), p.transferUs);
    EXPECT_NEAR(sum, p.lengthUs, 1e-9 * p.lengthUs); // the sum of the durations, up to rounding
}

/// A measured step made from a simulated timeline: each slot starts when its rank is free and waits until its
/// inputs arrived (as the worker measures it).
MeasuredTrace measuredFrom(const Schedule& s, const SimResult& sim, int steps)
{
    MeasuredTrace t;
    for (int r = 0; r < s.ranks; ++r) {
        MeasuredRank rank;
        rank.rank = r;
        for (int step = 0; step < steps; ++step) {
            double free = 0.0;
            for (std::size_t i = 0; i < s.order[r].size(); ++i) {
                MeasuredAction a;
                a.action = s.order[r][i];
                a.step = step;
                a.startUs = free;
                a.waitUs = sim.timing[r][i].startUs - free;
                a.endUs = sim.timing[r][i].endUs;
                rank.actions.push_back(a);
                free = a.endUs;
            }
        }
        t.ranks.push_back(rank);
    }
    setStepsFromActions(t);
    return t;
}

/// 1F1B on 2 ranks × 2 microbatches, unit costs (F 1, B 2) and a 0.5 µs latency. By hand: rank 0 0F0 [0,1],
/// 0F1 [1,2]; rank 1 1F0 [1.5,2.5] (0F0 + 0.5), 1B0 [2.5,4.5], 1F1 [4.5,5.5] (rank busy until 4.5; 0F1 arrived at
/// 2.5), 1B1 [5.5,7.5]; rank 0 0B0 [5,7] (1B0 + 0.5), 0B1 [8,10] (1B1 + 0.5). Makespan 10.
struct OneFOneB {
    Schedule schedule = handBuilt({ "0F0 0F1 0B0 0B1", "1F0 1B0 1F1 1B1" });
    CostModel costs;
    SimResult sim;
    OneFOneB()
    {
        UniformCosts u;
        u.latencyUs = 0.5;
        costs = uniformCostModel(2, u);
        sim = simulate(schedule, costs);
    }
};

const std::vector<std::string> kOneFOneBPath = {
    "A:0F0@0[0,1]", // no predecessor: the chain starts here
    "T:0>1@1[1,1.5]",
    "A:1F0@1[1.5,2.5]", // rank 1's first slot: its input decides
    "A:1B0@1[2.5,4.5]", // own F: data dependency (ties with the rank's previous slot, the same 1F0)
    "A:1F1@1[4.5,5.5]", // the rank (free at 4.5) beats 0F1's arrival at 2.5
    "A:1B1@1[5.5,7.5]", "T:1>0@0[7.5,8]",
    "A:0B1@0[8,10]", // 1B1 + 0.5 = 8 beats rank 0's 0B0 ending at 7
};

} // namespace

TEST(CriticalPath, OneFOneBTwoRanksByHand)
{
    const OneFOneB f;
    ASSERT_EQ(f.sim.makespanUs, 10.0);
    const CriticalPath p = criticalPath(f.schedule, f.sim, f.costs);
    EXPECT_EQ(describe(p), kOneFOneBPath);
    EXPECT_EQ(p.lengthUs, 10.0);
    EXPECT_EQ(p.startUs, 0.0);
    EXPECT_EQ(p.endUs, 10.0);
    ASSERT_EQ(p.rankUs.size(), 2u);
    EXPECT_EQ(p.rankUs[0], 3.0); // 0F0 1 + 0B1 2
    EXPECT_EQ(p.rankUs[1], 6.0); // 1F0 1 + 1B0 2 + 1F1 1 + 1B1 2
    EXPECT_EQ(p.transferUs, 1.0);
    EXPECT_DOUBLE_EQ(p.rankShare(1), 0.6);
    EXPECT_DOUBLE_EQ(p.transferShare(), 0.1);
    EXPECT_TRUE(p.containsSlot(1, 2)); // 1F1
    EXPECT_FALSE(p.containsSlot(0, 2)); // 0B0 is off the path
    expectChain(p);
}

TEST(CriticalPath, MeasuredStepWithoutTransferRecordsFollowsTheWaits)
{
    // The same timeline measured: no transfer records, each wait ends when the message arrived. The path is the
    // simulated one, transfers from the producer's end to the end of the consumer's wait.
    const OneFOneB f;
    const MeasuredTrace t = measuredFrom(f.schedule, f.sim, 3);
    const CriticalPath p = measuredCriticalPath(t, 1);
    EXPECT_EQ(describe(p), kOneFOneBPath);
    EXPECT_EQ(p.lengthUs, 10.0);
    expectChain(p);
    EXPECT_TRUE(measuredCriticalPath(t, 7).elements.empty()); // no such step
}

TEST(CriticalPath, MeasuredGapsCountOnTheirRank)
{
    // Rank 1 starts 1B0 0.25 µs after 1F0 ended (overhead, no wait): a gap on rank 1.
    const OneFOneB f;
    MeasuredTrace t = measuredFrom(f.schedule, f.sim, 1);
    for (MeasuredAction& a : t.ranks[1].actions)
        if (a.startUs >= 2.5) {
            a.startUs += 0.25;
            a.endUs += 0.25;
        }
    for (MeasuredAction& a : t.ranks[0].actions)
        if (a.action == parseAction("0B1")) {
            a.endUs += 0.25; // its wait ends 0.25 later too: 1B1 now ends at 7.75, arrives at 8.25
            a.startUs = 7.0;
            a.waitUs = 1.25;
        }
    const CriticalPath p = measuredCriticalPath(t, 0);
    EXPECT_EQ(describe(p),
        (std::vector<std::string> { "A:0F0@0[0,1]", "T:0>1@1[1,1.5]", "A:1F0@1[1.5,2.5]", "G:1B0@1[2.5,2.75]",
            "A:1B0@1[2.75,4.75]", "A:1F1@1[4.75,5.75]", "A:1B1@1[5.75,7.75]", "T:1>0@0[7.75,8.25]",
            "A:0B1@0[8.25,10.25]" }));
    EXPECT_EQ(p.rankUs[1], 6.25);
    EXPECT_EQ(p.lengthUs, 10.25);
    expectChain(p);
}

TEST(CriticalPath, GoldenDualPipe8x20UnitCostsIsTheMakespan)
{
    // DualPipe, 8 ranks × 20 microbatches (tests/data/golden/dualpipe_pp8_mb20.csv), unit costs: makespan 66.
    const Schedule s = gen(ScheduleKind::DualPipe, 8, 20);
    const CostModel c = unitCosts(s);
    const SimResult r = simulate(s, c);
    ASSERT_FALSE(r.deadlocked);
    const CriticalPath p = criticalPath(s, r, c);
    EXPECT_EQ(p.lengthUs, r.makespanUs);
    EXPECT_EQ(p.lengthUs, 66.0);
    expectChain(p);
    const std::vector<std::string> d = describe(p);
    // It starts with microbatch 0's forward down the first ranks, one unit each (nothing delays it) ...
    ASSERT_GE(d.size(), 5u);
    EXPECT_EQ(d[0], "A:0F0@0[0,1]");
    EXPECT_EQ(d[2], "A:1F0@1[1,2]");
    EXPECT_EQ(d[4], "A:2F0@2[2,3]");
    // ... and ends with the last microbatch's backward-for-inputs chain from the last stage (7B9, the full
    // backward on rank 7, 2 units) down to stage 0, one unit each, then rank 0's last slot 0W9 (its W follows
    // its I: a data tie). 0W9 ends at the makespan: 66 = 58 + 7 × 1 + 1.
    const std::vector<std::string> tail = { "A:7B9@7[56,58]", "T:7>6@6[58,58]", "A:6I9@6[58,59]", "T:6>5@5[59,59]",
        "A:5I9@5[59,60]", "T:5>4@4[60,60]", "A:4I9@4[60,61]", "T:4>3@3[61,61]", "A:3I9@3[61,62]", "T:3>2@2[62,62]",
        "A:2I9@2[62,63]", "T:2>1@1[63,63]", "A:1I9@1[63,64]", "T:1>0@0[64,64]", "A:0I9@0[64,65]", "A:0W9@0[65,66]" };
    ASSERT_GE(d.size(), tail.size());
    EXPECT_EQ(std::vector<std::string>(d.end() - static_cast<std::ptrdiff_t>(tail.size()), d.end()), tail);
    EXPECT_EQ(p.elements.back().slot, static_cast<int>(s.order[0].size()) - 1);
    EXPECT_EQ(p.transferUs, 0.0); // unit costs: transfers are free
}

TEST(CriticalPath, DualPipeWithLatencyIsStillTheMakespan)
{
    UniformCosts u;
    u.latencyUs = 0.25;
    const Schedule s = gen(ScheduleKind::DualPipe, 8, 20);
    const CostModel c = uniformCostModel(s.stages, u);
    const SimResult r = simulate(s, c);
    const CriticalPath p = criticalPath(s, r, c);
    EXPECT_EQ(p.lengthUs, r.makespanUs);
    EXPECT_EQ(p.startUs, 0.0);
    expectChain(p);
    int transfers = 0;
    for (const PathElement& e : p.elements)
        if (e.kind == PathElementKind::Transfer) {
            ++transfers;
            EXPECT_EQ(e.durationUs(), 0.25);
        }
    EXPECT_EQ(p.transferUs, 0.25 * transfers);
    EXPECT_GT(transfers, 0);
}

TEST(CriticalPath, EmptyRun)
{
    const CriticalPath p = criticalPath(TimedRun {});
    EXPECT_TRUE(p.elements.empty());
    EXPECT_EQ(p.lengthUs, 0.0);
    EXPECT_EQ(p.rankShare(0), 0.0);
}

namespace {

/// A measured run of 4 ranks × 3 steps, each step on each rank one F then one B, the busy times given.
MeasuredTrace stragglerRun()
{
    // busy[r] = { F of steps 0..2, B of steps 0..2 }
    const double busy[4][6] = {
        { 10, 10, 10, 20, 20, 20 }, // compute per step 30, 30, 30
        { 10, 12, 14, 20, 20, 20 }, // 30, 32, 34
        { 13, 13, 13, 22, 22, 22 }, // 35, 35, 35: the slow one
        { 9, 9, 9, 19, 19, 19 }, // 28, 28, 28
    };
    MeasuredTrace t;
    for (int r = 0; r < 4; ++r) {
        MeasuredRank rank;
        rank.rank = r;
        for (int step = 0; step < 3; ++step) {
            const double wait = r == 1 ? 5.0 : 0.0; // waiting is not compute
            MeasuredAction f;
            f.action = Action::single(r, OpKind::F, 0);
            f.step = step;
            f.startUs = 0.0;
            f.waitUs = wait;
            f.endUs = wait + busy[r][step];
            MeasuredAction b;
            b.action = Action::single(r, OpKind::B, 0);
            b.step = step;
            b.startUs = f.endUs;
            b.endUs = f.endUs + busy[r][3 + step];
            rank.actions.push_back(f);
            rank.actions.push_back(b);
        }
        t.ranks.push_back(rank);
    }
    setStepsFromActions(t);
    return t;
}

} // namespace

TEST(RunStats, FlagsTheSlowRankByName)
{
    const RunStats s = runStats(stragglerRun());
    EXPECT_EQ(s.steps, 3);
    ASSERT_EQ(s.ranks.size(), 4u);
    // Rank 2: 35 against the median of {30, 32, 28} = 30: +16.7 % > 10 %.
    EXPECT_DOUBLE_EQ(s.ranks[2].excess, 35.0 / 30.0 - 1.0);
    EXPECT_TRUE(s.ranks[2].straggler);
    // Rank 1: 32 against median {30, 35, 28} = 30: +6.7 %, not flagged; rank 0: 30 against 32; rank 3: 28 vs 32.
    EXPECT_DOUBLE_EQ(s.ranks[1].excess, 32.0 / 30.0 - 1.0);
    EXPECT_FALSE(s.ranks[1].straggler);
    EXPECT_DOUBLE_EQ(s.ranks[0].excess, 30.0 / 32.0 - 1.0);
    EXPECT_DOUBLE_EQ(s.ranks[3].excess, 28.0 / 32.0 - 1.0);
    EXPECT_EQ(s.stragglerNames(), std::vector<std::string> { "rank 2" });
    // Rank 1's F busy times 10, 12, 14 (its 5 µs waits excluded): median 12, p10 = 10 + 0.2 × 2, p90 = 12 + 0.8 × 2.
    const Spread& f1 = s.ranks[1].byKind[static_cast<int>(SlotKind::F)];
    EXPECT_EQ(f1.count, 3);
    EXPECT_DOUBLE_EQ(f1.medianUs, 12.0);
    EXPECT_DOUBLE_EQ(f1.p10Us, 10.4);
    EXPECT_DOUBLE_EQ(f1.p90Us, 13.6);
    EXPECT_DOUBLE_EQ(s.ranks[1].stepCompute.medianUs, 32.0);
    EXPECT_EQ(s.ranks[1].byKind[static_cast<int>(SlotKind::W)].count, 0);
    // At a 20 % threshold nobody is flagged.
    EXPECT_TRUE(runStats(stragglerRun(), 0.2).stragglerNames().empty());
}

TEST(RunStats, SpreadAndThreshold)
{
    // Sorted 1 2 3 4: the low median 2 (one rule with the median step); p10 at position 0.3, p90 at 2.7.
    const Spread s = spreadOf({ 4.0, 1.0, 3.0, 2.0 });
    EXPECT_DOUBLE_EQ(s.medianUs, 2.0);
    EXPECT_DOUBLE_EQ(s.p10Us, 1.3);
    EXPECT_DOUBLE_EQ(s.p90Us, 3.7);
    EXPECT_EQ(spreadOf({}).count, 0);
    EXPECT_THROW(runStats(stragglerRun(), -0.1), ConstraintError);
    EXPECT_EQ(slotKindOf(parseAction("(0F1;1B0)OVERLAP_F_B")), SlotKind::FB);
    EXPECT_STREQ(slotKindName(SlotKind::FB), "F&B");
}

TEST(RunDiff, StartAndDurationDifferencesPerAction)
{
    const OneFOneB f;
    const MeasuredTrace a = measuredFrom(f.schedule, f.sim, 1);
    MeasuredTrace b = a;
    for (MeasuredAction& x : b.ranks[0].actions)
        if (x.action == parseAction("0B1")) {
            x.startUs += 0.5; // [7, 10] → [7.5, 11]: starts 0.5 later, lasts 0.5 longer
            x.endUs += 1.0;
        }
    b.ranks[1].actions.pop_back(); // 1B1 missing from B
    const RunDiff d = diffRuns(a, 0, b, 0);
    EXPECT_EQ(d.makespanA, 10.0);
    EXPECT_EQ(d.makespanB, 11.0);
    EXPECT_EQ(d.onlyInA, 1);
    EXPECT_EQ(d.onlyInB, 0);
    ASSERT_EQ(d.actions.size(), 7u);
    EXPECT_EQ(toString(d.actions[0].action), "0B1"); // the largest |start delta| first
    EXPECT_EQ(d.actions[0].rank, 0);
    EXPECT_EQ(d.actions[0].startA, 7.0);
    EXPECT_EQ(d.actions[0].startDeltaUs(), 0.5);
    EXPECT_EQ(d.actions[0].durationDeltaUs(), 0.5);
    EXPECT_EQ(d.actions[1].startDeltaUs(), 0.0);
    EXPECT_EQ(toString(d.actions[1].action), "0F0"); // then rank order, run A's order
}

TEST(CriticalPath, DefaultProjectPathIsItsMakespan)
{
    // The embedded default project (DualPipe, 8 ranks, its model's costs and p2p links): makespan 2365010.3104 µs.
    const Prediction p = predict(defaultProject(), "dualpipe");
    ASSERT_TRUE(p.valid()) << p.error;
    const CriticalPath path = criticalPath(*p.schedule, p.sim, p.costs);
    EXPECT_EQ(path.lengthUs, p.makespanUs);
    EXPECT_NEAR(path.lengthUs, 2365010.3104, 1e-4);
    EXPECT_EQ(path.startUs, 0.0);
    expectChain(path);
    EXPECT_GT(path.transferUs, 0.0); // the project's links cost time, and some of it is on the path
}
