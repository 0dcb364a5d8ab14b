// Tests of the schedule IR: action text (PyTorch notation, both dialects), placement, kind names, Schedule.
#include "schedule/action.h"
#include "base/errors.h"
#include "schedule/placement.h"
#include "schedule/schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace dps;

namespace {

/// The message of the ParseError parseAction throws, "" when it parses.
std::string parseFailure(const std::string& text, Dialect dialect = Dialect::Current)
{
    try {
        parseAction(text, dialect);
    } catch (const ParseError& e) {
        return e.what();
    }
    return "";
}

} // namespace

// ---- kinds and text ----

TEST(ActionText, KindLetters)
{
    EXPECT_EQ(kindLetter(OpKind::F), 'F');
    EXPECT_EQ(kindLetter(OpKind::I), 'I');
    EXPECT_EQ(kindLetter(OpKind::W), 'W');
    EXPECT_EQ(kindLetter(OpKind::B), 'B');
}

TEST(ActionText, PrintsPyTorchNotation)
{
    EXPECT_EQ(toString(Op { 2, 0, OpKind::F }), "2F0");
    EXPECT_EQ(toString(Action::single(3, OpKind::I, 1)), "3I1");
    EXPECT_EQ(toString(Action::single(0, OpKind::W, 3)), "0W3");
    EXPECT_EQ(toString(Action::single(1, OpKind::B, 5)), "1B5");
    EXPECT_EQ(toString(Action::single(12, OpKind::F, 345)), "12F345");
    EXPECT_EQ(toString(Action::overlap(Op { 0, 7, OpKind::F }, Op { 7, 3, OpKind::B })), "(0F7;7B3)OVERLAP_F_B");
    EXPECT_EQ(toString(Action::overlap(Op { 1, 2, OpKind::F }, Op { 6, 0, OpKind::I })), "(1F2;6I0)OVERLAP_F_B");
}

TEST(ActionText, ParsesEveryKind)
{
    EXPECT_EQ(parseOp("2F0"), (Op { 2, 0, OpKind::F }));
    EXPECT_EQ(parseOp("3I1"), (Op { 3, 1, OpKind::I }));
    EXPECT_EQ(parseOp("0W3"), (Op { 0, 3, OpKind::W }));
    EXPECT_EQ(parseOp("1B5"), (Op { 1, 5, OpKind::B }));
    EXPECT_EQ(parseOp("  10F20 \r\n"), (Op { 10, 20, OpKind::F }));
}

TEST(ActionText, ParsesOverlappedPair)
{
    const Action a = parseAction("(0F7;7B3)OVERLAP_F_B");
    ASSERT_TRUE(a.overlapped);
    EXPECT_EQ(a.size(), 2);
    EXPECT_EQ(a.at(0), (Op { 0, 7, OpKind::F }));
    EXPECT_EQ(a.at(1), (Op { 7, 3, OpKind::B }));
    EXPECT_EQ(a, Action::overlap(Op { 0, 7, OpKind::F }, Op { 7, 3, OpKind::B }));
    const Action spaced = parseAction(" ( 0F7 ; 7I3 )OVERLAP_F_B ");
    EXPECT_EQ(spaced.backward, (Op { 7, 3, OpKind::I }));
}

TEST(ActionText, RoundTrip)
{
    const std::vector<std::string> texts { "0F0", "2F0", "3I1", "0W3", "1B5", "15B1023", "(0F7;7B3)OVERLAP_F_B",
        "(3F0;4I2)OVERLAP_F_B", "(12F100;2B99)OVERLAP_F_B" };
    for (const auto& text : texts) {
        EXPECT_EQ(toString(parseAction(text)), text);
        const Action a = parseAction(text);
        EXPECT_EQ(parseAction(toString(a)), a) << text;
    }
    for (int stage : { 0, 1, 9, 4095 })
        for (int mb : { 0, 1, 77, 8191 })
            for (OpKind kind : { OpKind::F, OpKind::I, OpKind::W, OpKind::B }) {
                const Action a = Action::single(stage, kind, mb);
                EXPECT_EQ(parseAction(toString(a)), a);
            }
}

TEST(ActionText, EqualityIgnoresBackwardOfSingles)
{
    Action a = Action::single(1, OpKind::F, 2);
    Action b = a;
    b.backward = Op { 9, 9, OpKind::B };
    EXPECT_EQ(a, b);
    EXPECT_NE(Action::single(1, OpKind::F, 2), Action::single(1, OpKind::F, 3));
    EXPECT_NE(Action::single(1, OpKind::F, 2), Action::overlap(Op { 1, 2, OpKind::F }, Op { 3, 0, OpKind::B }));
}

TEST(ActionText, Legacy2024Dialect)
{
    // PyTorch 2.4/2.5: B meant backward-for-inputs, BW full backward.
    EXPECT_EQ(parseOp("1B0", Dialect::Legacy2024), (Op { 1, 0, OpKind::I }));
    EXPECT_EQ(parseOp("1BW0", Dialect::Legacy2024), (Op { 1, 0, OpKind::B }));
    EXPECT_EQ(parseOp("1W0", Dialect::Legacy2024), (Op { 1, 0, OpKind::W }));
    EXPECT_EQ(parseOp("2F4", Dialect::Legacy2024), (Op { 2, 4, OpKind::F }));
    EXPECT_EQ(toString(parseAction("3B2", Dialect::Legacy2024)), "3I2"); // printed in the current dialect
    EXPECT_EQ(toString(parseAction("3BW2", Dialect::Legacy2024)), "3B2");
    EXPECT_EQ(parseFailure("1I0", Dialect::Legacy2024),
        "'1I0' is not an action: unknown kind 'I' in the 2024 dialect (expected F, B, W or BW)");
    EXPECT_EQ(parseFailure("1BW0"),
        "'1BW0' is not an action: unknown kind 'BW' (expected F, I, W or B; BW is the 2024 dialect's full "
        "backward, read with --dialect 2024)");
}

TEST(ActionText, ErrorsShowBinaryBytesEscapedAndShortened)
{
    // A binary file read as a CSV: no control bytes on the terminal, no message cut at a NUL.
    EXPECT_EQ(parseFailure(std::string("\x7f"
                                       "ELF\x02\x00\x01",
                  7)),
        "'\\x7fELF\\x02\\x00\\x01' is not an action: expected <stage><kind><microbatch>, e.g. 2F0");
    EXPECT_EQ(parseFailure("0\xff\xfe"
                           "0"),
        "'0\\xff\\xfe0' is not an action: unknown kind '\\xff\\xfe' (expected F, I, W or B)");
    EXPECT_EQ(parseFailure(std::string(50, 'Z')),
        "'" + std::string(40, 'Z') + "...' is not an action: expected <stage><kind><microbatch>, e.g. 2F0");
}

TEST(ActionText, ErrorsNameTheTextAndTheProblem)
{
    EXPECT_EQ(parseFailure(""), "'' is not an action: empty");
    EXPECT_EQ(parseFailure("F0"), "'F0' is not an action: expected <stage><kind><microbatch>, e.g. 2F0");
    EXPECT_EQ(parseFailure("2F"), "'2F' is not an action: missing microbatch number after the kind");
    EXPECT_EQ(parseFailure("2F0x"), "'2F0x' is not an action: microbatch must be a number");
    EXPECT_EQ(parseFailure("2X0"), "'2X0' is not an action: unknown kind 'X' (expected F, I, W or B)");
    EXPECT_EQ(parseFailure("99999999999F0"), "'99999999999F0' is not an action: stage is out of range");
    EXPECT_EQ(parseFailure("(1B0;0F1)OVERLAP_F_B"),
        "'(1B0;0F1)OVERLAP_F_B' is not an action: the first half of an OVERLAP_F_B pair must be a forward");
    EXPECT_EQ(parseFailure("(0F1;1W0)OVERLAP_F_B"),
        "'(0F1;1W0)OVERLAP_F_B' is not an action: the second half of an OVERLAP_F_B pair must be a backward (B or "
        "I)");
    EXPECT_EQ(parseFailure("(0F1;1B0;2B0)OVERLAP_F_B"),
        "'(0F1;1B0;2B0)OVERLAP_F_B' is not an action: an OVERLAP_F_B pair holds exactly two actions separated by "
        "';'");
    EXPECT_EQ(
        parseFailure("(0F1;1B0)"), "'(0F1;1B0)' is not an action: a parenthesised action must be (<F>;<B>)OVERLAP_F_B");
    EXPECT_EQ(parseFailure("(0F1 1B0)OVERLAP_F_B"),
        "'(0F1 1B0)OVERLAP_F_B' is not an action: an OVERLAP_F_B pair holds exactly two actions separated by ';'");
    EXPECT_THROW(parseOp("1UNSHARD"), ParseError);
    EXPECT_THROW(parseOp("0SEND_F1"), ParseError);
}

// ---- placement ----

TEST(PlacementTest, PerStage)
{
    const Placement p = Placement::perStage({ 0, 1, 2, 3, 3, 2, 1, 0 });
    EXPECT_TRUE(p.isPerStage());
    EXPECT_FALSE(p.isMirrored());
    EXPECT_EQ(p.stageCount(), 8);
    EXPECT_EQ(p.rankOf(0, 0), 0);
    EXPECT_EQ(p.rankOf(5, 99), 2);
    EXPECT_EQ(p.rankOf(7, 3), 0);
    EXPECT_EQ(p.rankOf(8, 0), -1);
    EXPECT_EQ(p.rankOf(-1, 0), -1);
    EXPECT_EQ(p.rankOfStage(), (std::vector<int> { 0, 1, 2, 3, 3, 2, 1, 0 }));
    EXPECT_EQ(p.describe(), "per stage [0,1,2,3,3,2,1,0]");
}

TEST(PlacementTest, MirroredDualPipe)
{
    const Placement p = Placement::mirrored(4, 10);
    EXPECT_TRUE(p.isMirrored());
    EXPECT_FALSE(p.isPerStage());
    EXPECT_EQ(p.stageCount(), 4);
    EXPECT_EQ(p.rankOf(0, 0), 0);
    EXPECT_EQ(p.rankOf(1, 4), 1); // m < C/2: rank s
    EXPECT_EQ(p.rankOf(1, 5), 2); // m >= C/2: rank P-1-s
    EXPECT_EQ(p.rankOf(3, 9), 0);
    EXPECT_EQ(p.rankOf(0, 10), -1);
    EXPECT_EQ(p.rankOf(4, 0), -1);
    EXPECT_TRUE(p.rankOfStage().empty());
    EXPECT_EQ(p.describe(), "mirrored (DualPipe: microbatches < 5 on rank s, the rest on rank 3-s)");
}

TEST(PlacementTest, Table)
{
    const Placement p = Placement::table(2, 3, { 0, 0, 1, 1, -1, 0 });
    EXPECT_FALSE(p.isPerStage());
    EXPECT_FALSE(p.isMirrored());
    EXPECT_EQ(p.rankOf(0, 2), 1);
    EXPECT_EQ(p.rankOf(1, 0), 1);
    EXPECT_EQ(p.rankOf(1, 1), -1);
    EXPECT_EQ(p.rankOf(1, 3), -1);
    EXPECT_EQ(p.describe(), "per (stage, microbatch)");
}

// ---- kind names ----

TEST(KindNames, NamesAndDisplayNames)
{
    EXPECT_EQ(kindName(ScheduleKind::Custom), "custom");
    EXPECT_EQ(kindName(ScheduleKind::GPipe), "gpipe");
    EXPECT_EQ(kindName(ScheduleKind::OneFOneB), "1f1b");
    EXPECT_EQ(kindName(ScheduleKind::Interleaved1F1B), "interleaved-1f1b");
    EXPECT_EQ(kindName(ScheduleKind::ZBH1), "zb-h1");
    EXPECT_EQ(kindName(ScheduleKind::ZBV), "zb-v");
    EXPECT_EQ(kindName(ScheduleKind::DualPipe), "dualpipe");
    EXPECT_EQ(kindName(ScheduleKind::DualPipeV), "dualpipev");
    EXPECT_EQ(kindDisplayName(ScheduleKind::Interleaved1F1B), "Interleaved 1F1B");
    EXPECT_EQ(kindDisplayName(ScheduleKind::DualPipeV), "DualPipeV");
    EXPECT_EQ(kindDisplayName(ScheduleKind::ZBH1), "ZB-H1");
    EXPECT_EQ(kindDisplayName(ScheduleKind::Custom), "Custom");
}

TEST(KindNames, ParseIsInverseAndCaseInsensitive)
{
    for (ScheduleKind kind : generatedKinds())
        EXPECT_EQ(parseKind(kindName(kind)), kind) << kindName(kind);
    EXPECT_EQ(parseKind("custom"), ScheduleKind::Custom);
    EXPECT_EQ(parseKind("DualPipeV"), ScheduleKind::DualPipeV);
    EXPECT_EQ(parseKind("ZB-V"), ScheduleKind::ZBV);
    EXPECT_EQ(parseKind("cut-in-half"), ScheduleKind::DualPipeV);
    EXPECT_EQ(parseKind("Cut-In-Half"), ScheduleKind::DualPipeV);
    EXPECT_EQ(parseKind("zbv"), std::nullopt);
    EXPECT_EQ(parseKind(""), std::nullopt);
}

TEST(KindNames, GeneratedKindsInDisplayOrder)
{
    EXPECT_EQ(generatedKinds(),
        (std::vector<ScheduleKind> { ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved1F1B,
            ScheduleKind::ZBH1, ScheduleKind::ZBV, ScheduleKind::DualPipe, ScheduleKind::DualPipeV }));
}

// ---- schedule ----

TEST(ScheduleTest, CountsAndText)
{
    Schedule s;
    s.ranks = 2;
    s.order = { { Action::single(0, OpKind::F, 0), Action::overlap(Op { 0, 1, OpKind::F }, Op { 1, 0, OpKind::B }) },
        { Action::single(1, OpKind::F, 0), Action::single(1, OpKind::I, 0), Action::single(1, OpKind::W, 0) } };
    EXPECT_EQ(s.slotCount(), 5u);
    EXPECT_EQ(s.opCount(), 6u);
    EXPECT_EQ(toText(s), "rank 0: 0F0 (0F1;1B0)OVERLAP_F_B\nrank 1: 1F0 1I0 1W0\n");
}
