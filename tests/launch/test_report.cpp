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
