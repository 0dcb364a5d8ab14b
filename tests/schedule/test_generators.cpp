// Tests of the generator entry point (sizes, constraints) and the classic generators: GPipe, 1F1B,
// Interleaved 1F1B, ZB-H1 and ZB-V. Exact orders for small sizes (worked out from PyTorch's algorithms and
// the zero-bubble paper), structural properties and a blocking replay for every valid size of a sweep.
#include "base/errors.h"
#include "schedule/generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

using namespace dps;

namespace {

GenerateOptions options(ScheduleKind kind, int ranks, int microbatches, int stagesPerRank = 0)
{
    return GenerateOptions { kind, ranks, microbatches, stagesPerRank };
}

/// Rank r's order as PyTorch text, one space between actions.
std::string rankText(const Schedule& s, int rank)
{
    std::string out;
    for (const auto& a : s.order.at(static_cast<std::size_t>(rank)))
        out += (out.empty() ? "" : " ") + toString(a);
    return out;
}

/// The rule a size breaks, "" when it is valid.
std::string brokenRule(const GenerateOptions& o)
{
    try {
        checkConstraints(o);
    } catch (const ConstraintError& e) {
        return e.rule();
    }
    return "";
}

/// Index of a (stage, microbatch) pair in flat per-pair tables.
struct PairIndex {
    int microbatches;
    std::size_t operator()(const Op& op) const
    {
        return static_cast<std::size_t>(op.stage) * static_cast<std::size_t>(microbatches)
            + static_cast<std::size_t>(op.microbatch);
    }
};

/// Per (stage, microbatch): how many ops of each kind, and on which rank and at which position they ran.
struct Census {
    std::vector<int> count[4];
    std::vector<int> position[4];
    std::vector<int> rank[4];
};

Census takeCensus(const Schedule& s)
{
    const std::size_t pairs = static_cast<std::size_t>(s.stages) * static_cast<std::size_t>(s.microbatches);
    Census c;
    for (int k = 0; k < 4; ++k) {
        c.count[k].assign(pairs, 0);
        c.position[k].assign(pairs, -1);
        c.rank[k].assign(pairs, -1);
    }
    const PairIndex index { s.microbatches };
    for (std::size_t r = 0; r < s.order.size(); ++r)
        for (std::size_t p = 0; p < s.order[r].size(); ++p)
            for (int h = 0; h < s.order[r][p].size(); ++h) {
                const Op& op = s.order[r][p].at(h);
                const int k = static_cast<int>(op.kind);
                c.count[k][index(op)]++;
                c.position[k][index(op)] = static_cast<int>(p);
                c.rank[k][index(op)] = static_cast<int>(r);
            }
    return c;
}

/// Shape: indices in range, every action on the rank its placement names.
void expectShape(const Schedule& s)
{
    ASSERT_EQ(static_cast<int>(s.order.size()), s.ranks);
    ASSERT_EQ(s.placement.stageCount(), s.stages);
    for (std::size_t r = 0; r < s.order.size(); ++r)
        for (const auto& a : s.order[r])
            for (int h = 0; h < a.size(); ++h) {
                const Op& op = a.at(h);
                ASSERT_TRUE(op.stage >= 0 && op.stage < s.stages) << toString(a);
                ASSERT_TRUE(op.microbatch >= 0 && op.microbatch < s.microbatches) << toString(a);
                ASSERT_EQ(s.placement.rankOf(op.stage, op.microbatch), static_cast<int>(r))
                    << toString(a) << " on rank " << r;
            }
}

/// Counts and per-rank order: one F and one backward (B, or I and W) per (stage, microbatch); the backward
/// after its F on the same rank; every I followed later by its W on the same rank.
void expectCountsAndOrder(const Schedule& s)
{
    const Census c = takeCensus(s);
    const int F = 0, I = 1, W = 2, B = 3;
    for (std::size_t i = 0; i < c.count[F].size(); ++i) {
        const std::string where = "stage " + std::to_string(i / static_cast<std::size_t>(s.microbatches))
            + " microbatch " + std::to_string(i % static_cast<std::size_t>(s.microbatches));
        ASSERT_EQ(c.count[F][i], 1) << where;
        const bool split = c.count[I][i] > 0;
        ASSERT_EQ(c.count[split ? I : B][i], 1) << where;
        ASSERT_EQ(c.count[split ? B : I][i], 0) << where;
        ASSERT_EQ(c.count[W][i], split ? 1 : 0) << where;
        const int back = split ? I : B;
        ASSERT_EQ(c.rank[back][i], c.rank[F][i]) << where;
        ASSERT_GT(c.position[back][i], c.position[F][i]) << where;
        if (split) {
            ASSERT_EQ(c.rank[W][i], c.rank[I][i]) << where;
            ASSERT_GT(c.position[W][i], c.position[I][i]) << where;
        }
    }
}

/// Replays the schedule with blocking receives: a rank runs its next action once its inputs exist (F after
/// F of the previous stage, I/B after the next stage's I/B or, on the last stage, after its own F; W after
/// I). True when every rank reaches its end.
bool replayCompletes(const Schedule& s)
{
    const PairIndex index { s.microbatches };
    const std::size_t pairs = static_cast<std::size_t>(s.stages) * static_cast<std::size_t>(s.microbatches);
    std::vector<char> forwardDone(pairs, 0), backwardDone(pairs, 0), inputDone(pairs, 0);
    auto ready = [&](const Op& op) {
        switch (op.kind) {
        case OpKind::F:
            return op.stage == 0 || forwardDone[index(Op { op.stage - 1, op.microbatch, OpKind::F })] != 0;
        case OpKind::I:
        case OpKind::B:
            return forwardDone[index(op)] != 0
                && (op.stage == s.stages - 1
                    || backwardDone[index(Op { op.stage + 1, op.microbatch, OpKind::B })] != 0);
        case OpKind::W:
            return inputDone[index(op)] != 0;
        }
        return false;
    };
    auto run = [&](const Op& op) {
        if (op.kind == OpKind::F)
            forwardDone[index(op)] = 1;
        if (op.kind == OpKind::I || op.kind == OpKind::B)
            backwardDone[index(op)] = 1;
        if (op.kind == OpKind::I)
            inputDone[index(op)] = 1;
    };
    auto readyAll = [&](const Action& a) {
        for (int h = 0; h < a.size(); ++h)
            if (!ready(a.at(h)))
                return false;
        return true;
    };
    auto runAll = [&](const Action& a) {
        for (int h = 0; h < a.size(); ++h)
            run(a.at(h));
    };
    std::vector<std::size_t> next(s.order.size(), 0);
    for (bool progress = true; progress;) {
        progress = false;
        for (std::size_t r = 0; r < s.order.size(); ++r)
            for (; next[r] < s.order[r].size() && readyAll(s.order[r][next[r]]); ++next[r], progress = true)
                runAll(s.order[r][next[r]]);
    }
    for (std::size_t r = 0; r < s.order.size(); ++r)
        if (next[r] != s.order[r].size())
            return false;
    return true;
}

/// Every structural property plus the replay.
void expectSound(const Schedule& s)
{
    SCOPED_TRACE(std::string(kindName(s.kind)) + " " + std::to_string(s.ranks) + " ranks × "
        + std::to_string(s.microbatches) + " microbatches, v=" + std::to_string(s.stagesPerRank));
    expectShape(s);
    expectCountsAndOrder(s);
    EXPECT_TRUE(replayCompletes(s));
}

const std::vector<ScheduleKind> kClassicKinds { ScheduleKind::GPipe, ScheduleKind::OneFOneB,
    ScheduleKind::Interleaved1F1B, ScheduleKind::ZBH1, ScheduleKind::ZBV };

} // namespace

// ---- sizes ----

TEST(GeneratorSizes, DefaultStagesPerRank)
{
    EXPECT_EQ(defaultStagesPerRank(ScheduleKind::GPipe), 1);
    EXPECT_EQ(defaultStagesPerRank(ScheduleKind::OneFOneB), 1);
    EXPECT_EQ(defaultStagesPerRank(ScheduleKind::ZBH1), 1);
    EXPECT_EQ(defaultStagesPerRank(ScheduleKind::Interleaved1F1B), 2);
    EXPECT_EQ(defaultStagesPerRank(ScheduleKind::ZBV), 2);
    EXPECT_EQ(defaultStagesPerRank(ScheduleKind::DualPipe), 2);
    EXPECT_EQ(defaultStagesPerRank(ScheduleKind::DualPipeV), 2);
}

TEST(GeneratorSizes, StageCount)
{
    EXPECT_EQ(stageCountFor(ScheduleKind::GPipe, 4, 1), 4);
    EXPECT_EQ(stageCountFor(ScheduleKind::OneFOneB, 4, 0), 4);
    EXPECT_EQ(stageCountFor(ScheduleKind::ZBH1, 8, 1), 8);
    EXPECT_EQ(stageCountFor(ScheduleKind::Interleaved1F1B, 4, 0), 8);
    EXPECT_EQ(stageCountFor(ScheduleKind::Interleaved1F1B, 4, 3), 12);
    EXPECT_EQ(stageCountFor(ScheduleKind::ZBV, 4, 2), 8);
    EXPECT_EQ(stageCountFor(ScheduleKind::DualPipeV, 3, 0), 6);
    EXPECT_EQ(stageCountFor(ScheduleKind::DualPipe, 8, 2), 8);
}

TEST(GeneratorSizes, GenerateFillsKindSizesAndPlacement)
{
    const Schedule s = generate(options(ScheduleKind::Interleaved1F1B, 4, 8));
    EXPECT_EQ(s.kind, ScheduleKind::Interleaved1F1B);
    EXPECT_EQ(s.ranks, 4);
    EXPECT_EQ(s.microbatches, 8);
    EXPECT_EQ(s.stages, 8);
    EXPECT_EQ(s.stagesPerRank, 2);
    ASSERT_TRUE(s.placement.isPerStage());
    EXPECT_EQ(s.placement.rankOfStage(), (std::vector<int> { 0, 1, 2, 3, 0, 1, 2, 3 }));

    const Schedule v = generate(options(ScheduleKind::ZBV, 3, 6));
    EXPECT_EQ(v.stages, 6);
    EXPECT_EQ(v.stagesPerRank, 2);
    EXPECT_EQ(v.placement.rankOfStage(), (std::vector<int> { 0, 1, 2, 2, 1, 0 }));

    const Schedule g = generate(options(ScheduleKind::GPipe, 3, 2, 1));
    EXPECT_EQ(g.stages, 3);
    EXPECT_EQ(g.stagesPerRank, 1);
    EXPECT_EQ(g.placement.rankOfStage(), (std::vector<int> { 0, 1, 2 }));
}

// ---- constraints ----

TEST(GeneratorConstraints, EachRuleIsRefusedByName)
{
    struct Case {
        GenerateOptions options;
        std::string rule;
    };
    const std::vector<Case> cases {
        { options(ScheduleKind::GPipe, 0, 4), "ranks.at-least-one" },
        { options(ScheduleKind::DualPipe, -2, 4), "ranks.at-least-one" },
        { options(ScheduleKind::OneFOneB, 4, 0), "microbatches.at-least-one" },
        { options(ScheduleKind::ZBV, 2, -1), "microbatches.at-least-one" },
        { options(ScheduleKind::Custom, 2, 4), "kind.generated" },
        { options(ScheduleKind::DualPipe, 3, 12), "dualpipe.even-ranks" },
        { options(ScheduleKind::DualPipe, 4, 9), "dualpipe.even-microbatches" },
        { options(ScheduleKind::DualPipe, 4, 6), "dualpipe.microbatches-2x-ranks" },
        { options(ScheduleKind::DualPipe, 4, 8, 3), "dualpipe.stages-per-rank" },
        { options(ScheduleKind::DualPipeV, 4, 7), "dualpipev.microbatches-2x-ranks" },
        { options(ScheduleKind::DualPipeV, 4, 8, 1), "dualpipev.stages-per-rank" },
        { options(ScheduleKind::ZBV, 4, 8, 1), "zb-v.stages-per-rank" },
        { options(ScheduleKind::ZBV, 4, 8, 3), "zb-v.stages-per-rank" },
        { options(ScheduleKind::OneFOneB, 4, 3), "1f1b.microbatches-ge-stages" },
        { options(ScheduleKind::ZBH1, 8, 7), "zb-h1.microbatches-ge-stages" },
        { options(ScheduleKind::OneFOneB, 4, 8, 2), "1f1b.stages-per-rank" },
        { options(ScheduleKind::GPipe, 4, 8, 2), "gpipe.stages-per-rank" },
        { options(ScheduleKind::ZBH1, 4, 8, 2), "zb-h1.stages-per-rank" },
        { options(ScheduleKind::Interleaved1F1B, 4, 9), "interleaved-1f1b.rounds-divide-microbatches" },
        { options(ScheduleKind::Interleaved1F1B, 4, 14), "interleaved-1f1b.rounds-divide-microbatches" },
        { options(ScheduleKind::Interleaved1F1B, 4, 8, -1), "interleaved-1f1b.stages-per-rank" },
        { options(ScheduleKind::GPipe, 65536, 65536), "size.too-large" },
        { options(ScheduleKind::Interleaved1F1B, 1024, 8192, 1 << 20), "size.too-large" },
        // Below 2^31 pairs but tens of GB: refused before anything is allocated.
        { options(ScheduleKind::DualPipe, 8, 100000000), "size.too-large" },
        { options(ScheduleKind::GPipe, 1, (1 << 26) + 1), "size.too-large" },
        { options(ScheduleKind::DualPipeV, 2, (1 << 24) + 1), "size.too-large" },
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.rule);
        EXPECT_EQ(brokenRule(c.options), c.rule);
        EXPECT_THROW(generate(c.options), ConstraintError);
    }
}

TEST(GeneratorConstraints, SizeLimitIsTwoToTheTwentySixPairs)
{
    EXPECT_EQ(brokenRule(options(ScheduleKind::GPipe, 1, 1 << 26)), "");
    EXPECT_EQ(brokenRule(options(ScheduleKind::DualPipe, 1024, 8192)), "");
    EXPECT_EQ(brokenRule(options(ScheduleKind::DualPipeV, 2, 1 << 24)), "");
}

TEST(GeneratorConstraints, MessagesNameTheRuleAndTheValues)
{
    auto message = [](const GenerateOptions& o) {
        try {
            checkConstraints(o);
        } catch (const ConstraintError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(message(options(ScheduleKind::DualPipe, 4, 6)),
        "DualPipe needs microbatches >= 2 × ranks (got 6 microbatches for 4 ranks)");
    EXPECT_EQ(message(options(ScheduleKind::DualPipe, 3, 12)),
        "DualPipe needs an even number of ranks (got 12 microbatches for 3 ranks)");
    EXPECT_EQ(message(options(ScheduleKind::DualPipeV, 2, 3)),
        "DualPipeV needs microbatches >= 2 × ranks (got 3 microbatches for 2 ranks)");
    EXPECT_EQ(message(options(ScheduleKind::OneFOneB, 4, 3)),
        "1F1B needs microbatches >= stages (got 3 microbatches for 4 stages)");
    EXPECT_EQ(
        message(options(ScheduleKind::ZBV, 4, 8, 3)), "ZB-V needs exactly 2 stages per rank (got 3 stages per rank)");
    EXPECT_EQ(message(options(ScheduleKind::GPipe, 4, 0)), "GPipe needs at least 1 microbatch (got 0 microbatches)");
    EXPECT_EQ(message(options(ScheduleKind::GPipe, 0, 1)), "GPipe needs at least 1 rank (got 0 ranks)");
    EXPECT_EQ(message(options(ScheduleKind::Interleaved1F1B, 4, 9)),
        "Interleaved 1F1B needs microbatches divisible by rounds = max(1, microbatches / ranks) (got 9 "
        "microbatches for 4 ranks: 2 rounds, remainder 1)");
}

TEST(GeneratorConstraints, FirstBrokenRuleWins)
{
    EXPECT_EQ(brokenRule(options(ScheduleKind::DualPipe, 0, 0)), "ranks.at-least-one");
    EXPECT_EQ(brokenRule(options(ScheduleKind::DualPipe, 3, 3)), "dualpipe.even-ranks");
    EXPECT_EQ(brokenRule(options(ScheduleKind::DualPipe, 4, 3)), "dualpipe.even-microbatches");
}

TEST(GeneratorConstraints, EdgeSizesThatAreValid)
{
    EXPECT_EQ(brokenRule(options(ScheduleKind::GPipe, 4, 1)), ""); // GPipe with one microbatch
    EXPECT_EQ(brokenRule(options(ScheduleKind::OneFOneB, 4, 4)), ""); // 1F1B with microbatches = stages
    EXPECT_EQ(brokenRule(options(ScheduleKind::ZBH1, 4, 4)), "");
    EXPECT_EQ(brokenRule(options(ScheduleKind::DualPipeV, 1, 2)), ""); // one rank
    EXPECT_EQ(brokenRule(options(ScheduleKind::DualPipeV, 3, 6, 2)), ""); // odd ranks
    EXPECT_EQ(brokenRule(options(ScheduleKind::DualPipe, 4, 8, 0)), "");
    EXPECT_EQ(brokenRule(options(ScheduleKind::DualPipe, 4, 8, 1)), ""); // replicas: 1 or 2 accepted
    EXPECT_EQ(brokenRule(options(ScheduleKind::DualPipe, 4, 8, 2)), "");
    EXPECT_EQ(brokenRule(options(ScheduleKind::ZBV, 4, 1)), ""); // PyTorch pads to 2P-1 and drops
    EXPECT_EQ(brokenRule(options(ScheduleKind::Interleaved1F1B, 4, 3)), ""); // rounds = 1
    EXPECT_EQ(brokenRule(options(ScheduleKind::Interleaved1F1B, 4, 10)), ""); // PyTorch's example: 2 rounds
    EXPECT_EQ(brokenRule(options(ScheduleKind::Interleaved1F1B, 4, 8, 1)), "");
    EXPECT_EQ(brokenRule(options(ScheduleKind::Interleaved1F1B, 4, 12, 4)), "");
    EXPECT_EQ(brokenRule(options(ScheduleKind::GPipe, 1, 1)), "");
}

TEST(GeneratorConstraints, InterleavedRuleMatchesPyTorchFormula)
{
    for (int ranks = 1; ranks <= 9; ++ranks)
        for (int m = 1; m <= 40; ++m) {
            const int rounds = std::max(1, m / ranks);
            const std::string expected = m % rounds == 0 ? "" : "interleaved-1f1b.rounds-divide-microbatches";
            EXPECT_EQ(brokenRule(options(ScheduleKind::Interleaved1F1B, ranks, m)), expected)
                << ranks << " ranks, " << m << " microbatches";
        }
}

// ---- exact orders ----

TEST(GPipe, AllForwardsThenAllBackwards)
{
    const Schedule s = generate(options(ScheduleKind::GPipe, 2, 3));
    EXPECT_EQ(rankText(s, 0), "0F0 0F1 0F2 0B0 0B1 0B2");
    EXPECT_EQ(rankText(s, 1), "1F0 1F1 1F2 1B0 1B1 1B2");
    const Schedule one = generate(options(ScheduleKind::GPipe, 4, 1));
    EXPECT_EQ(rankText(one, 3), "3F0 3B0");
    expectSound(one);
}

TEST(OneFOneB, FourRanksEightMicrobatches)
{
    // PyTorch's Schedule1F1B: rank r runs min(M, P - r) warm-up forwards, then B, F alternately.
    const Schedule s = generate(options(ScheduleKind::OneFOneB, 4, 8));
    EXPECT_EQ(rankText(s, 0), "0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0F6 0B3 0F7 0B4 0B5 0B6 0B7");
    EXPECT_EQ(rankText(s, 1), "1F0 1F1 1F2 1B0 1F3 1B1 1F4 1B2 1F5 1B3 1F6 1B4 1F7 1B5 1B6 1B7");
    EXPECT_EQ(rankText(s, 2), "2F0 2F1 2B0 2F2 2B1 2F3 2B2 2F4 2B3 2F5 2B4 2F6 2B5 2F7 2B6 2B7");
    EXPECT_EQ(rankText(s, 3), "3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5 3F6 3B6 3F7 3B7");
    expectSound(s);
}

TEST(OneFOneB, MicrobatchesEqualStages)
{
    const Schedule s = generate(options(ScheduleKind::OneFOneB, 3, 3));
    EXPECT_EQ(rankText(s, 0), "0F0 0F1 0F2 0B0 0B1 0B2");
    EXPECT_EQ(rankText(s, 1), "1F0 1F1 1B0 1F2 1B1 1B2");
    EXPECT_EQ(rankText(s, 2), "2F0 2B0 2F1 2B1 2F2 2B2");
    expectSound(s);
}

TEST(ZBH1, WeightGradientsDeferredByRank)
{
    // 1F1B with B split into I and W; on rank r, W of microbatch k follows I of microbatch k + r, and the
    // last r W's close the order.
    const Schedule s = generate(options(ScheduleKind::ZBH1, 4, 8));
    EXPECT_EQ(rankText(s, 0),
        "0F0 0F1 0F2 0F3 0I0 0W0 0F4 0I1 0W1 0F5 0I2 0W2 0F6 0I3 0W3 0F7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7");
    EXPECT_EQ(rankText(s, 1),
        "1F0 1F1 1F2 1I0 1F3 1I1 1W0 1F4 1I2 1W1 1F5 1I3 1W2 1F6 1I4 1W3 1F7 1I5 1W4 1I6 1W5 1I7 1W6 1W7");
    EXPECT_EQ(rankText(s, 2),
        "2F0 2F1 2I0 2F2 2I1 2F3 2I2 2W0 2F4 2I3 2W1 2F5 2I4 2W2 2F6 2I5 2W3 2F7 2I6 2W4 2I7 2W5 2W6 2W7");
    EXPECT_EQ(rankText(s, 3),
        "3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3W0 3F4 3I4 3W1 3F5 3I5 3W2 3F6 3I6 3W3 3F7 3I7 3W4 3W5 3W6 3W7");
    expectSound(s);
}

TEST(ZBH1, WPlacementRuleForManySizes)
{
    for (int ranks = 1; ranks <= 6; ++ranks)
        for (int m = ranks; m <= ranks + 7; ++m) {
            const Schedule s = generate(options(ScheduleKind::ZBH1, ranks, m));
            for (int r = 0; r < ranks; ++r) {
                const auto& row = s.order[static_cast<std::size_t>(r)];
                std::vector<int> positionOfI(static_cast<std::size_t>(m)), positionOfW(static_cast<std::size_t>(m));
                for (std::size_t p = 0; p < row.size(); ++p) {
                    if (row[p].op.kind == OpKind::I)
                        positionOfI[static_cast<std::size_t>(row[p].op.microbatch)] = static_cast<int>(p);
                    if (row[p].op.kind == OpKind::W)
                        positionOfW[static_cast<std::size_t>(row[p].op.microbatch)] = static_cast<int>(p);
                }
                for (int k = 0; k < m; ++k) {
                    const std::size_t w = static_cast<std::size_t>(positionOfW[static_cast<std::size_t>(k)]);
                    if (k + r < m) // right after I of k + r
                        EXPECT_EQ(w, static_cast<std::size_t>(positionOfI[static_cast<std::size_t>(k + r)]) + 1)
                            << ranks << "x" << m << " rank " << r << " W" << k;
                    else // in the cool-down tail, in microbatch order
                        EXPECT_EQ(w, row.size() - static_cast<std::size_t>(m - k))
                            << ranks << "x" << m << " rank " << r << " W" << k;
                }
            }
        }
}

TEST(Interleaved1F1B, FourRanksEightMicrobatchesTwoStagesPerRank)
{
    // PyTorch's ScheduleInterleaved1F1B: rounds = 2, 4 microbatches per round; warm-up
    // (v-1)·4 + 2(P-1-r) = 10, 8, 6, 4 forwards; forward j runs local stage (j / 4) mod 2, backward j local
    // stage 1 - (j / 4) mod 2.
    const Schedule s = generate(options(ScheduleKind::Interleaved1F1B, 4, 8));
    EXPECT_EQ(rankText(s, 0),
        "0F0 0F1 0F2 0F3 4F0 4F1 4F2 4F3 0F4 0F5 0F6 4B0 0F7 4B1 4F4 4B2 4F5 4B3 4F6 0B0 4F7 0B1 0B2 0B3 4B4 "
        "4B5 4B6 4B7 0B4 0B5 0B6 0B7");
    EXPECT_EQ(rankText(s, 1),
        "1F0 1F1 1F2 1F3 5F0 5F1 5F2 5F3 1F4 5B0 1F5 5B1 1F6 5B2 1F7 5B3 5F4 1B0 5F5 1B1 5F6 1B2 5F7 1B3 5B4 "
        "5B5 5B6 5B7 1B4 1B5 1B6 1B7");
    EXPECT_EQ(rankText(s, 2),
        "2F0 2F1 2F2 2F3 6F0 6F1 6F2 6B0 6F3 6B1 2F4 6B2 2F5 6B3 2F6 2B0 2F7 2B1 6F4 2B2 6F5 2B3 6F6 6B4 6F7 "
        "6B5 6B6 6B7 2B4 2B5 2B6 2B7");
    EXPECT_EQ(rankText(s, 3),
        "3F0 3F1 3F2 3F3 7F0 7B0 7F1 7B1 7F2 7B2 7F3 7B3 3F4 3B0 3F5 3B1 3F6 3B2 3F7 3B3 7F4 7B4 7F5 7B5 7F6 "
        "7B6 7F7 7B7 3B4 3B5 3B6 3B7");
    expectSound(s);
}

TEST(Interleaved1F1B, FewerMicrobatchesThanRanks)
{
    // One round of 3 microbatches; rank 0's warm-up (3 + 6) is capped at all 6 forwards.
    const Schedule s = generate(options(ScheduleKind::Interleaved1F1B, 4, 3));
    EXPECT_EQ(rankText(s, 0), "0F0 0F1 0F2 4F0 4F1 4F2 4B0 4B1 4B2 0B0 0B1 0B2");
    EXPECT_EQ(rankText(s, 3), "3F0 3F1 3F2 7F0 7B0 7F1 7B1 7F2 7B2 3B0 3B1 3B2");
    expectSound(s);
}

TEST(ZBV, TwoRanksFourMicrobatches)
{
    // PyTorch's ScheduleZBVZeroBubble: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2.
    const Schedule s = generate(options(ScheduleKind::ZBV, 2, 4));
    EXPECT_EQ(rankText(s, 0),
        "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0F3 0I0 0W0 3F2 3I2 3W2 0I1 0W1 3F3 3I3 3W3 0I2 0W2 0I3 0W3");
    EXPECT_EQ(rankText(s, 1),
        "1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1F3 1I1 1W1 2F3 2I2 2W2 1I2 2I3 1I3 1W2 2W3 1W3");
    expectSound(s);
}

TEST(ZBV, FewMicrobatchesArePaddedThenDropped)
{
    // Built for max(2P-1, M) = 3 microbatches; the ops of microbatch 2 are left out.
    const Schedule s = generate(options(ScheduleKind::ZBV, 2, 2));
    EXPECT_EQ(rankText(s, 0), "0F0 0F1 3F0 3I0 3W0 3F1 3I1 3W1 0I0 0W0 0I1 0W1");
    EXPECT_EQ(rankText(s, 1), "1F0 2F0 1F1 2F1 2I0 2W0 1I0 1W0 2I1 2W1 1I1 1W1");
    const Schedule one = generate(options(ScheduleKind::ZBV, 1, 1));
    EXPECT_EQ(rankText(one, 0), "0F0 1F0 1I0 1W0 0I0 0W0");
    expectSound(s);
    expectSound(one);
}

// ---- every valid size of a sweep ----

TEST(ClassicGenerators, SoundForEveryValidSizeOfASweep)
{
    int generated = 0;
    for (ScheduleKind kind : kClassicKinds)
        for (int v : { 0, 1, 3, 4 })
            for (int ranks = 1; ranks <= 8; ++ranks)
                for (int m = 1; m <= 24; ++m) {
                    if (v != 0 && kind != ScheduleKind::Interleaved1F1B)
                        continue;
                    const GenerateOptions o = options(kind, ranks, m, v);
                    if (!brokenRule(o).empty())
                        continue;
                    const Schedule s = generate(o);
                    expectSound(s);
                    ++generated;
                    if (::testing::Test::HasFailure())
                        return;
                }
    EXPECT_GT(generated, 900);
}

TEST(ClassicGenerators, SoundForSomeLargerSizes)
{
    expectSound(generate(options(ScheduleKind::OneFOneB, 16, 128)));
    expectSound(generate(options(ScheduleKind::ZBH1, 32, 33)));
    expectSound(generate(options(ScheduleKind::Interleaved1F1B, 16, 48, 3)));
    expectSound(generate(options(ScheduleKind::Interleaved1F1B, 8, 20, 2))); // 2 rounds of 10
    expectSound(generate(options(ScheduleKind::Interleaved1F1B, 8, 96, 4)));
    expectSound(generate(options(ScheduleKind::ZBV, 16, 64)));
    expectSound(generate(options(ScheduleKind::ZBV, 16, 5)));
}

TEST(ClassicGenerators, OpCounts)
{
    EXPECT_EQ(generate(options(ScheduleKind::GPipe, 4, 6)).opCount(), 4u * 6 * 2);
    EXPECT_EQ(generate(options(ScheduleKind::OneFOneB, 4, 6)).opCount(), 4u * 6 * 2);
    EXPECT_EQ(generate(options(ScheduleKind::ZBH1, 4, 6)).opCount(), 4u * 6 * 3);
    EXPECT_EQ(generate(options(ScheduleKind::Interleaved1F1B, 4, 6, 3)).opCount(), 12u * 6 * 2);
    EXPECT_EQ(generate(options(ScheduleKind::ZBV, 4, 6)).opCount(), 8u * 6 * 3);
    const Schedule s = generate(options(ScheduleKind::ZBV, 4, 6));
    EXPECT_EQ(s.slotCount(), s.opCount()); // no overlapped pairs in the classic schedules
}

// ---- scale ----

TEST(ClassicGenerators, LinearAt1024RanksBy8192Microbatches)
{
    // Linear generation; the bound is loose (the time is mostly the kernel handing out ~0.5-1.4 GB of pages)
    // but a quadratic algorithm would take minutes.
    for (ScheduleKind kind : { ScheduleKind::OneFOneB, ScheduleKind::ZBV }) {
        const auto start = std::chrono::steady_clock::now();
        const Schedule s = generate(options(kind, 1024, 8192));
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        EXPECT_EQ(s.opCount(), static_cast<std::size_t>(s.stages) * 8192 * (kind == ScheduleKind::ZBV ? 3 : 2));
        EXPECT_LT(seconds, 15.0) << kindName(kind);
        RecordProperty(std::string(kindName(kind)) + "_seconds", std::to_string(seconds));
    }
}
