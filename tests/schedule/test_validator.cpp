// The validator: the shared cases, the invalid corpus (one CSV per rule), rules only code can express,
// deadlock naming, generated schedules, robustness and scale.
#include "schedule/csvio.h"
#include "base/errors.h"
#include "base/fileio.h"
#include "schedule/generator.h"
#include "schedule/validator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

using namespace dps;

namespace {

Schedule loadCsv(const std::string& relative)
{
    return readCsv(readTextFile(std::filesystem::path(DPS_TEST_DATA) / relative)).schedule;
}

std::vector<Diagnostic> withRule(const ValidationReport& report, const std::string& rule)
{
    std::vector<Diagnostic> out;
    std::copy_if(report.diagnostics.begin(), report.diagnostics.end(), std::back_inserter(out),
        [&](const Diagnostic& d) { return d.rule == rule; });
    return out;
}

std::string dump(const ValidationReport& report)
{
    std::string s;
    for (const auto& d : report.diagnostics)
        s += "  [" + d.rule + "] " + format(d) + "\n";
    return s;
}

/// Stage s on rank s, one single op per slot, from text rows like {"0F0 0B0", "1F0 1B0"}.
Schedule fromRows(const std::vector<std::string>& rows)
{
    std::string csv;
    for (const auto& row : rows) {
        std::string line = row;
        std::replace(line.begin(), line.end(), ' ', ',');
        csv += line + "\n";
    }
    return readCsv(csv, CsvDialect::Current).schedule;
}

} // namespace

// ---- the shared cases -------------------------------------------------------------------------------------

TEST(ValidatorCases, DeadlockThreeRanksNamesEveryBlockedRank)
{
    const ValidationReport report = validate(loadCsv("cases/deadlock_three_ranks.csv"));
    ASSERT_FALSE(report.valid());
    const auto dead = withRule(report, "deadlock");
    ASSERT_EQ(dead.size(), 3u) << dump(report);
    EXPECT_EQ(report.diagnostics.size(), 3u) << dump(report);

    EXPECT_EQ(dead[0].rank, 0);
    EXPECT_EQ(dead[0].position, 1);
    EXPECT_EQ(dead[0].action, "0B0");
    EXPECT_NE(dead[0].message.find("waiting for the gradient from 1B0 on rank 1"), std::string::npos)
        << dead[0].message;
    EXPECT_TRUE(dead[0].inCycle);

    EXPECT_EQ(dead[1].rank, 1);
    EXPECT_EQ(dead[1].position, 1);
    EXPECT_EQ(dead[1].action, "1F1");
    EXPECT_NE(dead[1].message.find(
                  "rank 1 is stuck at 1F1, waiting for 0F1 from rank 0, which is queued behind 0B0 at position 1"),
        std::string::npos)
        << dead[1].message;
    EXPECT_TRUE(dead[1].inCycle);

    EXPECT_EQ(dead[2].rank, 2);
    EXPECT_EQ(dead[2].position, 0);
    EXPECT_EQ(dead[2].action, "2F1");
    EXPECT_NE(dead[2].message.find("waiting for 1F1 from rank 1"), std::string::npos) << dead[2].message;
    EXPECT_FALSE(dead[2].inCycle);
}

TEST(ValidationMemo, ValidatesEachDistinctScheduleOnce)
{
    ValidationMemo memo;
    const Schedule dualpipe = generate({ ScheduleKind::DualPipe, 4, 8, 0 });
    EXPECT_TRUE(memo.validate(dualpipe).valid());
    EXPECT_TRUE(memo.validate(generate({ ScheduleKind::DualPipe, 4, 8, 0 })).valid());
    EXPECT_EQ(memo.size(), 1u);

    // The same sizes with two slots of rank 0 swapped (1F before 0F on that rank's order): a schedule of its own,
    // with its own report, not the valid one remembered for the generated order.
    Schedule swapped = dualpipe;
    std::swap(swapped.order[0][0], swapped.order[0][1]);
    const ValidationReport& report = memo.validate(swapped);
    EXPECT_EQ(report.valid(), validate(swapped).valid());
    EXPECT_EQ(report.diagnostics.size(), validate(swapped).diagnostics.size());
    EXPECT_EQ(memo.size(), 2u);

    // Another placement of the same orders is another schedule too.
    Schedule moved = dualpipe;
    moved.placement = Placement::perStage({ 0, 1, 2, 3 });
    EXPECT_FALSE(memo.validate(moved).valid());
    EXPECT_EQ(memo.size(), 3u);
    EXPECT_TRUE(memo.validate(dualpipe).valid());
    EXPECT_EQ(memo.size(), 3u);
}

TEST(ValidatorCases, MissingWeightGrad)
{
    const ValidationReport report = validate(loadCsv("cases/missing_weight_grad.csv"));
    ASSERT_EQ(report.diagnostics.size(), 1u) << dump(report);
    const Diagnostic& d = report.diagnostics[0];
    EXPECT_EQ(d.rule, "counts.i-without-w");
    EXPECT_EQ(d.rank, 0);
    EXPECT_EQ(d.position, 3);
    EXPECT_EQ(d.action, "0I1");
    EXPECT_EQ(d.message, "0I1 has no later 0W1 on rank 0");
}

TEST(ValidatorCases, GPipeWithBlankCellsIsValid)
{
    const ValidationReport report = validate(loadCsv("cases/gpipe_with_blank_cells.csv"));
    EXPECT_TRUE(report.valid()) << dump(report);
    EXPECT_TRUE(report.diagnostics.empty()) << dump(report);
}

TEST(ValidatorCases, GoldenCsvsAreValid)
{
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(DPS_TEST_DATA) / "golden")) {
        if (entry.path().extension() != ".csv")
            continue;
        SCOPED_TRACE(entry.path().filename().string());
        Schedule s = readCsv(readTextFile(entry.path())).schedule;
        const ValidationReport report = validate(s);
        EXPECT_TRUE(report.diagnostics.empty()) << dump(report);
    }
}

TEST(ValidatorCases, GoldenDualPipeWithItsKindPassesConstraints)
{
    Schedule s = loadCsv("golden/dualpipe_pp8_mb20.csv");
    s.kind = ScheduleKind::DualPipe;
    const ValidationReport report = validate(s);
    EXPECT_TRUE(report.diagnostics.empty()) << dump(report);
}

// ---- the invalid corpus: one CSV per rule ------------------------------------------------------------------

struct CorpusCase {
    const char* file;
    const char* rule;
    int rank;
    int position;
    const char* action;
    const char* messagePart;
};

class InvalidCorpus : public testing::TestWithParam<CorpusCase> { };

TEST_P(InvalidCorpus, ReportsExactlyItsRule)
{
    const CorpusCase& c = GetParam();
    const ValidationReport report = validate(loadCsv(std::string("invalid/") + c.file));
    EXPECT_FALSE(report.valid());
    ASSERT_EQ(report.diagnostics.size(), 1u) << dump(report);
    const Diagnostic& d = report.diagnostics[0];
    EXPECT_EQ(d.severity, Severity::Error);
    EXPECT_EQ(d.rule, c.rule);
    EXPECT_EQ(d.rank, c.rank);
    EXPECT_EQ(d.position, c.position);
    EXPECT_EQ(d.action, c.action);
    EXPECT_NE(d.message.find(c.messagePart), std::string::npos) << d.message;
}

INSTANTIATE_TEST_SUITE_P(Rules, InvalidCorpus,
    testing::Values(CorpusCase { "duplicate.csv", "counts.duplicate", 0, 2, "0F1", "first at rank 0, position 1" },
        CorpusCase { "b_and_i.csv", "counts.b-and-i", 0, 2, "0B0", "has both 0I0" },
        CorpusCase { "missing_forward.csv", "counts.missing-forward", 1, 0, "1B0", "no forward 1F0" },
        CorpusCase { "missing_backward.csv", "counts.missing-backward", 0, 1, "0F1", "0F1 has no backward" },
        CorpusCase { "i_without_w.csv", "counts.i-without-w", 0, 1, "0I0", "0I0 has no later 0W0 on rank 0" },
        CorpusCase { "w_without_i.csv", "counts.w-without-i", 0, 4, "0W1", "full backward" },
        CorpusCase { "missing_microbatch.csv", "counts.missing-microbatch", -1, -1, "", "microbatch 1 has no ops" },
        CorpusCase { "backward_before_forward.csv", "order.backward-before-forward", 0, 1, "0B1",
            "before its forward 0F1 (position 2)" },
        CorpusCase { "backward_in_forward_slot.csv", "order.backward-before-forward", 0, 1, "0B1",
            "same slot as its forward 0F1" },
        CorpusCase { "w_before_i.csv", "order.w-before-i", 0, 1, "0W0", "before its 0I0 (position 2)" },
        CorpusCase { "placement_inconsistent.csv", "placement.inconsistent", 1, 4, "0B0",
            "placement puts stage 0, microbatch 0 on rank 0" },
        CorpusCase { "deadlock_self.csv", "deadlock", 0, 0, "1F0",
            "waiting for 0F0 on the same rank, which comes later at position 1" }),
    [](const testing::TestParamInfo<CorpusCase>& param) {
        std::string name = param.param.file;
        name = name.substr(0, name.find('.'));
        name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
        return name;
    });

TEST(InvalidCorpusFiles, SelfDeadlockIsACycleOfOne)
{
    const ValidationReport report = validate(loadCsv("invalid/deadlock_self.csv"));
    ASSERT_EQ(report.diagnostics.size(), 1u) << dump(report);
    EXPECT_TRUE(report.diagnostics[0].inCycle);
    EXPECT_NE(report.diagnostics[0].message.find("rank 0 -> rank 0"), std::string::npos);
}

TEST(InvalidCorpusFiles, TwoRankDeadlockMarksBothInTheCycle)
{
    const ValidationReport report = validate(loadCsv("invalid/deadlock_two_ranks.csv"));
    ASSERT_EQ(report.diagnostics.size(), 2u) << dump(report);
    EXPECT_EQ(report.diagnostics[0].action, "0B0");
    EXPECT_EQ(report.diagnostics[1].action, "1F1");
    EXPECT_NE(report.diagnostics[0].message.find("which is queued behind 1F1 at position 0"), std::string::npos)
        << report.diagnostics[0].message;
    for (const auto& d : report.diagnostics) {
        EXPECT_EQ(d.rule, "deadlock");
        EXPECT_TRUE(d.inCycle);
    }
}

TEST(InvalidCorpusFiles, MalformedCellIsAParseErrorWithRowAndColumn)
{
    try {
        loadCsv("invalid/malformed_cell.csv");
        FAIL() << "expected a ParseError";
    } catch (const ParseError& e) {
        EXPECT_EQ(e.row(), 2);
        EXPECT_EQ(e.column(), 5);
        EXPECT_EQ(std::string(e.what()).rfind("row 2, column 5: '1X0' is not an action: ", 0), 0u) << e.what();
    }
}

// ---- rules a CSV cannot express -----------------------------------------------------------------------------

TEST(ValidatorShape, RankCountMustMatchRows)
{
    Schedule s = fromRows({ "0F0 0B0" });
    s.ranks = 2;
    const ValidationReport report = validate(s);
    ASSERT_EQ(withRule(report, "shape.rank-count").size(), 1u) << dump(report);
    EXPECT_TRUE(withRule(report, "deadlock").empty());
}

TEST(ValidatorShape, StageAndMicrobatchRanges)
{
    Schedule s = fromRows({ "0F0 0B0" });
    s.order[0].push_back(Action::single(3, OpKind::F, 0));
    s.order[0].push_back(Action::single(0, OpKind::F, 7));
    const ValidationReport report = validate(s);
    const auto stage = withRule(report, "shape.stage-range");
    const auto mb = withRule(report, "shape.microbatch-range");
    ASSERT_EQ(stage.size(), 1u) << dump(report);
    ASSERT_EQ(mb.size(), 1u) << dump(report);
    EXPECT_EQ(stage[0].position, 2);
    EXPECT_EQ(stage[0].action, "3F0");
    EXPECT_EQ(mb[0].position, 3);
    EXPECT_EQ(mb[0].action, "0F7");
    EXPECT_EQ(report.diagnostics.size(), 2u) << dump(report);
}

TEST(ValidatorShape, PlacementMustCoverTheStages)
{
    Schedule s = fromRows({ "0F0 0B0", "1F0 1B0" });
    s.placement = Placement::perStage({ 0 });
    const ValidationReport report = validate(s);
    EXPECT_EQ(withRule(report, "shape.placement").size(), 1u) << dump(report);
}

TEST(ValidatorShape, PlacementThatDisagreesWithTheRows)
{
    Schedule s = fromRows({ "0F0 0B0", "1F0 1B0" });
    s.placement = Placement::perStage({ 1, 0 });
    const ValidationReport report = validate(s);
    EXPECT_EQ(withRule(report, "placement.inconsistent").size(), 4u) << dump(report);
    EXPECT_TRUE(withRule(report, "deadlock").empty());
}

TEST(ValidatorShape, OverlappedPairMustBeForwardAndBackward)
{
    Schedule s = fromRows({ "0F0 0F1 0B0 0B1" });
    s.order[0][2] = Action::overlap(Op { 0, 0, OpKind::B }, Op { 0, 1, OpKind::F });
    s.order[0][3] = Action::single(0, OpKind::B, 1);
    s.order[0].erase(s.order[0].begin() + 1);
    const ValidationReport report = validate(s);
    const auto pair = withRule(report, "shape.overlap-pair");
    ASSERT_EQ(pair.size(), 1u) << dump(report);
    EXPECT_EQ(pair[0].rank, 0);
    EXPECT_EQ(pair[0].position, 1);
    EXPECT_EQ(pair[0].action, "(0B0;0F1)OVERLAP_F_B");
}

TEST(ValidatorShape, FloodOfOneRuleIsSummarised)
{
    Schedule s = fromRows({ "0F0" });
    for (int m = 1; m < 500; ++m)
        s.order[0].push_back(Action::single(0, OpKind::F, m));
    s.microbatches = 500;
    s.placement = Placement::perStage({ 0 });
    const ValidationReport report = validate(s);
    const auto missing = withRule(report, "counts.missing-backward");
    ASSERT_EQ(missing.size(), 101u);
    EXPECT_EQ(missing.back().message, "... and 400 more findings of rule counts.missing-backward");
    EXPECT_EQ(report.errorCount(), 101u);
}

TEST(ValidatorConstraints, KindSizeRuleBecomesADiagnostic)
{
    Schedule s = fromRows({ "0F0 0B0", "1F0 1B0", "2F0 2B0" });
    s.kind = ScheduleKind::OneFOneB;
    const ValidationReport report = validate(s);
    ASSERT_EQ(report.diagnostics.size(), 1u) << dump(report);
    EXPECT_EQ(report.diagnostics[0].rule.rfind("constraint.", 0), 0u) << report.diagnostics[0].rule;
    EXPECT_NE(report.diagnostics[0].rule.find("microbatches"), std::string::npos) << report.diagnostics[0].rule;
}

TEST(ValidatorConstraints, OddDualPipeRanksAreRefusedByRule)
{
    Schedule s = fromRows({ "0F0 0B0", "1F0 1B0", "2F0 2B0" });
    s.kind = ScheduleKind::DualPipe;
    s.stagesPerRank = 2;
    const ValidationReport report = validate(s);
    EXPECT_EQ(withRule(report, "constraint.dualpipe.even-ranks").size(), 1u) << dump(report);
}

TEST(ValidatorConstraints, StageCountMustMatchTheKind)
{
    Schedule s = fromRows({ "0F0 0B0", "1F0 2F0 2B0 1B0" });
    s.kind = ScheduleKind::GPipe;
    s.stagesPerRank = 1;
    const ValidationReport report = validate(s);
    ASSERT_EQ(report.diagnostics.size(), 1u) << dump(report);
    EXPECT_EQ(report.diagnostics[0].rule, "constraint.stage-count");
}

TEST(ValidatorConstraints, CustomKindHasNoConstraints)
{
    const ValidationReport report = validate(fromRows({ "0F0 0B0", "1F0 1B0", "2F0 2B0" }));
    EXPECT_TRUE(report.diagnostics.empty()) << dump(report);
}

// ---- deadlock details ----------------------------------------------------------------------------------------

TEST(ValidatorDeadlock, OverlappedSlotWaitsForBothHalves)
{
    // Rank 0 pairs 0F1 with 0B0; 0B0 needs 1B0, which rank 1 runs only after 1F1, which needs 0F1: the
    // forward half cannot run alone, so the pair deadlocks.
    const ValidationReport report = validate(readCsv("0F0,(0F1;0B0)OVERLAP_F_B,0B1\n1F0,1F1,1B0,1B1\n").schedule);
    const auto dead = withRule(report, "deadlock");
    ASSERT_EQ(dead.size(), 2u) << dump(report);
    EXPECT_EQ(dead[0].position, 1);
    EXPECT_EQ(dead[0].action, "(0F1;0B0)OVERLAP_F_B");
    EXPECT_NE(
        dead[0].message.find("waiting for the gradient from 1B0 on rank 1, which is queued behind 1F1 at position 1"),
        std::string::npos)
        << dead[0].message;
    EXPECT_NE(dead[1].message.find("waiting for 0F1 from rank 0, which rank 0 is itself stuck at (position 1)"),
        std::string::npos)
        << dead[1].message;
    EXPECT_TRUE(dead[0].inCycle && dead[1].inCycle);
    EXPECT_NE(dead[1].message.find("(wait-for cycle: rank 0 -> rank 1 -> rank 0)"), std::string::npos)
        << dead[1].message;
}

TEST(ValidatorDeadlock, ChainsThroughStagesOnOneRank)
{
    // V shape on two ranks: stages 0 and 3 on rank 0, 1 and 2 on rank 1. Rank 1 runs 2F0 before 1F0.
    Schedule s = readCsv("0F0,3F0,3B0,0B0\n2F0,1F0,2B0,1B0\n").schedule;
    const ValidationReport report = validate(s);
    const auto dead = withRule(report, "deadlock");
    ASSERT_EQ(dead.size(), 2u) << dump(report);
    EXPECT_EQ(dead[0].action, "3F0");
    EXPECT_NE(dead[0].message.find("waiting for 2F0 from rank 1, which rank 1 is itself stuck at (position 0)"),
        std::string::npos)
        << dead[0].message;
    EXPECT_FALSE(dead[0].inCycle);
    EXPECT_EQ(dead[1].action, "2F0");
    EXPECT_NE(
        dead[1].message.find("waiting for 1F0 on the same rank, which comes later at position 1"), std::string::npos)
        << dead[1].message;
    EXPECT_TRUE(dead[1].inCycle);
}

namespace {

/// A deliberately simple replay (rounds over all ranks, a set of done ops) to check the validator's against:
/// returns the position each rank stops at.
std::vector<std::size_t> naiveReplay(const Schedule& s)
{
    std::set<std::tuple<int, int, int>> done; // (stage, microbatch, 0 = F / 1 = backward / 2 = W)
    auto backwardDone = [&](int stage, int mb) { return done.count({ stage, mb, 1 }) > 0; };
    auto ready = [&](const Op& op) {
        switch (op.kind) {
        case OpKind::F:
            return op.stage == 0 || done.count({ op.stage - 1, op.microbatch, 0 }) > 0;
        case OpKind::W:
            return backwardDone(op.stage, op.microbatch);
        default:
            return done.count({ op.stage, op.microbatch, 0 }) > 0
                && (op.stage + 1 == s.stages || backwardDone(op.stage + 1, op.microbatch));
        }
    };
    std::vector<std::size_t> next(s.order.size(), 0);
    for (bool progress = true; progress;) {
        progress = false;
        for (std::size_t r = 0; r < s.order.size(); ++r) {
            while (next[r] < s.order[r].size()) {
                const Action& a = s.order[r][next[r]];
                if (!ready(a.op) || (a.overlapped && !ready(a.backward)))
                    break;
                for (int k = 0; k < a.size(); ++k)
                    done.insert({ a.at(k).stage, a.at(k).microbatch,
                        a.at(k).kind == OpKind::F       ? 0
                            : a.at(k).kind == OpKind::W ? 2
                                                        : 1 });
                ++next[r];
                progress = true;
            }
        }
    }
    return next;
}

} // namespace

TEST(ValidatorDeadlock, AgreesWithANaiveReplayOnShuffledSchedules)
{
    std::mt19937 rng(7);
    int deadlocks = 0;
    int checked = 0;
    for (ScheduleKind kind : generatedKinds()) {
        for (int trial = 0; trial < 60; ++trial) {
            const int ranks = kind == ScheduleKind::DualPipe ? 4 : 3;
            Schedule s = generate({ kind, ranks, kind == ScheduleKind::Interleaved1F1B ? 6 : 8, 0 });
            for (int swaps = static_cast<int>(rng() % 4) + 1; swaps > 0; --swaps) {
                auto& row = s.order[rng() % s.order.size()];
                const std::size_t i = rng() % (row.size() - 1);
                std::swap(row[i], row[i + 1]);
            }
            const ValidationReport report = validate(s);
            const auto dead = withRule(report, "deadlock");
            if (report.errorCount() != dead.size())
                continue; // a structural finding: the replay does not run
            ++checked;
            const std::vector<std::size_t> stops = naiveReplay(s);
            std::vector<std::pair<int, int>> expected; // (rank, position)
            for (std::size_t r = 0; r < stops.size(); ++r)
                if (stops[r] < s.order[r].size())
                    expected.emplace_back(static_cast<int>(r), static_cast<int>(stops[r]));
            ASSERT_EQ(dead.size(), expected.size()) << toText(s) << dump(report);
            for (std::size_t k = 0; k < dead.size(); ++k) {
                EXPECT_EQ(dead[k].rank, expected[k].first);
                EXPECT_EQ(dead[k].position, expected[k].second);
            }
            deadlocks += !dead.empty();
            if (!dead.empty()) {
                EXPECT_TRUE(std::any_of(dead.begin(), dead.end(), [](const Diagnostic& d) { return d.inCycle; }));
            }
        }
    }
    EXPECT_GT(checked, 100);
    EXPECT_GT(deadlocks, 10);
}

TEST(ValidatorDeadlock, FormatNamesRankPositionAndAction)
{
    const ValidationReport report = validate(loadCsv("invalid/deadlock_two_ranks.csv"));
    ASSERT_FALSE(report.diagnostics.empty());
    EXPECT_EQ(format(report.diagnostics[0]).rfind("error: rank 0, position 1 (0B0): rank 0 is stuck at 0B0", 0), 0u)
        << format(report.diagnostics[0]);
    Diagnostic general;
    general.message = "hello";
    EXPECT_EQ(format(general), "error: hello");
}

// ---- generated schedules ---------------------------------------------------------------------------------------

TEST(ValidatorGenerated, EveryKindOverASweepOfSizesIsValid)
{
    for (ScheduleKind kind : generatedKinds()) {
        for (int ranks = 1; ranks <= 8; ++ranks) {
            for (int mbs = 1; mbs <= 3 * ranks + 4; ++mbs) {
                GenerateOptions o { kind, ranks, mbs, 0 };
                try {
                    checkConstraints(o);
                } catch (const ConstraintError&) {
                    continue;
                }
                const Schedule s = generate(o);
                const ValidationReport report = validate(s);
                EXPECT_TRUE(report.diagnostics.empty()) << kindName(kind) << " " << ranks << "x" << mbs << "\n"
                                                        << dump(report);
            }
        }
    }
}

TEST(ValidatorGenerated, LargeDualPipeValidatesQuickly)
{
    const Schedule s = generate({ ScheduleKind::DualPipe, 64, 512, 0 });
    const auto start = std::chrono::steady_clock::now();
    const ValidationReport report = validate(s);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(report.valid()) << dump(report);
    EXPECT_LT(ms, 2000.0);
}

// ---- robustness: a bad schedule is data, never an exception ----------------------------------------------------

TEST(ValidatorRobustness, RandomSchedulesNeverThrow)
{
    std::mt19937 rng(12345);
    for (int trial = 0; trial < 2000; ++trial) {
        Schedule s;
        s.ranks = static_cast<int>(rng() % 4);
        s.stages = static_cast<int>(rng() % 4);
        s.microbatches = static_cast<int>(rng() % 4);
        s.placement = trial % 2 ? Placement::mirrored(s.stages, s.microbatches)
                                : Placement::perStage(std::vector<int>(static_cast<std::size_t>(s.stages), 0));
        s.order.resize(rng() % 4);
        for (auto& row : s.order)
            for (int n = static_cast<int>(rng() % 8); n > 0; --n) {
                auto op = [&] {
                    return Op { static_cast<int>(rng() % 5) - 1, static_cast<int>(rng() % 5) - 1,
                        static_cast<OpKind>(rng() % 4) };
                };
                row.push_back(rng() % 4 ? Action::single(op()) : Action::overlap(op(), op()));
            }
        s.kind = static_cast<ScheduleKind>(rng() % 8);
        EXPECT_NO_THROW(validate(s)) << toText(s);
    }
}

namespace {

/// An independent, deliberately naive statement of the structural rules (maps, no flat arrays).
bool naiveStructureOk(const Schedule& s)
{
    if (static_cast<int>(s.order.size()) != s.ranks || s.placement.stageCount() != s.stages)
        return false;
    std::map<std::tuple<int, int, int>, std::vector<int>> where; // (stage, mb, kind) -> global positions
    std::set<int> microbatches;
    int global = 0;
    for (int r = 0; r < s.ranks; ++r) {
        for (const Action& a : s.order[static_cast<std::size_t>(r)]) {
            ++global;
            if (a.overlapped
                && (a.op.kind != OpKind::F || a.backward.kind == OpKind::F || a.backward.kind == OpKind::W))
                return false;
            for (int k = 0; k < a.size(); ++k) {
                const Op& op = a.at(k);
                if (op.stage < 0 || op.stage >= s.stages || op.microbatch < 0 || op.microbatch >= s.microbatches
                    || s.placement.rankOf(op.stage, op.microbatch) != r)
                    return false;
                where[{ op.stage, op.microbatch, static_cast<int>(op.kind) }].push_back(global);
                microbatches.insert(op.microbatch);
            }
        }
    }
    if (static_cast<int>(microbatches.size()) != s.microbatches)
        return false;
    auto at = [&](int stage, int mb, OpKind kind) {
        const auto it = where.find({ stage, mb, static_cast<int>(kind) });
        return it == where.end() ? std::vector<int> {} : it->second;
    };
    for (int st = 0; st < s.stages; ++st) {
        for (int mb = 0; mb < s.microbatches; ++mb) {
            const auto f = at(st, mb, OpKind::F), b = at(st, mb, OpKind::B), i = at(st, mb, OpKind::I),
                       w = at(st, mb, OpKind::W);
            if (f.size() != 1 || b.size() + i.size() != 1 || w.size() != i.size())
                return false;
            const int backward = b.empty() ? i[0] : b[0];
            if (backward <= f[0] || (!w.empty() && w[0] <= i[0]))
                return false;
        }
    }
    return true;
}

/// One random edit of a schedule: swap, delete, duplicate, move to another rank, change a kind or a number.
void mutate(Schedule& s, std::mt19937& rng)
{
    auto& row = s.order[rng() % s.order.size()];
    if (row.empty())
        return;
    const std::size_t i = rng() % row.size();
    const std::size_t j = rng() % row.size();
    switch (rng() % 6) {
    case 0:
        std::swap(row[i], row[j]);
        break;
    case 1:
        row.erase(row.begin() + static_cast<std::ptrdiff_t>(i));
        break;
    case 2:
        row.insert(row.begin() + static_cast<std::ptrdiff_t>(j), row[i]);
        break;
    case 3: {
        auto& other = s.order[rng() % s.order.size()];
        other.push_back(row[i]);
        row.erase(row.begin() + static_cast<std::ptrdiff_t>(i));
        break;
    }
    case 4:
        row[i].op.kind = static_cast<OpKind>(rng() % 4);
        break;
    default:
        (rng() % 2 ? row[i].op.microbatch : row[i].op.stage) += rng() % 2 ? 1 : -1;
        break;
    }
}

} // namespace

TEST(ValidatorRobustness, AgreesWithNaiveRulesOnMutatedSchedules)
{
    std::mt19937 rng(99);
    int valid = 0, structural = 0, deadlocked = 0;
    for (ScheduleKind kind : generatedKinds()) {
        const Schedule base = generate({ kind, kind == ScheduleKind::DualPipe ? 4 : 3, 8, 0 });
        for (int trial = 0; trial < 300; ++trial) {
            Schedule s = base;
            s.kind = ScheduleKind::Custom;
            for (int edits = static_cast<int>(rng() % 3); edits > 0; --edits)
                mutate(s, rng);
            const ValidationReport report = validate(s);
            const bool structureOk = naiveStructureOk(s);
            const auto dead = withRule(report, "deadlock");
            ASSERT_EQ(structureOk, report.errorCount() == dead.size()) << toText(s) << dump(report);
            if (!structureOk) {
                ++structural;
                continue;
            }
            const std::vector<std::size_t> stops = naiveReplay(s);
            bool finished = true;
            for (std::size_t r = 0; r < stops.size(); ++r)
                finished = finished && stops[r] == s.order[r].size();
            EXPECT_EQ(finished, report.valid()) << toText(s) << dump(report);
            (finished ? valid : deadlocked)++;
        }
    }
    EXPECT_GT(valid, 100);
    EXPECT_GT(structural, 500);
    EXPECT_GT(deadlocked, 20);
}

TEST(ValidatorRobustness, EmptyScheduleIsValid)
{
    EXPECT_TRUE(validate(Schedule {}).valid());
}

// Found by fuzzing: "0F2,0F777776" names 777 777 microbatches, almost all without ops. The report keeps
// 100 findings of the rule and counts the rest, and no message is built past the cap.
TEST(ValidatorCaps, MissingMicrobatchesAreCappedAndCounted)
{
    const dps::ValidationReport report = dps::validate(dps::readCsv("0F2,0F777776").schedule);
    std::size_t missing = 0;
    std::string summary;
    for (const auto& d : report.diagnostics)
        if (d.rule == "counts.missing-microbatch") {
            ++missing;
            summary = d.message;
        }
    EXPECT_EQ(missing, 101u);
    EXPECT_EQ(summary, "... and 777675 more findings of rule counts.missing-microbatch");
}

// Found by fuzzing: "0F0,4260B0,422608B0," names 422 609 stages; the missing forwards and backwards are
// capped and counted the same way.
TEST(ValidatorCaps, MissingOpsOfFarStagesAreCappedAndCounted)
{
    const dps::ValidationReport report = dps::validate(dps::readCsv("0F0,4260B0,422608B0,").schedule);
    std::map<std::string, std::size_t> perRule;
    for (const auto& d : report.diagnostics)
        ++perRule[d.rule];
    EXPECT_EQ(perRule["counts.missing-forward"], 101u);
    EXPECT_EQ(perRule["counts.missing-backward"], 101u);
    EXPECT_EQ(report.diagnostics.back().rule.rfind("counts.", 0), 0u);
}
