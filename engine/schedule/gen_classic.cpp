// The classic generators: GPipe, 1F1B, Interleaved 1F1B (PyTorch's ScheduleInterleaved1F1B) and ZB-H1.
// Each rank's order is built in one pass, O(ops), with its exact size reserved up front.
#include "generators_internal.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace dps::detail {

namespace {

/// A schedule whose stage s sits on rankOfStage[s], with `ranks` empty orders.
Schedule withPlacement(int ranks, std::vector<int> rankOfStage)
{
    Schedule s;
    s.placement = Placement::perStage(std::move(rankOfStage));
    s.order.resize(static_cast<std::size_t>(ranks));
    return s;
}

/// Stage s on rank s.
std::vector<int> straightPlacement(int ranks)
{
    std::vector<int> rankOf(static_cast<std::size_t>(ranks));
    for (int s = 0; s < ranks; ++s)
        rankOf[static_cast<std::size_t>(s)] = s;
    return rankOf;
}

/// Loop placement: stage s on rank s mod ranks, `stagesPerRank` stages per rank.
std::vector<int> loopPlacement(int ranks, int stagesPerRank)
{
    std::vector<int> rankOf(static_cast<std::size_t>(ranks) * static_cast<std::size_t>(stagesPerRank));
    for (std::size_t s = 0; s < rankOf.size(); ++s)
        rankOf[s] = static_cast<int>(s % static_cast<std::size_t>(ranks));
    return rankOf;
}

void emit(std::vector<Action>& out, int stage, OpKind kind, int microbatch)
{
    out.push_back(Action::single(stage, kind, microbatch));
}

/// One rank of 1F1B (PyTorch's Schedule1F1B): min(M, P - r) warm-up forwards, then one backward and
/// one forward per step while forwards remain, then the remaining backwards. With splitBackward (ZB-H1)
/// each backward is I, and W of microbatch k follows I of microbatch k + r; the last r W's close the
/// rank's order (its cool-down).
std::vector<Action> oneFOneBRank(int rank, int ranks, int microbatches, bool splitBackward)
{
    std::vector<Action> out;
    out.reserve(static_cast<std::size_t>(microbatches) * (splitBackward ? 3 : 2));
    const int warmup = std::min(microbatches, ranks - rank);
    for (int m = 0; m < warmup; ++m)
        emit(out, rank, OpKind::F, m);
    int nextForward = warmup;
    for (int k = 0; k < microbatches; ++k) {
        emit(out, rank, splitBackward ? OpKind::I : OpKind::B, k);
        if (splitBackward && k >= rank)
            emit(out, rank, OpKind::W, k - rank);
        if (nextForward < microbatches)
            emit(out, rank, OpKind::F, nextForward++);
    }
    if (splitBackward)
        for (int k = std::max(0, microbatches - rank); k < microbatches; ++k)
            emit(out, rank, OpKind::W, k);
    return out;
}

/// PyTorch's interleaved step → stage mapping and counts for one rank (its warm-up capped at all
/// forwards). Forward number j runs local stage (j / perRound) mod v; backward number j runs local stage
/// v - 1 - (j / perRound) mod v. Microbatches count up per stage.
struct InterleavedRank {
    int rank, ranks, microbatches, v, perRound, warmup;

    InterleavedRank(int rank_, int ranks_, int microbatches_, int v_)
        : rank(rank_)
        , ranks(ranks_)
        , microbatches(microbatches_)
        , v(v_)
    {
        const int rounds = std::max(1, microbatches / ranks);
        perRound = microbatches / rounds;
        const long long warm = static_cast<long long>(v - 1) * perRound + 2LL * (ranks - 1 - rank);
        warmup = static_cast<int>(std::min<long long>(warm, static_cast<long long>(microbatches) * v));
    }

    int forwardStage(long long j) const { return static_cast<int>((j / perRound) % v) * ranks + rank; }
    int backwardStage(long long j) const { return static_cast<int>(v - 1 - (j / perRound) % v) * ranks + rank; }
    int localOf(int stage) const { return (stage - rank) / ranks; }

    std::vector<Action> build() const
    {
        const long long total = static_cast<long long>(microbatches) * v;
        std::vector<Action> out;
        out.reserve(static_cast<std::size_t>(2 * total));
        std::vector<int> forwards(static_cast<std::size_t>(v), 0);
        std::vector<int> backwards(static_cast<std::size_t>(v), 0);
        auto forward = [&](long long j) {
            const int s = forwardStage(j);
            emit(out, s, OpKind::F, forwards[static_cast<std::size_t>(localOf(s))]++);
        };
        auto backward = [&](long long j) {
            const int s = backwardStage(j);
            emit(out, s, OpKind::B, backwards[static_cast<std::size_t>(localOf(s))]++);
        };
        for (long long j = 0; j < warmup; ++j)
            forward(j);
        for (long long j = warmup; j < total; ++j) {
            forward(j);
            backward(j - warmup);
        }
        for (long long j = total - warmup; j < total; ++j)
            backward(j);
        return out;
    }
};

} // namespace

Schedule generateGPipe(int ranks, int microbatches)
{
    Schedule s = withPlacement(ranks, straightPlacement(ranks));
    for (int r = 0; r < ranks; ++r) {
        auto& out = s.order[static_cast<std::size_t>(r)];
        out.reserve(2 * static_cast<std::size_t>(microbatches));
        for (int m = 0; m < microbatches; ++m)
            emit(out, r, OpKind::F, m);
        for (int m = 0; m < microbatches; ++m)
            emit(out, r, OpKind::B, m);
    }
    return s;
}

Schedule generate1F1B(int ranks, int microbatches)
{
    Schedule s = withPlacement(ranks, straightPlacement(ranks));
    for (int r = 0; r < ranks; ++r)
        s.order[static_cast<std::size_t>(r)] = oneFOneBRank(r, ranks, microbatches, false);
    return s;
}

Schedule generateZBH1(int ranks, int microbatches)
{
    Schedule s = withPlacement(ranks, straightPlacement(ranks));
    for (int r = 0; r < ranks; ++r)
        s.order[static_cast<std::size_t>(r)] = oneFOneBRank(r, ranks, microbatches, true);
    return s;
}

Schedule generateInterleaved1F1B(int ranks, int microbatches, int stagesPerRank)
{
    Schedule s = withPlacement(ranks, loopPlacement(ranks, stagesPerRank));
    for (int r = 0; r < ranks; ++r)
        s.order[static_cast<std::size_t>(r)] = InterleavedRank(r, ranks, microbatches, stagesPerRank).build();
    return s;
}

} // namespace dps::detail
