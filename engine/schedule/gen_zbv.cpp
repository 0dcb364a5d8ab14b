// ZB-V: the zero-bubble paper's V schedule as PyTorch's ScheduleZBVZeroBubble orders it. Two stages per
// rank in a V: rank r holds stage r (chunk 0) and stage 2P-1-r (chunk 1). The order is built for
// max(2P-1, M) microbatches (enough to fill the V) and ops of microbatches >= M are dropped.
#include "generators_internal.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace dps::detail {

namespace {

/// Stage s on rank s for s < P, else on rank 2P-1-s.
std::vector<int> vPlacement(int ranks)
{
    std::vector<int> rankOf(2 * static_cast<std::size_t>(ranks));
    for (int s = 0; s < 2 * ranks; ++s)
        rankOf[static_cast<std::size_t>(s)] = s < ranks ? s : 2 * ranks - 1 - s;
    return rankOf;
}

/// One rank's order. Counters per chunk: forwards f, backwards-for-inputs b, weight backwards w.
class ZbvRank {
public:
    ZbvRank(int rank, int ranks, int microbatches)
        : m_rank(rank)
        , m_ranks(ranks)
        , m_microbatches(microbatches)
        , m_padded(std::max(2 * ranks - 1, microbatches))
        , m_stage { rank, 2 * ranks - 1 - rank }
    {
        m_out.reserve(6 * static_cast<std::size_t>(microbatches));
    }

    std::vector<Action> build()
    {
        warmup();
        steady();
        cooldown();
        return std::move(m_out);
    }

private:
    /// Warm-up: 2(P-r)-1 chunk-0 forwards; r pairs (chunk-1 F, chunk-0 F); P-r chunk-1 (F, I, W).
    void warmup()
    {
        for (int i = 0; i < 2 * (m_ranks - m_rank) - 1; ++i)
            forward(0);
        for (int i = 0; i < m_rank; ++i) {
            forward(1);
            forward(0);
        }
        for (int i = 0; i < m_ranks - m_rank; ++i) {
            forward(1);
            inputGrad(1);
            weightGrad(1);
        }
    }

    /// Steady state: [chunk-0 F while any remain] chunk-0 I, W; chunk-1 F, I, W; until chunk 1 caught up.
    void steady()
    {
        while (m_f[1] < m_f[0] || m_f[0] < m_padded) {
            if (m_f[0] < m_padded)
                forward(0);
            inputGrad(0);
            weightGrad(0);
            forward(1);
            inputGrad(1);
            weightGrad(1);
        }
    }

    /// Cool-down: r pairs (chunk-0 I, chunk-1 I); P-r pairs (chunk-0 I, chunk-0 W); then the pending W's
    /// of chunk 1, then those of chunk 0.
    void cooldown()
    {
        for (int i = 0; i < m_rank; ++i) {
            inputGrad(0);
            inputGrad(1);
        }
        for (int i = 0; i < m_ranks - m_rank; ++i) {
            inputGrad(0);
            weightGrad(0);
        }
        while (m_w[1] < m_b[1])
            weightGrad(1);
        while (m_w[0] < m_b[0])
            weightGrad(0);
    }

    void forward(int chunk) { push(chunk, OpKind::F, m_f[chunk]++); }
    void inputGrad(int chunk) { push(chunk, OpKind::I, m_b[chunk]++); }
    void weightGrad(int chunk) { push(chunk, OpKind::W, m_w[chunk]++); }

    /// Ops of the padding microbatches (>= M) are not part of the schedule.
    void push(int chunk, OpKind kind, int microbatch)
    {
        if (microbatch < m_microbatches)
            m_out.push_back(Action::single(m_stage[chunk], kind, microbatch));
    }

    int m_rank;
    int m_ranks;
    int m_microbatches;
    int m_padded;
    int m_stage[2];
    int m_f[2] = { 0, 0 };
    int m_b[2] = { 0, 0 };
    int m_w[2] = { 0, 0 };
    std::vector<Action> m_out;
};

} // namespace

Schedule generateZBV(int ranks, int microbatches)
{
    Schedule s;
    s.placement = Placement::perStage(vPlacement(ranks));
    s.order.resize(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r)
        s.order[static_cast<std::size_t>(r)] = ZbvRank(r, ranks, microbatches).build();
    return s;
}

} // namespace dps::detail
