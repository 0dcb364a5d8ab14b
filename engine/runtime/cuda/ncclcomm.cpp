#include "ncclcomm.h"

#include "cudabackend.h"
#include "cudacheck.h"
#include "cudaruntime.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <utility>

namespace dps::runtime {

struct NcclComm::Impl {
    Comm& bootstrap;
    CudaBackend& backend;
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    TransferSequencer sequencer;
    std::map<RequestId, cudaEvent_t> eventOf; ///< issued requests → event after their group
    std::map<cudaEvent_t, int> eventUsers;
    std::vector<cudaEvent_t> freeEvents;
    double timeoutS = 0.0;

    Impl(Comm& bootstrapComm, CudaBackend& cudaBackend)
        : bootstrap(bootstrapComm)
        , backend(cudaBackend)
        , sequencer([this](std::size_t bytes) { return backend.allocate(bytes, MemoryCategory::Communication); },
              [this](void* ptr, std::size_t bytes) { backend.deallocate(ptr, bytes, MemoryCategory::Communication); })
    {
    }

    void join()
    {
        ncclUniqueId id {};
        if (bootstrap.rank() == 0)
            DPS_NCCL_CHECK(ncclGetUniqueId(&id));
        std::vector<char> bytes(reinterpret_cast<const char*>(&id), reinterpret_cast<const char*>(&id) + sizeof id);
        bootstrap.broadcast(bytes, 0);
        if (bytes.size() != sizeof id)
            throw RuntimeError("nccl: the unique id broadcast arrived with " + std::to_string(bytes.size()) + " bytes");
        std::memcpy(&id, bytes.data(), sizeof id);
        DPS_CUDA_CHECK(cudaSetDevice(backend.device()));
        DPS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        DPS_NCCL_CHECK(ncclCommInitRank(&comm, bootstrap.size(), id, bootstrap.rank()));
    }

    cudaEvent_t takeEvent()
    {
        if (!freeEvents.empty()) {
            cudaEvent_t e = freeEvents.back();
            freeEvents.pop_back();
            return e;
        }
        cudaEvent_t e = nullptr;
        DPS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        return e;
    }

    /// Issues what the sequencer hands out: one NCCL group, then copies out of staging, then one event.
    void pump(RequestId waitingFor)
    {
        const auto commands = sequencer.next(waitingFor);
        if (commands.empty())
            return;
        issueGroup(commands);
        for (const auto& c : commands)
            if (c.kind == SequencerCommand::Kind::CopyFromStaging)
                DPS_CUDA_CHECK(cudaMemcpyAsync(c.data, c.source, c.bytes, cudaMemcpyDeviceToDevice, stream));
        cudaEvent_t done = takeEvent();
        DPS_CUDA_CHECK(cudaEventRecord(done, stream));
        int users = 0;
        for (const auto& c : commands)
            if (c.request != kNoRequest) {
                eventOf[c.request] = done;
                ++users;
            }
        if (users == 0)
            freeEvents.push_back(done); // staged receives only: nobody waits on this event
        else
            eventUsers[done] = users;
    }

    void issueGroup(const std::vector<SequencerCommand>& commands)
    {
        using K = SequencerCommand::Kind;
        const bool any
            = std::any_of(commands.begin(), commands.end(), [](const auto& c) { return c.kind != K::CopyFromStaging; });
        if (!any)
            return;
        DPS_NCCL_CHECK(ncclGroupStart());
        for (const auto& c : commands) {
            if (c.kind == K::Send)
                DPS_NCCL_CHECK(ncclSend(c.source, c.bytes, ncclUint8, c.peer, comm, stream));
            else if (c.kind == K::Receive)
                DPS_NCCL_CHECK(ncclRecv(c.data, c.bytes, ncclUint8, c.peer, comm, stream));
        }
        DPS_NCCL_CHECK(ncclGroupEnd());
    }

    /// Whether the request's event has passed; throws when NCCL reported an asynchronous error.
    bool passed(RequestId request)
    {
        const auto it = eventOf.find(request);
        if (it == eventOf.end())
            throw RuntimeError(
                "nccl: rank " + std::to_string(bootstrap.rank()) + ": unknown request " + std::to_string(request));
        const cudaError_t rc = cudaEventQuery(it->second);
        if (rc == cudaErrorNotReady) {
            ncclResult_t async = ncclSuccess;
            DPS_NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
            DPS_NCCL_CHECK(async);
            return false;
        }
        DPS_CUDA_CHECK(rc);
        return true;
    }

    void finish(RequestId request)
    {
        const auto it = eventOf.find(request);
        cudaEvent_t e = it->second;
        eventOf.erase(it);
        if (--eventUsers[e] == 0) {
            eventUsers.erase(e);
            freeEvents.push_back(e);
        }
        sequencer.release(request);
    }

    /// Opens connections with a tiny exchange with every peer, all in one group (both sides do the same).
    void connect(const std::vector<int>& peers)
    {
        if (peers.empty())
            return;
        void* buffer = nullptr;
        const std::size_t bytes = 2 * peers.size() * 4;
        DPS_CUDA_CHECK(cudaMalloc(&buffer, bytes));
        DPS_CUDA_CHECK(cudaMemsetAsync(buffer, 0, bytes, stream));
        auto* base = static_cast<char*>(buffer);
        DPS_NCCL_CHECK(ncclGroupStart());
        for (std::size_t i = 0; i < peers.size(); ++i) {
            DPS_NCCL_CHECK(ncclSend(base + 8 * i, 4, ncclUint8, peers[i], comm, stream));
            DPS_NCCL_CHECK(ncclRecv(base + 8 * i + 4, 4, ncclUint8, peers[i], comm, stream));
        }
        DPS_NCCL_CHECK(ncclGroupEnd());
        DPS_CUDA_CHECK(cudaStreamSynchronize(stream));
        DPS_CUDA_CHECK(cudaFree(buffer));
    }
};

NcclComm::NcclComm(Comm& bootstrap, CudaBackend& backend)
    : m_impl(std::make_unique<Impl>(bootstrap, backend))
{
    m_impl->join();
}

NcclComm::~NcclComm()
{
    Impl& d = *m_impl;
    if (d.stream)
        cudaStreamSynchronize(d.stream);
    for (auto& [e, users] : d.eventUsers)
        cudaEventDestroy(e);
    for (cudaEvent_t e : d.freeEvents)
        cudaEventDestroy(e);
    if (d.comm)
        ncclCommDestroy(d.comm);
    if (d.stream)
        cudaStreamDestroy(d.stream);
}

void NcclComm::setTransfers(std::vector<PlannedTransfer> transfers, const std::vector<int>& peers)
{
    Impl& d = *m_impl;
    d.sequencer.setPlan(std::move(transfers));
    std::set<int> others(peers.begin(), peers.end());
    others.erase(rank());
    d.connect({ others.begin(), others.end() });
}

void NcclComm::setWaitTimeout(double seconds)
{
    m_impl->timeoutS = seconds;
}

int NcclComm::rank() const
{
    return m_impl->bootstrap.rank();
}

int NcclComm::size() const
{
    return m_impl->bootstrap.size();
}

std::string NcclComm::version() const
{
    return cudamodule::ncclVersionText() + " (bootstrap " + m_impl->bootstrap.version() + ")";
}

int NcclComm::maxTag() const
{
    return m_impl->bootstrap.maxTag();
}

RequestId NcclComm::isend(const void* data, std::size_t bytes, int peer, int tag)
{
    const RequestId id = m_impl->sequencer.add(true, const_cast<void*>(data), bytes, peer, tag);
    m_impl->pump(kNoRequest);
    return id;
}

RequestId NcclComm::irecv(void* data, std::size_t bytes, int peer, int tag)
{
    const RequestId id = m_impl->sequencer.add(false, data, bytes, peer, tag);
    m_impl->pump(kNoRequest);
    return id;
}

void NcclComm::wait(RequestId request)
{
    Impl& d = *m_impl;
    d.pump(request);
    const auto start = std::chrono::steady_clock::now();
    while (!d.passed(request)) {
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (d.timeoutS > 0 && waited > d.timeoutS) {
            ncclCommAbort(d.comm);
            d.comm = nullptr;
            throw RuntimeError("nccl: rank " + std::to_string(rank()) + " waited " + std::to_string(waited)
                + " s for a transfer; the communicator was aborted");
        }
        std::this_thread::yield();
    }
    d.finish(request);
}

bool NcclComm::test(RequestId request)
{
    Impl& d = *m_impl;
    d.pump(request);
    if (!d.sequencer.issued(request) || !d.passed(request))
        return false;
    d.finish(request);
    return true;
}

void NcclComm::barrier()
{
    m_impl->bootstrap.barrier();
}

std::vector<std::vector<char>> NcclComm::gather(const std::vector<char>& mine, int root)
{
    return m_impl->bootstrap.gather(mine, root);
}

void NcclComm::broadcast(std::vector<char>& data, int root)
{
    m_impl->bootstrap.broadcast(data, root);
}

void NcclComm::reduceSum(double* data, std::size_t count, int root)
{
    m_impl->bootstrap.reduceSum(data, count, root);
}

void NcclComm::abort(int exitCode)
{
    if (m_impl->comm)
        ncclCommAbort(m_impl->comm);
    m_impl->comm = nullptr;
    m_impl->bootstrap.abort(exitCode);
    std::abort(); // the bootstrap's abort does not return either; this tells the compiler
}

std::size_t NcclComm::stagingBuffers() const
{
    return m_impl->sequencer.stagingBuffers();
}

} // namespace dps::runtime
