#include "launcher.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "base/format.h"
#include "base/hostinfo.h"
#include "process.h"
#include "progress.h"
#include "project/modelcost.h"
#include "project/predict.h"
#include "report.h"
#include "schedule/validator.h"
#include "trace/measured.h"

#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <ostream>
#include <poll.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

namespace dps::launch {

using namespace dps::machine;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string envValue(const char* name)
{
    const char* value = std::getenv(name);
    return value ? value : "";
}

/// The shortest decimal text that reads back as exactly `value` ("600", "1.5", "0.1").
std::string shortestDecimal(double value)
{
    char buffer[64];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
    return error == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

bool isExecutableFile(const fs::path& path)
{
    std::error_code ec;
    return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

const Variant& selectVariant(const Project& project, const std::string& name)
{
    if (name.empty())
        return project.active();
    if (const Variant* v = project.find(name))
        return *v;
    std::string known;
    for (const Variant& v : project.variants)
        known += (known.empty() ? "" : ", ") + v.name;
    throw FormatError("the project has no variant \"" + name + "\" (its variants: " + known + ")");
}

void checkRanks(const Variant& variant, const Schedule& schedule)
{
    const int listed = static_cast<int>(schedule.order.size());
    if (schedule.ranks != variant.ranks || listed != variant.ranks)
        throw ConstraintError("run.ranks",
            "variant \"" + variant.name + "\": " + std::to_string(variant.ranks) + " ranks, but its schedule has "
                + std::to_string(listed) + " rank lists");
}

void checkValid(const Variant& variant, const Schedule& schedule)
{
    const ValidationReport report = validate(schedule);
    if (report.valid())
        return;
    std::string first;
    for (const Diagnostic& d : report.diagnostics)
        if (d.severity == Severity::Error && first.empty())
            first = format(d);
    throw ConstraintError("run.invalid-schedule",
        "variant \"" + variant.name + "\": the schedule is invalid (" + std::to_string(report.errorCount())
            + " errors), first: " + first);
}

/// A private folder for the project file that runs; removed with everything in it.
class TempDir {
public:
    explicit TempDir(const fs::path& parent)
    {
        std::string pattern = (parent / "dpstudio-run-XXXXXX").string();
        if (!::mkdtemp(pattern.data()))
            throw IoError(parent.string() + ": cannot create a temporary folder: " + std::strerror(errno));
        m_path = pattern;
    }
    ~TempDir()
    {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

// ------------------------------------------------------------------------------------- signals

int g_signalPipe[2] = { -1, -1 };
volatile std::sig_atomic_t g_signal = 0;

extern "C" void onSignal(int sig)
{
    g_signal = sig;
    const char byte = 1;
    if (g_signalPipe[1] >= 0) [[maybe_unused]]
        const ssize_t n = ::write(g_signalPipe[1], &byte, 1);
}

/// While alive: SIGINT, SIGTERM and SIGHUP end the run (noted, and a byte on a pipe wakes the loop);
/// SIGPIPE is ignored so a vanished reader of our stdout cannot kill us before the ranks are ended.
class SignalGuard {
public:
    explicit SignalGuard(bool enabled)
        : m_enabled(enabled)
    {
        if (!m_enabled)
            return;
        g_signal = 0;
        if (::pipe2(g_signalPipe, O_CLOEXEC | O_NONBLOCK) != 0)
            g_signalPipe[0] = g_signalPipe[1] = -1;
        struct sigaction action { };
        action.sa_handler = onSignal;
        sigemptyset(&action.sa_mask);
        for (std::size_t i = 0; i < kSignals.size(); ++i)
            ::sigaction(kSignals[i], &action, &m_old[i]);
        struct sigaction ignore { };
        ignore.sa_handler = SIG_IGN;
        ::sigaction(SIGPIPE, &ignore, &m_oldPipe);
    }
    ~SignalGuard()
    {
        if (!m_enabled)
            return;
        for (std::size_t i = 0; i < kSignals.size(); ++i)
            ::sigaction(kSignals[i], &m_old[i], nullptr);
        ::sigaction(SIGPIPE, &m_oldPipe, nullptr);
        for (int& fd : g_signalPipe) {
            if (fd >= 0)
                ::close(fd);
            fd = -1;
        }
    }
    SignalGuard(const SignalGuard&) = delete;
    SignalGuard& operator=(const SignalGuard&) = delete;

    int fd() const { return m_enabled ? g_signalPipe[0] : -1; }
    bool raised() const { return m_enabled && g_signal != 0; }

private:
    static constexpr std::array<int, 3> kSignals { SIGINT, SIGTERM, SIGHUP };
    bool m_enabled;
    std::array<struct sigaction, 3> m_old {};
    struct sigaction m_oldPipe { };
};

// ------------------------------------------------------------------------------------- session

/// One `dpstudio run`: the child, the stream it produces and how it ended.
class Session {
public:
    Session(const RunOptions& options, std::ostream& out, std::ostream& err)
        : m_options(options)
        , m_out(out)
        , m_err(err)
    {
    }
    int run();

private:
    enum class Stop { None, Timeout, Cancel };

    int launch(const PreparedRun& prepared, const fs::path& mpirun, const fs::path& worker);
    void choosePrediction(const PreparedRun& prepared);
    void pump(ChildProcess& child, const SignalGuard& signals);
    void superviseStep(ChildProcess& child, const SignalGuard& signals, bool& exited);
    void readReady(ChildProcess& child, int fd, LineSplitter& splitter);
    void onStdoutLine(const std::string& line);
    void onStderrLine(const std::string& line);
    void human(const std::string& text);
    int fail(int code, const std::string& why, const std::string& headline = {});
    void armDeadline();
    void forward(const std::string& line);
    void forwardJson(const std::string& line, EventKind kind);
    void flushHeldJson(bool includingDone);
    void writeJson(const std::string& line);
    void showProgress();
    void clearProgress();
    int outcome(const ExitStatus& status);
    std::string failureText(const ExitStatus& status) const;
    void report(const PreparedRun& prepared);
    fs::path scratchParent() const;

    const RunOptions& m_options;
    std::ostream& m_out;
    std::ostream& m_err;
    ProgressTracker m_tracker;
    MpirunFailureScanner m_scanner;
    Stop m_stop = Stop::None;
    Clock::time_point m_deadline;
    std::optional<Clock::time_point> m_killAt;
    std::optional<Clock::time_point> m_drainUntil;
    Clock::time_point m_nextTrack;
    LineSplitter m_stdoutLines;
    LineSplitter m_stderrLines;
    std::vector<std::string> m_beforeHello; ///< progress lines that arrived before hello
    std::optional<std::string> m_doneLine; ///< the done line, forwarded when the stream ends
    bool m_progressShown = false;
    bool m_streamEnded = false; ///< no progress line after the run ended
    CostSource m_prediction; ///< what the run is compared with (chosen before it starts)
    Clock::time_point m_lastDraw;
    int m_lastStepShown = -2;
};

int Session::run()
{
    PreparedRun prepared;
    try {
        prepared = prepareRun(m_options);
    } catch (const IoError& e) {
        return fail(kExitUsage, e.what(), "error: ");
    } catch (const Error& e) {
        return fail(kExitContent, e.what() + std::string("; nothing was started"), "error: ");
    }
    const std::optional<fs::path> mpirun = findMpirun();
    if (!mpirun || !isExecutableFile(*mpirun)) {
        const std::string env = envValue("DPSTUDIO_MPIRUN");
        return fail(kExitRunFailed,
            "mpirun not found: install openmpi-bin or set DPSTUDIO_MPIRUN"
                + (env.empty() ? std::string() : " (DPSTUDIO_MPIRUN=" + env + " is not an executable file)"));
    }
    const std::optional<fs::path> worker = findWorker();
    if (!worker)
        return fail(kExitRunFailed,
            "dpstudio-worker not found: set DPSTUDIO_WORKER, or install it next to dpstudio or in ../libexec "
            "relative to it");
    try {
        choosePrediction(prepared);
    } catch (const IoError& e) {
        return fail(kExitUsage, e.what(), "error: ");
    } catch (const Error& e) {
        return fail(kExitContent, e.what() + std::string("; nothing was started"), "error: ");
    }
    try {
        return launch(prepared, *mpirun, *worker);
    } catch (const IoError& e) {
        return fail(kExitUsage, e.what(), "error: ");
    }
}

/// What the run is compared with (report.h chooseRunCostSource, which may probe this machine first), and the
/// prediction itself, said before the run starts.
void Session::choosePrediction(const PreparedRun& prepared)
{
    m_prediction = chooseRunCostSource(prepared.project, prepared.variant, m_options.backend,
        !m_options.hostfile.empty(), m_options.nominal, m_options.profile, m_options.threads, m_err);
    for (const std::string& note : m_prediction.notes)
        human("note: " + note);
    if (!m_prediction.profile)
        return;
    const Prediction p = predictWith(m_prediction, prepared.project, prepared.variant, false);
    if (!p.valid()) {
        human("note: no prediction for this machine: " + p.error);
        return;
    }
    human("predicted for " + m_prediction.label(prepared.project)
        + (m_options.costsFile.empty() ? "" : ", with the costs of " + m_options.costsFile) + ": makespan "
        + formatTime(p.makespanUs) + ", bubble " + formatPercent(p.bubbleRate) + " ("
        + formatCountOf(std::size_t(prepared.schedule.ranks), "rank")
        + (prepared.processes > prepared.schedule.ranks ? " per replica)" : ")"));
    if (p.drawn)
        human("  (makespan: " + describeDrawn(*p.drawn) + ")");
}

fs::path Session::scratchParent() const
{
    // With a hostfile the other hosts read the project too: keep it beside the output, which is
    // expected on a shared folder; on one machine the system's temporary folder does.
    if (m_options.hostfile.empty())
        return fs::temp_directory_path();
    return fs::absolute(m_options.output).parent_path();
}

int Session::launch(const PreparedRun& prepared, const fs::path& mpirun, const fs::path& worker)
{
    RunOptions options = m_options;
    options.output = fs::absolute(m_options.output).string();
    if (!options.traceDir.empty())
        options.traceDir = fs::absolute(m_options.traceDir).string();
    if (!fs::is_directory(fs::path(options.output).parent_path()))
        throw IoError(m_options.output + ": cannot write: its folder does not exist");
    const TempDir scratch(scratchParent());
    const fs::path projectFile = scratch.path() / "project.dpstudio.json";
    saveProject(prepared.project, projectFile);

    const std::vector<std::string> argv
        = mpirunCommand(options, mpirun, worker, projectFile, prepared.variant, prepared.processes);
    const SignalGuard signals(m_options.handleSignals);
    adoptOrphans();
    std::optional<ChildProcess> child;
    try {
        child.emplace(argv, environmentWith(mpirunEnvironment(::geteuid() == 0)));
    } catch (const std::system_error& e) {
        return fail(kExitRunFailed, "cannot start " + mpirun.string() + ": " + e.code().message());
    }
    if (!m_options.progressJson)
        human("running variant \"" + prepared.variant + "\" on " + std::to_string(prepared.schedule.ranks) + " ranks"
            + (prepared.processes != prepared.schedule.ranks
                    ? " × dp " + std::to_string(prepared.processes / prepared.schedule.ranks) + " = "
                        + std::to_string(prepared.processes) + " processes"
                    : std::string())
            + ": " + joinCommandLine(argv));
    pump(*child, signals);
    const int code = outcome(child->finish());
    if (code == kExitOk || (code == kExitContent && m_tracker.done()))
        report(prepared);
    return code;
}

/// The run times out `timeoutS` after now: called when it starts and on every event of its progress stream, so
/// a long run that keeps progressing is never ended, and a hung one is ended that long after its last event.
void Session::armDeadline()
{
    m_deadline
        = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(m_options.timeoutS));
}

void Session::pump(ChildProcess& child, const SignalGuard& signals)
{
    armDeadline();
    m_nextTrack = Clock::now();
    bool exited = false;
    for (;;) {
        superviseStep(child, signals, exited);
        const bool drained = child.stdoutFd() < 0 && child.stderrFd() < 0;
        if (exited && (drained || Clock::now() >= *m_drainUntil))
            break;
        pollfd fds[3] = { { child.stdoutFd(), POLLIN, 0 }, { child.stderrFd(), POLLIN, 0 },
            { exited ? -1 : signals.fd(), POLLIN, 0 } };
        if (::poll(fds, 3, 25) < 0 && errno != EINTR)
            break;
        if (fds[0].revents != 0)
            readReady(child, fds[0].fd, m_stdoutLines);
        if (fds[1].revents != 0)
            readReady(child, fds[1].fd, m_stderrLines);
        if (fds[2].revents != 0) {
            char drain[64];
            while (::read(fds[2].fd, drain, sizeof drain) > 0) { }
        }
    }
    flushHeldJson(true);
    clearProgress();
    m_streamEnded = true;
}

/// One look at the clock, the signals and the child: track its descendants, start or escalate the
/// ending, and once it exited give its output a short while to drain.
void Session::superviseStep(ChildProcess& child, const SignalGuard& signals, bool& exited)
{
    const auto now = Clock::now();
    if (!exited && child.hasExited()) {
        exited = true;
        child.finish();
        m_drainUntil = now + std::chrono::seconds(2);
        return;
    }
    if (exited)
        return;
    if (now >= m_nextTrack) {
        child.trackDescendants();
        m_nextTrack = now + std::chrono::milliseconds(200);
    }
    if (m_stop == Stop::None && (signals.raised() || now >= m_deadline)) {
        m_stop = signals.raised() ? Stop::Cancel : Stop::Timeout;
        child.trackDescendants(); // the whole tree, before SIGTERM orphans parts of it
        child.signalGroup(SIGTERM);
        m_killAt = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(m_options.graceS));
    }
    if (m_killAt && now >= *m_killAt) {
        exited = true;
        child.finish();
        m_drainUntil = now + std::chrono::seconds(2);
    }
}

void Session::readReady(ChildProcess& child, int fd, LineSplitter& splitter)
{
    char buffer[65536];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    const bool isStdout = fd == child.stdoutFd();
    auto deliver = [&](const std::string& line) { isStdout ? onStdoutLine(line) : onStderrLine(line); };
    if (n > 0) {
        for (const std::string& line : splitter.feed(buffer, static_cast<std::size_t>(n)))
            deliver(line);
        return;
    }
    if (const std::string rest = splitter.takeRest(); !rest.empty())
        deliver(rest);
    child.closeOutput(fd);
}

void Session::onStdoutLine(const std::string& line)
{
    const std::optional<ProgressEvent> event = parseProgressLine(line);
    if (!event) {
        forward(line);
        return;
    }
    armDeadline();
    m_tracker.apply(*event);
    if (event->kind == EventKind::Hello && event->newerFormat())
        human("warning: the worker's progress format_version " + std::to_string(event->formatVersion)
            + " is newer than this build reads (" + std::to_string(protocol::kProgressFormatVersion) + ")");
    if (m_options.progressJson) {
        forwardJson(line, event->kind);
        return;
    }
    if (event->kind == EventKind::Error)
        human("rank " + std::to_string(event->rank) + ": " + event->message);
    showProgress();
}

/// Forwards an event line unchanged, but in the contract's order: the ranks' streams reach mpirun
/// independently, so progress that overtook rank 0's hello waits for it, and done is held back until
/// the stream ends so that it stays last.
void Session::forwardJson(const std::string& line, EventKind kind)
{
    if (kind == EventKind::Done) {
        if (m_doneLine)
            writeJson(*m_doneLine);
        m_doneLine = line;
        return;
    }
    if (kind == EventKind::Progress && !m_tracker.hello()) {
        m_beforeHello.push_back(line);
        return;
    }
    writeJson(line);
    if (kind == EventKind::Hello)
        flushHeldJson(false);
}

void Session::flushHeldJson(bool includingDone)
{
    for (const std::string& held : m_beforeHello)
        writeJson(held);
    m_beforeHello.clear();
    if (includingDone && m_doneLine)
        writeJson(*m_doneLine);
    if (includingDone)
        m_doneLine.reset();
}

void Session::writeJson(const std::string& line)
{
    m_out << line << '\n';
    m_out.flush();
}

void Session::onStderrLine(const std::string& line)
{
    m_scanner.feed(line);
    forward(line);
}

void Session::forward(const std::string& line)
{
    clearProgress();
    m_err << line << '\n';
    m_err.flush();
    showProgress();
}

void Session::human(const std::string& text)
{
    clearProgress();
    m_err << "dpstudio: " << text << '\n';
    m_err.flush();
    showProgress();
}

/// Ends the run with `code`: says `headline` + `why` on stderr and, with progressJson, writes the failed event
/// carrying `why` as the stream's last line (docs/worker-protocol.md). Returns `code`.
int Session::fail(int code, const std::string& why, const std::string& headline)
{
    human(headline + why);
    if (m_options.progressJson)
        writeJson(failedEventLine(code, why));
    return code;
}

void Session::clearProgress()
{
    if (!m_progressShown)
        return;
    m_err << "\r\033[K";
    m_err.flush();
    m_progressShown = false;
}

void Session::showProgress()
{
    if (m_options.progressJson || !m_tracker.hello() || m_streamEnded)
        return;
    if (m_options.interactive) {
        const auto now = Clock::now();
        if (m_progressShown && now - m_lastDraw < std::chrono::milliseconds(100))
            return; // at most ten redraws a second
        m_lastDraw = now;
        m_err << "\r\033[Kdpstudio: " << m_tracker.render();
        m_err.flush();
        m_progressShown = true;
        return;
    }
    const int step = m_tracker.currentStep();
    if (step == m_lastStepShown || step < 0)
        return;
    m_lastStepShown = step;
    m_err << "dpstudio: " << m_tracker.render() << '\n';
    m_err.flush();
}

std::string Session::failureText(const ExitStatus& status) const
{
    std::string text;
    if (!m_tracker.errors().empty()) {
        const ProgressEvent& e = m_tracker.errors().front();
        text = "rank " + std::to_string(e.rank) + ": " + e.message;
    }
    if (const auto& f = m_scanner.failure()) {
        const std::string crash = "rank " + std::to_string(f->rank) + " " + f->cause;
        text = text.empty() ? crash : text + "; mpirun: " + crash;
    }
    return text.empty() ? "mpirun ended with " + status.describe() : text;
}

int Session::outcome(const ExitStatus& status)
{
    if (m_stop == Stop::Cancel)
        return fail(kExitCancelled, "cancelled: mpirun and its ranks were ended");
    if (m_stop == Stop::Timeout) {
        const std::string behind = m_tracker.laggards();
        std::ostringstream s;
        s << "run timed out after " << m_options.timeoutS << " s without progress"
          << (behind.empty() ? "" : " (" + behind + ")") << ": mpirun and its ranks were ended";
        return fail(kExitRunFailed, s.str());
    }
    const auto& done = m_tracker.done();
    if (status.exitCode == 0 && !done)
        return fail(kExitRunFailed, "mpirun ended without the worker's done event", "run failed: ");
    if (done && done->correctnessPassed == false)
        return fail(kExitContent, "correctness check failed: " + done->correctnessSummary);
    if (status.exitCode == 0)
        return kExitOk;
    const auto& crash = m_scanner.failure();
    const bool signalled = crash && crash->cause.starts_with("exited on signal");
    if (status.exitCode == 1 && !signalled)
        return fail(kExitContent, failureText(status), "run refused or its check failed: ");
    return fail(kExitRunFailed, failureText(status), "run failed: ");
}

void Session::report(const PreparedRun& prepared)
{
    std::ostream& sink = m_options.progressJson ? m_err : m_out;
    try {
        const MeasuredTrace measured = loadMeasured(m_options.output);
        std::string label;
        const Prediction predicted
            = predictMeasuredRun(prepared.project, prepared.variant, measured, m_prediction, &label);
        if (!m_options.costsFile.empty())
            label += ", with the costs of " + m_options.costsFile;
        sink << formatComparison(compareRun(predicted.sim, measured), measured, "for " + label)
             << formatAllToAll(predicted, measured);
        if (!m_options.costsFile.empty()) // a run after `calibrate`: has the machine moved since?
            sink << formatCostsDrift(costsDrift(parseCostsFile(readTextFile(m_options.costsFile), m_options.costsFile),
                                         measured, measuredStageCount(measured, &prepared.project)),
                m_options.costsFile);
        sink.flush();
    } catch (const Error& e) {
        human(std::string("no predicted-vs-measured table: ") + e.what());
    }
}

} // namespace

// ----------------------------------------------------------------------------------------- public

std::optional<fs::path> findMpirun()
{
    const std::string env = envValue("DPSTUDIO_MPIRUN");
    if (!env.empty())
        return fs::path(env);
    std::istringstream path(envValue("PATH"));
    std::string dir;
    while (std::getline(path, dir, ':')) {
        const fs::path candidate = fs::path(dir.empty() ? "." : dir) / "mpirun";
        if (isExecutableFile(candidate))
            return candidate;
    }
    return std::nullopt;
}

std::string mpirunVersion(const fs::path& mpirun)
{
    const std::optional<std::string> text = captureOutput({ mpirun.string(), "--version" }, std::chrono::seconds(10));
    if (!text)
        return {};
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line))
        if (line.find_first_not_of(" \t\r") != std::string::npos)
            return line;
    return {};
}

fs::path selfExecutable()
{
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe;
}

std::optional<fs::path> findWorker(const fs::path& exe, const std::vector<fs::path>& extra)
{
    const std::string env = envValue("DPSTUDIO_WORKER");
    if (!env.empty())
        return isExecutableFile(env) ? std::optional<fs::path>(env) : std::nullopt;
    std::vector<fs::path> candidates;
    if (!exe.empty()) {
        candidates.push_back(exe.parent_path() / "dpstudio-worker");
        candidates.push_back((exe.parent_path() / ".." / "libexec" / "dpstudio-worker").lexically_normal());
    }
    candidates.insert(candidates.end(), extra.begin(), extra.end());
    for (const fs::path& c : candidates)
        if (isExecutableFile(c))
            return c;
    return std::nullopt;
}

PreparedRun prepareRun(const RunOptions& options)
{
    PreparedRun run;
    run.project = loadProject(options.project);
    checkEngineRunsModel(run.project.model);
    const Variant& variant = selectVariant(run.project, options.variant);
    run.variant = variant.name;
    run.project.activeVariant = variant.name;
    if (!options.costsFile.empty())
        applyCostsFile(run.project.costs, parseCostsFile(readTextFile(options.costsFile), options.costsFile));
    effectivePartition(run.project, variant);
    run.schedule = buildSchedule(run.project, variant);
    checkRanks(variant, run.schedule);
    checkValid(variant, run.schedule);
    run.processes = run.schedule.ranks * std::max(1, variant.dp); // placementOf checked the product
    // On one machine every process is a rank of its own with its copy of the weights: more than 64 per core is
    // a mistake (dp 1000000), not a run.
    const int cores = std::max(1, cpuCoreCount());
    if (options.hostfile.empty() && run.processes > 64 * cores)
        throw ConstraintError("run.processes",
            "variant \"" + variant.name + "\": " + std::to_string(run.schedule.ranks) + " ranks × dp "
                + std::to_string(std::max(1, variant.dp)) + " = " + std::to_string(run.processes)
                + " processes on this machine's " + std::to_string(cores)
                + " cores (at most 64 per core without --hostfile)");
    if (!options.hostfile.empty())
        readTextFile(options.hostfile);
    return run;
}

bool crossMemoryAttachWorks()
{
    static const bool works = [] {
        static volatile std::uint64_t value = 0;
        constexpr std::uint64_t kMark = 0x6470737475646961u;
        int ready[2];
        if (::pipe(ready) != 0)
            return false;
        const pid_t owner = ::fork();
        if (owner == 0) { // only async-signal-safe calls from here to _exit
            ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
            value = kMark;
            const char byte = 1;
            [[maybe_unused]] const ssize_t n = ::write(ready[1], &byte, 1);
            for (;;)
                ::pause();
        }
        ::close(ready[1]);
        char byte = 0;
        const bool started = owner > 0 && ::read(ready[0], &byte, 1) == 1;
        ::close(ready[0]);
        bool ok = false;
        if (started) {
            const pid_t reader = ::fork();
            if (reader == 0) {
                std::uint64_t copy = 0;
                iovec local { &copy, sizeof copy };
                iovec remote { const_cast<std::uint64_t*>(&value), sizeof value };
                const ssize_t n = ::process_vm_readv(owner, &local, 1, &remote, 1, 0);
                ::_exit(n == static_cast<ssize_t>(sizeof copy) && copy == kMark ? 0 : 1);
            }
            int status = 0;
            if (reader > 0) {
                while (::waitpid(reader, &status, 0) < 0 && errno == EINTR) { }
                ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            }
        }
        if (owner > 0) {
            ::kill(owner, SIGKILL);
            while (::waitpid(owner, nullptr, 0) < 0 && errno == EINTR) { }
        }
        return ok;
    }();
    return works;
}

std::vector<std::string> mpirunOptions(const RunOptions& options)
{
    std::vector<std::string> argv;
    if (options.hostfile.empty())
        argv.insert(argv.end(), { "--oversubscribe", "--mca", "btl", "self,vader" });
    else
        argv.insert(argv.end(), { "--hostfile", options.hostfile, "--mca", "btl", "self,vader,tcp" });
    // Single copy (cross-memory attach) where it works and all ranks share this machine: a receiver then reads
    // a message out of its sender's memory by itself (docs/performance.md); else two copies through shared
    // memory, moved on by the worker's progress thread.
    if (!options.hostfile.empty() || !crossMemoryAttachWorks())
        argv.insert(argv.end(), { "--mca", "btl_vader_single_copy_mechanism", "none" });
    if (options.threads > 1)
        argv.insert(argv.end(), { "--bind-to", "none" });
    return argv;
}

std::vector<std::string> mpirunCommand(const RunOptions& options, const fs::path& mpirun, const fs::path& worker,
    const fs::path& projectFile, const std::string& variant, int ranks)
{
    std::vector<std::string> argv { mpirun.string(), "-np", std::to_string(ranks) };
    const std::vector<std::string> mpiOptions = mpirunOptions(options);
    argv.insert(argv.end(), mpiOptions.begin(), mpiOptions.end());
    argv.insert(argv.end(),
        { worker.string(), "--project", projectFile.string(), "--variant", variant, "--backend", options.backend,
            "--steps", std::to_string(options.steps), "--warmup", std::to_string(options.warmup), "--threads",
            std::to_string(options.threads), "--output", options.output });
    if (!options.traceDir.empty())
        argv.insert(argv.end(), { "--trace-dir", options.traceDir });
    if (!options.argv.empty())
        argv.insert(argv.end(), { "--command", joinCommandLine(options.argv) });
    return argv;
}

std::vector<std::string> runCommandArguments(const RunOptions& options)
{
    std::vector<std::string> args { "run", options.project };
    if (options.progressJson)
        args.emplace_back("--progress-json");
    args.insert(args.end(), { "-o", options.output });
    if (!options.variant.empty())
        args.insert(args.end(), { "--variant", options.variant });
    args.insert(args.end(),
        { "--backend", options.backend, "--steps", std::to_string(options.steps), "--warmup",
            std::to_string(options.warmup), "--threads", std::to_string(options.threads), "--timeout",
            shortestDecimal(options.timeoutS) });
    if (!options.hostfile.empty())
        args.insert(args.end(), { "--hostfile", options.hostfile });
    if (!options.traceDir.empty())
        args.insert(args.end(), { "--trace-dir", options.traceDir });
    if (!options.costsFile.empty())
        args.insert(args.end(), { "--costs", options.costsFile });
    if (!options.profile.empty())
        args.insert(args.end(), { "--profile", options.profile });
    if (options.nominal)
        args.emplace_back("--nominal");
    return args;
}

std::vector<std::string> mpirunEnvironment(bool asRoot)
{
    if (!asRoot)
        return {};
    return { "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" };
}

std::string joinCommandLine(const std::vector<std::string>& argv)
{
    std::string line;
    for (const std::string& word : argv) {
        if (!line.empty())
            line += ' ';
        const bool plain = !word.empty()
            && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=.,/:@%")
                == std::string::npos;
        if (plain) {
            line += word;
            continue;
        }
        line += '\'';
        for (char c : word)
            line += c == '\'' ? std::string("'\\''") : std::string(1, c);
        line += '\'';
    }
    return line;
}

int runProject(const RunOptions& options, std::ostream& out, std::ostream& err)
{
    Session session(options, out, err);
    return session.run();
}

} // namespace dps::launch
