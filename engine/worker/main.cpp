// dpstudio-worker: one MPI rank of a run. Picks OpenBLAS's kernels for this CPU, parses the command line,
// starts MPI and hands over to dps::runtime::runWorker (engine/runtime/worker.h) with the platform that
// knows the cuda backend and NCCL (engine/runtime/cuda/workerplatform.h, which loads the CUDA module at run
// time), so --backend auto|cpu|cuda is decided here. Exit status: 0 success, 1 correctness failed or bad
// project, 3 anything else (among them --backend cuda without the CUDA module: "CUDA backend not available").
#include "runtime/cpubackend.h"
#include "runtime/cuda/workerplatform.h"
#include "runtime/mpicomm.h"
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
/// machine and the environment names none (OpenBLAS reads it when it is loaded, before main). Runs before
/// MPI_Init, so mpirun sees the same process. Returns when nothing was done or the exec failed.
void selectBlasCoreType(char** argv)
{
    if (std::getenv("OPENBLAS_CORETYPE"))
        return;
    const std::string core = dps::runtime::preferredBlasCoreType();
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
    selectBlasCoreType(argv);
    WorkerOptions options;
    try {
        options = parseWorkerArgs(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const UsageError& e) {
        std::cerr << "dpstudio-worker: " << e.what() << "\n" << workerUsage() << "\n";
        return dps::kExitRunFailed;
    }
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
