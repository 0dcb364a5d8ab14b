#include "document/blockindex.h"

#include <algorithm>

namespace dps::ui {

namespace {
const std::vector<TimelineBlock> kNoBlocks;
}

void BlockIndex::reset(int ranks)
{
    m_ranks.assign(static_cast<std::size_t>(std::max(0, ranks)), {});
    m_endUs = 0.0;
}

void BlockIndex::add(const TimelineBlock& block)
{
    if (block.rank < 0 || block.rank >= rankCount())
        return;
    m_ranks[block.rank].push_back(block);
    m_endUs = std::max(m_endUs, block.endUs);
}

const std::vector<TimelineBlock>& BlockIndex::blocks(int rank) const
{
    return rank >= 0 && rank < rankCount() ? m_ranks[rank] : kNoBlocks;
}

const TimelineBlock* BlockIndex::block(int rank, int position) const
{
    const auto& list = blocks(rank);
    return position >= 0 && position < static_cast<int>(list.size()) ? &list[position] : nullptr;
}

std::size_t BlockIndex::size() const
{
    std::size_t n = 0;
    for (const auto& r : m_ranks)
        n += r.size();
    return n;
}

std::pair<int, int> BlockIndex::visible(int rank, double t0, double t1) const
{
    const auto& list = blocks(rank);
    const auto first
        = std::lower_bound(list.begin(), list.end(), t0, [](const TimelineBlock& b, double t) { return b.endUs < t; });
    const auto last
        = std::upper_bound(first, list.end(), t1, [](double t, const TimelineBlock& b) { return t < b.startUs; });
    return { static_cast<int>(first - list.begin()), static_cast<int>(last - list.begin()) };
}

const TimelineBlock* BlockIndex::hit(int rank, double timeUs, double toleranceUs) const
{
    const auto [first, last] = visible(rank, timeUs - toleranceUs, timeUs + toleranceUs);
    const auto& list = blocks(rank);
    const TimelineBlock* best = nullptr;
    double bestDistance = 0.0;
    for (int i = first; i < last; ++i) {
        const auto& b = list[i];
        const double distance = timeUs < b.startUs ? b.startUs - timeUs : (timeUs > b.endUs ? timeUs - b.endUs : 0.0);
        if (distance <= toleranceUs && (!best || distance < bestDistance)) {
            best = &b;
            bestDistance = distance;
        }
    }
    return best;
}

int BlockIndex::dropPosition(int rank, int from, double timeUs) const
{
    const auto& list = blocks(rank);
    int position = 0;
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
        if (i == from)
            continue;
        if ((list[i].startUs + list[i].endUs) / 2.0 < timeUs)
            ++position;
    }
    return position;
}

int commDropCell(const std::vector<Step>& row, const std::vector<TimelineBlock>& blocks, int from, double timeUs)
{
    const int n = static_cast<int>(row.size());
    if (from < 0 || from >= n)
        return from;
    std::vector<int> computeCells; // the cell of each compute step, by compute position
    int gapOfFrom = 0; // compute steps before `from`
    int gap = 0; // compute steps whose blocks are centred before `timeUs`
    for (int p = 0; p < n; ++p) {
        if (!row[static_cast<std::size_t>(p)].isCompute())
            continue;
        const auto i = computeCells.size();
        computeCells.push_back(p);
        gapOfFrom += p < from ? 1 : 0;
        gap += i < blocks.size() && (blocks[i].startUs + blocks[i].endUs) / 2.0 < timeUs ? 1 : 0;
    }
    if (gap == gapOfFrom)
        return from; // between the same two compute steps: left where it is among its neighbours
    // Later: right after the last compute step passed (it then sits one cell further left); earlier: right before the
    // first one passed. Either way the other sends and receives keep their order.
    return gap > gapOfFrom ? computeCells[static_cast<std::size_t>(gap - 1)]
                           : computeCells[static_cast<std::size_t>(gap)];
}

} // namespace dps::ui
