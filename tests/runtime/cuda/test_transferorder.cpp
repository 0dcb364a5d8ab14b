// The per-rank-pair transfer order for NCCL (no tags, FIFO per pair, blocking large sends): derived from the
// schedule, both sides of every pair follow it, and a replay with blocking FIFO matching completes for every
// generated schedule kind at several sizes.
#include "runtime/backend.h"
#include "runtime/cuda/transferorder.h"
#include "base/errors.h"
#include "schedule/generator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace dps;
using namespace dps::runtime;

namespace {

struct Size {
    int ranks;
    int microbatches;
};

/// Every generated kind at sizes its constraints accept.
std::vector<GenerateOptions> sweep()
{
    const std::vector<Size> sizes { { 1, 1 }, { 2, 2 }, { 2, 4 }, { 2, 8 }, { 3, 6 }, { 4, 4 }, { 4, 8 }, { 4, 16 },
        { 6, 12 }, { 8, 16 }, { 8, 24 } };
    std::vector<GenerateOptions> out;
    for (const ScheduleKind kind : generatedKinds())
        for (const Size& size : sizes) {
            GenerateOptions o { kind, size.ranks, size.microbatches, 0 };
            try {
                checkConstraints(o);
                out.push_back(o);
            } catch (const ConstraintError&) {
            }
        }
    return out;
}

std::string label(const GenerateOptions& o)
{
    return std::string(kindName(o.kind)) + " ranks=" + std::to_string(o.ranks)
        + " microbatches=" + std::to_string(o.microbatches);
}

/// Number of cross-rank messages a schedule has: every stage boundary whose two sides are on two ranks,
/// once forward and once backward.
int expectedTransfers(const Schedule& s)
{
    int count = 0;
    auto find = [&](int stage, int mb, OpKind kind) {
        for (int r = 0; r < s.ranks; ++r)
            for (const auto& a : s.order[static_cast<std::size_t>(r)])
                for (int h = 0; h < a.size(); ++h)
                    if (a.at(h) == Op { stage, mb, kind })
                        return r;
        return -1;
    };
    for (int m = 0; m < s.microbatches; ++m)
        for (int st = 0; st + 1 < s.stages; ++st) {
            if (find(st, m, OpKind::F) != find(st + 1, m, OpKind::F))
                ++count;
            const int a = find(st, m, OpKind::I) >= 0 ? find(st, m, OpKind::I) : find(st, m, OpKind::B);
            const int b = find(st + 1, m, OpKind::I) >= 0 ? find(st + 1, m, OpKind::I) : find(st + 1, m, OpKind::B);
            if (a != b)
                ++count;
        }
    return count;
}

} // namespace

TEST(TransferOrder, OneF1BTwoRanksIsProducerOrderPerPair)
{
    const Schedule s = generate({ ScheduleKind::OneFOneB, 2, 4, 0 });
    const TransferPlan plan = deriveTransferPlan(s);
    ASSERT_EQ(plan.transfers.size(), 8u); // 4 activations 0→1, 4 gradients 1→0
    const auto forward = plan.pair(0, 1);
    ASSERT_EQ(forward.size(), 4u);
    for (int m = 0; m < 4; ++m) {
        EXPECT_EQ(forward[static_cast<std::size_t>(m)]->producer, (Op { 0, m, OpKind::F }));
        EXPECT_EQ(forward[static_cast<std::size_t>(m)]->consumer, (Op { 1, m, OpKind::F }));
        EXPECT_FALSE(forward[static_cast<std::size_t>(m)]->gradient());
    }
    const auto backward = plan.pair(1, 0);
    ASSERT_EQ(backward.size(), 4u);
    for (std::size_t i = 1; i < backward.size(); ++i)
        EXPECT_LT(backward[i - 1]->producerSlot, backward[i]->producerSlot);
    EXPECT_TRUE(backward[0]->gradient());
}

TEST(TransferOrder, SequencesAreAGlobalOrderAndEachPairFollowsProducerSlots)
{
    for (const auto& o : sweep()) {
        SCOPED_TRACE(label(o));
        const Schedule s = generate(o);
        const TransferPlan plan = deriveTransferPlan(s);
        EXPECT_EQ(static_cast<int>(plan.transfers.size()), expectedTransfers(s));
        for (int i = 0; i < static_cast<int>(plan.transfers.size()); ++i)
            ASSERT_EQ(plan.transfers[static_cast<std::size_t>(i)].sequence, i);
        for (int from = 0; from < s.ranks; ++from)
            for (int to = 0; to < s.ranks; ++to) {
                const auto pair = plan.pair(from, to);
                for (std::size_t i = 1; i < pair.size(); ++i) {
                    const auto before = std::pair { pair[i - 1]->producerSlot, pair[i - 1]->producerHalf };
                    const auto after = std::pair { pair[i]->producerSlot, pair[i]->producerHalf };
                    ASSERT_LT(before, after) << "pair " << from << "->" << to;
                }
            }
    }
}

TEST(TransferOrder, EveryGeneratedScheduleReplaysWithoutDeadlock)
{
    int schedules = 0;
    for (const auto& o : sweep()) {
        SCOPED_TRACE(label(o));
        const Schedule s = generate(o);
        const TransferPlan plan = deriveTransferPlan(s);
        const ReplayResult eager = simulateTransfers(s, plan, ReceivePosting::Eager);
        EXPECT_TRUE(eager.completed) << eager.diagnostic;
        EXPECT_EQ(eager.matched, static_cast<int>(plan.transfers.size()));
        ++schedules;
    }
    EXPECT_GE(schedules, 40);
}

TEST(TransferOrder, WithoutStagingReceivesPostedAtTheConsumerStall)
{
    // Why NcclComm stages receives: with blocking sends and one serial stream per rank, a receive issued
    // only when its consumer runs holds up the sender's later transfers, and those hold up others: already
    // 1F1B on 4 ranks stalls that way. The replay reports where each rank stands.
    const Schedule s = generate({ ScheduleKind::OneFOneB, 4, 8, 0 });
    const TransferPlan plan = deriveTransferPlan(s);
    const ReplayResult strict = simulateTransfers(s, plan, ReceivePosting::AtConsumer);
    EXPECT_FALSE(strict.completed);
    EXPECT_LT(strict.matched, static_cast<int>(plan.transfers.size()));
    EXPECT_NE(strict.diagnostic.find("front transfer"), std::string::npos) << strict.diagnostic;
    EXPECT_TRUE(simulateTransfers(s, plan, ReceivePosting::Eager).completed);
}

TEST(TransferOrder, SidesThatDisagreeOnAPairsOrderAreCaught)
{
    // The replay does detect a bad order: swap two receives on one pair so the FIFO pairs the wrong messages.
    const Schedule s = generate({ ScheduleKind::DualPipeV, 2, 4, 0 });
    TransferPlan plan = deriveTransferPlan(s);
    auto& entries = plan.ranks[1].entries;
    int first = -1;
    for (int i = 0; i < static_cast<int>(entries.size()); ++i) {
        if (entries[static_cast<std::size_t>(i)].send)
            continue;
        if (first < 0) {
            first = i;
            continue;
        }
        std::swap(entries[static_cast<std::size_t>(first)], entries[static_cast<std::size_t>(i)]);
        break;
    }
    const ReplayResult r = simulateTransfers(s, plan, ReceivePosting::Eager);
    EXPECT_FALSE(r.completed);
    EXPECT_NE(r.diagnostic.find("different orders"), std::string::npos) << r.diagnostic;
}

TEST(TransferOrder, AReceiveAheadOfWhatItNeedsDeadlocksWithADiagnostic)
{
    // Rank 0 of 1F1B issues its first receive (a gradient) before the first activation it sends: the
    // gradient needs that activation, so both sides wait forever; the replay names both ranks.
    const Schedule s = generate({ ScheduleKind::OneFOneB, 2, 2, 0 });
    TransferPlan plan = deriveTransferPlan(s);
    auto& entries = plan.ranks[0].entries;
    ASSERT_TRUE(entries.front().send);
    for (std::size_t i = 1; i < entries.size(); ++i)
        if (!entries[i].send) {
            std::rotate(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(i),
                entries.begin() + static_cast<std::ptrdiff_t>(i) + 1);
            break;
        }
    // Rank 1 must then receive in the same relative order per pair, which it does (pairs are unchanged).
    const ReplayResult r = simulateTransfers(s, plan, ReceivePosting::Eager);
    EXPECT_FALSE(r.completed);
    EXPECT_NE(r.diagnostic.find("rank 0"), std::string::npos) << r.diagnostic;
    EXPECT_NE(r.diagnostic.find("rank 1"), std::string::npos) << r.diagnostic;
}

TEST(TransferOrder, AScheduleThatCannotCompleteIsRefusedByName)
{
    Schedule s = generate({ ScheduleKind::GPipe, 2, 2, 0 });
    std::swap(s.order[1].front(), s.order[1].back()); // rank 1 starts with a backward it cannot run yet
    try {
        deriveTransferPlan(s);
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot complete"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
    }
}

TEST(TransferOrder, OneRankHasNoTransfers)
{
    const Schedule s = generate({ ScheduleKind::OneFOneB, 1, 4, 0 });
    const TransferPlan plan = deriveTransferPlan(s);
    EXPECT_TRUE(plan.transfers.empty());
    EXPECT_TRUE(simulateTransfers(s, plan, ReceivePosting::Eager).completed);
}
