// Generated schedules under unit costs (zero latency) against the closed forms, over many sizes, and the
// DualPipe/DualPipeV golden files' simulated checks (idle per rank, makespan, peak in-flight).
#include "base/fileio.h"
#include "simtest.h"

#include "schedule/csvio.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

using namespace dps;
using namespace dps::test;

namespace {

constexpr double kEps = 1e-9;

/// (PP/2−1)(F&B+B−3W) with unit F, I, W and B = 2.
double dualPipeForm(int stages, double fb)
{
    return (stages / 2.0 - 1.0) * (fb + 2.0 - 3.0);
}

void expectClosedForm(const Schedule& s, const CostModel& c, const SimResult& r)
{
    const ClosedForm cf = closedFormLargestIdle(s, c);
    ASSERT_TRUE(cf.available);
    ASSERT_TRUE(cf.applicable) << cf.reason;
    EXPECT_NEAR(maxIdle(r), cf.valueUs, kEps) << kindName(s.kind) << " " << s.ranks << "x" << s.microbatches;
}

struct GoldenCase {
    const char* name;
    ScheduleKind kind;
};

} // namespace

TEST(ClosedForms, DualPipeLargestIdleAndPeakInflightOverSizes)
{
    for (int ranks : { 2, 4, 6, 8, 10, 12, 16 })
        for (int mb : { 2 * ranks, 2 * ranks + 2, 3 * ranks + (3 * ranks) % 2, 4 * ranks, 6 * ranks })
            for (double fb : { 2.0, 2.5, 3.0 }) {
                const Schedule s = gen(ScheduleKind::DualPipe, ranks, mb);
                const CostModel c = unitCosts(s, fb);
                const SimResult r = simulate(s, c, SimOptions { false, false });
                ASSERT_FALSE(r.deadlocked) << r.deadlockMessage;
                EXPECT_NEAR(maxIdle(r), dualPipeForm(ranks, fb), kEps) << ranks << "x" << mb << " F&B " << fb;
                expectClosedForm(s, c, r);
                for (const RankResult& rr : r.ranks)
                    EXPECT_EQ(rr.peakInflight, ranks + 1) << ranks << "x" << mb;
            }
}

TEST(ClosedForms, DualPipeVLargestIdleOverSizesWithPPTheStageCount)
{
    for (int ranks : { 1, 2, 3, 4, 5, 6, 8 })
        for (int mb : { 2 * ranks, 2 * ranks + 1, 3 * ranks, 4 * ranks, 5 * ranks + 3 })
            for (double fb : { 2.0, 2.5, 3.0 }) {
                const Schedule s = gen(ScheduleKind::DualPipeV, ranks, mb);
                ASSERT_EQ(s.stages, 2 * ranks);
                const CostModel c = unitCosts(s, fb);
                const SimResult r = simulate(s, c, SimOptions { false, false });
                ASSERT_FALSE(r.deadlocked) << r.deadlockMessage;
                EXPECT_NEAR(maxIdle(r), dualPipeForm(2 * ranks, fb), kEps) << ranks << "x" << mb << " F&B " << fb;
                expectClosedForm(s, c, r);
                for (const RankResult& rr : r.ranks)
                    EXPECT_EQ(rr.peakInflight, 2 * ranks + 1) << ranks << "x" << mb;
            }
}

TEST(ClosedForms, DualPipe8x20MatchesTheReadmeNumbers)
{
    const Schedule s = gen(ScheduleKind::DualPipe, 8, 20);
    SimResult r = simulate(s, unitCosts(s, 3.0));
    EXPECT_DOUBLE_EQ(r.makespanUs, 66.0);
    for (const RankResult& rr : r.ranks)
        EXPECT_DOUBLE_EQ(rr.idleUs, 6.0);
    r = simulate(s, unitCosts(s, 2.5));
    EXPECT_DOUBLE_EQ(r.makespanUs, 59.0);
    EXPECT_EQ(idleVector(r), (std::vector<double> { 3.5, 4.0, 4.5, 4.5, 4.5, 4.5, 4.0, 3.5 }));
}

TEST(ClosedForms, GoldenChecksFromGeneratedAndFromCsv)
{
    const GoldenCase cases[] = { { "dualpipe_pp4_mb8", ScheduleKind::DualPipe },
        { "dualpipe_pp4_mb10", ScheduleKind::DualPipe }, { "dualpipe_pp8_mb20", ScheduleKind::DualPipe },
        { "dualpipev_pp2_mb4", ScheduleKind::DualPipeV }, { "dualpipev_pp4_mb10", ScheduleKind::DualPipeV } };
    for (const GoldenCase& gc : cases) {
        const std::string base = std::string(DPS_TEST_DATA) + "/golden/" + gc.name;
        const nlohmann::json golden = nlohmann::json::parse(readTextFile(base + ".json"));
        const nlohmann::json& checks = golden.at("checks");
        const Schedule generated = gen(gc.kind, golden.at("num_ranks"), golden.at("num_microbatches"));
        const Schedule imported = readCsv(readTextFile(base + ".csv")).schedule;
        ASSERT_EQ(imported.stages, golden.at("num_stages").get<int>()) << gc.name;
        for (const Schedule* s : { &generated, &imported })
            for (const char* sim : { "bubble_sim_FB_eq_F_plus_B", "bubble_sim_FB_2.5" }) {
                const nlohmann::json& expect = checks.at(sim);
                const SimResult r = simulate(*s, unitCosts(*s, expect.at("cost").at("F&B").get<double>()));
                ASSERT_FALSE(r.deadlocked) << gc.name;
                EXPECT_DOUBLE_EQ(r.makespanUs, expect.at("makespan").get<double>()) << gc.name << " " << sim;
                EXPECT_EQ(idleVector(r), expect.at("idle_per_rank").get<std::vector<double>>())
                    << gc.name << " " << sim;
                std::vector<int> inflight;
                for (const RankResult& rr : r.ranks)
                    inflight.push_back(rr.peakInflight);
                EXPECT_EQ(inflight, checks.at("peak_inflight_activations_per_rank").get<std::vector<int>>()) << gc.name;
            }
    }
}

TEST(ClosedForms, OneFOneBIdleOnEveryRank)
{
    for (int p = 1; p <= 8; ++p)
        for (int m = p; m <= 3 * p + 1; m += std::max(1, p / 2)) {
            const Schedule s = gen(ScheduleKind::OneFOneB, p, m);
            const CostModel c = unitCosts(s);
            const SimResult r = simulate(s, c);
            for (const RankResult& rr : r.ranks)
                EXPECT_DOUBLE_EQ(rr.idleUs, (p - 1) * 3.0) << p << "x" << m;
            expectClosedForm(s, c, r);
        }
}

TEST(ClosedForms, GPipeMakespan)
{
    for (int p = 1; p <= 8; ++p)
        for (int m : { 1, 2, p, 2 * p + 1 }) {
            const Schedule s = gen(ScheduleKind::GPipe, p, m);
            const CostModel c = unitCosts(s);
            const SimResult r = simulate(s, c);
            EXPECT_DOUBLE_EQ(r.makespanUs, (m + p - 1) * 3.0) << p << "x" << m;
            expectClosedForm(s, c, r);
        }
}

TEST(ClosedForms, ZBH1LargestIdle)
{
    for (int p = 1; p <= 8; ++p)
        for (int m : { p, p + 1, 2 * p, 3 * p + 2 }) {
            const Schedule s = gen(ScheduleKind::ZBH1, p, m);
            const CostModel c = unitCosts(s);
            const SimResult r = simulate(s, c);
            EXPECT_DOUBLE_EQ(maxIdle(r), (p - 1) * (1.0 + 2.0 - 2.0)) << p << "x" << m;
            expectClosedForm(s, c, r);
        }
}

TEST(ClosedForms, InterleavedIdleIsOneVthOfOneFOneBOnTheSameModel)
{
    for (int v : { 2, 3, 4 })
        for (int p = 1; p <= 6; ++p)
            for (int k : { 1, 2, 3 }) {
                const int m = k * p;
                const Schedule s = gen(ScheduleKind::Interleaved1F1B, p, m, v);
                const CostModel c = unitCosts(s);
                const SimResult r = simulate(s, c);
                for (const RankResult& rr : r.ranks)
                    EXPECT_DOUBLE_EQ(rr.idleUs, (p - 1) * 3.0) << v << " " << p << "x" << m;
                expectClosedForm(s, c, r);
                // 1F1B on the same model: each of its stages is v of these.
                const Schedule one = gen(ScheduleKind::OneFOneB, p, m);
                UniformCosts big;
                big.f = v;
                big.i = v;
                big.w = v;
                const SimResult r1 = simulate(one, uniformCostModel(one.stages, big));
                EXPECT_NEAR(maxIdle(r1) / v, maxIdle(r), kEps) << v << " " << p << "x" << m;
            }
}

TEST(ClosedForms, DualPipeHoldsTwiceTheParametersOfOneFOneB)
{
    const Schedule dp = gen(ScheduleKind::DualPipe, 4, 8);
    const Schedule one = gen(ScheduleKind::OneFOneB, 4, 8);
    for (const Schedule* s : { &dp, &one }) {
        ASSERT_EQ(s->stages, 4);
    }
    CostModel c = uniformCostModel(4);
    for (StageCost& st : c.stages) {
        st.parameterCount = 1000.0;
        st.parameterBytes = 4000.0;
        st.gradientBytes = 4000.0;
    }
    c.optimizerBytesPerParameter = 8.0;
    const SimResult rdp = simulate(dp, c);
    const SimResult r1 = simulate(one, c);
    for (std::size_t r = 0; r < 4; ++r) {
        EXPECT_DOUBLE_EQ(r1.ranks[r].parameterBytes, 4000.0);
        EXPECT_DOUBLE_EQ(rdp.ranks[r].parameterBytes, 2.0 * r1.ranks[r].parameterBytes);
        EXPECT_DOUBLE_EQ(rdp.ranks[r].staticBytes, 2.0 * r1.ranks[r].staticBytes);
        EXPECT_DOUBLE_EQ(r1.ranks[r].staticBytes, 16000.0);
        EXPECT_DOUBLE_EQ(rdp.ranks[r].memory.front().totalBytes, 32000.0);
    }
}

TEST(ClosedForms, OutsideTheRangeOnlyTheSimulatedValue)
{
    const Schedule s = gen(ScheduleKind::DualPipe, 8, 20);
    for (double fb : { 1.5, 3.5 }) {
        const ClosedForm cf = closedFormLargestIdle(s, unitCosts(s, fb));
        EXPECT_TRUE(cf.available);
        EXPECT_FALSE(cf.applicable);
        EXPECT_NE(cf.reason.find("outside [B, F+B]"), std::string::npos) << cf.reason;
    }
    CostModel uneven = unitCosts(s);
    uneven.stages[3].forwardUs = 2.0;
    EXPECT_FALSE(closedFormLargestIdle(s, uneven).applicable);
    UniformCosts slow;
    slow.latencyUs = 1.0;
    EXPECT_FALSE(closedFormLargestIdle(s, uniformCostModel(s.stages, slow)).applicable);
    UniformCosts fNotI;
    fNotI.f = 2.0;
    fNotI.fb = 3.5;
    EXPECT_FALSE(closedFormLargestIdle(s, uniformCostModel(s.stages, fNotI)).applicable);

    const Schedule zbh1 = gen(ScheduleKind::ZBH1, 4, 8);
    UniformCosts bigW;
    bigW.w = 2.0;
    EXPECT_FALSE(closedFormLargestIdle(zbh1, uniformCostModel(zbh1.stages, bigW)).applicable);

    const Schedule zbv = gen(ScheduleKind::ZBV, 4, 8);
    const ClosedForm none = closedFormLargestIdle(zbv, unitCosts(zbv));
    EXPECT_FALSE(none.available);
    EXPECT_FALSE(none.applicable);
}

TEST(ClosedForms, FormsHoldForNonUnitCostsInsideTheirRanges)
{
    UniformCosts u;
    u.f = 1.5;
    u.i = 1.5;
    u.w = 0.5;
    u.fb = 3.0;
    for (ScheduleKind kind : { ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZBH1,
             ScheduleKind::Interleaved1F1B, ScheduleKind::DualPipe, ScheduleKind::DualPipeV })
        for (int p : { 2, 4, 6 }) {
            const Schedule s = gen(kind, p, 4 * p);
            const CostModel c = uniformCostModel(s.stages, u);
            expectClosedForm(s, c, simulate(s, c));
        }
}

TEST(ClosedForms, LatencyLengthensOneFOneB)
{
    // Every microbatch's forward and backward cross the critical path once each way in 1F1B's steady
    // state: makespan = (m+p−1)(F+B) + 2·m·latency (tests/tools/refsim.py gives 37 and 49 for 4×8).
    const Schedule s = gen(ScheduleKind::OneFOneB, 4, 8);
    for (double latency : { 0.25, 1.0 }) {
        UniformCosts u;
        u.latencyUs = latency;
        const SimResult slow = simulate(s, uniformCostModel(s.stages, u));
        EXPECT_DOUBLE_EQ(slow.makespanUs, 33.0 + 16.0 * latency);
        for (const RankResult& rr : slow.ranks)
            EXPECT_DOUBLE_EQ(rr.idleUs, 9.0 + 16.0 * latency);
        EXPECT_DOUBLE_EQ(slow.ranks[0].p2pBytesSent, 8.0);
        EXPECT_DOUBLE_EQ(slow.ranks[1].p2pBytesSent, 16.0);
        EXPECT_DOUBLE_EQ(slow.ranks[3].p2pBytesReceived, 8.0);
        EXPECT_DOUBLE_EQ(slow.totalP2pBytes, 2.0 * 3 * 8);
    }
}
