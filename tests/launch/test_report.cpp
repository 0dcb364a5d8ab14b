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
