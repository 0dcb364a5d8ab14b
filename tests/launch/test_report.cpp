// Predicted against measured: summaries and the table.
#include "launch/report.h"
#include "schedule/generator.h"
#include "support/synthetic.h"

#include <gtest/gtest.h>

using namespace dps;

TEST(Report, MeasuredIdleIsMakespanMinusBusy)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 4, 0 });
    const CostModel model = uniformCostModel(schedule.stages, test::fiw(3, 2, 1));
    const MeasuredTrace trace = test::syntheticTrace(schedule, model, 3);
    const SimResult sim = simulate(schedule, model);
    const auto summary = launch::summarizeMeasured(trace);
    ASSERT_EQ(summary.size(), 2u);
    for (const auto& s : summary) {
        EXPECT_NEAR(s.idleUs, sim.ranks[static_cast<std::size_t>(s.rank)].idleUs, 1e-9);
        EXPECT_EQ(s.peakActivationBytes, 64 * static_cast<std::int64_t>(schedule.order[s.rank].size() - 1));
    }
}

namespace {

/// 1F1B on 2 ranks, 2 microbatches (rank 0: 0F0 0F1 0B0 0B1, rank 1: 1F0 1B0 1F1 1B1), F = 1 and B = 2 µs,
/// except stage `slow` (−1: none) at F = 2, B = 4.
CostModel oneFOneB(const Schedule& schedule, int slow)
{
    CostModel model = uniformCostModel(schedule.stages, test::fiw(1, 1, 1));
    if (slow >= 0) {
        StageCost& s = model.stages[static_cast<std::size_t>(slow)];
        s.forwardUs = 2;
        s.inputGradUs = 2;
        s.weightGradUs = 2;
    }
    return model;
}

/// One measured step per model, steps numbered in order, steps[] and median_step as the worker sets them.
MeasuredTrace stepsOf(const Schedule& schedule, const std::vector<CostModel>& models)
{
    MeasuredTrace trace = test::syntheticTrace(schedule, models.front(), 1);
    for (std::size_t s = 1; s < models.size(); ++s) {
        const MeasuredTrace next = test::syntheticTrace(schedule, models[s], 1);
        for (std::size_t r = 0; r < trace.ranks.size(); ++r)
            for (MeasuredAction a : next.ranks[r].actions) {
                a.step = static_cast<int>(s);
                trace.ranks[r].actions.push_back(a);
            }
    }
    setStepsFromActions(trace);
    return trace;
}

} // namespace

// The hand-made case of docs/running.md ("Idle, measured and predicted"). By hand, with the simulator's rules:
//   A (as modelled): 0F0 0–1, 0F1 1–2, 1F0 1–2, 1B0 2–4, 1F1 4–5, 1B1 5–7, 0B0 4–6, 0B1 7–9: makespan 9,
//     busy 6 and 6, idle 3 and 3;
//   B (stage 1 slow): 1F0 1–3, 1B0 3–7, 1F1 7–9, 1B1 9–13, 0B0 7–9, 0B1 13–15: makespan 15, idle 9 and 3;
//   C (stage 0 slow): 0F0 0–2, 0F1 2–4, 1F0 2–3, 1B0 3–5, 1F1 5–6, 1B1 6–8, 0B0 5–9, 0B1 9–13: makespan 13,
//     idle 1 and 7.
// The median step is C (13 µs): its idle alone says rank 1 idles 7 µs, 133 % more than modelled. Over the
// steps each rank's median idle is 3 µs, the model's exactly.
TEST(Report, MeasuredIdleIsEachRanksMedianOverTheSteps)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 2, 0 });
    ASSERT_EQ(toString(schedule.order[0][2]), "0B0");
    ASSERT_EQ(toString(schedule.order[1][1]), "1B0");
    const std::vector<CostModel> models { oneFOneB(schedule, -1), oneFOneB(schedule, 1), oneFOneB(schedule, 0) };
    const MeasuredTrace trace = stepsOf(schedule, models);
    ASSERT_EQ(trace.steps.size(), 3u);
    EXPECT_EQ(trace.steps[0].makespanUs, 9.0);
    EXPECT_EQ(trace.steps[1].makespanUs, 15.0);
    EXPECT_EQ(trace.steps[2].makespanUs, 13.0);
    EXPECT_EQ(trace.medianStep, 2);

    const SimResult modelled = simulate(schedule, models[0]);
    EXPECT_EQ(modelled.ranks[0].idleUs, 3.0);
    EXPECT_EQ(modelled.ranks[1].idleUs, 3.0);
    const auto summary = launch::summarizeMeasured(trace);
    ASSERT_EQ(summary.size(), 2u);
    EXPECT_EQ(summary[0].idleUs, 3.0);
    EXPECT_EQ(summary[0].idleMinUs, 1.0);
    EXPECT_EQ(summary[0].idleMaxUs, 9.0);
    EXPECT_EQ(summary[1].idleUs, 3.0);
    EXPECT_EQ(summary[1].idleMinUs, 3.0);
    EXPECT_EQ(summary[1].idleMaxUs, 7.0);
    EXPECT_EQ(summary[0].busyUs, 6.0); // busy 6, 6, 12
    EXPECT_EQ(summary[1].busyUs, 6.0); // busy 6, 12, 6

    const auto rows = launch::compareRun(modelled, trace);
    EXPECT_EQ(rows[0].measured, 13.0); // the median step's makespan
    ASSERT_TRUE(rows[0].stepRange);
    EXPECT_EQ(*rows[0].stepRange, std::make_pair(9.0, 15.0));
    EXPECT_EQ(rows[1].label, "rank 0 idle");
    EXPECT_EQ(*rows[1].relativeError(), 0.0);
    EXPECT_EQ(*rows[4].relativeError(), 0.0);
    const std::string table = launch::formatComparison(rows, trace);
    EXPECT_NE(table.find("makespan 9 µs–15 µs"), std::string::npos) << table;
    EXPECT_NE(table.find("1 µs–9 µs"), std::string::npos) << table;
    EXPECT_NE(table.find("predicted makespan: within the measured steps (9 µs–15 µs)"), std::string::npos) << table;
}

TEST(Report, PredictedMakespanAgainstTheSteps)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 2, 0 });
    const MeasuredTrace trace
        = stepsOf(schedule, { oneFOneB(schedule, -1), oneFOneB(schedule, 1), oneFOneB(schedule, 0) });
    EXPECT_EQ(launch::makespanAgainstSteps(7.2, trace), "20 % below the fastest measured step (9 µs)");
    EXPECT_EQ(launch::makespanAgainstSteps(18, trace), "20 % above the slowest measured step (15 µs)");
    EXPECT_EQ(launch::makespanAgainstSteps(9, trace), "within the measured steps (9 µs–15 µs)");
    EXPECT_EQ(launch::makespanAgainstSteps(9, MeasuredTrace {}), "");
}

// The fit of a run tried on the run: the steps are 9, 15 and 13 µs (median 13, range 6).
TEST(Report, FitIsRefusedWhenItsResidualExceedsTheStepsSpread)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 2, 0 });
    const MeasuredTrace trace
        = stepsOf(schedule, { oneFOneB(schedule, -1), oneFOneB(schedule, 1), oneFOneB(schedule, 0) });
    SimResult refit = simulate(schedule, oneFOneB(schedule, -1)); // 9 µs: 4 below the median, within 6
    launch::FitCheck check = launch::checkFit(refit, trace, { -0.1, 0.0, 0.2 });
    EXPECT_EQ(check.residualUs, -4.0);
    EXPECT_EQ(check.toleranceUs, 6.0);
    EXPECT_TRUE(check.accepted());
    EXPECT_EQ(check.slotResiduals.count, 3);
    EXPECT_EQ(check.idleUs[1], std::make_pair(3.0, 3.0));
    EXPECT_EQ(launch::formatFitCheck(check).find("refused"), std::string::npos);
    refit.makespanUs = 19.5; // 6.5 above the median: more than the steps vary
    check = launch::checkFit(refit, trace, {});
    EXPECT_FALSE(check.accepted());
    EXPECT_NE(launch::formatFitCheck(check).find("refused: the fit's makespan is 6.5 µs from the median step, more "
                                                 "than the run's steps vary (6 µs"),
        std::string::npos)
        << launch::formatFitCheck(check);
}

// A run with --costs against the costs: its own fit over the costs', per time. The steps' own fit (medians over
// the steps) is the modelled costs, F 1 and B 2 µs on both stages, so against costs of F 1.25 and B 2.5 µs every
// time is 20 % shorter. Three steps as modelled do not vary at all: the machine changed. With a fourth and fifth
// step of stage 1 slow (15 µs against 9) the steps vary by 6 ÷ 9 = 67 %, and 20 % is within that.
TEST(Report, DriftComparesTheRunsOwnFitWithTheCosts)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 2, 0 });
    const CostModel modelled = oneFOneB(schedule, -1);
    CostsFile slower;
    slower.stages.resize(2);
    for (StageCostOverride& s : slower.stages) {
        s.forwardUs = 1.25;
        s.backwardUs = 2.5;
    }
    launch::CostsDrift drift = launch::costsDrift(slower, stepsOf(schedule, { modelled, modelled, modelled }), 2);
    EXPECT_EQ(drift.compared, 4);
    EXPECT_DOUBLE_EQ(drift.median, -0.2);
    EXPECT_DOUBLE_EQ(drift.runSpread, 0.0);
    EXPECT_TRUE(drift.changed());
    EXPECT_EQ(launch::formatCostsDrift(drift, "c.json"),
        "machine against c.json: this run's slots took -20 % (median of 4 fitted times, -20 % … -20 %; rank 0 -20 %; "
        "rank 1 -20 %); its steps vary by 0 %: the machine changed since the calibration run (other load, another "
        "clock), so the calibrated prediction no longer holds: recalibrate on a quiet machine\n");
    // Only rank 1's stage (stage 1) off: the ranks say which core moved.
    CostsFile oneRank = slower;
    oneRank.stages[0].forwardUs = 1.0;
    oneRank.stages[0].backwardUs = 2.0;
    drift = launch::costsDrift(oneRank, stepsOf(schedule, { modelled, modelled, modelled }), 2);
    EXPECT_DOUBLE_EQ(drift.median, -0.2); // of −0.2, −0.2, 0, 0: the lower middle one (base/stats.h)
    ASSERT_EQ(drift.byRank.size(), 2u);
    EXPECT_EQ(drift.byRank[0], std::make_pair(0, 0.0));
    EXPECT_EQ(drift.byRank[1].first, 1);
    EXPECT_DOUBLE_EQ(drift.byRank[1].second, -0.2);
    EXPECT_TRUE(drift.changed());

    const CostModel slow = oneFOneB(schedule, 1);
    drift = launch::costsDrift(slower, stepsOf(schedule, { modelled, modelled, modelled, slow, slow }), 2);
    EXPECT_DOUBLE_EQ(drift.median, -0.2);
    EXPECT_DOUBLE_EQ(drift.runSpread, 6.0 / 9.0);
    EXPECT_FALSE(drift.changed());
    EXPECT_NE(launch::formatCostsDrift(drift, "c.json").find("the machine is as calibrated"), std::string::npos);
    EXPECT_EQ(launch::formatCostsDrift(launch::CostsDrift {}, "c.json"), "");
}

// DualPipe runs each stage on two ranks (one per direction): its times count for no rank, only overall.
TEST(Report, DriftOfAStageOnSeveralRanksCountsForNoRank)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipe, 4, 8, 0 });
    const CostModel model = uniformCostModel(schedule.stages, test::fiw(2, 1, 1));
    const MeasuredTrace trace = test::syntheticTrace(schedule, model, 3);
    CostsFile same;
    same.stages.resize(static_cast<std::size_t>(schedule.stages));
    for (StageCostOverride& s : same.stages)
        s.forwardUs = 2.0;
    const launch::CostsDrift drift = launch::costsDrift(same, trace, schedule.stages);
    EXPECT_EQ(drift.compared, schedule.stages);
    EXPECT_EQ(drift.median, 0.0);
    EXPECT_TRUE(drift.byRank.empty());
    EXPECT_FALSE(drift.changed());
}

TEST(Report, ErrorsAreRelativeToThePrediction)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 4, 0 });
    const CostModel model = uniformCostModel(schedule.stages, test::fiw(3, 2, 1));
    MeasuredTrace trace = test::syntheticTrace(schedule, model, 1);
    const SimResult sim = simulate(schedule, model);
    trace.steps[0].makespanUs = sim.makespanUs * 1.1;
    const auto rows = launch::compareRun(sim, trace);
    ASSERT_EQ(rows.size(), 1u + 3u * 2u);
    EXPECT_EQ(rows[0].label, "makespan");
    EXPECT_NEAR(*rows[0].relativeError(), 0.1, 1e-12);
    EXPECT_EQ(rows[1].label, "rank 0 idle");
    EXPECT_EQ(rows[2].label, "rank 0 peak memory");
    EXPECT_EQ(rows[3].label, "rank 0 peak activations");
    const std::string table = launch::formatComparison(rows, trace);
    EXPECT_NE(table.find("+10 %"), std::string::npos) << table; // base/format.h's signed percent
    EXPECT_NE(table.find("rank 1 peak activations"), std::string::npos) << table;
}

TEST(Report, NoErrorWithoutAPrediction)
{
    launch::ComparisonRow row { "x", launch::ComparisonRow::Unit::Bytes, 0.0, 5.0 };
    EXPECT_FALSE(row.relativeError());
}

// The all-to-all lines: the median step's measured Σ a2a_hidden_us ÷ Σ a2a_us per rank beside
// allToAllPerRank of the prediction. One stage on rank 0 with F [C 10, M 4, C 10] and B [C 20]: 0F0 shows its
// 4 µs; (0F1;0B0) lays F C [0,10], B C [10,30] beside F M [10,14]: 4 µs, all hidden; 0B1 none. Predicted
// 8 µs, half hidden. Measured (step 1 is the median): 0F0 3 µs, the slot 5 µs with 4 hidden: 4 of 8, 50 %;
// step 0's numbers do not count.
TEST(Report, AllToAllHiddenShareBesideThePrediction)
{
    Prediction p;
    Schedule s;
    s.ranks = 1;
    s.stages = 1;
    s.microbatches = 2;
    s.order = { { parseAction("0F0"), parseAction("(0F1;0B0)OVERLAP_F_B"), parseAction("0B1") } };
    s.placement = Placement::perStage({ 0 });
    p.schedule = s;
    p.costs.stages.resize(1);
    p.costs.stages[0].forwardChain = { { Chunk::Compute, 10, 0 }, { Chunk::Comm, 4, 0 }, { Chunk::Compute, 10, 0 } };
    p.costs.stages[0].backwardChain = { { Chunk::Compute, 20, 0 } };
    MeasuredTrace m;
    m.medianStep = 1;
    MeasuredRank r;
    r.rank = 0;
    const auto action = [](const char* text, int step, double a2a, double hidden) {
        MeasuredAction a;
        a.action = parseAction(text);
        a.step = step;
        a.a2aUs = a2a;
        a.a2aHiddenUs = hidden;
        return a;
    };
    r.actions = { action("0F0", 0, 100, 0), action("0F0", 1, 3, 0), action("(0F1;0B0)OVERLAP_F_B", 1, 5, 4),
        action("0B1", 1, 0, 0) };
    m.ranks = { r };
    EXPECT_EQ(launch::formatAllToAll(p, m), "rank 0 a2a hidden: 50 % of 8 µs (predicted 50 % of 8 µs)\n");
    // Without any all-to-all, nothing is printed.
    for (MeasuredAction& a : m.ranks[0].actions)
        a.a2aUs = a.a2aHiddenUs = 0.0;
    p.costs.stages[0].forwardChain.clear();
    EXPECT_EQ(launch::formatAllToAll(p, m), "");
}
