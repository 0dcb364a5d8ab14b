// A variant's sends and receives placed by hand (`comm_order`, Variant::commOrder): read and written byte for byte,
// predicted where they sit instead of PyTorch's lowering, refused naming the cell when they do not fit.
#include "base/errors.h"
#include "base/fileio.h"
#include "project/predict.h"
#include "project/project.h"
#include "schedule/lowering.h"
#include "support/variants.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

using namespace dps;
namespace fs = std::filesystem;

namespace {

/// The default model on 1F1B, 4 ranks, 4 microbatches, every stage F = 1 µs and B = 2 µs, a link of 1 µs latency
/// and unlimited bandwidth (every message takes 1 µs).
Project unitProject()
{
    Project p = test::withOnlyVariant(defaultProject(), ScheduleKind::OneFOneB, 4, 4, "1f1b");
    p.costs.latencyUs = 1.0;
    p.costs.bandwidthBytesPerUs = 0.0;
    p.costs.stages.assign(4, StageCostOverride {});
    for (auto& s : p.costs.stages) {
        s.forwardUs = 1.0;
        s.backwardUs = 2.0;
    }
    return p;
}

std::vector<std::vector<Step>> lowered(const Project& p)
{
    return lowerToComms(buildSchedule(p, p.variants[0])).rows;
}

/// Cell `from` of `rank`'s row moved to `to` (the index it has afterwards).
void move(std::vector<std::vector<Step>>& rows, int rank, int from, int to)
{
    auto& row = rows[static_cast<std::size_t>(rank)];
    const Step step = row[static_cast<std::size_t>(from)];
    row.erase(row.begin() + from);
    row.insert(row.begin() + to, step);
}

std::string rowText(const std::vector<Step>& row)
{
    std::string text;
    for (const Step& s : row)
        text += (text.empty() ? "" : ",") + toString(s);
    return text;
}

/// The message parseProject gives for `project` with `change` applied to its JSON.
std::string refusal(const Project& project, const std::function<void(nlohmann::ordered_json&)>& change)
{
    nlohmann::ordered_json j = projectToJson(project);
    change(j);
    try {
        parseProject(j.dump(2), "p.dpstudio.json");
    } catch (const FormatError& e) {
        return e.what();
    }
    return "accepted";
}

} // namespace

// The lowering of rank 2's 1F1B order (lowerToComms, round-robin over the ranks): each RECV_F is appended when its
// sender computes, so 2RECV_F2 lands ahead of 2B0.
TEST(CommOrder, TheLoweringOfRankTwo)
{
    EXPECT_EQ(rowText(lowered(unitProject())[2]),
        "2UNSHARD,2RECV_F0,2F0,2SEND_F0,2RECV_F1,2F1,2SEND_F1,2RECV_B0,2RECV_F2,2B0,2SEND_B0,2F2,2SEND_F2,2RECV_B1,"
        "2RECV_F3,2B1,2SEND_B1,2F3,2SEND_F3,2RECV_B2,2B2,2SEND_B2,2RECV_B3,2B3,2SEND_B3,2REDUCE_GRAD,2RESHARD");
}

// By hand (the rules of sim/commsim.h, every message 1 µs): PyTorch's lowering ends at 32 µs (rank 0's 0B3 [30,32]).
// With 2RECV_F2 moved after 2B0, it is posted when 2B0 ends at 12 instead of when 2F1 ends at 8: the pair with
// 1SEND_F2 runs [12,13] instead of [10,11], 2F2 starts at 13 instead of 12, 2SEND_B0 behind it on rank 2's
// communicator runs [13,14] instead of [12,13], and rank 1's 1B0 and everything after it moves by 1 µs: 33 µs.
TEST(CommOrder, RoundTripsByteForByteAndPredictsTheLateReceive)
{
    Project p = unitProject();
    PredictOptions lowering;
    lowering.lowerComms = true;
    const Prediction lowered1 = predict(p, p.variants[0], lowering);
    ASSERT_TRUE(lowered1.valid()) << lowered1.error;
    EXPECT_DOUBLE_EQ(lowered1.makespanUs, 32.0);
    EXPECT_FALSE(lowered1.handEdited);

    auto rows = lowered(p);
    move(rows, 2, 8, 9); // 2RECV_F2 after 2B0
    ASSERT_EQ(toString(rows[2][9]), "2RECV_F2");
    p.variants[0].commOrder = rows;

    const fs::path file = fs::temp_directory_path() / ("dps_comm_order_" + std::to_string(::getpid()) + ".json");
    saveProject(p, file);
    const std::string bytes = readTextFile(file);
    const Project loaded = loadProject(file);
    fs::remove(file);
    EXPECT_EQ(serializeProject(loaded), bytes) << "byte for byte";
    EXPECT_NE(bytes.find("\"format_version\": 2"), std::string::npos);
    EXPECT_NE(bytes.find("\"2B0\", \"2RECV_F2\", \"2SEND_B0\""), std::string::npos) << bytes;
    ASSERT_TRUE(loaded.variants[0].commOrder.has_value());
    EXPECT_EQ(*loaded.variants[0].commOrder, rows);

    // Predicted with its own program whether sends and receives are asked for or not.
    for (const PredictOptions& options : { PredictOptions {}, lowering }) {
        const Prediction moved = predict(loaded, loaded.variants[0], options);
        ASSERT_TRUE(moved.valid()) << moved.error;
        EXPECT_TRUE(moved.handEdited);
        EXPECT_TRUE(moved.sim.commsTimed);
        EXPECT_DOUBLE_EQ(moved.makespanUs, 33.0);
        bool stalled = false;
        for (const StalledReceive& s : moved.sim.stalledReceives)
            if (s.action == "2RECV_F2") {
                stalled = true;
                EXPECT_EQ(s.rank, 2);
                EXPECT_EQ(s.position, 9);
                EXPECT_EQ(s.consumer, "2F2");
                EXPECT_DOUBLE_EQ(s.stallUs, 1.0); // 2F2 could start when 2B0 ended (12), the receive ended at 13
                EXPECT_EQ(s.cause, "posted only after 2B0 (position 8) ended");
            }
        EXPECT_TRUE(stalled);
    }
}

// Moved one step further, after 2SEND_B0, rank 2's communicator sends microbatch 0's gradient before it receives
// microbatch 2's activation, while rank 1's sends that activation before it receives the gradient: the file is
// read (where sends and receives sit is the prediction's to judge) and the prediction names the deadlock.
TEST(CommOrder, AReceiveMovedIntoADeadlockIsReadAndNamed)
{
    Project p = unitProject();
    auto rows = lowered(p);
    move(rows, 2, 8, 10); // 2RECV_F2 after 2SEND_B0
    p.variants[0].commOrder = rows;
    const Project loaded = parseProject(serializeProject(p), "p.dpstudio.json");
    const Prediction d = predict(loaded, loaded.variants[0]);
    EXPECT_FALSE(d.valid());
    bool named = false;
    for (const Diagnostic& x : d.report.diagnostics)
        if (x.rule == "deadlock.comm-order" && x.rank == 2) {
            named = true;
            EXPECT_EQ(x.action, "2SEND_B0");
            EXPECT_EQ(x.message,
                "rank 2 is stuck: rank 2's communicator is at 2SEND_B0 (position 9), waiting for rank 1 to reach "
                "1RECV_B0 (position 10), but rank 1's communicator is at 1SEND_F2 (position 9) before it (wait-for "
                "cycle: rank 1 -> rank 2 -> rank 1)");
        }
    EXPECT_TRUE(named) << d.error;
}

// What the file may not say: the cell is named, nothing is loaded.
TEST(CommOrder, RefusedNamingTheCell)
{
    Project p = unitProject();
    p.variants[0].commOrder = lowered(p);
    ASSERT_EQ(refusal(p, [](auto&) {}), "accepted");
    EXPECT_EQ(refusal(p, [](auto& j) { j["variants"][0]["comm_order"][1][3] = "1RECV_X1"; }),
        "p.dpstudio.json: variants[0].comm_order[1][3]: '1RECV_X1' is not an action: unknown kind 'RECV_X' (expected "
        "F, I, W, B, SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD or REDUCE_GRAD)");
    EXPECT_EQ(refusal(p, [](auto& j) { j["variants"][0]["comm_order"][1][0] = ""; }),
        "p.dpstudio.json: variants[0].comm_order[1][0]: must be an action string such as \"1F0\" or \"1RECV_F0\", "
        "got \"\"");
    EXPECT_EQ(refusal(p, [](auto& j) { j["variants"][0]["comm_order"].erase(3); }),
        "p.dpstudio.json: variants[0].comm_order: has 3 rows, the variant has 4 ranks");
    // 1RECV_F0 moved from rank 1's row to rank 2's.
    EXPECT_EQ(refusal(p,
                  [](auto& j) {
                      auto& rows = j["variants"][0]["comm_order"];
                      rows[1].erase(1);
                      rows[2].insert(rows[2].begin(), "1RECV_F0");
                  }),
        "p.dpstudio.json: variants[0].comm_order[2][0]: 1RECV_F0 is on rank 2 but stage 1 runs microbatch 0 on rank 1");
    // Rank 1's 1F1 and 1F2 swapped: not the variant's compute order.
    EXPECT_EQ(refusal(p,
                  [](auto& j) {
                      auto& row = j["variants"][0]["comm_order"][1];
                      std::swap(row[5], row[8]);
                  }),
        "p.dpstudio.json: variants[0].comm_order[1][5]: 1F2 where the variant's order has 1F1 (rank 1's compute "
        "action 1)");
    EXPECT_EQ(refusal(p, [](auto& j) { j["variants"][0]["comm_order"][3].erase(15); }), // 3B3, rank 3's last
        "p.dpstudio.json: variants[0].comm_order[3]: ends after 7 compute actions, the variant's order has 8 on rank 3 "
        "(the next is 3B3)");
}

// An order edited after the sends and receives were placed leaves them for the old order: a project built that way in
// code is predicted with the engine's message as its error, never an exception; without comm_order nothing changes.
TEST(CommOrder, AStaleProgramIsAnErrorNotAnException)
{
    Project p = unitProject();
    p.variants[0].commOrder = lowered(p);
    auto order = buildSchedule(p, p.variants[0]).order;
    std::swap(order[3][0], order[3][1]); // 3B0 before 3F0
    p.variants[0].order = order;
    const Prediction stale = predict(p, p.variants[0]);
    EXPECT_FALSE(stale.built());
    EXPECT_EQ(stale.error,
        "variants[0].comm_order[3][2]: 3F0 where the variant's order has 3B0 (rank 3's compute "
        "action 0)");
    EXPECT_THROW(validateProject(p), FormatError);
    p.variants[0].commOrder.reset();
    EXPECT_NO_THROW(validateProject(p));
    const std::string text = serializeProject(unitProject());
    EXPECT_EQ(text.find("comm_order"), std::string::npos);
    EXPECT_EQ(serializeProject(parseProject(text)), text) << "a project without comm_order reads and writes as before";
}

// The example of docs/comms.md ("Moving a receive") and its screenshot: the same project as a file.
TEST(CommOrder, TheDocsExample)
{
    const Project p = loadProject(std::string(DPS_SOURCE_DIR) + "/docs/images/comms-late-receive.dpstudio.json");
    const Prediction moved = predict(p, "");
    ASSERT_TRUE(moved.valid()) << moved.error;
    EXPECT_DOUBLE_EQ(moved.makespanUs, 33.0);
    EXPECT_EQ(*p.variants[0].commOrder, [] {
        auto rows = lowered(unitProject());
        move(rows, 2, 8, 9);
        return rows;
    }());
}
