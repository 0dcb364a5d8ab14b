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

namespace {

/// A measured trace whose ranks ran on `hosts` (one name per rank).
MeasuredTrace onHosts(const std::vector<std::string>& hosts)
{
    MeasuredTrace trace;
    for (std::size_t r = 0; r < hosts.size(); ++r) {
        MeasuredRank rank;
        rank.rank = static_cast<int>(r);
        rank.host = hosts[r];
        trace.ranks.push_back(rank);
    }
    return trace;
}

/// The default project's block model on 4 ranks of 1F1B with one microbatch: every action is on the
/// critical path, so each message between hosts adds its extra latency once.
Project fourRanksOneMicrobatch(double interNodeLatencyUs)
{
    Project project = defaultProject();
    Variant variant;
    variant.name = "gpipe4";
    variant.kind = ScheduleKind::GPipe;
    variant.ranks = 4;
    variant.microbatches = 1;
    project.variants = { variant };
    project.activeVariant = variant.name;
    project.cluster.interNodeLatencyUs = interNodeLatencyUs;
    project.cluster.interNodeBandwidthBytesPerUs = project.cluster.bandwidthBytesPerUs;
    return project;
}

} // namespace

TEST(Report, RanksArePlacedOnTheHostsTheyRanOn)
{
    EXPECT_EQ(
        launch::measuredRankNodes(onHosts({ "hostA", "hostA", "hostB", "hostB" })), (std::vector<int> { 0, 0, 1, 1 }));
    EXPECT_EQ(launch::measuredRankNodes(onHosts({ "b", "a", "b", "c" })), (std::vector<int> { 0, 1, 0, 2 }));
    EXPECT_TRUE(launch::measuredRankNodes(onHosts({ "hostA", "hostA" })).empty()); // one host: no placement
    EXPECT_TRUE(launch::measuredRankNodes(onHosts({ "hostA", "" })).empty()); // a rank without a host
}

TEST(Report, TransfersBetweenHostsTakeTheInterNodeLink)
{
    const std::vector<int> nodes { 0, 0, 1, 1 };
    // The same link between hosts as inside one: the placement changes nothing.
    const Project same = fourRanksOneMicrobatch(defaultProject().cluster.latencyUs);
    const double base = launch::predictRun(same, "gpipe4", "cpu").makespanUs;
    EXPECT_DOUBLE_EQ(launch::predictRun(same, "gpipe4", "cpu", nodes).makespanUs, base);
    // 1000 µs more between hosts: the forward crosses ranks 1 -> 2 once, the backward 2 -> 1 once, both on
    // the critical path of one microbatch.
    const Project slow = fourRanksOneMicrobatch(defaultProject().cluster.latencyUs + 1000.0);
    EXPECT_DOUBLE_EQ(launch::predictRun(slow, "gpipe4", "cpu").makespanUs, base);
    EXPECT_NEAR(launch::predictRun(slow, "gpipe4", "cpu", nodes).makespanUs, base + 2000.0, 1e-6);
    // Hosts { 0, 1, 0, 1 }: every one of the 3 boundaries crosses, both ways.
    EXPECT_NEAR(launch::predictRun(slow, "gpipe4", "cpu", { 0, 1, 0, 1 }).makespanUs, base + 6000.0, 1e-6);

    std::string label;
    launch::predictRunAs(slow, "gpipe4", "cpu", launch::RunPrediction {}, &label, nodes);
    EXPECT_NE(label.find("; ranks on 2 hosts (0–1; 2–3): transfers between hosts take the inter-node link "
                         "(latency 1 ms"),
        std::string::npos)
        << label;
}
