#include "jobsetup.h"

#include "check.h"
#include "gpuinfo.h"
#include "runtime/cpubackend.h"
#include "transferorder.h"

#include <cstdlib>

#ifdef DPS_HAVE_CUDA
#include "cudabackend.h"
#endif
#ifdef DPS_HAVE_NCCL
#include "ncclcomm.h"
#endif

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

} // namespace

std::unique_ptr<Backend> makeBackend(const Selection& selection, int rank, bool bf16, int cpuThreads)
{
    if (selection.backend == "cpu")
        return std::make_unique<CpuBackend>(cpuThreads);
    if (selection.backend != "cuda")
        throw RuntimeError("backend '" + selection.backend + "' is unknown");
#ifdef DPS_HAVE_CUDA
    CudaBackendOptions options;
    options.device = selection.deviceOfRank.at(static_cast<std::size_t>(rank));
    options.bf16 = bf16;
    return std::make_unique<CudaBackend>(options);
#else
    (void)rank;
    (void)bf16;
    throw RuntimeError("cuda: not built into this dpstudio-worker");
#endif
}

std::unique_ptr<Comm> makeComm(const Selection& selection, Comm& mpi, Backend& backend)
{
    if (selection.comm == "mpi")
        return nullptr;
    if (selection.comm == "mpi-host")
        return std::make_unique<RenamedComm>(mpi, "mpi-host");
    if (selection.comm != "nccl")
        throw RuntimeError("comm '" + selection.comm + "' is unknown");
#ifdef DPS_HAVE_NCCL
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (!cuda)
        throw RuntimeError("nccl needs the cuda backend, not " + backend.name());
    return std::make_unique<NcclComm>(mpi, *cuda);
#else
    (void)backend;
    throw RuntimeError("nccl: not built into this dpstudio-worker");
#endif
}

void prepareTransfers(
    Comm& comm, const Schedule& schedule, const std::function<int(const Transfer&)>& tagOf, std::size_t messageBytes)
{
#ifdef DPS_HAVE_NCCL
    if (auto* nccl = dynamic_cast<NcclComm*>(&comm))
        nccl->setTransferPlan(deriveTransferPlan(schedule), tagOf, messageBytes, replicaPeers(schedule, comm.rank()));
#else
    (void)comm;
    (void)schedule;
    (void)tagOf;
    (void)messageBytes;
#endif
}

std::string Job::describe() const
{
    return "backend " + selection.backend + ", comm " + selection.comm + ": " + selection.reason;
}

Job setUpJob(Comm& mpi, BackendChoice backend, bool bf16, int cpuThreads)
{
    setCheckRank(mpi.rank());
    Job job;
    const SelectionRequest request { backend, CommChoice::Auto, cudaBuilt(), ncclBuilt() };
    job.selection = selectForJob(mpi, request, localRankDevices());
    job.backend = makeBackend(job.selection, mpi.rank(), bf16, cpuThreads);
    job.ownComm = makeComm(job.selection, mpi, *job.backend);
    job.comm = job.ownComm ? job.ownComm.get() : &mpi;
    return job;
}

void markStepStarted(Backend& backend)
{
#ifdef DPS_HAVE_CUDA
    if (auto* cuda = dynamic_cast<CudaBackend*>(&backend))
        cuda->stepStarted();
#else
    (void)backend;
#endif
}

std::optional<ActionSpan> lastDeviceSpan(Backend& backend)
{
#ifdef DPS_HAVE_CUDA
    if (auto* cuda = dynamic_cast<CudaBackend*>(&backend))
        return cuda->lastActionSpan();
#else
    (void)backend;
#endif
    return std::nullopt;
}

} // namespace dps::runtime
