#pragma once
// dpstudio-worker's program logic (docs/worker-protocol.md): one rank loads the project, builds its stages,
// runs warm-up and measured steps, checks correctness against the sequential reference and, on rank 0,
// writes measured.json and the traces. engine/worker/main.cpp only parses the command line, creates the
// MPI comm and calls runWorker.
#include "comm.h"

#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

namespace dps::runtime {

/// Exit statuses of the worker.
enum WorkerExit : int {
    kWorkerOk = 0,
    kWorkerCheckFailed = 1, ///< the correctness check failed, or the project/schedule is bad
    kWorkerFailed = 3, ///< anything else (bad flags, a crash, I/O)
};

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
    int receiveWindow = 8; ///< --recv-window N: receives posted ahead
};

/// Thrown for a bad command line; what() says which flag and why.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Parses the arguments after the program name. Throws UsageError.
WorkerOptions parseWorkerArgs(const std::vector<std::string>& args);
/// One line of usage text.
std::string workerUsage();

/// Where the worker writes: `events` gets the JSON lines (stdout), `log` the human text (stderr).
struct WorkerStreams {
    std::ostream& events;
    std::ostream& log;
};

/// Runs the worker on this rank; returns the exit status (WorkerExit). Every rank of the comm calls it.
/// An unexpected failure on a rank prints an error event and aborts the whole job (Comm::abort(3)).
/// Fault injection for tests, by environment: DPSTUDIO_WORKER_CRASH_RANK=r kills rank r (SIGKILL) in the
/// middle of its first step, DPSTUDIO_WORKER_HANG_RANK=r makes it sleep there forever,
/// DPSTUDIO_WORKER_THROW_RANK=r makes it throw there.
int runWorker(const WorkerOptions& options, Comm& comm, const WorkerStreams& streams);

} // namespace dps::runtime
