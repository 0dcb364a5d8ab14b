#pragma once
// `dpstudio run`: validates a project, starts `mpirun … dpstudio-worker …` (Open MPI) as a child process
// group, follows its progress stream, enforces the timeout, forwards cancellation, and prints predicted
// against measured. No MPI headers: mpirun is only a child process.
#include "project/project.h"
#include "protocol/exitcodes.h"
#include "schedule/schedule.h"

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace dps::launch {

/// What to run and how: the one run-options type. The CLI fills it from `dpstudio run`'s flags, the
/// designer fills it and turns it into that command line with runCommandArguments.
struct RunOptions {
    std::string project; ///< project file (*.dpstudio.json)
    std::string variant; ///< empty = the project's active variant
    std::string backend = "auto"; ///< auto | cpu | cuda
    int steps = 3; ///< measured steps
    int warmup = 1; ///< warm-up steps (not measured)
    std::string hostfile; ///< Open MPI hostfile; empty = this machine only
    double timeoutS = 600; ///< seconds without a progress event before a hung run is ended
    int threads = 1; ///< BLAS threads per rank
    bool progressJson = false; ///< forward the worker's JSON lines on stdout, humans' text on stderr
    std::string output; ///< measured.json to write
    std::string traceDir; ///< Chrome traces, one per rank plus a combined one; empty = none
    std::string costsFile; ///< costs.json laid over the project's costs (prediction and the project run)
    /// --profile FILE: the CPU profile a CPU run on this machine is predicted with (docs/cpu-profile.md);
    /// empty = this machine's cached profile, probed when the cache lacks the variant's shape
    std::string profile;
    bool nominal = false; ///< --nominal: predict for the project's devices even for a CPU run on this machine
    std::vector<std::string> argv; ///< the dpstudio command line, recorded in the measured trace
    double graceS = 3.0; ///< after SIGTERM, seconds before SIGKILL
    bool handleSignals = true; ///< catch SIGINT/SIGTERM while running and end the run with 130
    bool interactive = false; ///< redraw one progress line in place (stderr is a terminal)
};

/// Where mpirun is: $DPSTUDIO_MPIRUN when set (even if it does not exist: then the run reports it
/// missing), else the first executable `mpirun` on PATH; nullopt when none.
std::optional<std::filesystem::path> findMpirun();
/// First line of `mpirun --version` (e.g. "mpirun (Open MPI) 4.1.4"); empty when it cannot be run.
std::string mpirunVersion(const std::filesystem::path& mpirun);

/// This executable, from /proc/self/exe (empty when unreadable).
std::filesystem::path selfExecutable();
/// Where dpstudio-worker is: $DPSTUDIO_WORKER; else next to `exe`; else `exe`/../libexec/dpstudio-worker;
/// else the first of `extra` that exists. nullopt when none is an executable file.
std::optional<std::filesystem::path> findWorker(
    const std::filesystem::path& exe = selfExecutable(), const std::vector<std::filesystem::path>& extra = {});

/// A project checked and ready to run: the variant made active, --costs applied.
struct PreparedRun {
    Project project;
    std::string variant;
    Schedule schedule;
    int processes = 0; ///< MPI processes: the schedule's ranks × the variant's dp (data-parallel replicas)
};

/// Loads and checks the project before anything starts: the variant exists, its layer partition covers
/// the model's layers, the schedule builds, has the variant's ranks and passes the validator; applies
/// --costs. Throws IoError when a file cannot be read, FormatError/ConstraintError naming what is wrong.
PreparedRun prepareRun(const RunOptions& options);

/// Whether one process of this user can read another's memory with process_vm_readv (Linux cross-memory
/// attach, Open MPI's single-copy transfer between ranks on one host): checked once per process by two
/// sibling child processes, as mpirun's ranks are; Yama's ptrace_scope ≥ 1 or a seccomp filter make it fail.
/// Never throws (a failed fork counts as "no").
bool crossMemoryAttachWorks();
/// The options mpirun gets between `-np RANKS` and the worker (see mpirunCommand); the CPU probe's p2p
/// part (cpuprobe.h) starts its two ranks with the same ones.
std::vector<std::string> mpirunOptions(const RunOptions& options);
/// The mpirun command line: mpirun -np RANKS, then on one machine `--oversubscribe --mca btl self,vader`
/// (plus `--mca btl_vader_single_copy_mechanism none` where crossMemoryAttachWorks() is false), with a
/// hostfile `--hostfile F --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none`; `--bind-to
/// none` with more than one thread; then the worker and its arguments (docs/worker-protocol.md). Paths are
/// passed as given.
std::vector<std::string> mpirunCommand(const RunOptions& options, const std::filesystem::path& mpirun,
    const std::filesystem::path& worker, const std::filesystem::path& projectFile, const std::string& variant,
    int ranks);
/// Environment entries added for mpirun: as root, OMPI_ALLOW_RUN_AS_ROOT=1 and
/// OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; nothing else.
std::vector<std::string> mpirunEnvironment(bool asRoot);
/// The arguments of `dpstudio run` (after the program name) that give `options` back when parsed:
/// `run PROJECT [--progress-json] -o OUTPUT [--variant V] --backend B --steps N --warmup N --threads N
/// --timeout S [--hostfile F] [--trace-dir D] [--costs F] [--profile F] [--nominal]` (strings only when set;
/// S in seconds, shortest exact decimal). argv, graceS, handleSignals and interactive are not flags and are not
/// written. Throws nothing; the values are not checked (dpstudio checks them).
std::vector<std::string> runCommandArguments(const RunOptions& options);

/// A command line joined for humans and the trace, quoting words that need it.
std::string joinCommandLine(const std::vector<std::string>& argv);

/// Runs the project end to end and returns the exit code (RunExit). Before starting it decides what the run
/// is predicted with (report.h chooseRunCostSource: for a CPU run here, this machine's CPU profile, probed
/// when missing) and says so with the predicted makespan; after it, the table compares the measurement with
/// that prediction. Writes the progress stream (with progressJson) and the final table to `out` or `err` as
/// the options say; every message for humans goes to `err`, prefixed "dpstudio: ". With progressJson, a run
/// that returns non-zero ends `out` with the failed event (failedEventLine: the exit code and why). The run is
/// ended, exit 3, when timeoutS pass without a progress event. Never throws for a failed run; every process it
/// started is ended before it returns.
int runProject(const RunOptions& options, std::ostream& out, std::ostream& err);

} // namespace dps::launch
