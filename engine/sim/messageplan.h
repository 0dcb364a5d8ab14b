#pragma once
// The messages of one step between different ranks, as our engine's executor handles them: which messages a
// rank receives, in the order it consumes them (it posts their receives ahead in that order), and when it
// frees the buffer of each message it sends. One rule for the executor (engine/runtime/executor.cpp), which
// follows it, and the simulator, which counts it (docs/memory.md, "Send buffers").
//
// A send's buffer is freed at a point of the sender's own order, never when the transport happens to finish:
// at the receive of the first message from the same peer that the peer produced in or after the slot where
// it consumed the send. That message's arrival proves the peer's receive of the send completed, so the
// sender's wait on the send returns without the peer doing anything more (MPI's progress rule), and the
// moment the buffer goes is the same in every run.
#include "schedule/schedule.h"

#include <memory>
#include <vector>

namespace dps {

/// A message between two different ranks, named by the op that consumes it: the activation into F(stage, m),
/// made by F(stage − 1, m), or the gradient into I/B(stage, m), made by I or B of (stage + 1, m).
struct PlannedMessage {
    int stage = 0;
    int microbatch = 0;
    bool gradient = false; ///< the gradient into I/B(stage), else the activation into F(stage)
    int peer = -1; ///< the other rank: the producer's for a receive, the consumer's for a send
    int position = -1; ///< the slot of this rank's order that consumes it (receive) or makes it (send)
    int half = 0; ///< which op of that slot: 0, or 1 for the backward half of an overlapped slot
    int peerPosition = -1; ///< the slot of the peer's order that makes it (receive) or consumes it (send)
};

/// One rank's messages in one step.
struct RankMessagePlan {
    std::vector<PlannedMessage> receives; ///< in the order the rank consumes them (slot, then half)
    std::vector<PlannedMessage> sends; ///< in the order the rank makes them (slot, then half)
    /// For each send, the index in `receives` of the receive at which the rank frees the send's buffer: the
    /// first receive from the send's peer, consumed in a later slot than the send was made, that the peer made
    /// in or after the slot where it consumed the send; −1: none, the buffer is freed at the step's end.
    std::vector<int> releasedBy;
};

/// Plans the messages of a schedule rank by rank: the producer and the consumer of a message are the ranks
/// whose lists hold the ops (the placement's ranks for a valid schedule); a message whose two ops run on one
/// rank (an in-memory handover), or whose producer or consumer is in no list, is not planned. Stages and
/// microbatches are the schedule's, or inferred from its ops when 0. Never throws for a bad schedule.
class MessagePlanner {
public:
    /// Indexes where every op runs: O(ops + stages × microbatches) time, 16 bytes per (stage, microbatch).
    /// `schedule` must outlive the planner.
    explicit MessagePlanner(const Schedule& schedule);
    ~MessagePlanner();
    MessagePlanner(const MessagePlanner&) = delete;
    MessagePlanner& operator=(const MessagePlanner&) = delete;

    /// The plan of rank `rank` (an empty plan for a rank the schedule does not have): O(n log n) for the rank's
    /// n ops.
    RankMessagePlan plan(int rank) const;

    struct Index; ///< where each op runs (defined in messageplan.cpp)

private:
    const Schedule& m_schedule;
    std::unique_ptr<Index> m_index;
};

/// The plan of every rank of `schedule` (indexed by rank): MessagePlanner's, rank by rank. Never throws for a
/// bad schedule.
std::vector<RankMessagePlan> planMessages(const Schedule& schedule);

} // namespace dps
