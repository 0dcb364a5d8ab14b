// DualPipe and DualPipeV generators: the reference's golden orders byte for byte, the closed-form per-rank
// totals of dualpipe.md, the mirror and cut-in-half properties, and the structural rules over many sizes.
#include "base/fileio.h"
#include "schedule/generators_internal.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <deque>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using dps::Action;
using dps::Op;
using dps::OpKind;
using dps::Schedule;
using dps::ScheduleKind;
using dps::detail::generateDualPipe;
using dps::detail::generateDualPipeV;

std::string goldenPath(const std::string& name)
{
    return std::string(DPS_TEST_DATA) + "/golden/" + name;
}

/// One row per rank, cells joined by ',', LF after each row: the canonical CSV export.
std::string csvOf(const Schedule& s)
{
    std::string out;
    for (const auto& rank : s.order) {
        for (std::size_t i = 0; i < rank.size(); ++i) {
            if (i > 0)
                out += ',';
            out += dps::toString(rank[i]);
        }
        out += '\n';
    }
    return out;
}

/// The golden JSON's token for one op: chunk 0 is the rank's stage r, chunk 1 its other stage.
std::string tokenOf(int rank, const Op& op)
{
    static const char* const names[] = { "F", "B", "W", "BW" }; // F, I, W, B
    const int chunk = op.stage == rank ? 0 : 1;
    return names[static_cast<int>(op.kind)] + std::to_string(chunk) + ":" + std::to_string(op.microbatch);
}

std::vector<std::vector<std::string>> tokensOf(const Schedule& s)
{
    std::vector<std::vector<std::string>> out(s.order.size());
    for (int r = 0; r < s.ranks; ++r) {
        for (const Action& a : s.order[r])
            out[r].push_back(a.overlapped ? tokenOf(r, a.op) + "+" + tokenOf(r, a.backward) : tokenOf(r, a.op));
    }
    return out;
}

Schedule generate(ScheduleKind kind, int ranks, int microbatches)
{
    return kind == ScheduleKind::DualPipe ? generateDualPipe(ranks, microbatches)
                                          : generateDualPipeV(ranks, microbatches);
}

bool isBackward(OpKind k)
{
    return k == OpKind::B || k == OpKind::I;
}

// ---------------------------------------------------------------------------------------------------------------
// Golden files

struct GoldenCase {
    const char* name;
    ScheduleKind kind;
    int ranks;
    int microbatches;
};

void PrintTo(const GoldenCase& c, std::ostream* os)
{
    *os << c.name;
}

class DualPipeGolden : public testing::TestWithParam<GoldenCase> { };

TEST_P(DualPipeGolden, CsvIsByteForByteEqual)
{
    const GoldenCase& c = GetParam();
    const std::string expected = dps::readTextFile(goldenPath(std::string(c.name) + ".csv"));
    ASSERT_FALSE(expected.empty()) << c.name;
    EXPECT_EQ(csvOf(generate(c.kind, c.ranks, c.microbatches)), expected);
}

TEST_P(DualPipeGolden, TokensEqualReferenceReplay)
{
    const GoldenCase& c = GetParam();
    const auto json = nlohmann::json::parse(dps::readTextFile(goldenPath(std::string(c.name) + ".json")));
    ASSERT_EQ(json.at("num_ranks").get<int>(), c.ranks);
    ASSERT_EQ(json.at("num_microbatches").get<int>(), c.microbatches);
    const auto expected = json.at("ranks").get<std::vector<std::vector<std::string>>>();
    EXPECT_EQ(tokensOf(generate(c.kind, c.ranks, c.microbatches)), expected);
}

INSTANTIATE_TEST_SUITE_P(Reference, DualPipeGolden,
    testing::Values(GoldenCase { "dualpipe_pp4_mb8", ScheduleKind::DualPipe, 4, 8 },
        GoldenCase { "dualpipe_pp4_mb10", ScheduleKind::DualPipe, 4, 10 },
        GoldenCase { "dualpipe_pp8_mb20", ScheduleKind::DualPipe, 8, 20 },
        GoldenCase { "dualpipev_pp2_mb4", ScheduleKind::DualPipeV, 2, 4 },
        GoldenCase { "dualpipev_pp4_mb10", ScheduleKind::DualPipeV, 4, 10 }),
    [](const testing::TestParamInfo<GoldenCase>& p) { return std::string(p.param.name); });

TEST(DualPipe, ReadmeFigureRank0MatchesSpec)
{
    const std::vector<std::string> expected { "F0:0", "F0:1", "F0:2", "F0:3", "F0:4", "F0:5", "F0:6", "F1:10", "B1:10",
        "W1:10", "F1:11", "B1:11", "W1:11", "F1:12", "B1:12", "W1:12", "F1:13", "F0:7+BW1:13", "F1:14+BW0:0",
        "F0:8+BW1:14", "F1:15+BW0:1", "F0:9+BW1:15", "F1:16+BW0:2", "BW1:16", "F1:17+BW0:3", "BW1:17", "F1:18+BW0:4",
        "BW1:18", "F1:19+BW0:5", "BW1:19", "B0:6", "W0:6", "B0:7", "W0:7", "B0:8", "W0:8", "B0:9", "W0:9" };
    EXPECT_EQ(tokensOf(generateDualPipe(8, 20))[0], expected);
}

TEST(DualPipe, ReadmeFigureSlotsPerRank)
{
    const Schedule s = generateDualPipe(8, 20);
    const std::vector<std::size_t> expected { 38, 36, 34, 33, 33, 34, 36, 38 };
    std::vector<std::size_t> slots;
    for (const auto& rank : s.order)
        slots.push_back(rank.size());
    EXPECT_EQ(slots, expected);
}

// ---------------------------------------------------------------------------------------------------------------
// Small sizes written out by hand from the rules

TEST(DualPipe, TwoRanksFourMicrobatches)
{
    EXPECT_EQ(csvOf(generateDualPipe(2, 4)),
        "0F0,1F2,0F1,1B2,(1F3;0B0)OVERLAP_F_B,1B3,0I1,0W1\n"
        "0F2,1F0,0F3,1B0,(1F1;0B2)OVERLAP_F_B,1B1,0I3,0W3\n");
}

TEST(DualPipeV, OneRank)
{
    EXPECT_EQ(csvOf(generateDualPipeV(1, 2)), "0F0,1F0,0F1,1B0,(1F1;0B0)OVERLAP_F_B,1B1,0I1,0W1\n");
    EXPECT_EQ(csvOf(generateDualPipeV(1, 3)),
        "0F0,1F0,0F1,1B0,(1F1;0B0)OVERLAP_F_B,(0F2;1B1)OVERLAP_F_B,(1F2;0B1)OVERLAP_F_B,1B2,0I2,0W2\n");
}

// ---------------------------------------------------------------------------------------------------------------
// Schedule metadata

TEST(DualPipe, MetadataAndMirroredPlacement)
{
    const Schedule s = generateDualPipe(6, 14);
    EXPECT_EQ(s.kind, ScheduleKind::DualPipe);
    EXPECT_EQ(s.ranks, 6);
    EXPECT_EQ(s.microbatches, 14);
    EXPECT_EQ(s.stages, 6);
    EXPECT_EQ(s.stagesPerRank, 2);
    EXPECT_EQ(s.order.size(), 6u);
    EXPECT_TRUE(s.placement.isMirrored());
    EXPECT_EQ(s.placement.rankOf(1, 6), 1);
    EXPECT_EQ(s.placement.rankOf(1, 7), 4);
}

TEST(DualPipeV, MetadataAndVPlacement)
{
    const Schedule s = generateDualPipeV(3, 7);
    EXPECT_EQ(s.kind, ScheduleKind::DualPipeV);
    EXPECT_EQ(s.ranks, 3);
    EXPECT_EQ(s.microbatches, 7);
    EXPECT_EQ(s.stages, 6);
    EXPECT_EQ(s.stagesPerRank, 2);
    EXPECT_EQ(s.order.size(), 3u);
    ASSERT_TRUE(s.placement.isPerStage());
    EXPECT_EQ(s.placement.rankOfStage(), (std::vector<int> { 0, 1, 2, 2, 1, 0 }));
}

// ---------------------------------------------------------------------------------------------------------------
// Closed-form per-rank totals (dualpipe.md §2.3 and §3.2)

struct RankTotals {
    int forwards = 0;
    int backwards = 0;
    int pairs = 0;
    int deferred = 0;
    int weights = 0;
    int standaloneFull = 0;
    int slots = 0;
    friend bool operator==(const RankTotals&, const RankTotals&) = default;
};

std::ostream& operator<<(std::ostream& os, const RankTotals& t)
{
    return os << "{F " << t.forwards << ", backward " << t.backwards << ", pairs " << t.pairs << ", I " << t.deferred
              << ", W " << t.weights << ", standalone B " << t.standaloneFull << ", slots " << t.slots << "}";
}

void countOp(RankTotals& t, const Op& op)
{
    t.forwards += op.kind == OpKind::F;
    t.backwards += isBackward(op.kind);
    t.deferred += op.kind == OpKind::I;
    t.weights += op.kind == OpKind::W;
}

RankTotals countRank(const std::vector<Action>& rank)
{
    RankTotals t;
    t.slots = static_cast<int>(rank.size());
    for (const Action& a : rank) {
        for (int i = 0; i < a.size(); ++i)
            countOp(t, a.at(i));
        t.pairs += a.overlapped;
        t.standaloneFull += !a.overlapped && a.op.kind == OpKind::B;
    }
    return t;
}

RankTotals expectedTotals(int forwards, int pairs, int deferred, int standaloneFull)
{
    RankTotals t { forwards, forwards, pairs, deferred, deferred, standaloneFull, 0 };
    t.slots = t.forwards + t.backwards + t.weights - t.pairs;
    return t;
}

RankTotals dualPipeTotals(int n, int c, int r)
{
    const int half = n / 2;
    const int h = std::min(r, n - 1 - r);
    const int middle = h == half - 1 ? 1 : 0;
    return expectedTotals(c, c - 2 * n + half + h + 1 - middle, n - h - 1, half + middle);
}

RankTotals dualPipeVTotals(int n, int c, int r)
{
    const int last = r == n - 1 ? 1 : 0;
    return expectedTotals(2 * c, 2 * c - 3 * n + r + 1 - last, 2 * n - r - 1, n + last);
}

TEST(DualPipe, PerRankTotalsMatchClosedForm)
{
    for (int n = 2; n <= 32; n += 2) {
        for (int c = 2 * n; c <= 4 * n + 20; c += 2) {
            const Schedule s = generateDualPipe(n, c);
            for (int r = 0; r < n; ++r)
                ASSERT_EQ(countRank(s.order[r]), dualPipeTotals(n, c, r)) << "N=" << n << " C=" << c << " r=" << r;
        }
    }
}

TEST(DualPipeV, PerRankTotalsMatchClosedForm)
{
    for (int n = 1; n <= 16; ++n) {
        for (int c = 2 * n; c <= 4 * n + 20; ++c) {
            const Schedule s = generateDualPipeV(n, c);
            for (int r = 0; r < n; ++r)
                ASSERT_EQ(countRank(s.order[r]), dualPipeVTotals(n, c, r)) << "N=" << n << " C=" << c << " r=" << r;
        }
    }
}

TEST(DualPipe, LargeSizePerRankTotals)
{
    const Schedule s = generateDualPipe(256, 2048);
    for (int r = 0; r < 256; ++r)
        ASSERT_EQ(countRank(s.order[r]), dualPipeTotals(256, 2048, r)) << "r=" << r;
}

TEST(DualPipeV, LargeOddSizePerRankTotals)
{
    const Schedule s = generateDualPipeV(255, 1021);
    for (int r = 0; r < 255; ++r)
        ASSERT_EQ(countRank(s.order[r]), dualPipeVTotals(255, 1021, r)) << "r=" << r;
}

// ---------------------------------------------------------------------------------------------------------------
// Mirror and cut-in-half

/// Rank r's order with every op's microbatch mapped by f.
template <typename F> std::vector<Action> mapMicrobatches(std::vector<Action> rank, F f)
{
    for (Action& a : rank) {
        a.op.microbatch = f(a.op);
        if (a.overlapped)
            a.backward.microbatch = f(a.backward);
    }
    return rank;
}

TEST(DualPipe, MirrorRanksRunTheSameOrderOnTheOtherDirection)
{
    for (int n = 2; n <= 16; n += 2) {
        for (int c = 2 * n; c <= 4 * n + 20; c += 2) {
            const Schedule s = generateDualPipe(n, c);
            for (int r = 0; r < n; ++r) {
                const auto mirrored
                    = mapMicrobatches(s.order[r], [&](const Op& op) { return (op.microbatch + c / 2) % c; });
                ASSERT_EQ(s.order[n - 1 - r], mirrored) << "N=" << n << " C=" << c << " r=" << r;
            }
        }
    }
}

TEST(DualPipeV, IsTheFirstHalfOfDualPipeOnTwiceTheSize)
{
    for (int n = 1; n <= 6; ++n) {
        for (int c = 2 * n; c <= 4 * n + 30; ++c) {
            const Schedule v = generateDualPipeV(n, c);
            const Schedule d = generateDualPipe(2 * n, 2 * c);
            for (int r = 0; r < n; ++r) {
                // DualPipe(2N, 2C) rank r < N: chunk 0 is stage r, chunk 1 stage 2N-1-r with ids from C.
                const auto cut = mapMicrobatches(
                    d.order[r], [&](const Op& op) { return op.stage == r ? op.microbatch : op.microbatch - c; });
                ASSERT_EQ(v.order[r], cut) << "N=" << n << " C=" << c << " r=" << r;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Structural rules over many sizes

std::vector<std::pair<int, int>> dualPipeSizes()
{
    std::vector<std::pair<int, int>> sizes;
    for (int n = 2; n <= 16; n += 2)
        for (int c = 2 * n; c <= 4 * n + 20; c += 2)
            sizes.emplace_back(n, c);
    return sizes;
}

std::vector<std::pair<int, int>> dualPipeVSizes()
{
    std::vector<std::pair<int, int>> sizes;
    for (int n = 1; n <= 12; ++n)
        for (int c = 2 * n; c <= 4 * n + 20; ++c)
            sizes.emplace_back(n, c);
    return sizes;
}

/// Every (stage, microbatch) has exactly one F and one backward, on the rank the placement names, F first.
void expectOneForwardOneBackwardEach(const Schedule& s)
{
    const std::size_t cells = static_cast<std::size_t>(s.stages) * s.microbatches;
    std::vector<int> forwards(cells, 0), backwards(cells, 0);
    for (int r = 0; r < s.ranks; ++r) {
        for (const Action& a : s.order[r]) {
            for (int i = 0; i < a.size(); ++i) {
                const Op& op = a.at(i);
                ASSERT_EQ(s.placement.rankOf(op.stage, op.microbatch), r) << dps::toString(op);
                const std::size_t cell = static_cast<std::size_t>(op.stage) * s.microbatches + op.microbatch;
                if (op.kind == OpKind::F)
                    ++forwards[cell];
                if (isBackward(op.kind)) {
                    ASSERT_EQ(forwards[cell], 1) << "backward before its forward: " << dps::toString(op);
                    ++backwards[cell];
                }
            }
        }
    }
    EXPECT_EQ(forwards, std::vector<int>(cells, 1));
    EXPECT_EQ(backwards, std::vector<int>(cells, 1));
}

TEST(DualPipe, EveryStageAndMicrobatchHasOneForwardAndOneBackward)
{
    for (auto [n, c] : dualPipeSizes()) {
        SCOPED_TRACE("N=" + std::to_string(n) + " C=" + std::to_string(c));
        expectOneForwardOneBackwardEach(generateDualPipe(n, c));
    }
}

TEST(DualPipeV, EveryStageAndMicrobatchHasOneForwardAndOneBackward)
{
    for (auto [n, c] : dualPipeVSizes()) {
        SCOPED_TRACE("N=" + std::to_string(n) + " C=" + std::to_string(c));
        expectOneForwardOneBackwardEach(generateDualPipeV(n, c));
    }
}

/// Each I is followed later on its rank by its W, W's in the order of their I's; no W without an I; no pair
/// holds an I.
void expectWeightsFollowDeferredBackwardsFifo(const Schedule& s)
{
    for (int r = 0; r < s.ranks; ++r) {
        std::deque<Op> pending;
        for (const Action& a : s.order[r]) {
            if (a.overlapped) {
                ASSERT_EQ(a.op.kind, OpKind::F);
                ASSERT_EQ(a.backward.kind, OpKind::B);
            } else if (a.op.kind == OpKind::I) {
                pending.push_back(a.op);
            } else if (a.op.kind == OpKind::W) {
                ASSERT_FALSE(pending.empty()) << "rank " << r << ": W without an I: " << dps::toString(a);
                EXPECT_EQ(a.op.stage, pending.front().stage) << "rank " << r;
                EXPECT_EQ(a.op.microbatch, pending.front().microbatch) << "rank " << r;
                pending.pop_front();
            }
        }
        EXPECT_TRUE(pending.empty()) << "rank " << r << ": I without a W";
    }
}

TEST(DualPipe, WeightsFollowDeferredBackwardsFifo)
{
    for (auto [n, c] : dualPipeSizes())
        expectWeightsFollowDeferredBackwardsFifo(generateDualPipe(n, c));
}

TEST(DualPipeV, WeightsFollowDeferredBackwardsFifo)
{
    for (auto [n, c] : dualPipeVSizes())
        expectWeightsFollowDeferredBackwardsFifo(generateDualPipeV(n, c));
}

/// Per rank and stage, forwards and backwards each run their microbatches in increasing order.
void expectFifoPerStage(const Schedule& s)
{
    for (int r = 0; r < s.ranks; ++r) {
        std::vector<int> lastForward(s.stages, -1), lastBackward(s.stages, -1);
        for (const Action& a : s.order[r]) {
            for (int i = 0; i < a.size(); ++i) {
                const Op& op = a.at(i);
                if (op.kind == OpKind::W)
                    continue;
                int& last = op.kind == OpKind::F ? lastForward[op.stage] : lastBackward[op.stage];
                ASSERT_LT(last, op.microbatch) << "rank " << r << ": " << dps::toString(op);
                last = op.microbatch;
            }
        }
    }
}

TEST(DualPipe, MicrobatchesRunFifoPerDirection)
{
    for (auto [n, c] : dualPipeSizes())
        expectFifoPerStage(generateDualPipe(n, c));
}

TEST(DualPipeV, MicrobatchesRunFifoPerChunk)
{
    for (auto [n, c] : dualPipeVSizes())
        expectFifoPerStage(generateDualPipeV(n, c));
}

/// Replays the ranks with unbounded buffers: an F of stage s needs the F of s-1, a backward needs its F and the
/// backward of s+1, a W its I; an overlapped slot needs both halves ready. Every rank must finish.
class DependencyReplay {
public:
    explicit DependencyReplay(const Schedule& s)
        : m_s(s)
        , m_forwardDone(static_cast<std::size_t>(s.stages) * s.microbatches, 0)
        , m_backwardDone(m_forwardDone.size(), 0)
        , m_next(s.ranks, 0)
    {
    }

    /// Runs until no rank can progress; returns the first rank left unfinished, or -1.
    int run()
    {
        for (bool progressed = true; progressed;) {
            progressed = false;
            for (int r = 0; r < m_s.ranks; ++r)
                progressed |= advance(r);
        }
        for (int r = 0; r < m_s.ranks; ++r)
            if (m_next[r] < m_s.order[r].size())
                return r;
        return -1;
    }

private:
    std::size_t cell(const Op& op) const
    {
        return static_cast<std::size_t>(op.stage) * m_s.microbatches + op.microbatch;
    }

    bool ready(const Op& op) const
    {
        if (op.kind == OpKind::F)
            return op.stage == 0 || m_forwardDone[cell(op) - m_s.microbatches];
        if (op.kind == OpKind::W)
            return true; // the per-rank FIFO test checks the I comes first
        return m_forwardDone[cell(op)] && (op.stage == m_s.stages - 1 || m_backwardDone[cell(op) + m_s.microbatches]);
    }

    void complete(const Op& op)
    {
        if (op.kind == OpKind::F)
            m_forwardDone[cell(op)] = 1;
        else if (isBackward(op.kind))
            m_backwardDone[cell(op)] = 1;
    }

    bool advance(int r)
    {
        bool progressed = false;
        while (m_next[r] < m_s.order[r].size()) {
            const Action& a = m_s.order[r][m_next[r]];
            if (!ready(a.op) || (a.overlapped && !ready(a.backward)))
                break;
            for (int i = 0; i < a.size(); ++i)
                complete(a.at(i));
            ++m_next[r];
            progressed = true;
        }
        return progressed;
    }

    const Schedule& m_s;
    std::vector<char> m_forwardDone;
    std::vector<char> m_backwardDone;
    std::vector<std::size_t> m_next;
};

TEST(DualPipe, EveryRankFinishesUnderDataDependencies)
{
    for (auto [n, c] : dualPipeSizes())
        EXPECT_EQ(DependencyReplay(generateDualPipe(n, c)).run(), -1) << "N=" << n << " C=" << c;
}

TEST(DualPipeV, EveryRankFinishesUnderDataDependencies)
{
    for (auto [n, c] : dualPipeVSizes())
        EXPECT_EQ(DependencyReplay(generateDualPipeV(n, c)).run(), -1) << "N=" << n << " C=" << c;
}

} // namespace
