#pragma once
// NcclComm's host half (pure logic, unit-tested without a GPU over a simulated NCCL): the executor's tagged
// isend/irecv/wait/test on top of a TransferSequencer (transfersequencer.h: the one issue order of the
// schedule's transfer plan) and a P2pDevice (NCCL groups and CUDA events on the communicator's stream).
//
// Every batch the sequencer hands out goes to the device as one NCCL group followed by its copies out of
// staging, then one marker (an event) after it; the requests the batch completes share that marker, which
// goes back to the device's pool when the last of them is released. What NCCL's documented semantics ask of
// the caller (ncclSend/ncclRecv in ncclGroupStart/End; the same count and type on both sides; sends and
// receives between two ranks matched in issue order; one communicator's operations executed in stream
// order; work depending on them ordered after ncclGroupEnd) and how this comm meets it: docs/gpu.md.
#include "runtime/comm.h"
#include "transfersequencer.h"

#include <cstddef>
#include <functional>
#include <map>
#include <vector>

namespace dps::runtime {

/// What OrderedP2p needs from the device; NcclComm implements it with NCCL and CUDA events on its stream,
/// tests with a simulated NCCL.
class P2pDevice {
public:
    using Marker = int;

    virtual ~P2pDevice() = default;
    /// Issues one non-empty batch on the communicator's stream, in order: its Send and Receive commands as
    /// one group (ncclGroupStart … ncclGroupEnd), then its CopyFromStaging commands. Throws RuntimeError
    /// when NCCL or CUDA refuses.
    virtual void issue(const std::vector<SequencerCommand>& batch) = 0;
    /// A marker after everything issued so far (an event recorded on the stream).
    virtual Marker mark() = 0;
    /// Whether the device has passed the marker; never blocks. Throws RuntimeError when the communicator
    /// reported an asynchronous error.
    virtual bool passed(Marker marker) = 0;
    /// The marker is no longer needed.
    virtual void release(Marker marker) = 0;
};

class OrderedP2p {
public:
    /// Staging buffers come from `allocateStaging` (bytes → device pointer) and go back through
    /// `releaseStaging`. `device` must outlive this object.
    OrderedP2p(P2pDevice& device, std::function<void*(std::size_t)> allocateStaging,
        std::function<void(void*, std::size_t)> releaseStaging);
    /// Gives back every marker still held.
    ~OrderedP2p();
    OrderedP2p(const OrderedP2p&) = delete;
    OrderedP2p& operator=(const OrderedP2p&) = delete;

    /// TransferSequencer::setPlan: this rank's issue order for every step. Throws RuntimeError as it does.
    void setPlan(std::vector<PlannedTransfer> transfers);

    /// Comm::isend / irecv: registers the message and issues whatever the order allows now. Throws
    /// RuntimeError when a planned message's size differs from the plan, or the device refuses.
    RequestId isend(const void* data, std::size_t bytes, int peer, int tag);
    RequestId irecv(void* data, std::size_t bytes, int peer, int tag);

    /// The first half of Comm::wait: issues everything `request` needs. Throws RuntimeError for an unknown
    /// request, or one that cannot be issued (TransferSequencer::next with mustIssue: the executor left the
    /// schedule's order).
    void beginWait(RequestId request);
    /// The second half, called until it returns true: whether `request` completed (then it is released);
    /// never blocks. Throws RuntimeError when it was never issued or NCCL reported an asynchronous error.
    bool poll(RequestId request);
    /// Comm::test: issues what can be issued without forcing anything, then true (and released) when
    /// `request` completed; false while it is not issued or not done. Never blocks; never throws for a
    /// request that simply cannot be issued yet.
    bool test(RequestId request);

    /// Requests added and not yet released.
    std::size_t outstanding() const { return m_sequencer.outstanding(); }
    /// Staging buffers alive.
    std::size_t stagingBuffers() const { return m_sequencer.stagingBuffers(); }
    /// Markers held for issued requests not yet released.
    std::size_t markersHeld() const { return m_users.size(); }

private:
    void pump(RequestId waitingFor, bool mustIssue);
    void finish(RequestId request);

    P2pDevice& m_device;
    TransferSequencer m_sequencer;
    std::map<RequestId, P2pDevice::Marker> m_markerOf; ///< issued, not released
    std::map<P2pDevice::Marker, int> m_users; ///< marker → requests still holding it
};

} // namespace dps::runtime
