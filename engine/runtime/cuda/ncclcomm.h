#pragma once
// Comm over NCCL for ranks that each have their own GPU: one communicator (rank 0's ncclGetUniqueId
// broadcast over the bootstrap comm, normally MPI; ncclCommInitRank on every rank with its device set),
// ncclSend/ncclRecv in group calls on a dedicated stream, device buffers.
//
// NCCL has no tags: it matches sends and receives between two ranks in issue order, a send or receive
// blocks its stream on the GPU until the peer's counterpart runs, and one communicator's operations run one
// after another. So this comm issues the executor's tagged messages in the order of the transfer plan
// (transferorder.h) through OrderedP2p (orderedp2p.h, the host logic, tested without a GPU), which uses a
// TransferSequencer (transfersequencer.h); receives the executor has not posted yet when the order reaches
// them go to staging buffers (counted as Communication memory). The executor orders its compute against
// this stream through the host: it sends only after synchronize() and computes on a received buffer only
// after wait() saw the transfer's event pass. Collectives (barrier, gather, broadcast, reduceSum) and abort
// go through the bootstrap comm. docs/gpu.md.
//
// Part of the CUDA module (libdpstudio-cuda.so) in builds with DPS_HAVE_NCCL; programs create it through the
// module's table (cudamodule.h). Needs no NCCL header.
#include "orderedp2p.h"
#include "runtime/comm.h"
#include "transfersequencer.h"

#include <functional>
#include <memory>
#include <vector>

namespace dps::runtime {

class CudaBackend;

class NcclComm final : public Comm {
public:
    /// Collective over `bootstrap`: rank 0 creates the unique id, every rank joins the communicator on
    /// `backend`'s device (set current first, as ncclCommInitRank requires). Throws RuntimeError (rank,
    /// call, file, line) when NCCL fails. Both must outlive this comm.
    NcclComm(Comm& bootstrap, CudaBackend& backend);
    ~NcclComm() override;
    NcclComm(const NcclComm&) = delete;
    NcclComm& operator=(const NcclComm&) = delete;

    /// Collective: the order in which this rank issues the step's transfers, every step, with each one's
    /// executor tag and size in bytes (ncclTransfersOf() of jobsetup.h derives them from the schedule's
    /// transfer plan). Opens the NCCL connections to every rank in `peers` (the plan's peers and e.g. the ranks
    /// holding a replica of one of this rank's stages; this rank itself is ignored), so no connection is set
    /// up in the middle of a step.
    void setTransfers(std::vector<PlannedTransfer> transfers, const std::vector<int>& peers);
    /// A wait longer than this aborts the communicator and throws (0 = wait forever, the default: the
    /// launcher's --timeout ends a hung run).
    void setWaitTimeout(double seconds);

    int rank() const override;
    int size() const override;
    std::string name() const override { return "nccl"; }
    std::string version() const override;
    int maxTag() const override;
    bool acceptsDevicePointers() const override { return true; }

    RequestId isend(const void* data, std::size_t bytes, int peer, int tag) override;
    RequestId irecv(void* data, std::size_t bytes, int peer, int tag) override;
    void wait(RequestId request) override;
    bool test(RequestId request) override;

    void barrier() override;
    std::vector<std::vector<char>> gather(const std::vector<char>& mine, int root) override;
    void broadcast(std::vector<char>& data, int root) override;
    void reduceSum(double* data, std::size_t count, int root) override;
    [[noreturn]] void abort(int exitCode) override;

    /// Staging buffers alive now (for tests and the trace).
    std::size_t stagingBuffers() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace dps::runtime
