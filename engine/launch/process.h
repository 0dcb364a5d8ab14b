#pragma once
// A child process in its own process group, with its stdout and stderr on pipes: the launcher's only
// contact with mpirun. Linux (fork + exec, /proc, prctl); no MPI headers.
#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dps::launch {

/// How a child ended: exitCode ≥ 0 when it exited, signal > 0 when a signal ended it.
struct ExitStatus {
    int exitCode = -1;
    int signal = 0;
    /// "exit code 3" or "signal 9 (Killed)".
    std::string describe() const;
};

/// One spawned process and the group it leads. stdin is /dev/null (a background group must never read
/// the terminal); stdout and stderr are separate pipes. The destructor kills the whole group (SIGKILL)
/// and every descendant seen by trackDescendants() (Open MPI puts each rank in a process group of its
/// own), and reaps the child, so no process outlives its ChildProcess.
class ChildProcess {
public:
    /// Starts `argv[0]` (a path, not looked up on PATH) with `env` ("NAME=value" entries) as its whole
    /// environment, as the leader of a new process group. The child gets SIGTERM if the calling thread
    /// dies first (PR_SET_PDEATHSIG), so call it from a thread that outlives the child. Throws
    /// std::system_error when it cannot start (e.g. ENOENT, EACCES).
    ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const { return m_pid; }
    /// Read ends of the pipes; -1 once closed with closeOutput().
    int stdoutFd() const { return m_out; }
    int stderrFd() const { return m_err; }
    void closeOutput(int fd);

    /// Whether the leader has exited (it is not reaped yet, so its group id stays reserved).
    bool hasExited();
    /// Sends `sig` to every process of the group (ignores "no such process").
    void signalGroup(int sig);
    /// Sends `sig` to the group and to every descendant recorded so far.
    void signalAll(int sig);
    /// Records the leader's current descendants (found through /proc), so they can be ended even after
    /// they leave the group or are orphaned. Cheap enough to call a few times a second.
    void trackDescendants();
    /// SIGKILLs the group and the recorded descendants, reaps the leader (and the recorded descendants
    /// that became our children) and returns how the leader ended. Idempotent.
    ExitStatus finish();

private:
    struct Known {
        pid_t pid;
        unsigned long long startTime; ///< /proc/PID/stat field 22, tells a reused pid apart
    };
    void killKnown();
    void reapKnown();

    pid_t m_pid = -1;
    int m_out = -1;
    int m_err = -1;
    std::optional<ExitStatus> m_status;
    std::vector<Known> m_known;
};

/// Every live descendant of `pid` (children, grandchildren, …; zombies left out), parents before their
/// children, found through /proc. Empty where /proc cannot be read or `pid` has none. Used by the designer
/// to end a run that does not stop on SIGTERM: dpstudio, mpirun (in its own group) and the ranks.
std::vector<pid_t> descendantProcesses(pid_t pid);

/// Whether `pid` exists and is not a zombie (an ended process nobody reaped yet), from /proc/PID/stat.
bool processIsAlive(pid_t pid);

/// Makes this process the reaper of orphaned descendants (Linux PR_SET_CHILD_SUBREAPER), so ranks whose
/// mpirun died are re-parented here and can be ended and reaped. Process-wide; call once before spawning.
void adoptOrphans();

/// Runs a short command to completion and returns its stdout; nullopt when it cannot start, ends
/// unsuccessfully or exceeds `timeout` (then its group is killed).
std::optional<std::string> captureOutput(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

/// How a short command ended and what it wrote.
struct CapturedRun {
    bool started = false; ///< false when it could not start (`err` says why)
    bool timedOut = false; ///< it ran past the timeout and its group was killed
    ExitStatus status;
    std::string out; ///< its stdout
    std::string err; ///< its stderr
};

/// Runs `argv` (argv[0] a path) with `env` ("NAME=value" entries) as its whole environment to completion,
/// collecting stdout and stderr; after `timeout` its group is killed (timedOut). Never throws for the
/// command's failures.
CapturedRun runCaptured(
    const std::vector<std::string>& argv, const std::vector<std::string>& env, std::chrono::milliseconds timeout);

/// The current environment as "NAME=value" entries, with `overrides` replacing or adding entries.
std::vector<std::string> environmentWith(const std::vector<std::string>& overrides);

/// Splits incoming bytes into lines (without the '\n'); keeps a trailing partial line for later.
class LineSplitter {
public:
    /// Appends bytes and returns the lines completed by them.
    std::vector<std::string> feed(const char* data, std::size_t size);
    /// The unterminated rest, emptied (call at end of stream).
    std::string takeRest();

private:
    std::string m_buffer;
};

} // namespace dps::launch
