#pragma once
// The blocks of a timeline, per rank in execution order, with the queries the view needs: the blocks in a
// visible time range, the block under a time, and where a dragged block would land. Plain C++ (no Qt).
#include "schedule/action.h"

#include <cstddef>
#include <utility>
#include <vector>

namespace dps::ui {

/// One slot on the timeline (an overlapped F&B pair is one block).
struct TimelineBlock {
    double startUs = 0.0;
    double endUs = 0.0;
    Action action;
    int rank = 0;
    int position = 0; ///< index in the rank's order
    bool invalid = false; ///< named by an error diagnostic
    bool waitedForInput = false; ///< started later than its rank was free (an input arrived late)
    double waitUs = 0.0; ///< measured blocks: time at the slot's start spent waiting for data
    double a2aUs = 0.0; ///< measured blocks: time in the expert all-to-all (MeasuredAction::a2aUs)
    double a2aHiddenUs = 0.0; ///< measured blocks: of it, hidden behind the other half's compute
};

/// Blocks grouped by rank, each rank's blocks sorted by start and not overlapping.
class BlockIndex {
public:
    BlockIndex() = default;
    explicit BlockIndex(int ranks) { reset(ranks); }

    /// Removes every block and sets the number of ranks.
    void reset(int ranks);
    /// Appends a block to its rank. Precondition: it starts no earlier than the rank's last block ends.
    void add(const TimelineBlock& block);

    int rankCount() const { return static_cast<int>(m_ranks.size()); }
    const std::vector<TimelineBlock>& blocks(int rank) const;
    /// The block at `position` of `rank`, nullptr when out of range.
    const TimelineBlock* block(int rank, int position) const;
    /// Number of blocks over all ranks.
    std::size_t size() const;
    /// End of the latest block (0 when empty).
    double endUs() const { return m_endUs; }

    /// Index range [first, last) of the blocks of `rank` that intersect [t0, t1]. O(log n).
    std::pair<int, int> visible(int rank, double t0, double t1) const;
    /// The block of `rank` covering time t, widened by `toleranceUs` on both sides; nullptr in idle time.
    const TimelineBlock* hit(int rank, double timeUs, double toleranceUs = 0.0) const;
    /// The position block `from` of `rank` would take if dropped with its centre at `timeUs`: the number of
    /// other blocks of the rank whose centre lies before it.
    int dropPosition(int rank, int from, double timeUs) const;

private:
    std::vector<std::vector<TimelineBlock>> m_ranks;
    double m_endUs = 0.0;
};

/// Where a send or receive at cell `from` of a rank's program row (PyTorch's whole action language) lands when it is
/// dragged to be posted at `timeUs`: dragged past compute steps (their blocks, `blocks` by compute position, centred
/// before `timeUs` where they were after it, or the other way round), it lands next to the last one it passed, right
/// after it when dragged later and right before it when dragged earlier, so the other sends and receives keep their
/// order on the rank's communicator; `from` itself when it passed none. Returns the index it has afterwards
/// (moveElement's `to`).
int commDropCell(const std::vector<Step>& row, const std::vector<TimelineBlock>& blocks, int from, double timeUs);

/// Moves the element at `from` to `to` (the index it has afterwards). Out-of-range indices do nothing.
template <typename T> void moveElement(std::vector<T>& list, int from, int to)
{
    const int n = static_cast<int>(list.size());
    if (from < 0 || from >= n || to < 0 || to >= n || from == to)
        return;
    T item = std::move(list[from]);
    list.erase(list.begin() + from);
    list.insert(list.begin() + to, std::move(item));
}

} // namespace dps::ui
