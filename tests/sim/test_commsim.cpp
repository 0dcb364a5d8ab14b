// Sends and receives timed where they sit (sim/commsim.h) on hand-made programs: unit costs (F = 1, B = 2 µs), one
// latency L per message, every time below computed by hand from the rules in commsim.h.
#include "project/predict.h"
#include "project/project.h"
#include "schedule/csvio.h"
#include "schedule/validator.h"
#include "sim/commsim.h"

#include <gtest/gtest.h>

using namespace dps;

namespace {

/// A program from its rows, cells joined by ',' (a compute_comms CSV without its line ends).
TorchSchedule program(const std::vector<std::string>& rows)
{
    std::string text;
    for (const std::string& row : rows)
        text += row + "\n";
    return readTorchCsv(text);
}

CostModel unitCosts(int stages, double latencyUs)
{
    CostModel costs = uniformCostModel(stages);
    costs.latencyUs = latencyUs;
    return costs;
}

SimResult timed(const TorchSchedule& t, double latencyUs)
{
    const Schedule compute = computeSchedule(t);
    return simulateWithComms(t, compute, unitCosts(compute.stages, latencyUs));
}

// Two ranks, 1F1B over two microbatches, every receive posted before the compute ahead of it.
const std::vector<std::string> kTwoRanks = {
    "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1",
    "1RECV_F0,1RECV_F1,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1",
};
// The same with 1RECV_F1 moved after 1B0: posted at 5 µs instead of 0.
const std::vector<std::string> kTwoRanksLate = {
    kTwoRanks[0],
    "1RECV_F0,1F0,1B0,1RECV_F1,1SEND_B0,1F1,1B1,1SEND_B1",
};

// Four ranks, two microbatches (all forwards, then all backwards), every receive ahead of the compute before it.
const std::vector<std::string> kFourRanks = {
    "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1",
    "1RECV_F0,1RECV_F1,1F0,1SEND_F0,1F1,1SEND_F1,1RECV_B0,1B0,1SEND_B0,1RECV_B1,1B1,1SEND_B1",
    "2RECV_F0,2RECV_F1,2F0,2SEND_F0,2F1,2SEND_F1,2RECV_B0,2B0,2SEND_B0,2RECV_B1,2B1,2SEND_B1",
    "3RECV_F0,3RECV_F1,3F0,3B0,3SEND_B0,3F1,3B1,3SEND_B1",
};

} // namespace

TEST(CommSim, TwoRanksWellPlacedEqualsComputeOnly)
{
    // Compute only, L = 1: rank 1 F0 [2,3] B0 [3,5] F1 [5,6] B1 [6,8]; rank 0 B0 [6,8] B1 [9,11].
    // Timed: 0SEND_F0 with 1RECV_F0 [1,2], 0SEND_F1 with 1RECV_F1 [2,3], 1SEND_B0 [5,6], 1SEND_B1 [8,9].
    const SimResult r = timed(program(kTwoRanks), 1.0);
    ASSERT_FALSE(r.deadlocked) << r.deadlockMessage;
    ASSERT_TRUE(r.commsTimed);
    EXPECT_DOUBLE_EQ(r.computeOnlyMakespanUs, 11.0);
    EXPECT_DOUBLE_EQ(r.makespanUs, 11.0);
    EXPECT_TRUE(r.stalledReceives.empty());
    ASSERT_EQ(r.comms[1].size(), 4u);
    EXPECT_EQ(toString(r.comms[1][1].op), "1RECV_F1");
    EXPECT_DOUBLE_EQ(r.comms[1][1].startUs, 2.0);
    EXPECT_DOUBLE_EQ(r.comms[1][1].endUs, 3.0);
    EXPECT_DOUBLE_EQ(r.timing[0][3].startUs, 9.0); // 0B1 after 1SEND_B1 [8,9]
}

TEST(CommSim, TwoRanksLateReceiveAddsItsTransfer)
{
    // 1RECV_F1 posted when 1B0 ends (5); 0SEND_F1 was ready at 2: the pair runs [5,6], so 1F1 starts at 6 instead of 5
    // and everything after it moves by 1 µs: makespan 12. Every rank is busy 6 µs: bubble 2 × 6 ÷ (2 × 12) = 0.5.
    const SimResult r = timed(program(kTwoRanksLate), 1.0);
    ASSERT_FALSE(r.deadlocked) << r.deadlockMessage;
    EXPECT_DOUBLE_EQ(r.computeOnlyMakespanUs, 11.0);
    EXPECT_DOUBLE_EQ(r.makespanUs, 12.0);
    EXPECT_DOUBLE_EQ(r.bubbleRate, 0.5);
    EXPECT_DOUBLE_EQ(r.timing[1][2].startUs, 6.0); // 1F1
    ASSERT_EQ(r.stalledReceives.size(), 1u);
    const StalledReceive& s = r.stalledReceives[0];
    EXPECT_EQ(s.rank, 1);
    EXPECT_EQ(s.position, 3);
    EXPECT_EQ(s.action, "1RECV_F1");
    EXPECT_EQ(s.consumer, "1F1");
    EXPECT_DOUBLE_EQ(s.lateUs, 3.0); // ready at 5, its send at 2
    EXPECT_DOUBLE_EQ(s.stallUs, 1.0); // 1F1 waited from 5 to 6
    EXPECT_EQ(s.cause, "posted only after 1B0 (position 2) ended");
}

TEST(CommSim, FourRanksWellPlacedEqualsComputeOnlyOnFreeLinks)
{
    // Free links: F0 ends at 1, 2, 3, 4 down the ranks; rank 3 B1 ends at 9; rank 0 B1 [13,15].
    const SimResult r = timed(program(kFourRanks), 0.0);
    ASSERT_FALSE(r.deadlocked) << r.deadlockMessage;
    EXPECT_DOUBLE_EQ(r.computeOnlyMakespanUs, 15.0);
    EXPECT_DOUBLE_EQ(r.makespanUs, 15.0);
    EXPECT_TRUE(r.stalledReceives.empty());
}

TEST(CommSim, FourRanksOneCommunicatorPerRankSerializes)
{
    // L = 1. Compute only: 21 µs. Timed: at 12 rank 2's 2SEND_B0 (posted when 2B0 ends) and 3SEND_B1's receive
    // 2RECV_B1 are both ready on rank 2's one communicator; 2RECV_B1 waits behind it [13,14], and the backward chain
    // of microbatch 1 ends 1 µs later: 22 µs.
    const SimResult r = timed(program(kFourRanks), 1.0);
    ASSERT_FALSE(r.deadlocked) << r.deadlockMessage;
    EXPECT_DOUBLE_EQ(r.computeOnlyMakespanUs, 21.0);
    EXPECT_DOUBLE_EQ(r.makespanUs, 22.0);
    ASSERT_EQ(r.comms[2].size(), 8u);
    EXPECT_EQ(toString(r.comms[2][6].op), "2RECV_B1");
    EXPECT_DOUBLE_EQ(r.comms[2][6].startUs, 13.0);
    // 3SEND_B1 was ready at 12, 2RECV_B1 at 13: 2B1 waited from 12 (2B0's end) to 14, 1 µs of it for the queue.
    ASSERT_EQ(r.stalledReceives.size(), 1u);
    const StalledReceive& s = r.stalledReceives[0];
    EXPECT_EQ(s.action, "2RECV_B1");
    EXPECT_EQ(s.position, 9);
    EXPECT_DOUBLE_EQ(s.lateUs, 1.0);
    EXPECT_DOUBLE_EQ(s.stallUs, 1.0);
    EXPECT_EQ(s.cause, "queued behind 2SEND_B0 (position 8) on rank 2's communicator");
}

TEST(CommSim, FourRanksLateReceiveAddsItsTransfer)
{
    // 2RECV_F1 moved after 2F0: posted at 5 (2F0 ends), its send ready at 4: the pair runs [5,6], 2F1 starts at 6
    // instead of 5, and 2SEND_F0 queued behind it starts at 6: every later time moves by 1 µs, 22 → 23.
    std::vector<std::string> rows = kFourRanks;
    rows[2] = "2RECV_F0,2F0,2RECV_F1,2SEND_F0,2F1,2SEND_F1,2RECV_B0,2B0,2SEND_B0,2RECV_B1,2B1,2SEND_B1";
    const SimResult r = timed(program(rows), 1.0);
    ASSERT_FALSE(r.deadlocked) << r.deadlockMessage;
    EXPECT_DOUBLE_EQ(r.makespanUs, 23.0);
    ASSERT_EQ(r.stalledReceives.size(), 2u); // the second: 2RECV_B1 queued behind 2SEND_B0, as without the move
    EXPECT_EQ(r.stalledReceives[1].action, "2RECV_B1");
    const StalledReceive& s = r.stalledReceives[0];
    EXPECT_EQ(s.rank, 2);
    EXPECT_EQ(s.position, 2);
    EXPECT_EQ(s.consumer, "2F1");
    EXPECT_DOUBLE_EQ(s.lateUs, 1.0);
    EXPECT_DOUBLE_EQ(s.stallUs, 1.0);
    EXPECT_EQ(s.cause, "posted only after 2F0 (position 1) ended");
}

TEST(CommSim, DeadlockByCommOrderIsTheValidatorsFinding)
{
    // Rank 1 sends 1SEND_B0 before receiving 1RECV_F1; rank 0 sends 0SEND_F1 before receiving 0RECV_B0: each
    // communicator waits for the other's head.
    const TorchSchedule t = program({ kTwoRanks[0], "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1" });
    const SimResult r = timed(t, 1.0);
    ASSERT_TRUE(r.deadlocked);
    const ValidationReport report = validate(t);
    std::vector<Diagnostic> deadlocks;
    for (const Diagnostic& d : report.diagnostics)
        if (d.rule == "deadlock.comm-order")
            deadlocks.push_back(d);
    ASSERT_EQ(deadlocks.size(), 2u);
    ASSERT_EQ(r.stuck.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(r.stuck[i].rank, deadlocks[i].rank);
        EXPECT_EQ(r.stuck[i].position, deadlocks[i].position);
        EXPECT_EQ(r.stuck[i].action, deadlocks[i].action);
        EXPECT_EQ(r.stuck[i].waitsFor, deadlocks[i].message);
    }
    EXPECT_EQ(r.stuck[0].action, "0SEND_F1");
    EXPECT_EQ(r.stuck[1].action, "1SEND_B0");
    EXPECT_NE(r.deadlockMessage.find("wait-for cycle: rank 0 -> rank 1 -> rank 0"), std::string::npos)
        << r.deadlockMessage;
}

TEST(CommSim, PredictProgramTimesTheComms)
{
    const TorchSchedule t = program(kTwoRanksLate);
    const Prediction p = predictProgram(t, unitCosts(2, 1.0));
    ASSERT_TRUE(p.valid()) << p.error;
    ASSERT_TRUE(p.program.has_value());
    EXPECT_TRUE(p.sim.commsTimed);
    EXPECT_DOUBLE_EQ(p.makespanUs, 12.0);
    EXPECT_DOUBLE_EQ(p.bubbleRate, 0.5);
    EXPECT_EQ(p.sim.stalledReceives.size(), 1u);
}

TEST(CommSim, PredictProgramWithoutCommsIsPredictSchedule)
{
    const TorchSchedule t = program({ "0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1" });
    const Prediction a = predictProgram(t, unitCosts(2, 1.0));
    const Prediction b = predictSchedule(computeSchedule(t), unitCosts(2, 1.0));
    ASSERT_TRUE(a.valid()) << a.error;
    EXPECT_FALSE(a.sim.commsTimed);
    EXPECT_DOUBLE_EQ(a.makespanUs, 11.0);
    EXPECT_DOUBLE_EQ(a.makespanUs, b.makespanUs);
    EXPECT_DOUBLE_EQ(a.bubbleRate, b.bubbleRate);
}

TEST(CommSim, PredictProgramNamesTheDeadlockAsInvalid)
{
    const TorchSchedule t = program({ kTwoRanks[0], "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1" });
    const Prediction p = predictProgram(t, unitCosts(2, 1.0));
    EXPECT_FALSE(p.valid());
    EXPECT_EQ(p.error.rfind("invalid schedule: error: rank 0, position 3 (0SEND_F1): rank 0 is stuck:", 0), 0u)
        << p.error;
    EXPECT_NE(p.error.find("(wait-for cycle: rank 0 -> rank 1 -> rank 0)"), std::string::npos) << p.error;
}

TEST(CommSim, PredictLowersAVariantOnRequest)
{
    // The default project's active variant, lowered as PyTorch's runtime does: its compute is the variant's (same kind,
    // same busy time per rank), its sends and receives are timed, and the compute-only makespan is predict()'s own.
    const Project project = defaultProject();
    const Prediction plain = predict(project, "");
    PredictOptions options;
    options.lowerComms = true;
    const Prediction lowered = predict(project, "", options);
    ASSERT_TRUE(plain.valid()) << plain.error;
    ASSERT_TRUE(lowered.valid()) << lowered.error;
    EXPECT_FALSE(plain.sim.commsTimed);
    EXPECT_TRUE(lowered.sim.commsTimed);
    EXPECT_EQ(lowered.schedule->kind, plain.schedule->kind);
    EXPECT_DOUBLE_EQ(lowered.sim.computeOnlyMakespanUs, plain.makespanUs);
    EXPECT_GE(lowered.makespanUs, plain.makespanUs);
    for (std::size_t r = 0; r < plain.sim.ranks.size(); ++r)
        EXPECT_DOUBLE_EQ(lowered.sim.ranks[r].busyUs, plain.sim.ranks[r].busyUs);
}
