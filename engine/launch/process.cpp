#include "process.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <poll.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace dps::launch {

namespace {

/// Closes a descriptor once; sets it to -1.
void closeFd(int& fd)
{
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

ExitStatus decode(int status)
{
    ExitStatus result;
    if (WIFEXITED(status))
        result.exitCode = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        result.signal = WTERMSIG(status);
    return result;
}

/// In the child, between fork and exec: only async-signal-safe calls. Leads a new process group, gets
/// SIGTERM when the thread that started it dies (so a killed launcher does not orphan mpirun), default
/// signal dispositions and an empty mask, stdin from /dev/null and the pipes as stdout/stderr. On
/// failure it writes errno to `report` and exits 127.
[[noreturn]] void execChild(char* const* argv, char* const* envp, int outWrite, int errWrite, int report, pid_t parent)
{
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    if (::getppid() != parent)
        ::_exit(127);
    struct sigaction standard { };
    standard.sa_handler = SIG_DFL;
    for (int sig : { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2, SIGTTIN, SIGTTOU })
        ::sigaction(sig, &standard, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int devNull = ::open("/dev/null", O_RDONLY);
    if (devNull < 0 || ::dup2(devNull, 0) < 0 || ::dup2(outWrite, 1) < 0 || ::dup2(errWrite, 2) < 0) {
        const int error = errno;
        [[maybe_unused]] const ssize_t n = ::write(report, &error, sizeof error);
        ::_exit(127);
    }
    ::execve(argv[0], argv, envp);
    const int error = errno;
    [[maybe_unused]] const ssize_t n = ::write(report, &error, sizeof error);
    ::_exit(127);
}

/// Waits for the child's report: 0 when exec succeeded (the pipe closed on exec), else its errno.
int execResult(int report)
{
    int error = 0;
    ssize_t n = 0;
    do
        n = ::read(report, &error, sizeof error);
    while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(sizeof error) ? error : 0;
}

/// What /proc/PID/stat tells about a process; ppid -1 when it is gone.
struct ProcStat {
    pid_t ppid = -1;
    char state = '?';
    unsigned long long startTime = 0;
};

ProcStat readStat(pid_t pid)
{
    ProcStat result;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!std::getline(in, text))
        return result;
    const std::size_t close = text.rfind(')'); // the command name may hold spaces and parentheses
    if (close == std::string::npos)
        return result;
    std::istringstream fields(text.substr(close + 2));
    std::string skip;
    fields >> result.state >> result.ppid;
    for (int field = 5; field < 22 && fields; ++field)
        fields >> skip;
    fields >> result.startTime;
    return result;
}

/// Every process's parent, from one pass over /proc.
std::map<pid_t, ProcStat> processTable()
{
    std::map<pid_t, ProcStat> table;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit))
            continue;
        const pid_t pid = static_cast<pid_t>(std::stol(name));
        const ProcStat stat = readStat(pid);
        if (stat.ppid >= 0)
            table[pid] = stat;
    }
    return table;
}

/// Descendants of `root` in `table`, parents before their children; zombies (and what hangs below them)
/// left out when `skipZombies`.
std::vector<pid_t> descendantsIn(const std::map<pid_t, ProcStat>& table, pid_t root, bool skipZombies)
{
    std::vector<pid_t> found;
    for (std::size_t i = 0; i <= found.size(); ++i) { // i = 0: the root; i > 0: found[i − 1]
        const pid_t parent = i == 0 ? root : found[i - 1];
        for (const auto& [pid, stat] : table)
            if (stat.ppid == parent && pid != root && !(skipZombies && stat.state == 'Z')
                && std::find(found.begin(), found.end(), pid) == found.end())
                found.push_back(pid);
    }
    return found;
}

bool sameProcessAlive(pid_t pid, unsigned long long startTime)
{
    const ProcStat stat = readStat(pid);
    return stat.ppid >= 0 && stat.startTime == startTime && stat.state != 'Z';
}

std::vector<char*> cStrings(const std::vector<std::string>& strings)
{
    std::vector<char*> result;
    result.reserve(strings.size() + 1);
    for (const std::string& s : strings)
        result.push_back(const_cast<char*>(s.c_str()));
    result.push_back(nullptr);
    return result;
}

} // namespace

std::string ExitStatus::describe() const
{
    if (signal > 0)
        return "signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    return "exit code " + std::to_string(exitCode);
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env)
{
    if (argv.empty())
        throw std::system_error(EINVAL, std::generic_category(), "spawn");
    int pipes[3][2]; // stdout, stderr, exec report
    for (int i = 0; i < 3; ++i)
        if (::pipe2(pipes[i], O_CLOEXEC) != 0) {
            const int error = errno;
            for (int j = 0; j < i; ++j) {
                ::close(pipes[j][0]);
                ::close(pipes[j][1]);
            }
            throw std::system_error(error, std::generic_category(), "pipe");
        }
    std::vector<char*> args = cStrings(argv);
    std::vector<char*> envp = cStrings(env);
    const pid_t parent = ::getpid();
    m_pid = ::fork();
    if (m_pid == 0)
        execChild(args.data(), envp.data(), pipes[0][1], pipes[1][1], pipes[2][1], parent);
    const int forkError = m_pid < 0 ? errno : 0;
    for (auto& p : pipes)
        ::close(p[1]);
    m_out = pipes[0][0];
    m_err = pipes[1][0];
    const int error = forkError ? forkError : execResult(pipes[2][0]);
    ::close(pipes[2][0]);
    if (error == 0)
        return;
    if (m_pid > 0)
        while (::waitpid(m_pid, nullptr, 0) < 0 && errno == EINTR) { }
    m_pid = -1;
    closeFd(m_out);
    closeFd(m_err);
    throw std::system_error(error, std::generic_category(), argv[0]);
}

ChildProcess::~ChildProcess()
{
    finish();
    closeFd(m_out);
    closeFd(m_err);
}

void ChildProcess::closeOutput(int fd)
{
    if (fd == m_out)
        closeFd(m_out);
    else if (fd == m_err)
        closeFd(m_err);
}

bool ChildProcess::hasExited()
{
    if (m_status || m_pid <= 0)
        return true;
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    if (::waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == ECHILD;
    return info.si_pid != 0;
}

void ChildProcess::signalGroup(int sig)
{
    if (m_pid > 0 && !m_status)
        ::kill(-m_pid, sig);
}

void ChildProcess::signalAll(int sig)
{
    signalGroup(sig);
    for (const Known& k : m_known)
        if (sameProcessAlive(k.pid, k.startTime))
            ::kill(k.pid, sig);
}

void ChildProcess::trackDescendants()
{
    if (m_pid <= 0 || m_status)
        return;
    const std::map<pid_t, ProcStat> table = processTable();
    for (const pid_t pid : descendantsIn(table, m_pid, false)) {
        const unsigned long long startTime = table.at(pid).startTime;
        const bool seen = std::any_of(
            m_known.begin(), m_known.end(), [&](const Known& k) { return k.pid == pid && k.startTime == startTime; });
        if (!seen)
            m_known.push_back({ pid, startTime });
    }
}

void ChildProcess::killKnown()
{
    for (const Known& k : m_known)
        if (sameProcessAlive(k.pid, k.startTime))
            ::kill(k.pid, SIGKILL);
}

void ChildProcess::reapKnown()
{
    // Descendants orphaned while we are the subreaper are our children now: reap them. Others belong to
    // their own parents (or init), which reap them.
    const pid_t self = ::getpid();
    for (const Known& k : m_known) {
        const ProcStat stat = readStat(k.pid);
        if (stat.ppid == self && stat.startTime == k.startTime)
            while (::waitpid(k.pid, nullptr, 0) < 0 && errno == EINTR) { }
    }
}

ExitStatus ChildProcess::finish()
{
    if (m_status)
        return *m_status;
    if (m_pid <= 0)
        return ExitStatus {};
    if (!hasExited())
        trackDescendants();
    ::kill(-m_pid, SIGKILL);
    killKnown();
    int status = 0;
    pid_t got = -1;
    do
        got = ::waitpid(m_pid, &status, 0);
    while (got < 0 && errno == EINTR);
    m_status = got == m_pid ? decode(status) : ExitStatus {};
    reapKnown();
    return *m_status;
}

std::vector<pid_t> descendantProcesses(pid_t pid)
{
    return descendantsIn(processTable(), pid, true);
}

bool processIsAlive(pid_t pid)
{
    if (pid <= 0)
        return false;
    const ProcStat stat = readStat(pid);
    return stat.ppid >= 0 && stat.state != 'Z' && stat.state != 'X';
}

void adoptOrphans()
{
    ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

std::vector<std::string> LineSplitter::feed(const char* data, std::size_t size)
{
    std::vector<std::string> lines;
    m_buffer.append(data, size);
    std::size_t start = 0;
    for (std::size_t nl = m_buffer.find('\n'); nl != std::string::npos; nl = m_buffer.find('\n', start)) {
        lines.push_back(m_buffer.substr(start, nl - start));
        start = nl + 1;
    }
    m_buffer.erase(0, start);
    return lines;
}

std::string LineSplitter::takeRest()
{
    std::string rest;
    rest.swap(m_buffer);
    return rest;
}

std::vector<std::string> environmentWith(const std::vector<std::string>& overrides)
{
    auto nameOf = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) {
        const std::string entry(*e);
        bool replaced = false;
        for (const std::string& o : overrides)
            replaced = replaced || nameOf(o) == nameOf(entry);
        if (!replaced)
            env.push_back(entry);
    }
    env.insert(env.end(), overrides.begin(), overrides.end());
    return env;
}

CapturedRun runCaptured(
    const std::vector<std::string>& argv, const std::vector<std::string>& env, std::chrono::milliseconds timeout)
{
    CapturedRun run;
    std::optional<ChildProcess> child;
    try {
        child.emplace(argv, env);
    } catch (const std::system_error& e) {
        run.err = (argv.empty() ? std::string("(no command)") : argv[0]) + ": " + e.code().message();
        return run;
    }
    run.started = true;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (child->stdoutFd() >= 0 || child->stderrFd() >= 0) {
        const auto left
            = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            run.timedOut = true;
            run.status = child->finish(); // kills the group
            return run;
        }
        pollfd fds[2] = { { child->stdoutFd(), POLLIN, 0 }, { child->stderrFd(), POLLIN, 0 } };
        if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR)
            break;
        for (const pollfd& p : fds) {
            if (p.fd < 0 || p.revents == 0)
                continue;
            char buffer[4096];
            const ssize_t n = ::read(p.fd, buffer, sizeof buffer);
            if (n > 0)
                (p.fd == child->stdoutFd() ? run.out : run.err).append(buffer, static_cast<std::size_t>(n));
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
                child->closeOutput(p.fd);
        }
    }
    while (!child->hasExited() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    run.timedOut = !child->hasExited();
    run.status = child->finish();
    return run;
}

std::optional<std::string> captureOutput(const std::vector<std::string>& argv, std::chrono::milliseconds timeout)
{
    CapturedRun run = runCaptured(argv, environmentWith({}), timeout);
    if (!run.started || run.timedOut || run.status.exitCode != 0)
        return std::nullopt;
    return std::move(run.out);
}

} // namespace dps::launch
