// The same numbers in every front end: `dpstudio simulate --json`, `dpstudio compare --json` and the
// designer's computeSnapshot give predict()'s makespan, bubble rate and memory peaks for each variant of the
// default project (the CLI's JSON carries doubles exactly, so the comparison is exact).
#include "document/snapshot.h"
#include "project/predict.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

using namespace dps;
using nlohmann::json;

namespace {

/// The standard output of a dpstudio command line; expects exit code 0.
json dpstudioJson(const std::string& arguments)
{
    const std::string command = std::string("'") + DPS_DPSTUDIO + "' " + arguments + " 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) {
        ADD_FAILURE() << "cannot start " << command;
        return json();
    }
    std::string out;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
        out.append(buffer, n);
    const int status = pclose(pipe);
    EXPECT_EQ(status, 0) << command;
    return json::parse(out, nullptr, false);
}

const std::string kProjectFile = std::string(DPS_SOURCE_DIR) + "/resources/default.dpstudio.json";

} // namespace

TEST(FrontEnds, SimulateCompareAndTheDesignerAgreeWithPredict)
{
    const Project project = defaultProject();
    const json compare = dpstudioJson("compare --json");
    ASSERT_TRUE(compare.is_object()) << "dpstudio compare --json printed no JSON";
    ASSERT_EQ(compare["rows"].size(), project.variants.size());
    for (std::size_t v = 0; v < project.variants.size(); ++v) {
        const std::string name = project.variants[v].name;
        SCOPED_TRACE(name);
        const Prediction p = predict(project, name);
        ASSERT_TRUE(p.valid()) << p.error;

        const json simulate = dpstudioJson("simulate '" + kProjectFile + "' --variant " + name + " --json");
        ASSERT_TRUE(simulate.is_object()) << "dpstudio simulate --json printed no JSON";
        EXPECT_DOUBLE_EQ(simulate["makespan_us"].get<double>(), p.makespanUs);
        EXPECT_DOUBLE_EQ(simulate["bubble_rate"].get<double>(), p.bubbleRate);
        EXPECT_DOUBLE_EQ(simulate["largest_idle_us"].get<double>(), p.largestIdleUs);
        ASSERT_EQ(simulate["ranks"].size(), p.sim.ranks.size());
        for (std::size_t r = 0; r < p.sim.ranks.size(); ++r)
            EXPECT_DOUBLE_EQ(simulate["ranks"][r]["peak_memory_bytes"].get<double>(), p.sim.ranks[r].peakMemoryBytes)
                << "rank " << r;

        const json& row = compare["rows"][v];
        EXPECT_EQ(row["variant"], name);
        EXPECT_DOUBLE_EQ(row["makespan_us"].get<double>(), p.makespanUs);
        EXPECT_DOUBLE_EQ(row["bubble_rate"].get<double>(), p.bubbleRate);
        EXPECT_DOUBLE_EQ(row["peak_memory_bytes"].get<double>(), p.peakMemoryBytes);
        EXPECT_DOUBLE_EQ(row["peak_activation_bytes"].get<double>(), p.peakActivationBytes);
        EXPECT_DOUBLE_EQ(row["largest_idle_us"].get<double>(), p.largestIdleUs);

        const ui::SnapshotPtr s = ui::computeSnapshot(project, name, 1);
        ASSERT_TRUE(s->valid()) << s->error;
        EXPECT_DOUBLE_EQ(s->makespanUs, p.makespanUs);
        EXPECT_DOUBLE_EQ(s->bubbleRate, p.bubbleRate);
        EXPECT_DOUBLE_EQ(s->peakMemoryBytes, p.peakMemoryBytes);
        EXPECT_EQ(s->peakMemoryRank, p.peakMemoryRank);
        ASSERT_EQ(s->sim.ranks.size(), p.sim.ranks.size());
        for (std::size_t r = 0; r < p.sim.ranks.size(); ++r)
            EXPECT_DOUBLE_EQ(s->sim.ranks[r].peakMemoryBytes, p.sim.ranks[r].peakMemoryBytes) << "rank " << r;
    }
    // The numbers themselves: the default DualPipe variant takes 2.365 s.
    EXPECT_NEAR(compare["rows"][0]["makespan_us"].get<double>(), 2365010.3104, 1e-3);
}
