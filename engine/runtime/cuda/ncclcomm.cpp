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

namespace {

/// NCCL groups and CUDA events on the communicator's stream (OrderedP2p's device).
class NcclDevice final : public P2pDevice {
public:
    ~NcclDevice() override
    {
        for (cudaEvent_t e : m_events)
            cudaEventDestroy(e);
    }

    void attach(ncclComm_t comm, cudaStream_t stream)
    {
        m_comm = comm;
        m_stream = stream;
    }
    ncclComm_t comm() const { return m_comm; }
    cudaStream_t stream() const { return m_stream; }
    /// After ncclCommAbort: every later call fails instead of using the aborted communicator.
    void detach() { m_comm = nullptr; }

    void issue(const std::vector<SequencerCommand>& batch) override
    {
        using K = SequencerCommand::Kind;
        requireComm();
        const bool transfers
            = std::any_of(batch.begin(), batch.end(), [](const auto& c) { return c.kind != K::CopyFromStaging; });
        if (transfers) {
            DPS_NCCL_CHECK(ncclGroupStart());
            try {
                for (const auto& c : batch) {
                    if (c.kind == K::Send)
                        DPS_NCCL_CHECK(ncclSend(c.source, c.bytes, ncclUint8, c.peer, m_comm, m_stream));
                    else if (c.kind == K::Receive)
                        DPS_NCCL_CHECK(ncclRecv(c.data, c.bytes, ncclUint8, c.peer, m_comm, m_stream));
                }
            } catch (...) {
                ncclGroupEnd(); // leave no group open on this thread: the error, not a dangling group, is seen
                throw;
            }
            DPS_NCCL_CHECK(ncclGroupEnd());
        }
        // Stream order: the copies run after the group's receives into staging have completed.
        for (const auto& c : batch)
            if (c.kind == K::CopyFromStaging)
                DPS_CUDA_CHECK(cudaMemcpyAsync(c.data, c.source, c.bytes, cudaMemcpyDeviceToDevice, m_stream));
    }

    Marker mark() override
    {
        Marker m = -1;
        if (!m_free.empty()) {
            m = m_free.back();
            m_free.pop_back();
        } else {
            cudaEvent_t e = nullptr;
            DPS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
            m_events.push_back(e);
            m = static_cast<Marker>(m_events.size() - 1);
        }
        DPS_CUDA_CHECK(cudaEventRecord(m_events[static_cast<std::size_t>(m)], m_stream));
        return m;
    }

    bool passed(Marker marker) override
    {
        const cudaError_t rc = cudaEventQuery(m_events.at(static_cast<std::size_t>(marker)));
        if (rc == cudaErrorNotReady) {
            requireComm();
            ncclResult_t async = ncclSuccess;
            DPS_NCCL_CHECK(ncclCommGetAsyncError(m_comm, &async));
            DPS_NCCL_CHECK(async);
            return false;
        }
        DPS_CUDA_CHECK(rc);
        return true;
    }

    void release(Marker marker) override { m_free.push_back(marker); }

private:
    void requireComm() const
    {
        if (!m_comm)
            throw RuntimeError("nccl: the communicator was aborted or never created");
    }

    ncclComm_t m_comm = nullptr;
    cudaStream_t m_stream = nullptr;
    std::vector<cudaEvent_t> m_events;
    std::vector<Marker> m_free;
};

} // namespace

struct NcclComm::Impl {
    Comm& bootstrap;
    CudaBackend& backend;
    NcclDevice device; ///< declared before p2p: p2p gives its markers back to it
    OrderedP2p p2p;
    double timeoutS = 0.0;

    Impl(Comm& bootstrapComm, CudaBackend& cudaBackend)
        : bootstrap(bootstrapComm)
        , backend(cudaBackend)
        , p2p(
              device, [this](std::size_t bytes) { return backend.allocate(bytes, MemoryCategory::Communication); },
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
        DPS_CUDA_CHECK(cudaSetDevice(backend.device())); // ncclCommInitRank: the rank's device must be current
        cudaStream_t stream = nullptr;
        DPS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        device.attach(nullptr, stream);
        ncclComm_t comm = nullptr;
        DPS_NCCL_CHECK(ncclCommInitRank(&comm, bootstrap.size(), id, bootstrap.rank()));
        device.attach(comm, stream);
    }

    /// Opens connections with a tiny exchange with every peer, all in one group (both sides do the same):
    /// NCCL connects every channel to a peer on the first operation with it, which involves the peer's host,
    /// so it must not happen for the first time in the middle of a step.
    void connect(const std::vector<int>& peers)
    {
        if (peers.empty())
            return;
        void* buffer = nullptr;
        const std::size_t bytes = 2 * peers.size() * 4;
        DPS_CUDA_CHECK(cudaMalloc(&buffer, bytes));
        try {
            DPS_CUDA_CHECK(cudaMemsetAsync(buffer, 0, bytes, device.stream()));
            auto* base = static_cast<char*>(buffer);
            std::vector<SequencerCommand> batch;
            for (std::size_t i = 0; i < peers.size(); ++i) {
                using K = SequencerCommand::Kind;
                batch.push_back({ K::Send, kNoRequest, peers[i], 0, nullptr, base + 8 * i, 4 });
                batch.push_back({ K::Receive, kNoRequest, peers[i], 0, base + 8 * i + 4, nullptr, 4 });
            }
            device.issue(batch);
            DPS_CUDA_CHECK(cudaStreamSynchronize(device.stream()));
        } catch (...) {
            cudaFree(buffer);
            throw;
        }
        DPS_CUDA_CHECK(cudaFree(buffer));
    }

    void abortComm()
    {
        if (device.comm())
            ncclCommAbort(device.comm());
        device.detach();
    }
};

NcclComm::NcclComm(Comm& bootstrap, CudaBackend& backend)
    : m_impl(std::make_unique<Impl>(bootstrap, backend))
{
    try {
        m_impl->join();
    } catch (...) {
        if (m_impl->device.stream())
            cudaStreamDestroy(m_impl->device.stream()); // the destructor does not run for a failed constructor
        throw;
    }
}

NcclComm::~NcclComm()
{
    Impl& d = *m_impl;
    if (d.device.stream())
        cudaStreamSynchronize(d.device.stream());
    if (d.device.comm())
        ncclCommDestroy(d.device.comm());
    d.device.detach();
    if (d.device.stream())
        cudaStreamDestroy(d.device.stream());
}

void NcclComm::setTransfers(std::vector<PlannedTransfer> transfers, const std::vector<int>& peers)
{
    Impl& d = *m_impl;
    d.p2p.setPlan(std::move(transfers));
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
    return m_impl->p2p.isend(data, bytes, peer, tag);
}

RequestId NcclComm::irecv(void* data, std::size_t bytes, int peer, int tag)
{
    return m_impl->p2p.irecv(data, bytes, peer, tag);
}

void NcclComm::wait(RequestId request)
{
    Impl& d = *m_impl;
    d.p2p.beginWait(request);
    const auto start = std::chrono::steady_clock::now();
    while (!d.p2p.poll(request)) {
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (d.timeoutS > 0 && waited > d.timeoutS) {
            d.abortComm();
            throw RuntimeError("nccl: rank " + std::to_string(rank()) + " waited " + std::to_string(waited)
                + " s for a transfer; the communicator was aborted");
        }
        std::this_thread::yield();
    }
}

bool NcclComm::test(RequestId request)
{
    return m_impl->p2p.test(request);
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
    m_impl->abortComm();
    m_impl->bootstrap.abort(exitCode);
    std::abort(); // the bootstrap's abort does not return either; this tells the compiler
}

std::size_t NcclComm::stagingBuffers() const
{
    return m_impl->p2p.stagingBuffers();
}

} // namespace dps::runtime
