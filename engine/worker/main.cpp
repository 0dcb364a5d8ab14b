// dpstudio-worker: one MPI rank of a run. Parses the command line, picks OpenBLAS's kernels for this CPU,
// starts MPI and hands over to dps::runtime::runWorker (engine/runtime/worker.h) with the platform that
// knows the cuda backend and NCCL (engine/runtime/cuda/workerplatform.h, which loads the CUDA module at run
// time), so --backend auto|cpu|cuda is decided here. Exit status: 0 success, 1 correctness failed or bad
// project, 2 bad flags, 3 anything else (among them --backend cuda without the CUDA module: "CUDA backend not
// available"). With --probe-info, --probe-compute or --probe-p2p first it measures this machine instead
// (engine/runtime/probe.h, docs/cpu-profile.md): exit status 0, 2 for bad flags, 3 when the probe fails.
// `dpstudio-worker --version` prints "dpstudio-worker VERSION" (base/version.h) and exits 0.
#include "base/version.h"
#include "runtime/cpubackend.h"
#include "runtime/cuda/workerplatform.h"
#include "runtime/mpicomm.h"
#include "runtime/probe.h"
#include "runtime/worker.h"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

/// Re-executes this program with OPENBLAS_CORETYPE set when the CPU backend prefers a core type on this
/// machine for `blasThreads` threads (preferredBlasCore: the CPU's features and the measured winner cached by
/// `dpstudio devices --probe`) and the environment names none (OpenBLAS reads it when it is loaded, before
/// main). Runs before MPI_Init, so mpirun sees the same process. Returns when nothing was done or the exec
/// failed.
void selectBlasCoreType(char** argv, int blasThreads)
{
    if (std::getenv("OPENBLAS_CORETYPE"))
        return;
    const std::string core = dps::runtime::preferredBlasCoreType(blasThreads);
    if (core.empty() || ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0)
        return;
    ::execv("/proc/self/exe", argv);
}

std::string commandLine(int argc, char** argv)
{
    std::string text;
    for (int i = 0; i < argc; ++i)
        text += (i ? " " : "") + std::string(argv[i]);
    return text;
}

} // namespace

int main(int argc, char** argv)
{
    using namespace dps::runtime;
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 1 && args.front() == "--version") {
        std::cout << "dpstudio-worker " DPS_VERSION "\n";
        return dps::kExitOk;
    }
    if (isProbeMode(args)) {
        ProbeOptions probe;
        try {
            probe = parseProbeArgs(args);
        } catch (const UsageError& e) {
            std::cerr << "dpstudio-worker: " << e.what() << "\n" << probeUsage() << "\n";
            return dps::kExitUsage;
        }
        return runProbe(probe, &argc, &argv, std::cout, std::cerr);
    }
    WorkerOptions options;
    try {
        options = parseWorkerArgs(args);
    } catch (const UsageError& e) {
        std::cerr << "dpstudio-worker: " << e.what() << "\n" << workerUsage() << "\n";
        return dps::kExitUsage;
    }
    selectBlasCoreType(argv, options.threads);
    if (options.command.empty())
        options.command = commandLine(argc, argv);
    std::unique_ptr<MpiComm> comm;
    try {
        comm = std::make_unique<MpiComm>(&argc, &argv);
    } catch (const std::exception& e) {
        std::cerr << "dpstudio-worker: " << e.what() << "\n";
        return dps::kExitRunFailed;
    }
    CudaWorkerPlatform platform;
    return runWorker(options, *comm, WorkerStreams { std::cout, std::cerr }, platform);
}
