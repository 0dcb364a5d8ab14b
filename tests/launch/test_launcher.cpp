// The launcher against a fake mpirun (tests/data/fake/fake-mpirun.sh): forwarding, exit codes, timeout,
// cancellation, and that no process is left behind.
#include "base/fileio.h"
#include "base/format.h"
#include "base/hostinfo.h"
#include "launch/launcher.h"
#include "launch/progress.h"
#include "machine/machinecosts.h"
#include "project/predict.h"
#include "schedule/generator.h"
#include "support/synthetic.h"
#include "trace/measured.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace dps;
using namespace dps::launch;
using namespace dps::machine;
namespace fs = std::filesystem;

namespace {

const std::string kData = DPS_TEST_DATA;
const std::string kFake = kData + "/fake/fake-mpirun.sh";
const std::string kTiny = kData + "/launch/tiny.dpstudio.json";

std::vector<std::string> linesOf(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

/// Whether a process still runs (a zombie does not count).
bool running(pid_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!std::getline(in, text))
        return false;
    const std::size_t close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

class Launcher : public ::testing::Test {
protected:
    void SetUp() override
    {
        std::string pattern = (fs::temp_directory_path() / "dps-launch-test-XXXXXX").string();
        ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
        m_dir = pattern;
        ::setenv("DPSTUDIO_MPIRUN", kFake.c_str(), 1);
        ::setenv("DPSTUDIO_WORKER", "/bin/true", 1);
        ::setenv("FAKE_MPIRUN_ARGS", (m_dir / "args").c_str(), 1);
        ::setenv("FAKE_MPIRUN_PIDS", (m_dir / "pids").c_str(), 1);
        ::unsetenv("FAKE_MEASURED");
        mode("ok");
        m_options.project = kTiny;
        m_options.output = (m_dir / "measured.json").string();
        m_options.argv = { "dpstudio", "run", kTiny, "-o", m_options.output };
    }
    void TearDown() override
    {
        std::error_code ec;
        fs::remove_all(m_dir, ec);
    }

    void mode(const char* name) { ::setenv("FAKE_MPIRUN_MODE", name, 1); }
    int run()
    {
        m_out.str("");
        m_err.str("");
        return runProject(m_options, m_out, m_err);
    }
    std::vector<pid_t> waitingPids() const
    {
        std::vector<pid_t> pids;
        for (const std::string& line : linesOf(dps::readTextFile(m_dir / "pids")))
            pids.push_back(static_cast<pid_t>(std::stol(line)));
        return pids;
    }
    void expectNoneRunning()
    {
        const std::vector<pid_t> pids = waitingPids();
        ASSERT_EQ(pids.size(), 3u) << "the fake did not record its processes";
        for (pid_t pid : pids)
            EXPECT_FALSE(running(pid)) << "process " << pid << " was left behind";
    }
    void expectNotStarted() { EXPECT_FALSE(fs::exists(m_dir / "args")) << "mpirun was started"; }

    fs::path m_dir;
    RunOptions m_options;
    std::ostringstream m_out;
    std::ostringstream m_err;
};

} // namespace

TEST_F(Launcher, ForwardsExactlyTheProgressStreamWithProgressJson)
{
    m_options.progressJson = true;
    ASSERT_EQ(run(), kExitOk) << m_err.str();
    const std::vector<std::string> out = linesOf(m_out.str());
    ASSERT_EQ(out.size(), 6u) << m_out.str();
    EXPECT_EQ(
        out[0], R"({"event":"hello","format_version":1,"ranks":2,"steps":1,"warmup":1,"backend":"cpu","comm":"mpi"})");
    EXPECT_EQ(out[1], R"({"event":"progress","rank":0,"step":0,"done":4,"total":4})");
    EXPECT_EQ(out[4], R"({"event":"progress","rank":1,"step":1,"done":4,"total":4})");
    EXPECT_EQ(out[5].rfind(R"({"event":"done","format_version":1,"output":")", 0), 0u) << out[5];
    EXPECT_NE(m_err.str().find("rank 0: a log line on stdout\n"), std::string::npos) << m_err.str();
    EXPECT_NE(m_err.str().find("a log line on stderr\n"), std::string::npos) << m_err.str();
}

TEST_F(Launcher, ReassemblesLinesSplitAcrossWritesAndKeepsLogsOffStdout)
{
    mode("garbled");
    m_options.progressJson = true;
    ASSERT_EQ(run(), kExitOk) << m_err.str();
    const std::vector<std::string> out = linesOf(m_out.str());
    ASSERT_EQ(out.size(), 4u) << m_out.str();
    EXPECT_EQ(
        out[0], R"({"event":"hello","format_version":1,"ranks":2,"steps":1,"warmup":0,"backend":"cpu","comm":"mpi"})");
    EXPECT_EQ(out[2], R"({"event":"progress","rank":1,"step":0,"done":1,"total":1})");
    EXPECT_NE(m_err.str().find("not json {\"event\":"), std::string::npos);
}

TEST_F(Launcher, KeepsHelloFirstAndDoneLastWhenRanksOvertakeEachOther)
{
    mode("unordered");
    m_options.progressJson = true;
    ASSERT_EQ(run(), kExitOk) << m_err.str();
    const std::vector<std::string> out = linesOf(m_out.str());
    ASSERT_EQ(out.size(), 5u) << m_out.str();
    EXPECT_EQ(out[0].rfind(R"({"event":"hello")", 0), 0u);
    EXPECT_EQ(out[1], R"({"event":"progress","rank":1,"step":0,"done":1,"total":2})");
    EXPECT_EQ(out[2], R"({"event":"progress","rank":0,"step":0,"done":2,"total":2})");
    EXPECT_EQ(out[3], R"({"event":"progress","rank":1,"step":0,"done":2,"total":2})");
    EXPECT_EQ(out[4].rfind(R"({"event":"done")", 0), 0u);
}

TEST_F(Launcher, WithoutProgressJsonRendersProgressAndPrintsTheTable)
{
    const Project project = loadProject(kTiny);
    const Schedule schedule = buildSchedule(project, project.active());
    const CostModel model = buildCostModel(project, project.active(), 4);
    const fs::path measured = m_dir / "synthetic.json";
    std::ofstream(measured) << serializeMeasured(test::syntheticTrace(schedule, model, 3));
    ::setenv("FAKE_MEASURED", measured.c_str(), 1);
    ASSERT_EQ(run(), kExitOk) << m_err.str();
    EXPECT_NE(m_err.str().find("dpstudio: step 2/2 · rank 0 4/4 · rank 1 4/4"), std::string::npos) << m_err.str();
    EXPECT_NE(m_out.str().find("predicted vs measured"), std::string::npos) << m_out.str();
    EXPECT_NE(m_out.str().find("makespan"), std::string::npos);
    const std::size_t row = m_out.str().find("\nmakespan ");
    ASSERT_NE(row, std::string::npos) << m_out.str();
    EXPECT_NE(m_out.str().substr(row, m_out.str().find('\n', row + 1) - row).find(" 0 % "), std::string::npos)
        << m_out.str();
    EXPECT_EQ(m_out.str().find("{\"event\""), std::string::npos);
}

TEST_F(Launcher, WithAProfileTheRunIsPredictedForThisMachineAndSaysSo)
{
    // A profile at the tiny project's shape (T×h×f = 8×64×256) whose every call takes 10 µs (GEMMs) or 1 µs.
    CpuProfile profile;
    profile.machine.cpuModel = "test CPU";
    profile.machine.cores = 4; // ≥ the 2 ranks × 2 threads: no sharing
    ShapeMeasure shape;
    shape.shape = { 8, 64, 256 };
    shape.repetitions = 3;
    shape.gemms = { { "F", false, true, 8, 256, 64, 0.0, 10.0 }, { "F", false, true, 8, 64, 256, 0.0, 10.0 },
        { "I", false, false, 8, 256, 64, 0.0, 10.0 }, { "I", false, false, 8, 64, 256, 0.0, 10.0 },
        { "W", true, false, 64, 256, 8, 1.0, 10.0 }, { "W", true, false, 256, 64, 8, 1.0, 10.0 } };
    shape.elementwise = { { "gelu_forward", 2048, 16384, 1.0 }, { "gelu_backward", 2048, 24576, 1.0 },
        { "mse_loss", 512, 6144, 1.0 }, { "grad_accumulate", 32768, 393216, 1.0 } };
    profile.shapes = { shape };
    const fs::path file = m_dir / "profile.json";
    dps::writeFileAtomic(file, serializeCpuProfile(profile));
    m_options.profile = file.string();

    // The run measures exactly what the machine's costs say: the table's makespan error is 0.
    const Project project = loadProject(kTiny);
    const MachineCosts costs = machineCosts(profile, project, project.active(), "p");
    const Prediction machine = predict(project, "", machinePredictOptions(costs, project.costs, true));
    ASSERT_TRUE(machine.valid()) << machine.error;
    EXPECT_DOUBLE_EQ(machine.costs.stages[1].forwardUs, 21.0); // 10 + 1 + 10
    const fs::path measured = m_dir / "synthetic.json";
    MeasuredTrace ranHere = test::syntheticTrace(*machine.schedule, machine.costs, 3);
    ranHere.host = hostName(); // a CPU run of this machine is what its profile predicts
    ranHere.cpu = cpuModelName();
    std::ofstream(measured) << serializeMeasured(ranHere);
    ::setenv("FAKE_MEASURED", measured.c_str(), 1);
    ASSERT_EQ(run(), kExitOk) << m_err.str();
    const std::string label = "for this machine (CPU profile " + file.string() + "; "
        + formatCountOf(std::size_t(profile.machine.cores), "core") + " shared by the ranks)";
    EXPECT_NE(m_err.str().find("dpstudio: predicted " + label + ": makespan " + formatTime(machine.makespanUs)),
        std::string::npos)
        << m_err.str();
    EXPECT_NE(m_out.str().find("prediction: " + label + "\n"), std::string::npos) << m_out.str();
    EXPECT_NE(m_out.str().find("makespan  "), std::string::npos);
    const std::string table = m_out.str();
    const std::size_t row = table.find("\nmakespan");
    ASSERT_NE(row, std::string::npos) << table;
    EXPECT_NE(table.substr(row, table.find('\n', row + 1) - row).find(" 0 %"), std::string::npos) << table;
    EXPECT_EQ(runCommandArguments(m_options).back(), file.string());

    // --nominal: the project's devices, whatever the profile.
    m_options.profile.clear();
    m_options.nominal = true;
    ASSERT_EQ(run(), kExitOk) << m_err.str();
    EXPECT_NE(m_out.str().find("prediction: for the project's devices (100 GFLOP/s × efficiency 0.6, latency 2 µs, "
                               "bandwidth 4.66 GiB/s)"),
        std::string::npos)
        << m_out.str();
    EXPECT_EQ(runCommandArguments(m_options).back(), "--nominal");
}

TEST_F(Launcher, AProfileOfAnotherShapeIsRefusedBeforeAnythingStarts)
{
    CpuProfile profile;
    profile.machine.cores = 2;
    ShapeMeasure shape;
    shape.shape = { 256, 512, 2048 };
    shape.repetitions = 1;
    profile.shapes = { shape };
    const fs::path file = m_dir / "other.json";
    dps::writeFileAtomic(file, serializeCpuProfile(profile));
    m_options.profile = file.string();
    EXPECT_EQ(run(), kExitContent);
    EXPECT_NE(m_err.str().find("holds 256x512x2048, not the variant's 8x64x256"), std::string::npos) << m_err.str();
    expectNotStarted();
}

TEST_F(Launcher, BuildsTheOpenMpiCommandLine)
{
    m_options.threads = 2;
    m_options.steps = 5;
    m_options.traceDir = (m_dir / "traces").string();
    ASSERT_EQ(run(), kExitOk) << m_err.str();
    const std::vector<std::string> args = linesOf(dps::readTextFile(m_dir / "args"));
    // Single copy (vader's default, cross-memory attach) where this machine allows it, else none.
    std::vector<std::string> head { "-np", "2", "--oversubscribe", "--mca", "btl", "self,vader" };
    if (!dps::launch::crossMemoryAttachWorks())
        head.insert(head.end(), { "--mca", "btl_vader_single_copy_mechanism", "none" });
    head.insert(head.end(), { "--bind-to", "none", "/bin/true", "--project" });
    ASSERT_GE(args.size(), head.size());
    EXPECT_EQ(std::vector<std::string>(args.begin(), args.begin() + static_cast<long>(head.size())), head);
    const std::string all = dps::readTextFile(m_dir / "args");
    EXPECT_NE(all.find("--variant\ndualpipev\n--backend\nauto\n--steps\n5\n--warmup\n1\n--threads\n2\n--output\n"),
        std::string::npos)
        << all;
    EXPECT_NE(all.find("--trace-dir\n" + m_options.traceDir + "\n"), std::string::npos);
    EXPECT_EQ(all.find("ucx"), std::string::npos);
    EXPECT_NE(
        all.find(std::string("OMPI_ALLOW_RUN_AS_ROOT=") + (::geteuid() == 0 ? "1" : "") + "\n"), std::string::npos);
    const fs::path projectFile = args[head.size()];
    EXPECT_FALSE(fs::exists(projectFile)) << "the temporary project was left behind";
}

TEST_F(Launcher, HostfileSelectsTcpBetweenHosts)
{
    const fs::path hostfile = m_dir / "hosts";
    std::ofstream(hostfile) << "localhost slots=2\n";
    m_options.hostfile = hostfile.string();
    ASSERT_EQ(run(), kExitOk) << m_err.str();
    const std::string all = dps::readTextFile(m_dir / "args");
    EXPECT_NE(all.find("--hostfile\n" + hostfile.string() + "\n--mca\nbtl\nself,vader,tcp\n"), std::string::npos)
        << all;
    EXPECT_EQ(all.find("--oversubscribe"), std::string::npos);
    // Between hosts no single copy: the worker's progress thread moves messages on.
    EXPECT_NE(all.find("--mca\nbtl_vader_single_copy_mechanism\nnone\n"), std::string::npos) << all;
}

TEST_F(Launcher, TheRunProjectIsTheCheckedOneWithCostsApplied)
{
    const fs::path costs = m_dir / "costs.json";
    std::ofstream(costs) << R"({"format_version":1,"stages":[{"stage":0,"f_us":123}],"overlap_factor":0.5})";
    m_options.costsFile = costs.string();
    m_options.variant = "1f1b";
    const PreparedRun prepared = prepareRun(m_options);
    EXPECT_EQ(prepared.variant, "1f1b");
    EXPECT_EQ(prepared.project.activeVariant, "1f1b");
    ASSERT_FALSE(prepared.project.costs.stages.empty());
    EXPECT_EQ(prepared.project.costs.stages[0].forwardUs, 123.0);
    EXPECT_EQ(prepared.project.costs.overlapFactor, 0.5);
    EXPECT_EQ(prepared.schedule.ranks, 2);
}

TEST_F(Launcher, TimeoutEndsTheRunWithExit3AndLeavesNoProcess)
{
    mode("hang");
    m_options.timeoutS = 1;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(run(), kExitRunFailed);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
    EXPECT_NE(
        m_err.str().find("timed out after 1 s without progress (rank 1 at step 0, 2/4 actions)"), std::string::npos)
        << m_err.str();
    expectNoneRunning();
}

// The timeout counts from the last progress event: a run of 3.2 s whose events come 0.4 s apart is not ended
// by a 1 s timeout.
TEST_F(Launcher, TheTimeoutCountsFromTheLastProgressEvent)
{
    mode("long");
    m_options.timeoutS = 1;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(run(), kExitOk) << m_err.str();
    EXPECT_GT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(3200));
    EXPECT_EQ(m_err.str().find("timed out"), std::string::npos) << m_err.str();
}

TEST_F(Launcher, ARunThatClosedItsOutputStillTimesOut)
{
    mode("mute-hang");
    m_options.timeoutS = 1;
    EXPECT_EQ(run(), kExitRunFailed);
    EXPECT_NE(m_err.str().find("timed out after 1 s"), std::string::npos) << m_err.str();
    expectNoneRunning();
}

TEST_F(Launcher, ARunIgnoringSigtermIsKilledAfterTheGracePeriod)
{
    mode("stubborn");
    m_options.timeoutS = 0.5;
    m_options.graceS = 0.5;
    EXPECT_EQ(run(), kExitRunFailed);
    EXPECT_NE(m_err.str().find("timed out"), std::string::npos) << m_err.str();
    expectNoneRunning();
}

TEST_F(Launcher, ACrashNamesTheRank)
{
    mode("crash");
    EXPECT_EQ(run(), kExitRunFailed);
    EXPECT_NE(
        m_err.str().find("dpstudio: run failed: rank 1 exited on signal 11 (Segmentation fault)"), std::string::npos)
        << m_err.str();
}

TEST_F(Launcher, AnErrorEventNamesTheRank)
{
    mode("error-event");
    m_options.progressJson = true;
    EXPECT_EQ(run(), kExitRunFailed);
    EXPECT_NE(m_out.str().find(R"({"event":"error","rank":1,"message":"std::bad_alloc in 1F3"})"), std::string::npos);
    EXPECT_NE(m_err.str().find("run failed: rank 1: std::bad_alloc in 1F3"), std::string::npos) << m_err.str();
}

TEST_F(Launcher, AFailedCorrectnessCheckExits1)
{
    mode("fail-check");
    EXPECT_EQ(run(), kExitContent);
    EXPECT_NE(m_err.str().find("correctness check failed"), std::string::npos) << m_err.str();
}

TEST_F(Launcher, SigtermCancelsWith130AndLeavesNoProcess)
{
    mode("hang");
    int code = -1;
    std::thread runner([&] { code = run(); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!fs::exists(m_dir / "pids") && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(300)); // let the launcher see the processes
    ::kill(::getpid(), SIGTERM);
    runner.join();
    EXPECT_EQ(code, kExitCancelled);
    EXPECT_NE(m_err.str().find("cancelled"), std::string::npos) << m_err.str();
    expectNoneRunning();
}

TEST_F(Launcher, MissingMpirunExits3WithTheHint)
{
    ::setenv("DPSTUDIO_MPIRUN", (m_dir / "no-such-mpirun").c_str(), 1);
    EXPECT_EQ(run(), kExitRunFailed);
    EXPECT_NE(m_err.str().find("mpirun not found: install openmpi-bin or set DPSTUDIO_MPIRUN"), std::string::npos)
        << m_err.str();
}

TEST_F(Launcher, NoMpirunOnPathExits3WithTheHint)
{
    ::unsetenv("DPSTUDIO_MPIRUN");
    const std::string path = std::getenv("PATH");
    ::setenv("PATH", m_dir.c_str(), 1);
    const int code = run();
    ::setenv("PATH", path.c_str(), 1);
    EXPECT_EQ(code, kExitRunFailed);
    EXPECT_NE(m_err.str().find("mpirun not found: install openmpi-bin or set DPSTUDIO_MPIRUN"), std::string::npos);
}

TEST_F(Launcher, MissingWorkerExits3)
{
    ::setenv("DPSTUDIO_WORKER", (m_dir / "no-worker").c_str(), 1);
    EXPECT_EQ(run(), kExitRunFailed);
    EXPECT_NE(m_err.str().find("dpstudio-worker not found"), std::string::npos) << m_err.str();
    expectNotStarted();
}

TEST_F(Launcher, BadProjectsAreRefusedWithExit1BeforeAnythingStarts)
{
    for (const char* name : { "bad_kind", "bad_partition", "bad_ranks" }) {
        SCOPED_TRACE(name);
        m_options.project = kData + "/launch/" + name + ".dpstudio.json";
        EXPECT_EQ(run(), kExitContent) << m_err.str();
        EXPECT_NE(m_err.str().find("nothing was started"), std::string::npos) << m_err.str();
        expectNotStarted();
    }
    m_options.project = kTiny;
    m_options.variant = "no-such-variant";
    EXPECT_EQ(run(), kExitContent);
    EXPECT_NE(m_err.str().find("no variant \"no-such-variant\""), std::string::npos) << m_err.str();
    expectNotStarted();
}

TEST_F(Launcher, AnUnreadableProjectExits2)
{
    m_options.project = (m_dir / "missing.dpstudio.json").string();
    EXPECT_EQ(run(), kExitUsage);
    expectNotStarted();
}

// Every way `dpstudio run --progress-json` fails ends its stream with one failed event: the exit code it returns
// and the reason it says on stderr (without the words of its headline).
TEST_F(Launcher, EveryFailureEndsTheStreamWithAFailedEvent)
{
    struct Case {
        const char* name;
        std::function<void()> setUp;
        int code;
        std::string reason;
    };
    const std::vector<Case> cases {
        { "crash", [&] { mode("crash"); }, kExitRunFailed, "rank 1 exited on signal 11 (Segmentation fault)" },
        { "error event", [&] { mode("error-event"); }, kExitRunFailed, "rank 1: std::bad_alloc in 1F3" },
        { "correctness", [&] { mode("fail-check"); }, kExitContent,
            R"(correctness check failed: {"max_grad_error":1e-12,"max_loss_error":1e-09,"passed":false})" },
        { "timeout",
            [&] {
                mode("hang");
                m_options.timeoutS = 0.5;
            },
            kExitRunFailed,
            "run timed out after 0.5 s without progress (rank 1 at step 0, 2/4 actions): mpirun and its ranks were "
            "ended" },
        { "no mpirun", [] { ::setenv("DPSTUDIO_MPIRUN", "/nonexistent/mpirun", 1); }, kExitRunFailed,
            "mpirun not found: install openmpi-bin or set DPSTUDIO_MPIRUN (DPSTUDIO_MPIRUN=/nonexistent/mpirun is "
            "not an executable file)" },
        { "no worker", [] { ::setenv("DPSTUDIO_WORKER", "/nonexistent/dpstudio-worker", 1); }, kExitRunFailed,
            "dpstudio-worker not found: set DPSTUDIO_WORKER, or install it next to dpstudio or in ../libexec "
            "relative to it" },
        { "unreadable project", [&] { m_options.project = (m_dir / "missing.dpstudio.json").string(); }, kExitUsage,
            "" },
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        TearDown(); // a fresh folder, environment and options for each case
        m_options = RunOptions();
        SetUp();
        m_options.progressJson = true;
        c.setUp();
        ASSERT_EQ(run(), c.code) << m_err.str();
        const std::vector<std::string> out = linesOf(m_out.str());
        ASSERT_FALSE(out.empty());
        const std::optional<ProgressEvent> failed = parseProgressLine(out.back());
        ASSERT_TRUE(failed && failed->kind == EventKind::Failed) << out.back();
        EXPECT_EQ(failed->exitCode, c.code);
        EXPECT_EQ(failed->formatVersion, dps::protocol::kProgressFormatVersion);
        if (!c.reason.empty())
            EXPECT_EQ(failed->message, c.reason);
        else
            EXPECT_NE(failed->message.find("missing.dpstudio.json"), std::string::npos) << failed->message;
        EXPECT_NE(m_err.str().find(failed->message + "\n"), std::string::npos) << m_err.str();
    }
}

TEST_F(Launcher, ASuccessfulRunHasNoFailedEvent)
{
    m_options.progressJson = true;
    ASSERT_EQ(run(), kExitOk) << m_err.str();
    EXPECT_EQ(m_out.str().find(R"("event":"failed")"), std::string::npos) << m_out.str();
}

TEST_F(Launcher, FindsTheWorkerNextToTheExecutableThenInLibexec)
{
    ::unsetenv("DPSTUDIO_WORKER");
    fs::create_directories(m_dir / "bin");
    fs::create_directories(m_dir / "libexec");
    const fs::path exe = m_dir / "bin" / "dpstudio";
    const fs::path libexec = m_dir / "libexec" / "dpstudio-worker";
    fs::copy_file("/bin/true", libexec);
    EXPECT_EQ(findWorker(exe), libexec);
    fs::copy_file("/bin/true", m_dir / "bin" / "dpstudio-worker");
    EXPECT_EQ(findWorker(exe), m_dir / "bin" / "dpstudio-worker");
    ::setenv("DPSTUDIO_WORKER", "/bin/true", 1);
    EXPECT_EQ(findWorker(exe), fs::path("/bin/true"));
}

TEST_F(Launcher, ReadsTheMpirunVersion)
{
    EXPECT_EQ(mpirunVersion(kFake), "mpirun (Open MPI) 4.1.4-fake");
    EXPECT_EQ(mpirunVersion(m_dir / "nothing"), "");
}

TEST(JoinCommandLine, QuotesWhatTheShellWouldSplit)
{
    EXPECT_EQ(joinCommandLine({ "dpstudio", "run", "my project.json", "-o", "it's.json", "" }),
        "dpstudio run 'my project.json' -o 'it'\\''s.json' ''");
}

TEST(RunCommandArguments, WritesEveryFlagOfTheOptions)
{
    RunOptions o;
    o.project = "/p/demo.dpstudio.json";
    o.output = "/p/m.json";
    // Defaults: every value flag is written, strings only when set, no --progress-json.
    EXPECT_EQ(runCommandArguments(o),
        (std::vector<std::string> { "run", "/p/demo.dpstudio.json", "-o", "/p/m.json", "--backend", "auto", "--steps",
            "3", "--warmup", "1", "--threads", "1", "--timeout", "600" }));
    o.progressJson = true;
    o.variant = "dualpipev";
    o.backend = "cpu";
    o.steps = 5;
    o.warmup = 0;
    o.threads = 4;
    o.timeoutS = 1.5;
    o.hostfile = "hosts";
    o.traceDir = "traces";
    o.costsFile = "costs.json";
    o.argv = { "ignored" };
    o.graceS = 9;
    o.interactive = true;
    EXPECT_EQ(runCommandArguments(o),
        (std::vector<std::string> { "run", "/p/demo.dpstudio.json", "--progress-json", "-o", "/p/m.json", "--variant",
            "dualpipev", "--backend", "cpu", "--steps", "5", "--warmup", "0", "--threads", "4", "--timeout", "1.5",
            "--hostfile", "hosts", "--trace-dir", "traces", "--costs", "costs.json" }));
    o.timeoutS = 0.1;
    const std::vector<std::string> args = runCommandArguments(o);
    EXPECT_EQ(args[args.size() - 7], "0.1"); // the shortest text that reads back as the same double
}
