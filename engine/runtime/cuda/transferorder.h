#pragma once
// The order of cross-rank transfers for communication without tags (NCCL).
//
// NCCL matches sends and receives in issue order per rank pair, a large send waits until its receive is
// issued, and all operations of one communicator run one after another on the device. So every rank issues
// its transfers in one sequence, and the sequences of all ranks must be slices of one global order in which
// a transfer comes after every transfer its producer needed: then the first unfinished transfer always has
// both sides waiting on it, and none can cross or wait on itself.
//
// deriveTransferPlan() builds that global order from the schedule: it executes the schedule as soon as
// possible in lockstep rounds (every rank runs its next slot once its inputs exist) and numbers messages in
// the order they are produced (round, rank, slot half). Per ordered rank pair this is the producer's slot
// order, which both sides follow. simulateTransfers() replays the plan with blocking FIFO matching to prove
// that it completes (tests run it over every generated schedule kind).
#include "schedule/schedule.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace dps::runtime {

/// One cross-rank message of a step: what `producer` (on rank `from`) makes and `consumer` (on `to`) needs.
/// Activations go from F of stage s to F of s+1; gradients from I/B of stage s to I/B of s−1.
struct Transfer {
    int from = 0;
    int to = 0;
    Op producer; ///< F (activation) or I/B (gradient) of the producing stage
    Op consumer;
    int producerSlot = 0; ///< index in order[from]
    int producerHalf = 0; ///< 0 or 1 (the backward half of an overlapped slot)
    int consumerSlot = 0; ///< index in order[to]
    int consumerHalf = 0;
    int sequence = 0; ///< position in the global order (0-based)

    bool gradient() const { return producer.kind != OpKind::F; }
};

/// One rank's side of the plan: the transfers it sends or receives, in the order it issues them.
struct RankTransfers {
    struct Entry {
        int transfer = 0; ///< index into TransferPlan::transfers
        bool send = false; ///< true: this rank sends (it is `from`), false: receives
        int peer = 0;
    };
    std::vector<Entry> entries;
};

struct TransferPlan {
    std::vector<Transfer> transfers; ///< in global order (transfers[i].sequence == i)
    std::vector<RankTransfers> ranks; ///< ranks[r]: rank r's issue order (a slice of the global order)

    /// The transfers from `from` to `to` in the order both sides issue them.
    std::vector<const Transfer*> pair(int from, int to) const;
    /// The ranks `rank` sends to or receives from, ascending.
    std::vector<int> peersOf(int rank) const;
};

/// The ranks other than `rank` that hold one of its stages (DualPipe's replicas), ascending: they exchange
/// weight gradients after each step.
std::vector<int> replicaPeers(const Schedule& schedule, int rank);

/// Derives the plan (see the file comment). Throws RuntimeError naming the stuck ranks' next actions when
/// the schedule cannot complete (a schedule the validator accepts always can) or an op's producer is
/// missing from the schedule.
TransferPlan deriveTransferPlan(const Schedule& schedule);

/// How the replay issues receives.
enum class ReceivePosting {
    /// A receive is issued as soon as it reaches the front of the rank's sequence (into a staging buffer
    /// when the executor has not posted it yet): what NcclComm does.
    Eager,
    /// A receive is issued only once the executor reached the slot that consumes it (no staging): stricter;
    /// the plan may then stall, which the result reports.
    AtConsumer,
};

struct ReplayResult {
    bool completed = false;
    int matched = 0; ///< transfers completed
    std::string diagnostic; ///< when not completed: each stuck rank and what it waits for
};

/// Replays one step: each rank runs its slots in order, needs its inputs received before a slot and issues
/// the slot's sends after it; its transfers are issued one at a time in `plan.ranks[r]` order, and a
/// transfer completes only when both sides have it at the front (blocking send, blocking receive, FIFO
/// per pair). Also checks that FIFO matching pairs each send with the receive of the same message.
ReplayResult simulateTransfers(const Schedule& schedule, const TransferPlan& plan, ReceivePosting posting);

} // namespace dps::runtime
