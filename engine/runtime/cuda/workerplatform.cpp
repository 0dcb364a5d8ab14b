#include "workerplatform.h"

#include "jobsetup.h"
#include "transferorder.h"

#include "protocol/backends.h"

namespace dps::runtime {

JobChoice CudaWorkerPlatform::choose(Comm& mpi, const std::string& backend)
{
    const std::optional<BackendChoice> requested = parseBackendChoice(backend);
    if (!requested)
        throw UsageError("--backend: expected " + backendNameList() + ", got '" + backend + "'");
    nameCheckRank(mpi.rank());
    m_rank = mpi.rank();
    m_selection = selectForJob(mpi, cudaRequest(*requested), localRankDevices());
    // The cpu backend talks through the job's comm as it is ("mpi"; "thread" in tests).
    const std::string comm = m_selection.backend == "cpu" ? mpi.name() : m_selection.comm;
    return JobChoice { m_selection.backend, comm,
        "backend " + m_selection.backend + ", comm " + comm + ": " + m_selection.reason };
}

std::unique_ptr<Backend> CudaWorkerPlatform::createBackend(bool bf16, int cpuThreads)
{
    return makeBackend(m_selection, m_rank, bf16, cpuThreads);
}

std::unique_ptr<Comm> CudaWorkerPlatform::createComm(Comm& mpi, Backend& backend)
{
    return makeComm(m_selection, mpi, backend);
}

void CudaWorkerPlatform::prepareTransfers(
    Comm& comm, const Schedule& schedule, const TagOf& tagOf, std::size_t messageBytes)
{
    dps::runtime::prepareTransfers(
        comm, schedule,
        [&tagOf](const Transfer& t) { return tagOf(t.consumer.stage, t.consumer.microbatch, t.gradient()); },
        messageBytes);
}

} // namespace dps::runtime
