#include "jobsetup.h"

#include "check.h"
#include "cudamodule.h"
#include "gpuinfo.h"
#include "runtime/cpubackend.h"
#include "transferorder.h"

#include <cstdlib>
#include <set>

namespace dps::runtime {

namespace {

/// A comm that is another under a different name: MPI carrying a GPU backend's messages through host
/// buffers is recorded as "mpi-host".
class RenamedComm final : public Comm {
public:
    RenamedComm(Comm& inner, std::string name)
        : m_inner(inner)
        , m_name(std::move(name))
    {
    }

    int rank() const override { return m_inner.rank(); }
    int size() const override { return m_inner.size(); }
    std::string name() const override { return m_name; }
    std::string version() const override { return m_inner.version(); }
    int maxTag() const override { return m_inner.maxTag(); }
    bool acceptsDevicePointers() const override { return m_inner.acceptsDevicePointers(); }
    RequestId isend(const void* data, std::size_t bytes, int peer, int tag) override
    {
        return m_inner.isend(data, bytes, peer, tag);
    }
    RequestId irecv(void* data, std::size_t bytes, int peer, int tag) override
    {
        return m_inner.irecv(data, bytes, peer, tag);
    }
    void wait(RequestId request) override { m_inner.wait(request); }
    bool test(RequestId request) override { return m_inner.test(request); }
    void beginCompute() override { m_inner.beginCompute(); }
    void endCompute() override { m_inner.endCompute(); }
    void barrier() override { m_inner.barrier(); }
    std::vector<std::vector<char>> gather(const std::vector<char>& mine, int root) override
    {
        return m_inner.gather(mine, root);
    }
    void broadcast(std::vector<char>& data, int root) override { m_inner.broadcast(data, root); }
    void reduceSum(double* data, std::size_t count, int root) override { m_inner.reduceSum(data, count, root); }
    [[noreturn]] void abort(int exitCode) override
    {
        m_inner.abort(exitCode);
        std::abort(); // the inner abort does not return either; this tells the compiler
    }

private:
    Comm& m_inner;
    std::string m_name;
};

/// The CUDA module's runtime table; throws RuntimeError(cudaWhyNot()) without it.
const CudaRuntimeApi& requireCudaRuntime()
{
    const CudaRuntimeApi* api = cudaRuntime();
    if (!api)
        throw RuntimeError(cudaWhyNot());
    return *api;
}

} // namespace

std::unique_ptr<Backend> makeBackend(const Selection& selection, int rank, bool bf16, int cpuThreads)
{
    if (selection.backend == "cpu")
        return std::make_unique<CpuBackend>(cpuThreads);
    if (selection.backend != "cuda")
        throw RuntimeError("backend '" + selection.backend + "' is unknown");
    const CudaRuntimeApi& api = requireCudaRuntime();
    CudaBackendOptions options;
    options.device = selection.deviceOfRank.at(static_cast<std::size_t>(rank));
    options.bf16 = bf16;
    return api.createBackend(options);
}

std::unique_ptr<Comm> makeComm(const Selection& selection, Comm& mpi, Backend& backend)
{
    if (selection.comm == "mpi")
        return nullptr;
    if (selection.comm == "mpi-host")
        return std::make_unique<RenamedComm>(mpi, "mpi-host");
    if (selection.comm != "nccl")
        throw RuntimeError("comm '" + selection.comm + "' is unknown");
    const CudaRuntimeApi& api = requireCudaRuntime();
    if (!api.ncclBuilt)
        throw RuntimeError("nccl: not built into the CUDA module");
    return api.createNcclComm(mpi, backend);
}

NcclTransfers ncclTransfersOf(const Schedule& schedule, int rank, const std::function<int(const Transfer&)>& tagOf,
    std::size_t messageBytes, int replicas)
{
    if (replicas < 1 || rank < 0 || rank >= schedule.ranks * replicas)
        throw RuntimeError("nccl transfers: comm rank " + std::to_string(rank) + " is not in "
            + std::to_string(schedule.ranks) + " ranks × " + std::to_string(replicas) + " replicas");
    // The placement rule of ExecutorOptions::replicas: comm rank = pipeline rank × replicas + replica.
    const int pipelineRank = rank / replicas;
    const int replica = rank % replicas;
    const auto commRank = [&](int pipeline, int of) { return pipeline * replicas + of; };
    const TransferPlan plan = deriveTransferPlan(schedule);
    std::set<int> peers;
    for (int p : plan.peersOf(pipelineRank))
        peers.insert(commRank(p, replica));
    // Every holder of one of its stages, in every replica, sums gradients with it after the step.
    std::vector<int> holders = replicaPeers(schedule, pipelineRank);
    holders.push_back(pipelineRank);
    for (int p : holders)
        for (int d = 0; d < replicas; ++d)
            peers.insert(commRank(p, d));
    peers.erase(rank);
    std::vector<PlannedTransfer> transfers = plannedTransfersOf(plan, pipelineRank, tagOf, messageBytes);
    for (PlannedTransfer& t : transfers)
        t.peer = commRank(t.peer, replica);
    return NcclTransfers { std::move(transfers), { peers.begin(), peers.end() } };
}

void prepareTransfers(
    Comm& comm, const Schedule& schedule, const std::function<int(const Transfer&)>& tagOf, std::size_t messageBytes)
{
    const CudaRuntimeApi* api = cudaRuntime();
    if (!api || comm.name() != "nccl")
        return;
    if (schedule.ranks < 1 || comm.size() % schedule.ranks != 0)
        throw RuntimeError("nccl transfers: the job has " + std::to_string(comm.size())
            + " ranks, not a multiple of the schedule's " + std::to_string(schedule.ranks));
    const NcclTransfers mine
        = ncclTransfersOf(schedule, comm.rank(), tagOf, messageBytes, comm.size() / schedule.ranks);
    if (!api->setNcclTransfers(comm, mine.transfers, mine.peers))
        throw RuntimeError("comm '" + comm.name() + "' is not the CUDA module's NcclComm");
}

std::string Job::describe() const
{
    return "backend " + selection.backend + ", comm " + selection.comm + ": " + selection.reason;
}

SelectionRequest cudaRequest(BackendChoice backend)
{
    return SelectionRequest { backend, CommChoice::Auto, cudaBuilt(), ncclBuilt(), cudaWhyNot() };
}

void nameCheckRank(int rank)
{
    setCheckRank(rank);
    if (const CudaRuntimeApi* api = cudaRuntime())
        api->setCheckRank(rank);
}

Job setUpJob(Comm& mpi, BackendChoice backend, bool bf16, int cpuThreads)
{
    nameCheckRank(mpi.rank());
    Job job;
    job.selection = selectForJob(mpi, cudaRequest(backend), localRankDevices());
    job.backend = makeBackend(job.selection, mpi.rank(), bf16, cpuThreads);
    job.ownComm = makeComm(job.selection, mpi, *job.backend);
    job.comm = job.ownComm ? job.ownComm.get() : &mpi;
    return job;
}

} // namespace dps::runtime
