// Chrome trace export: slices, halves, counters, flows and metadata of a predicted or measured timeline.
#include "schedule/generator.h"
#include "sim/simulator.h"
#include "trace/chrometrace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace dps;
using json = nlohmann::json;

namespace {

/// 2 ranks, 2 stages, 1 microbatch: rank 0 runs 0F0 0B0, rank 1 runs 1F0 1B0.
Schedule twoStages()
{
    Schedule s;
    s.kind = ScheduleKind::Custom;
    s.ranks = 2;
    s.stages = 2;
    s.microbatches = 1;
    s.placement = Placement::perStage({ 0, 1 });
    s.order = { { parseAction("0F0"), parseAction("0B0") }, { parseAction("1F0"), parseAction("1B0") } };
    return s;
}

Timeline predicted(const Schedule& schedule, const CostModel& costs)
{
    const SimResult result = simulate(schedule, costs);
    EXPECT_FALSE(result.deadlocked) << result.deadlockMessage;
    return timelineFromSimulation(schedule, costs, result);
}

std::vector<json> eventsWhere(const json& trace, const std::function<bool(const json&)>& match)
{
    std::vector<json> found;
    for (const auto& e : trace.at("traceEvents"))
        if (match(e))
            found.push_back(e);
    return found;
}

json slice(const json& trace, const std::string& name)
{
    const auto found = eventsWhere(trace, [&](const json& e) { return e.at("ph") == "X" && e.at("name") == name; });
    EXPECT_EQ(found.size(), 1u) << name;
    return found.empty() ? json {} : found.front();
}

} // namespace

TEST(ChromeTrace, SlicesHaveTheSimulatedTimes)
{
    const json trace = chromeTrace(predicted(twoStages(), uniformCostModel(2)));
    const json f0 = slice(trace, "PP:0F0");
    EXPECT_EQ(f0["pid"], 0);
    EXPECT_EQ(f0["tid"], 0);
    EXPECT_EQ(f0["ts"], 0.0);
    EXPECT_EQ(f0["dur"], 1.0);
    EXPECT_EQ(f0["args"]["stage"], 0);
    EXPECT_EQ(f0["args"]["microbatch"], 0);
    EXPECT_EQ(f0["args"]["kind"], "F");
    const json f1 = slice(trace, "PP:1F0");
    EXPECT_EQ(f1["pid"], 1);
    EXPECT_EQ(f1["ts"], 1.0);
    const json b1 = slice(trace, "PP:1B0");
    EXPECT_EQ(b1["ts"], 2.0);
    EXPECT_EQ(b1["dur"], 2.0);
    EXPECT_EQ(b1["args"]["kind"], "B");
    const json b0 = slice(trace, "PP:0B0");
    EXPECT_EQ(b0["pid"], 0);
    EXPECT_EQ(b0["ts"], 4.0);
    EXPECT_EQ(b0["dur"], 2.0);
    EXPECT_EQ(trace["otherData"]["format_version"], kChromeTraceFormatVersion);
    EXPECT_EQ(trace["otherData"]["timeline"], "predicted");
    EXPECT_EQ(trace["otherData"]["makespan_us"], 6.0);
    EXPECT_TRUE(trace["otherData"].contains("tool_version"));
}

TEST(ChromeTrace, NamesProcessesAndTracks)
{
    const json trace = chromeTrace(predicted(twoStages(), uniformCostModel(2)));
    const auto names = eventsWhere(trace, [](const json& e) { return e["ph"] == "M" && e["name"] == "process_name"; });
    ASSERT_EQ(names.size(), 2u);
    EXPECT_EQ(names[1]["args"]["name"], "rank 1");
    const auto threads = eventsWhere(trace, [](const json& e) { return e["ph"] == "M" && e["name"] == "thread_name"; });
    EXPECT_EQ(threads.size(), 8u);
}

TEST(ChromeTrace, TransfersAreFlowsAndSlicesOnTheirOwnTrack)
{
    CostModel costs = uniformCostModel(2);
    costs.latencyUs = 0.5;
    const json trace = chromeTrace(predicted(twoStages(), costs));
    const auto starts = eventsWhere(trace, [](const json& e) { return e["ph"] == "s"; });
    const auto finishes = eventsWhere(trace, [](const json& e) { return e["ph"] == "f"; });
    ASSERT_EQ(starts.size(), 2u);
    ASSERT_EQ(finishes.size(), 2u);
    EXPECT_EQ(starts[0]["id"], finishes[0]["id"]);
    EXPECT_EQ(starts[0]["pid"], 0);
    EXPECT_EQ(finishes[0]["pid"], 1);
    EXPECT_EQ(starts[0]["cat"], "activation");
    EXPECT_EQ(finishes[0]["bp"], "e");
    // The arrow's ends lie inside the producer (0F0: 0..1) and consumer (1F0: 1.5..2.5) slices.
    EXPECT_GT(starts[0]["ts"].get<double>(), 0.0);
    EXPECT_LT(starts[0]["ts"].get<double>(), 1.0);
    EXPECT_GT(finishes[0]["ts"].get<double>(), 1.5);
    EXPECT_LT(finishes[0]["ts"].get<double>(), 2.5);
    EXPECT_EQ(starts[1]["cat"], "gradient");
    EXPECT_EQ(starts[1]["pid"], 1);

    const auto incoming = eventsWhere(trace, [](const json& e) { return e["ph"] == "X" && e["tid"] == 3; });
    ASSERT_EQ(incoming.size(), 2u);
    EXPECT_EQ(incoming[0]["pid"], 0); // the gradient arrives on rank 0 (rank 0 is written first)
    EXPECT_EQ(incoming[0]["ts"], 4.5);
    EXPECT_EQ(incoming[0]["dur"], 0.5);
    EXPECT_EQ(incoming[1]["pid"], 1);
    EXPECT_EQ(incoming[1]["ts"], 1.0);
    EXPECT_EQ(incoming[1]["args"]["bytes"], 1.0);
}

TEST(ChromeTrace, MemoryIsACounterPerRank)
{
    const json trace = chromeTrace(predicted(twoStages(), uniformCostModel(2)));
    for (int r = 0; r < 2; ++r) {
        const auto memory = eventsWhere(
            trace, [&](const json& e) { return e["ph"] == "C" && e["pid"] == r && e["name"] == "memory (bytes)"; });
        ASSERT_FALSE(memory.empty());
        double peak = 0;
        for (const auto& m : memory)
            peak = std::max(peak, m["args"]["activations"].get<double>());
        EXPECT_EQ(peak, 1.0);
        const auto inflight = eventsWhere(trace,
            [&](const json& e) { return e["ph"] == "C" && e["pid"] == r && e["name"] == "in-flight microbatches"; });
        EXPECT_EQ(inflight.size(), memory.size());
    }
}

TEST(ChromeTrace, OverlappedSlotsShowBothHalvesOnTheirOwnTracks)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 2, 4, 0 });
    const json trace = chromeTrace(predicted(schedule, uniformCostModel(schedule.stages)));
    const auto slots = eventsWhere(
        trace, [](const json& e) { return e["ph"] == "X" && e["tid"] == 0 && e["args"]["kind"] == "OVERLAP_F_B"; });
    ASSERT_FALSE(slots.empty());
    const auto forward = eventsWhere(trace, [](const json& e) { return e["ph"] == "X" && e["tid"] == 1; });
    const auto backward = eventsWhere(trace, [](const json& e) { return e["ph"] == "X" && e["tid"] == 2; });
    ASSERT_EQ(forward.size(), slots.size());
    ASSERT_EQ(backward.size(), slots.size());
    const std::string name = slots[0]["name"];
    EXPECT_EQ(name.rfind("PP:(", 0), 0u);
    EXPECT_EQ(forward[0]["ts"], slots[0]["ts"]);
    EXPECT_EQ(forward[0]["args"]["kind"], "F");
    EXPECT_EQ("PP:(" + forward[0]["name"].get<std::string>().substr(3) + ";"
            + backward[0]["name"].get<std::string>().substr(3) + ")OVERLAP_F_B",
        name);
    EXPECT_EQ(slots[0]["dur"], 3.0);
}

TEST(ChromeTrace, PerRankFilesCarryDistributedInfo)
{
    const Timeline timeline = predicted(twoStages(), uniformCostModel(2));
    const json rank1 = chromeTraceForRank(timeline, 1);
    EXPECT_EQ(rank1["distributedInfo"]["rank"], 1);
    EXPECT_EQ(rank1["distributedInfo"]["world_size"], 2);
    for (const auto& e : rank1["traceEvents"]) {
        EXPECT_EQ(e["pid"], 1);
        EXPECT_NE(e["ph"], "s");
        EXPECT_NE(e["ph"], "f");
    }
    EXPECT_FALSE(chromeTrace(timeline).contains("distributedInfo"));

    const auto dir = std::filesystem::temp_directory_path() / ("dps_trace_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    const auto files = writeChromeTracePerRank(timeline, dir / "ranks");
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(files[1].filename(), "rank1.trace.json");
    for (int r = 0; r < 2; ++r) {
        std::ifstream in(files[static_cast<std::size_t>(r)]);
        const json parsed = json::parse(in); // valid JSON
        EXPECT_EQ(parsed["distributedInfo"]["rank"], r);
        EXPECT_EQ(parsed["otherData"]["format_version"], kChromeTraceFormatVersion);
    }
    writeChromeTrace(timeline, dir / "all.json");
    std::ifstream in(dir / "all.json");
    EXPECT_EQ(json::parse(in), chromeTrace(timeline));
    std::filesystem::remove_all(dir);
}

TEST(ChromeTrace, MeasuredTimelinesKeepTheirOwnHalvesAndArgs)
{
    Timeline measured;
    measured.source = "measured";
    measured.backend = "mpi";
    measured.info = { { "host", "box" } };
    TimelineSlice slot { "(0F1;0B0)OVERLAP_F_B", "OVERLAP_F_B", 0, 1, 10, 20, {}, { { "wait_us", 1.5 } }, {} };
    slot.halves = { { "0F1", "F", 0, 1, 10, 14, {}, json::object(), {} },
        { "0B0", "B", 0, 0, 11, 20, {}, json::object(), {} } };
    measured.ranks.push_back({ { slot }, { { 0, 100, 0, -1 }, { 20, 50, 10, -1 } } });
    const json trace = chromeTrace(measured);
    EXPECT_EQ(trace["otherData"]["timeline"], "measured");
    EXPECT_EQ(trace["otherData"]["host"], "box");
    const json s = slice(trace, "PP:(0F1;0B0)OVERLAP_F_B");
    EXPECT_EQ(s["args"]["wait_us"], 1.5);
    EXPECT_EQ(s["dur"], 10.0);
    const json back = slice(trace, "PP:0B0");
    EXPECT_EQ(back["tid"], 2);
    EXPECT_EQ(back["ts"], 11.0);
    EXPECT_EQ(back["dur"], 9.0);
    EXPECT_TRUE(eventsWhere(trace, [](const json& e) { return e["name"] == "in-flight microbatches"; }).empty());
    EXPECT_EQ(chromeTraceForRank(measured, 0)["distributedInfo"]["backend"], "mpi");
}
