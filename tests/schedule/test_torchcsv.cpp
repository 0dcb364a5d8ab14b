// PyTorch's whole action language: cells of every kind, both CSV formats read and written byte for byte,
// the lowering to sends and receives (exact orders worked out by hand from PyTorch's algorithm), and the
// checks of a compute_comms schedule (unmatched sends, overlap halves on two ranks, deadlock by the order
// of receives).
#include "base/errors.h"
#include "base/fileio.h"
#include "schedule/csvio.h"
#include "schedule/generator.h"
#include "schedule/lowering.h"
#include "schedule/validator.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace dps;

namespace {

std::string sample(const std::string& name)
{
    return readTextFile((std::filesystem::path(DPS_TEST_DATA) / "pytorch" / name).string());
}

const Diagnostic* findRule(const ValidationReport& report, const std::string& rule)
{
    for (const auto& d : report.diagnostics)
        if (d.rule == rule)
            return &d;
    return nullptr;
}

} // namespace

TEST(TorchGrammar, EveryCommKindParsesAndPrints)
{
    const std::pair<const char*, CommOp> cases[] = {
        { "0SEND_F3", { CommKind::SendF, 0, 3 } },
        { "1RECV_F3", { CommKind::RecvF, 1, 3 } },
        { "2SEND_B0", { CommKind::SendB, 2, 0 } },
        { "1RECV_B12", { CommKind::RecvB, 1, 12 } },
        { "4UNSHARD", { CommKind::Unshard, 4, -1 } },
        { "4RESHARD", { CommKind::Reshard, 4, -1 } },
        { "10REDUCE_GRAD", { CommKind::ReduceGrad, 10, -1 } },
    };
    for (const auto& [text, op] : cases) {
        const Step step = parseStep(text);
        ASSERT_TRUE(step.isComm()) << text;
        EXPECT_EQ(step.comm, op) << text;
        EXPECT_EQ(toString(step), text);
    }
    EXPECT_TRUE(parseStep("").isIdle());
    EXPECT_EQ(toString(parseStep("(0F7;7B3)OVERLAP_F_B")), "(0F7;7B3)OVERLAP_F_B");
    EXPECT_EQ(parseStep("3I2").compute, Action::single(3, OpKind::I, 2));
}

TEST(TorchGrammar, BadCellsNameWhatIsWrong)
{
    EXPECT_THROW(parseStep("1SEND_X1"), ParseError);
    try {
        parseStep("1SEND_X1");
    } catch (const ParseError& e) {
        EXPECT_NE(std::string(e.what()).find("unknown kind 'SEND_X'"), std::string::npos) << e.what();
    }
    EXPECT_THROW(parseStep("0SEND_F"), ParseError); // a send names its microbatch
    EXPECT_THROW(parseStep("0UNSHARD2"), ParseError); // UNSHARD acts on a whole stage
    EXPECT_THROW(parseStep("(0F1;1SEND_B0)OVERLAP_F_B"), ParseError);
}

TEST(TorchCsv, SamplesRoundTripByteForByte)
{
    for (const char* name : { "1f1b_pp2_mb2_compute_only.csv", "1f1b_pp2_mb2_compute_comms.csv",
             "interleaved_pp2_mb2_compute_only.csv", "one_rank_4_stages_compute_comms.csv" }) {
        const std::string text = sample(name);
        const TorchSchedule t = readTorchCsv(text);
        EXPECT_EQ(t.lineEnd, "\r\n") << name;
        EXPECT_EQ(writeTorchCsv(t), text) << name;
    }
}

TEST(TorchCsv, KeepsIdleCellsAndLineEnds)
{
    const TorchSchedule t = readTorchCsv(sample("interleaved_pp2_mb2_compute_only.csv"));
    ASSERT_EQ(t.rows.size(), 2u);
    ASSERT_EQ(t.rows[0].size(), 9u);
    EXPECT_TRUE(t.rows[0][4].isIdle());
    EXPECT_FALSE(t.hasComms());
    const std::string lf = "0F0,,0B0\n";
    EXPECT_EQ(writeTorchCsv(readTorchCsv(lf)), lf);
    // The compute part: 4 stages, stages 0 and 2 on rank 0 (the interleaved placement).
    const Schedule s = computeSchedule(t);
    EXPECT_EQ(s.stages, 4);
    EXPECT_EQ(s.microbatches, 2);
    EXPECT_EQ(s.placement.rankOf(2, 0), 0);
    EXPECT_EQ(s.placement.rankOf(3, 1), 1);
    EXPECT_EQ(s.order[0].size(), 8u);
}

TEST(TorchCsv, UnknownActionNamesRowAndColumn)
{
    try {
        readTorchCsv(sample("bad_unknown_action.csv"));
        FAIL() << "read a CSV with 1SEND_X1";
    } catch (const ParseError& e) {
        EXPECT_EQ(e.row(), 2);
        EXPECT_EQ(e.column(), 8);
        EXPECT_NE(std::string(e.what()).find("row 2, column 8: '1SEND_X1'"), std::string::npos) << e.what();
    }
}

// PyTorch's lowering of 0F0,0F1,0B0,0B1 / 1F0,1B0,1F1,1B1 (stage s on rank s), by hand:
// UNSHARD/RESHARD: one stage per rank, so UNSHARD before the first action and RESHARD after the last;
// REDUCE_GRAD after each rank's 2nd B. Then rounds over ranks 0, 1, one action each when ready:
// 1: 0UNSHARD | 1UNSHARD. 2: 0F0 (+0SEND_F0, 1RECV_F0 to rank 1) | 1F0 (its RECV is now there).
// 3: 0F1 (+0SEND_F1, 1RECV_F1) | 1B0 (last stage; +1SEND_B0, 0RECV_B0 to rank 0). 4: 0B0 | 1F1.
// 5: 0B1 waits (no 0RECV_B1 yet) | 1B1 (+1SEND_B1, 0RECV_B1). 6: 0B1 | 1REDUCE_GRAD.
// 7: 0REDUCE_GRAD | 1RESHARD. 8: 0RESHARD.
TEST(Lowering, OneFOneBMatchesPyTorchsPasses)
{
    const Schedule s = readCsv(sample("1f1b_pp2_mb2_compute_only.csv")).schedule;
    EXPECT_EQ(writeTorchCsv(lowerToComms(s)), sample("1f1b_pp2_mb2_compute_comms.csv"));
    // Without the FSDP and gradient-reduction passes only the sends and receives are added.
    const TorchSchedule p2p = lowerToComms(s, LoweringOptions { false, 3, false });
    EXPECT_EQ(writeTorchCsv(p2p),
        "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\r\n"
        "1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1\r\n");
}

// One rank, stages 0..3, 0F0,1F0,2F0,3F0,3B0,2B0,1B0,0B0, at most 3 stages unsharded (by hand):
// 0F0: next stages 0,1,2 -> UNSHARD 0,1,2. 1F0: next 1,2,3 -> RESHARD 0, UNSHARD 3. 2F0, 3F0, 3B0: next
// 2,3,1 / 3,2,1 / 3,2,1, nothing. 2B0: next 2,1,0 -> RESHARD 3, UNSHARD 0. 1B0: next 1,0 -> RESHARD 2.
// 0B0: next 0 -> RESHARD 1. End: RESHARD 0. One microbatch: REDUCE_GRAD after every B.
TEST(Lowering, UnshardReshardKeepsThreeStagesAhead)
{
    const Schedule s = readCsv("0F0,1F0,2F0,3F0,3B0,2B0,1B0,0B0\n").schedule;
    EXPECT_EQ(writeTorchCsv(lowerToComms(s)), sample("one_rank_4_stages_compute_comms.csv"));
}

TEST(Lowering, GeneratedSchedulesLowerToValidComms)
{
    for (const ScheduleKind kind : { ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved1F1B,
             ScheduleKind::ZBH1, ScheduleKind::ZBV, ScheduleKind::DualPipeV, ScheduleKind::DualPipe }) {
        const Schedule s = generate(GenerateOptions { kind, 4, 8, 0 });
        const TorchSchedule lowered = lowerToComms(s);
        const ValidationReport report = validate(lowered);
        EXPECT_TRUE(report.valid()) << kindName(kind) << ": "
                                    << (report.diagnostics.empty() ? "" : format(report.diagnostics[0]));
        // Its compute cells are the schedule's order, and the file reads back the same.
        const TorchSchedule back = readTorchCsv(writeTorchCsv(lowered));
        EXPECT_EQ(back.rows, lowered.rows) << kindName(kind);
        EXPECT_EQ(computeSchedule(back).order, s.order) << kindName(kind);
    }
}

TEST(Lowering, DeadlockedOrderIsRefused)
{
    // Rank 0 waits for 1B0's gradient before its 0F1; rank 1 runs 1F1, which needs 0F1, before 1B0.
    const Schedule s = readCsv("0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n").schedule;
    try {
        lowerToComms(s);
        FAIL() << "lowered a deadlocked order";
    } catch (const ConstraintError& e) {
        EXPECT_EQ(e.rule(), "lowering.stuck");
        EXPECT_NE(std::string(e.what()).find("rank 0 at 0B0; rank 1 at 1F1"), std::string::npos) << e.what();
    }
}

TEST(CommCheck, SendWithoutRecvIsNamed)
{
    const ValidationReport r = validate(readTorchCsv(sample("bad_send_without_recv.csv")));
    const Diagnostic* d = findRule(r, "comm.send-without-recv");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->rank, 0);
    EXPECT_EQ(d->position, 3);
    EXPECT_EQ(d->action, "0SEND_F1");
    EXPECT_NE(d->message.find("no matching 1RECV_F1 on rank 1"), std::string::npos) << d->message;
}

TEST(CommCheck, OverlapHalvesOnTwoRanksAreNamed)
{
    const ValidationReport r = validate(readTorchCsv(sample("bad_overlap_ranks.csv")));
    ASSERT_FALSE(r.valid());
    const Diagnostic& d = r.diagnostics.front();
    EXPECT_EQ(d.rule, "shape.overlap-ranks");
    EXPECT_EQ(d.rank, 0);
    EXPECT_EQ(d.position, 2);
    EXPECT_EQ(d.action, "(0F2;1B0)OVERLAP_F_B");
    EXPECT_NE(d.message.find("1B0 belongs on rank 1, where its forward 1F0 runs (position 0)"), std::string::npos)
        << d.message;
}

TEST(CommCheck, ReceiveOrderDeadlockNamesBothCommunicators)
{
    const ValidationReport r = validate(readTorchCsv(sample("deadlock_recv_order.csv")));
    ASSERT_EQ(r.diagnostics.size(), 2u) << (r.diagnostics.empty() ? "" : format(r.diagnostics[0]));
    const Diagnostic& a = r.diagnostics[0];
    const Diagnostic& b = r.diagnostics[1];
    EXPECT_EQ(a.rule, "deadlock.comm-order");
    EXPECT_EQ(a.rank, 0);
    EXPECT_EQ(a.position, 4);
    EXPECT_EQ(a.action, "0RECV_B1");
    EXPECT_TRUE(a.inCycle);
    EXPECT_NE(a.message.find("waiting for rank 1 to reach 1SEND_B1 (position 7), but rank 1's communicator is at "
                             "1SEND_B0 (position 4)"),
        std::string::npos)
        << a.message;
    EXPECT_EQ(b.rank, 1);
    EXPECT_EQ(b.action, "1SEND_B0");
    EXPECT_NE(b.message.find("wait-for cycle: rank 0 -> rank 1 -> rank 0"), std::string::npos) << b.message;
}

TEST(CommCheck, ReceiveAfterItsComputeIsAnOrderError)
{
    const TorchSchedule t = readTorchCsv("0F0,0SEND_F0,0RECV_B0,0B0\r\n1F0,1RECV_F0,1B0,1SEND_B0\r\n");
    const ValidationReport r = validate(t);
    const Diagnostic* d = findRule(r, "order.recv-after-compute");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->rank, 1);
    EXPECT_EQ(d->position, 1);
    EXPECT_NE(d->message.find("comes after 1F0 (position 0)"), std::string::npos) << d->message;
}

TEST(CommCheck, MissingCommsAreNamedOnce)
{
    const ValidationReport r = validate(readTorchCsv("0F0,0SEND_F0,0B0\r\n1RECV_F0,1F0,1B0\r\n"));
    ASSERT_EQ(r.diagnostics.size(), 1u) << format(r.diagnostics[0]);
    EXPECT_EQ(r.diagnostics[0].rule, "comm.missing");
    EXPECT_EQ(r.diagnostics[0].action, "1B0");
    EXPECT_EQ(r.diagnostics[0].rank, 1);
    EXPECT_EQ(r.diagnostics[0].position, 2);
}

TEST(CommCheck, OverlapHalvesOnTwoRanksInAComputeOnlyCsv)
{
    const ValidationReport r = validate(readCsv(sample("bad_overlap_ranks.csv")).schedule);
    const Diagnostic* d = findRule(r, "shape.overlap-ranks");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->rank, 0);
    EXPECT_EQ(d->position, 2);
    EXPECT_EQ(d->action, "(0F2;1B0)OVERLAP_F_B");
    EXPECT_NE(
        d->message.find("1B0 belongs on rank 1, where the placement puts stage 1, microbatch 0"), std::string::npos)
        << d->message;
    EXPECT_EQ(findRule(r, "placement.inconsistent"), nullptr);
}
