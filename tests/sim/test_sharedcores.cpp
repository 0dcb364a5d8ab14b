// Ranks sharing cores (sim/sharedcores.h): hand-computed timelines of processor sharing, the overlapped slot's
// two threads, spinning and yielding waiters, the fall-back to simulate(), bounds on generated schedules, and
// predict()'s dispatch on PredictOptions::cores.
#include "sim/sharedcores.h"

#include "base/errors.h"
#include "project/predict.h"
#include "simtest.h"

#include <gtest/gtest.h>

#include <random>

using namespace dps;
using namespace dps::test;

namespace {

SimResult shared(const Schedule& s, const CostModel& c, int cores, WaitingRanks waiting = WaitingRanks::Auto)
{
    return simulateSharedCores(s, c, SharedCoresOptions { cores, waiting });
}

/// Work of every slot at full speed (µs): the op's time; an overlapped slot's two halves, D + clamp(F + B − D).
double totalWork(const Schedule& s, const CostModel& c)
{
    double work = 0.0;
    for (const auto& row : s.order)
        for (const Action& a : row) {
            if (!a.overlapped) {
                const StageCost& st = c.stages[static_cast<std::size_t>(a.op.stage)];
                const double op[4] = { st.forwardUs, st.inputGradUs, st.weightGradUs, st.backward() };
                work += op[static_cast<int>(a.op.kind)];
                continue;
            }
            const double d = c.overlapTime(a.op.stage, a.backward.stage);
            const double fb = c.stages[static_cast<std::size_t>(a.op.stage)].forwardUs
                + c.stages[static_cast<std::size_t>(a.backward.stage)].backward();
            work += d + std::clamp(fb - d, 0.0, d);
        }
    return work;
}

} // namespace

TEST(SharedCores, PeakThreadsCountAnOverlappedRankTwice)
{
    EXPECT_EQ(peakComputeThreads(gen(ScheduleKind::OneFOneB, 4, 8)), 4);
    EXPECT_EQ(peakComputeThreads(gen(ScheduleKind::DualPipeV, 2, 4)), 4);
    EXPECT_EQ(peakComputeThreads(handBuilt({ "0F0 0F1 0B0 0B1", "1F0 (1F1;1B0)OVERLAP_F_B 1B1" })), 3);
}

TEST(SharedCores, OpenMpisRuleForWaitingRanks)
{
    // Open MPI 4.1 turns mpi_yield_when_idle on when a node holds more ranks than slots (cores).
    EXPECT_FALSE(waitingRanksSpin(WaitingRanks::Auto, 8, 2));
    EXPECT_TRUE(waitingRanksSpin(WaitingRanks::Auto, 2, 2));
    EXPECT_TRUE(waitingRanksSpin(WaitingRanks::Auto, 1, 2));
    EXPECT_TRUE(waitingRanksSpin(WaitingRanks::Spin, 8, 2));
    EXPECT_FALSE(waitingRanksSpin(WaitingRanks::Yield, 2, 2));
}

// 1F1B, 2 ranks, 2 microbatches, F = 1, B = 2, free transfers, both ranks on 1 core (they yield when waiting):
//   t 0–1  r0 0F0 alone                                  → 0F0 [0, 1]
//   t 1–3  r0 0F1 and r1 1F0 share the core (rate ½)      → both [1, 3]
//   t 3–5  r0 waits for 1B0's gradient; r1 1B0 alone      → 1B0 [3, 5]
//   t 5–7  r0 0B0 (2) and r1 1F1 (1) at ½: 1F1 ends at 7  → 1F1 [5, 7], 0B0 has 1 left
//   t 7–9  0B0 and r1 1B1 at ½: 0B0 ends at 9             → 0B0 [5, 9], 1B1 has 1 left
//   t 9–10 1B1 alone                                      → 1B1 [7, 10]
//   t 10–12 r0 0B1 alone                                  → 0B1 [10, 12]
// Makespan 12 = the total work 2 × (1 + 1 + 2 + 2) on one core; with a core each it is 9.
TEST(SharedCores, OneFOneBTwoRanksOnOneCore)
{
    const Schedule s = gen(ScheduleKind::OneFOneB, 2, 2);
    ASSERT_EQ(toString(s.order[0][2]), "0B0");
    ASSERT_EQ(toString(s.order[1][1]), "1B0");
    const CostModel c = unitCosts(s);
    EXPECT_DOUBLE_EQ(simulate(s, c).makespanUs, 9.0);
    const SimResult r = shared(s, c, 1);
    ASSERT_FALSE(r.deadlocked);
    EXPECT_DOUBLE_EQ(r.makespanUs, 12.0);
    const double start[2][4] = { { 0, 1, 5, 10 }, { 1, 3, 5, 7 } };
    const double end[2][4] = { { 1, 3, 9, 12 }, { 3, 5, 7, 10 } };
    for (int rank = 0; rank < 2; ++rank)
        for (int i = 0; i < 4; ++i) {
            EXPECT_DOUBLE_EQ(r.timing[rank][i].startUs, start[rank][i]) << rank << " " << i;
            EXPECT_DOUBLE_EQ(r.timing[rank][i].endUs, end[rank][i]) << rank << " " << i;
        }
    EXPECT_DOUBLE_EQ(r.ranks[0].busyUs, 9.0);
    EXPECT_DOUBLE_EQ(r.ranks[1].busyUs, 9.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].idleUs, 3.0);
    EXPECT_DOUBLE_EQ(r.bubbleRate, 6.0 / 24.0);
    // Inputs as simulate() records them: 0B0 waited for rank 1's gradient (made at 5); 1F1's activation came
    // at 3 from rank 0 but the rank was busy until 5; 1B0's only input is its own forward.
    EXPECT_DOUBLE_EQ(r.timing[0][2].readyUs, 5.0);
    EXPECT_EQ(r.timing[0][2].waitedOnRank, 1);
    EXPECT_DOUBLE_EQ(r.timing[1][2].readyUs, 3.0);
    EXPECT_EQ(r.timing[1][2].waitedOnRank, 0);
    EXPECT_DOUBLE_EQ(r.timing[1][1].readyUs, 3.0);
    EXPECT_EQ(r.timing[1][1].waitedOnRank, -1);
}

// One microbatch through two stages with latency 0.5: the ranks never compute at once, so each has the whole
// core when it runs and the timeline is simulate()'s: F0 [0, 1], F1 [1.5, 2.5], B1 [2.5, 4.5], B0 [5, 7].
TEST(SharedCores, ARankAloneHasTheWholeCore)
{
    const Schedule s = handBuilt({ "0F0 0B0", "1F0 1B0" });
    UniformCosts u;
    u.latencyUs = 0.5;
    const CostModel c = uniformCostModel(2, u);
    const SimResult r = shared(s, c, 1);
    EXPECT_DOUBLE_EQ(r.makespanUs, 7.0);
    EXPECT_DOUBLE_EQ(r.timing[1][0].startUs, 1.5);
    EXPECT_DOUBLE_EQ(r.timing[1][1].endUs, 4.5);
    EXPECT_DOUBLE_EQ(r.timing[0][1].startUs, 5.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].busyUs, 3.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].idleUs, 4.0);
    EXPECT_DOUBLE_EQ(r.ranks[1].idleUs, 4.0);
    EXPECT_DOUBLE_EQ(r.bubbleRate, 8.0 / 14.0);
    // Same as with a core each, to the digit.
    const SimResult own = simulate(s, c);
    for (int rank = 0; rank < 2; ++rank)
        for (int i = 0; i < 2; ++i)
            EXPECT_EQ(r.timing[rank][i].endUs, own.timing[rank][i].endUs);
}

// One rank, F = 1, B = 2, the F&B slot typed as D = 2 (perfect overlap): its halves are 2 and 1 + 2 − 2 = 1 µs of
// work. On one core both run at ½ until the short one ends (2 µs), then the long one alone (1 µs): the slot
// lasts 3 = F + B instead of 2, and the step 1 + 3 + 2 = 6 instead of 5. With two cores it is simulate()'s.
TEST(SharedCores, AnOverlappedSlotCountsTwoThreads)
{
    const Schedule s = handBuilt({ "0F0 (0F1;0B0)OVERLAP_F_B 0B1" });
    const CostModel c = unitCosts(s, 2.0);
    EXPECT_DOUBLE_EQ(simulate(s, c).makespanUs, 5.0);
    const SimResult r = shared(s, c, 1);
    EXPECT_DOUBLE_EQ(r.makespanUs, 6.0);
    EXPECT_DOUBLE_EQ(r.timing[0][1].startUs, 1.0);
    EXPECT_DOUBLE_EQ(r.timing[0][1].endUs, 4.0);
    EXPECT_DOUBLE_EQ(r.ranks[0].busyUs, 6.0);
    EXPECT_DOUBLE_EQ(shared(s, c, 2).makespanUs, 5.0);
    // Overlap factor 1 (D = F + B = 3): no gain to share, the slot is one thread of 3 µs whatever the cores.
    EXPECT_DOUBLE_EQ(shared(s, unitCosts(s), 1).makespanUs, 6.0);
}

// Two ranks on two cores, rank 1 with an F&B slot of D = 2 (halves 2 and 1), F = 1, B = 2:
//   t 0–1   r0 0F0 (r1 waits)                       t 1–2  r0 0F1, r1 1F0
//   t 2     r1 starts (1F1;1B0): two threads; r0 waits for 1B0's gradient
// Spinning (2 ranks ≤ 2 cores: Open MPI leaves yield off): 3 threads on 2 cores, rate ⅔: the short half ends
// at 2 + 1.5 = 3.5, the long one has 1 left at rate 1: the slot ends at 4.5; 0B0 and 1B1 [4.5, 6.5], 0B1 [6.5,
// 8.5]. Yielding: 2 threads, rate 1: the slot [2, 4] and makespan 8, simulate()'s.
TEST(SharedCores, SpinningWaitersTakeAShare)
{
    const Schedule s = handBuilt({ "0F0 0F1 0B0 0B1", "1F0 (1F1;1B0)OVERLAP_F_B 1B1" });
    CostModel c = unitCosts(s);
    c.stages[1].overlapUs = 2.0;
    ASSERT_EQ(simulate(s, c).makespanUs, 8.0);
    const SimResult spin = shared(s, c, 2);
    EXPECT_DOUBLE_EQ(spin.makespanUs, 8.5);
    EXPECT_DOUBLE_EQ(spin.timing[1][1].startUs, 2.0);
    EXPECT_DOUBLE_EQ(spin.timing[1][1].endUs, 4.5);
    EXPECT_DOUBLE_EQ(spin.timing[0][2].startUs, 4.5);
    EXPECT_DOUBLE_EQ(spin.timing[0][3].endUs, 8.5);
    EXPECT_DOUBLE_EQ(spin.ranks[1].busyUs, 5.5);
    EXPECT_DOUBLE_EQ(shared(s, c, 2, WaitingRanks::Spin).makespanUs, 8.5);
    const SimResult yield = shared(s, c, 2, WaitingRanks::Yield);
    EXPECT_DOUBLE_EQ(yield.makespanUs, 8.0);
    EXPECT_DOUBLE_EQ(yield.timing[1][1].endUs, 4.0);
    // One core (2 ranks > 1 core: yield): 0F1 and 1F0 at ½ end at 3; the slot's halves at ½ until 5, then the
    // long one alone until 6; 0B0 and 1B1 at ½ [6, 10]; 0B1 [10, 12] = all 12 µs of work on one core.
    const SimResult one = shared(s, c, 1);
    EXPECT_DOUBLE_EQ(one.makespanUs, 12.0);
    EXPECT_DOUBLE_EQ(one.timing[1][1].startUs, 3.0);
    EXPECT_DOUBLE_EQ(one.timing[1][1].endUs, 6.0);
    EXPECT_DOUBLE_EQ(one.timing[0][3].startUs, 10.0);
}

TEST(SharedCores, EnoughCoresGiveExactlySimulatesResult)
{
    for (const Schedule& s : { gen(ScheduleKind::OneFOneB, 4, 8), gen(ScheduleKind::DualPipeV, 2, 8) }) {
        CostModel c = unitCosts(s, 2.5);
        c.latencyUs = 0.3;
        const SimResult own = simulate(s, c);
        const SimResult r = shared(s, c, peakComputeThreads(s));
        EXPECT_EQ(r.makespanUs, own.makespanUs);
        EXPECT_EQ(r.bubbleRate, own.bubbleRate);
        for (std::size_t rank = 0; rank < own.ranks.size(); ++rank) {
            EXPECT_EQ(r.ranks[rank].busyUs, own.ranks[rank].busyUs);
            ASSERT_EQ(r.timing[rank].size(), own.timing[rank].size());
            for (std::size_t i = 0; i < own.timing[rank].size(); ++i)
                EXPECT_EQ(r.timing[rank][i].endUs, own.timing[rank][i].endUs);
        }
    }
}

TEST(SharedCores, MemoryIsSimulatesOnTheSharedTimeline)
{
    const Schedule s = gen(ScheduleKind::OneFOneB, 2, 2);
    const CostModel c = unitCosts(s);
    const SimResult own = simulate(s, c);
    const SimResult r = shared(s, c, 1);
    for (int rank = 0; rank < 2; ++rank) {
        EXPECT_EQ(r.ranks[rank].peakMemoryBytes, own.ranks[rank].peakMemoryBytes);
        EXPECT_EQ(r.ranks[rank].p2pBytesSent, own.ranks[rank].p2pBytesSent);
        ASSERT_EQ(r.ranks[rank].memory.size(), 5u);
        for (std::size_t i = 0; i < 5; ++i)
            EXPECT_EQ(r.ranks[rank].memory[i].totalBytes, own.ranks[rank].memory[i].totalBytes);
    }
    // Rank 0's points: time 0, then the ends of 0F0, 0F1, 0B0, 0B1 on the shared timeline.
    const double times[5] = { 0, 1, 3, 9, 12 };
    for (std::size_t i = 0; i < 5; ++i)
        EXPECT_DOUBLE_EQ(r.ranks[0].memory[i].timeUs, times[i]);
    EXPECT_EQ(shared(s, c, 1).timing.size(), 2u);
    EXPECT_TRUE(simulateSharedCores(s, c, { 1, WaitingRanks::Auto }, { false, false }).timing.empty());
    EXPECT_TRUE(simulateSharedCores(s, c, { 1, WaitingRanks::Auto }, { false, false }).ranks[0].memory.empty());
}

TEST(SharedCores, ADeadlockIsSimulatesReport)
{
    const Schedule s = handBuilt({ "0F0 0B0", "1B0 1F0" });
    const SimResult own = simulate(s, unitCosts(s));
    ASSERT_TRUE(own.deadlocked);
    const SimResult r = shared(s, unitCosts(s), 1);
    EXPECT_TRUE(r.deadlocked);
    EXPECT_EQ(r.deadlockMessage, own.deadlockMessage);
}

TEST(SharedCores, NoCoresIsRefused)
{
    const Schedule s = gen(ScheduleKind::OneFOneB, 2, 2);
    try {
        shared(s, unitCosts(s), 0);
        FAIL() << "no exception";
    } catch (const ConstraintError& e) {
        EXPECT_STREQ(e.what(), "cores: must be at least 1, got 0");
    }
}

// Property on generated schedules with random per-stage costs and latency: with C cores the makespan is at
// least the makespan with a core per thread and at least all the work divided by C; idle = makespan − busy.
TEST(SharedCores, BoundsOnGeneratedSchedules)
{
    std::mt19937 rng(233);
    std::uniform_real_distribution<double> us(0.5, 3.0);
    const Schedule schedules[] = { gen(ScheduleKind::OneFOneB, 4, 8), gen(ScheduleKind::GPipe, 3, 5),
        gen(ScheduleKind::ZBH1, 4, 8), gen(ScheduleKind::DualPipe, 4, 8), gen(ScheduleKind::DualPipeV, 4, 8),
        gen(ScheduleKind::Interleaved1F1B, 2, 4, 2) };
    for (const Schedule& s : schedules) {
        CostModel c = unitCosts(s);
        c.latencyUs = 0.2;
        c.overlapFactor = 0.8;
        for (StageCost& st : c.stages) {
            st.forwardUs = us(rng);
            st.inputGradUs = us(rng);
            st.weightGradUs = us(rng);
        }
        const double unlimited = simulate(s, c).makespanUs;
        const double work = totalWork(s, c);
        for (int cores = 1; cores < peakComputeThreads(s); ++cores)
            for (WaitingRanks w : { WaitingRanks::Yield, WaitingRanks::Spin }) {
                const SimResult r = shared(s, c, cores, w);
                ASSERT_FALSE(r.deadlocked);
                const std::string what = std::string(kindName(s.kind)) + " on " + std::to_string(cores) + " cores";
                EXPECT_GE(r.makespanUs, unlimited - 1e-9) << what;
                EXPECT_GE(r.makespanUs, work / cores - 1e-9) << what;
                for (const RankResult& rr : r.ranks)
                    EXPECT_NEAR(rr.idleUs, r.makespanUs - rr.busyUs, 1e-9);
            }
    }
}

TEST(SharedCores, PredictDispatchesOnCores)
{
    const Project project = defaultProject();
    const Prediction own = predict(project, "dualpipe");
    ASSERT_TRUE(own.valid()) << own.error;
    EXPECT_NEAR(own.makespanUs, 2365010.3104, 1e-3);
    PredictOptions options;
    options.cores = 16; // ≥ 8 ranks × 2 threads: every thread has a core
    EXPECT_EQ(predict(project, "dualpipe", options).makespanUs, own.makespanUs);
    options.cores = 2;
    const Prediction two = predict(project, "dualpipe", options);
    ASSERT_TRUE(two.valid()) << two.error;
    // Overlap factor 1: every slot is one thread, so 8 ranks' work on 2 cores takes at least Σ busy / 2.
    double busy = 0.0;
    for (const RankResult& r : own.sim.ranks)
        busy += r.busyUs;
    EXPECT_GE(two.makespanUs, busy / 2.0 - 1e-6);
    EXPECT_LT(two.makespanUs, busy / 2.0 * 1.1) << "8 ranks keep 2 cores busy";
    EXPECT_EQ(two.peakMemoryBytes, own.peakMemoryBytes);
    EXPECT_EQ(two.p2pBytes, own.p2pBytes);
}
