#pragma once
// The host-side brain of NcclComm (pure logic, unit-tested without a GPU): turns the executor's tagged
// isend/irecv calls, made in whatever order the executor likes (receives posted ahead in the order it needs
// them, sends as outputs appear), into the one issue order of this rank's slice of the transfer plan
// (transferorder.h), repeated every step.
//
// - A planned transfer is issued when it reaches the front of the sequence and the executor has posted it.
// - A receive at the front that the executor has not posted yet is issued into a staging buffer when
//   something posted waits behind it (the executor will post it later; then its data is copied over), so the
//   sequence never stalls on the executor's receive window.
// - A send at the front that has not been posted stops the sequence (its data does not exist yet).
// - Messages whose tag is not in the plan (e.g. the replica gradient exchange after a step) are issued in
//   call order, all pending ones in one group, when one of them is waited on or tested, and only while no
//   planned transfer is half-way through the sequence.
#include "runtime/comm.h"
#include "transferorder.h"

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

namespace dps::runtime {

/// One entry of a rank's issue order.
struct PlannedTransfer {
    bool send = false;
    int peer = 0;
    int tag = 0;
    std::size_t bytes = 0;
};

/// What to do on the device, in order: the operations of one group (send/receive/receive to staging),
/// then copies out of staging buffers.
struct SequencerCommand {
    enum class Kind { Send, Receive, CopyFromStaging };
    Kind kind = Kind::Send;
    RequestId request = kNoRequest; ///< the executor's request it completes; kNoRequest for a staged receive
    int peer = 0;
    int tag = 0; ///< the message's tag (NCCL does not see it; for checks and messages)
    void* data = nullptr; ///< receive target or copy target
    const void* source = nullptr; ///< send source or copy source (the staging buffer)
    std::size_t bytes = 0;
};

class TransferSequencer {
public:
    /// Staging buffers come from `allocate` (bytes → pointer) and go back through `release`.
    TransferSequencer(std::function<void*(std::size_t)> allocate, std::function<void(void*, std::size_t)> release);
    ~TransferSequencer();
    TransferSequencer(const TransferSequencer&) = delete;
    TransferSequencer& operator=(const TransferSequencer&) = delete;

    /// This rank's issue order for one step (repeats every step). Throws RuntimeError when a (direction,
    /// peer, tag) appears twice. Only between steps.
    void setPlan(std::vector<PlannedTransfer> sequence);
    const std::vector<PlannedTransfer>& plan() const { return m_plan; }

    /// Registers an isend (send = true) or irecv; returns its request id. Throws RuntimeError when a planned
    /// message's size differs from the plan.
    RequestId add(bool send, void* data, std::size_t bytes, int peer, int tag);

    /// What to issue now; `waitingFor` is the request the caller is about to wait on or test (kNoRequest
    /// when only pumping). An unplanned `waitingFor` is issued (with every other pending unplanned one) when
    /// no planned transfer is half-way through the sequence. With `mustIssue` (a blocking wait) throws
    /// RuntimeError when `waitingFor` cannot be issued now: the plan needs a send first that the executor has
    /// not posted (the executor broke the schedule's order), or it is unplanned and the step's planned
    /// transfers are not finished. Without it (a test, which never blocks) such a request simply stays.
    std::vector<SequencerCommand> next(RequestId waitingFor = kNoRequest, bool mustIssue = true);

    /// Whether a request has been handed out by next() (then the device completes it).
    bool issued(RequestId request) const;
    /// Whether a request was added and not yet released.
    bool known(RequestId request) const { return m_requests.count(request) > 0; }
    /// Forgets a completed request and frees its staging buffer, if any.
    void release(RequestId request);

    /// Requests added and not yet released.
    std::size_t outstanding() const { return m_requests.size(); }
    /// Staging buffers alive (issued staged receives not yet released).
    std::size_t stagingBuffers() const { return m_stagingAlive; }
    /// Position of the front in the plan, and the step (cycle) it belongs to.
    std::size_t front() const { return m_front; }
    int cycle() const { return m_cycle; }

private:
    using Key = std::tuple<bool, int, int>; // send, peer, tag
    struct Request {
        bool send = false;
        int peer = 0;
        int tag = 0;
        void* data = nullptr;
        std::size_t bytes = 0;
        bool planned = false;
        bool issued = false;
        void* staging = nullptr; ///< the staging buffer its data comes from
    };
    struct Staged {
        void* buffer = nullptr;
        std::size_t bytes = 0;
    };

    bool anyPostedBehindFront() const;
    bool issueFront(std::vector<SequencerCommand>& group);
    void bindStaged(RequestId id, std::vector<SequencerCommand>& copies);
    void issueUnplanned(std::vector<SequencerCommand>& group);
    void advanceFront();

    std::function<void*(std::size_t)> m_allocate;
    std::function<void(void*, std::size_t)> m_release;
    std::vector<PlannedTransfer> m_plan;
    std::map<Key, std::size_t> m_planIndex;
    std::size_t m_front = 0;
    int m_cycle = 0;
    std::map<RequestId, Request> m_requests;
    std::map<Key, std::deque<RequestId>> m_postedPlanned; ///< posted, not yet issued, per key (FIFO)
    std::map<Key, std::deque<Staged>> m_staged; ///< received into staging, not yet posted, per key
    std::vector<RequestId> m_unplanned; ///< posted unplanned requests not yet issued, in call order
    RequestId m_nextId = 0;
    std::size_t m_stagingAlive = 0;
};

/// Rank `rank`'s slice of `plan` with the executor's tags (`tagOf`) and every transfer `messageBytes` long.
std::vector<PlannedTransfer> plannedTransfersOf(
    const TransferPlan& plan, int rank, const std::function<int(const Transfer&)>& tagOf, std::size_t messageBytes);

} // namespace dps::runtime
