#pragma once
// dpstudio-worker's program logic (docs/worker-protocol.md): one rank loads the project, builds its stages,
// runs warm-up and measured steps, checks correctness against the sequential reference and, on rank 0,
// writes measured.json and the traces. engine/worker/main.cpp only parses the command line, creates the
// MPI comm and calls runWorker.
#include "backend.h"
#include "comm.h"
#include "model.h"
#include "project/project.h"
#include "schedule/schedule.h"
#include "sim/costmodel.h"

#include <chrono>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <memory>
#include "protocol/exitcodes.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace dps::runtime {

struct WorkerOptions {
    std::string project; ///< --project FILE (required)
    std::string variant; ///< --variant NAME; empty = the project's active variant
    std::string backend = "auto"; ///< --backend cpu|cuda|auto
    int steps = 3; ///< --steps K (≥ 1): measured steps
    int warmup = 1; ///< --warmup K (≥ 0)
    int threads = 1; ///< --threads N (≥ 1): BLAS threads per rank
    std::string output; ///< --output FILE (required)
    std::string traceDir; ///< --trace-dir DIR
    std::string command; ///< --command TEXT: the dpstudio command line, recorded in measured.json
    /// --recv-window N: receives posted ahead (the prediction assumes the default)
    int receiveWindow = kDefaultReceiveWindow;
};

/// Thrown for a bad command line; what() says which flag and why.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Reads the flag at args[i] and its value, either "--flag=value" or "--flag value" (then advances i past
/// the value): the one rule of every dpstudio-worker mode's arguments. Throws UsageError "<flag>: missing
/// value" when the value is absent.
void takeFlag(const std::vector<std::string>& args, std::size_t& i, std::string& flag, std::string& value);

/// The model a run of `variant` of `project` trains, as the worker builds it (sizes, partition, seed; a
/// transformer with its MoE gating). Throws FormatError for a block model with a size below 1.
ModelSpec modelSpec(const Project& project, const Variant& variant);

/// Parses the arguments after the program name. Throws UsageError.
WorkerOptions parseWorkerArgs(const std::vector<std::string>& args);
/// One line of usage text.
std::string workerUsage();

/// Where the worker writes: `events` gets the JSON lines (stdout), `log` the human text (stderr).
struct WorkerStreams {
    std::ostream& events;
    std::ostream& log;
};

/// The job's decision on backend and communication; the same on every rank.
struct JobChoice {
    std::string backend; ///< "cpu" | "cuda"
    std::string comm; ///< the name of the comm the executor will use: "mpi", "thread", "nccl", "mpi-host"
    /// One line to print and record, e.g. "backend cpu, comm mpi: cpu (auto: cuda: not built)".
    std::string description;
};

/// How the worker obtains its compute backend and communication: the steps of the job setup, each called
/// by the worker on every rank, with the ranks agreeing on the outcome between them, so a failure on one
/// rank never leaves the others inside a collective. dps::cuda depends on dps::runtime, so the platform
/// that knows the cuda backend and NCCL (runtime/cuda/workerplatform.h) is passed in by
/// engine/worker/main.cpp; CpuPlatform, the default, knows only the cpu backend.
class WorkerPlatform {
public:
    /// A transfer's message tag: RankExecutor::messageTag(consumer stage, consumer microbatch, kind).
    using TagOf = std::function<int(int consumerStage, int consumerMicrobatch, bool gradient)>;

    virtual ~WorkerPlatform() = default;
    /// Collective over `mpi`: decides backend and communication from --backend (auto|cpu|cuda) and
    /// remembers the decision for the steps below. Returns the same choice on every rank, or throws the
    /// same RuntimeError (UsageError for an unknown name) on every rank.
    virtual JobChoice choose(Comm& mpi, const std::string& backend) = 0;
    /// This rank's compute backend for the choice (not collective). `bf16`: the project's model dtype;
    /// `cpuThreads`: --threads.
    virtual std::unique_ptr<Backend> createBackend(bool bf16, int cpuThreads) = 0;
    /// Collective over `mpi`: the communication the executor uses on top of `mpi` (which outlives it), or
    /// nullptr when `mpi` serves as it is.
    virtual std::unique_ptr<Comm> createComm(Comm& mpi, Backend& backend) = 0;
    /// Collective over `comm` (the executor's), once the executor exists: gives a comm without tags (NCCL)
    /// the schedule's transfer order; messages are `messageBytes` long. Default: nothing.
    virtual void prepareTransfers(Comm& comm, const Schedule& schedule, const TagOf& tagOf, std::size_t messageBytes) {
    }
};

/// The platform of a build without dps::cuda: --backend cpu and auto give the cpu backend over the job's
/// comm; cuda is refused ("cuda: not built into this dpstudio-worker").
class CpuPlatform final : public WorkerPlatform {
public:
    JobChoice choose(Comm& mpi, const std::string& backend) override;
    std::unique_ptr<Backend> createBackend(bool bf16, int cpuThreads) override;
    std::unique_ptr<Comm> createComm(Comm& mpi, Backend& backend) override;
};

/// Which progress events a rank writes: the last one of every step (done == total) always, any other only
/// when at least `interval` passed since the previous event written, so a rank writes at most about ten
/// lines a second however short its actions are (Open MPI's forwarding of the ranks' output drops and cuts
/// lines, and can stall mpirun, at thousands of lines a second).
class ProgressThrottle {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::milliseconds kDefaultInterval { 100 };

    /// `start`: when the rank began (the first event within a step waits `interval` from there).
    explicit ProgressThrottle(Clock::time_point start = Clock::now(), Clock::duration interval = kDefaultInterval)
        : m_last(start)
        , m_interval(interval)
    {
    }
    /// Whether to write the event (done of total actions, at `now`); when true, counts it as written.
    bool admit(int done, int total, Clock::time_point now);

private:
    Clock::time_point m_last;
    Clock::duration m_interval;
};

/// Runs the worker on this rank; returns the exit status (dps::ExitCode: kExitOk, kExitContent for a failed check or a bad project, kExitRunFailed otherwise). Every rank of the comm calls it.
/// The backend and the communication come from `platform` (one per rank); the overload without one uses a
/// CpuPlatform. An unexpected failure on a rank prints an error event and aborts the whole job
/// (Comm::abort(3)). Fault injection for tests, by environment: DPSTUDIO_WORKER_CRASH_RANK=r kills rank r
/// (SIGKILL) in the middle of its first step, DPSTUDIO_WORKER_HANG_RANK=r makes it sleep there forever,
/// DPSTUDIO_WORKER_THROW_RANK=r makes it throw there.
int runWorker(const WorkerOptions& options, Comm& comm, const WorkerStreams& streams, WorkerPlatform& platform);
int runWorker(const WorkerOptions& options, Comm& comm, const WorkerStreams& streams);

} // namespace dps::runtime
