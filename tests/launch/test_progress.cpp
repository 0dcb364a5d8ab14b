// The worker's progress stream as data, the human line, mpirun's failure messages, and child processes.
#include "launch/devices.h"
#include "launch/process.h"
#include "launch/progress.h"
#include "protocol/progress.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dps::launch;
namespace protocol = dps::protocol;

namespace {

/// A line as dpstudio-worker writes it (Events::emit in engine/runtime/worker.cpp): an ordered JSON object,
/// compact, invalid UTF-8 replaced.
std::string workerLine(const nlohmann::ordered_json& event)
{
    return event.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace

TEST(ProgressLine, ParsesEveryEventKind)
{
    const auto hello = parseProgressLine(
        R"({"event":"hello","format_version":1,"ranks":4,"steps":3,"warmup":1,"backend":"cpu","comm":"mpi"})");
    ASSERT_TRUE(hello);
    EXPECT_EQ(hello->kind, EventKind::Hello);
    EXPECT_EQ(hello->ranks, 4);
    EXPECT_EQ(hello->steps, 3);
    EXPECT_EQ(hello->warmup, 1);
    EXPECT_EQ(hello->backend, "cpu");

    const auto progress = parseProgressLine(R"({"event":"progress","rank":2,"step":1,"done":7,"total":40})");
    ASSERT_TRUE(progress);
    EXPECT_EQ(progress->kind, EventKind::Progress);
    EXPECT_EQ(progress->rank, 2);
    EXPECT_EQ(progress->done, 7);

    const auto done = parseProgressLine(
        R"({"event":"done","format_version":1,"output":"m.json","correctness":{"passed":false},"median_step":1})");
    ASSERT_TRUE(done);
    EXPECT_EQ(done->kind, EventKind::Done);
    EXPECT_EQ(done->correctnessPassed, false);
    EXPECT_EQ(done->output, "m.json");

    const auto error = parseProgressLine(R"({"event":"error","rank":3,"message":"boom"})");
    ASSERT_TRUE(error);
    EXPECT_EQ(error->kind, EventKind::Error);
    EXPECT_EQ(error->rank, 3);
    EXPECT_EQ(error->message, "boom");
}

TEST(ProgressLine, ReadsBackEveryFieldTheWorkerWrites)
{
    using json = nlohmann::ordered_json;
    const auto hello = parseProgressLine(
        workerLine({ { "event", protocol::kEventHello }, { "format_version", protocol::kProgressFormatVersion },
            { "ranks", 8 }, { "steps", 3 }, { "warmup", 2 }, { "backend", "cuda" }, { "comm", "nccl" } }));
    ASSERT_TRUE(hello);
    EXPECT_EQ(hello->kind, EventKind::Hello);
    EXPECT_EQ(hello->formatVersion, protocol::kProgressFormatVersion);
    EXPECT_FALSE(hello->newerFormat());
    EXPECT_EQ(hello->ranks, 8);
    EXPECT_EQ(hello->steps, 3);
    EXPECT_EQ(hello->warmup, 2);
    EXPECT_EQ(hello->backend, "cuda");
    EXPECT_EQ(hello->comm, "nccl");

    const auto progress = parseProgressLine(workerLine(
        { { "event", protocol::kEventProgress }, { "rank", 5 }, { "step", 4 }, { "done", 17 }, { "total", 40 } }));
    ASSERT_TRUE(progress);
    EXPECT_EQ(progress->kind, EventKind::Progress);
    EXPECT_EQ(progress->rank, 5);
    EXPECT_EQ(progress->step, 4);
    EXPECT_EQ(progress->done, 17);
    EXPECT_EQ(progress->total, 40);

    const json correctness { { "passed", true }, { "max_loss_error", 2.5e-8 }, { "max_grad_error", 3e-13 },
        { "thresholds", { { "loss", 1e-6 }, { "grad", 1e-10 } } } };
    const auto done = parseProgressLine(
        workerLine({ { "event", protocol::kEventDone }, { "format_version", protocol::kProgressFormatVersion },
            { "output", "/runs/m ü.json" }, { "correctness", correctness }, { "median_step", 1 },
            { "step_makespan_us", std::vector<double> { 1200.5, 1180.25, 1250.0 } } }));
    ASSERT_TRUE(done);
    EXPECT_EQ(done->kind, EventKind::Done);
    EXPECT_EQ(done->formatVersion, protocol::kProgressFormatVersion);
    EXPECT_EQ(done->output, "/runs/m ü.json");
    EXPECT_EQ(done->correctnessPassed, true);
    EXPECT_EQ(done->maxLossError, 2.5e-8);
    EXPECT_EQ(done->maxGradError, 3e-13);
    EXPECT_EQ(done->correctnessMessage, "");
    EXPECT_EQ(done->correctnessSummary,
        R"({"max_grad_error":3e-13,"max_loss_error":2.5e-08,"passed":true,"thresholds":{"grad":1e-10,"loss":1e-06}})");
    EXPECT_EQ(done->medianStep, 1);
    EXPECT_EQ(done->stepMakespanUs, (std::vector<double> { 1200.5, 1180.25, 1250.0 }));
    EXPECT_EQ(done->medianMakespanUs(), 1180.25);

    const auto error = parseProgressLine(
        workerLine({ { "event", protocol::kEventError }, { "rank", 3 }, { "message", "out of memory" } }));
    ASSERT_TRUE(error);
    EXPECT_EQ(error->kind, EventKind::Error);
    EXPECT_EQ(error->rank, 3);
    EXPECT_EQ(error->message, "out of memory");
}

TEST(ProgressLine, ReadsAFailedChecksMessage)
{
    const auto done = parseProgressLine(R"({"event":"done","correctness":{"passed":false,"max_loss_error":0.03,)"
                                        R"("message":"stage 1 parameter w2"}})");
    ASSERT_TRUE(done);
    EXPECT_EQ(done->correctnessPassed, false);
    EXPECT_EQ(done->maxLossError, 0.03);
    EXPECT_EQ(done->correctnessMessage, "stage 1 parameter w2");
    EXPECT_EQ(done->medianStep, -1);
    EXPECT_EQ(done->medianMakespanUs(), 0.0);
}

TEST(ProgressLine, FlagsANewerFormatVersionButStillReadsIt)
{
    const int newer = protocol::kProgressFormatVersion + 1;
    const auto hello = parseProgressLine(workerLine(
        { { "event", protocol::kEventHello }, { "format_version", newer }, { "ranks", 2 }, { "steps", 1 } }));
    ASSERT_TRUE(hello);
    EXPECT_EQ(hello->kind, EventKind::Hello);
    EXPECT_EQ(hello->formatVersion, newer);
    EXPECT_TRUE(hello->newerFormat());
    EXPECT_EQ(hello->ranks, 2);
    const auto unversioned = parseProgressLine(R"({"event":"hello","ranks":2})");
    ASSERT_TRUE(unversioned);
    EXPECT_EQ(unversioned->formatVersion, 0);
    EXPECT_FALSE(unversioned->newerFormat());
}

TEST(ProgressLine, MembersOfTheWrongTypeKeepTheirDefaults)
{
    const auto a = parseProgressLine(R"({"event":"progress","rank":"1","step":2.0,"done":1e300,"total":2.5})");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->rank, -1);
    EXPECT_EQ(a->step, 2);
    EXPECT_EQ(a->done, 0);
    EXPECT_EQ(a->total, 0);
    const auto b = parseProgressLine(
        R"({"event":"done","median_step":18446744073709551615,"step_makespan_us":"x","correctness":[true]})");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->medianStep, -1);
    EXPECT_TRUE(b->stepMakespanUs.empty());
    EXPECT_FALSE(b->correctnessPassed);
}

TEST(ProgressLine, LogLinesAreNotEvents)
{
    EXPECT_FALSE(parseProgressLine("rank 0: loading the project"));
    EXPECT_FALSE(parseProgressLine("{not json"));
    EXPECT_FALSE(parseProgressLine(R"({"rank":0})"));
    EXPECT_FALSE(parseProgressLine(R"({"event":3})"));
    EXPECT_FALSE(parseProgressLine(""));
    const auto other = parseProgressLine(R"({"event":"something-new"})");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->kind, EventKind::Other);
}

TEST(ProgressTracker, RendersTheSlowestRanksStep)
{
    ProgressTracker t;
    EXPECT_EQ(t.render(), "starting");
    t.apply(*parseProgressLine(R"({"event":"hello","format_version":1,"ranks":2,"steps":2,"warmup":1})"));
    EXPECT_EQ(t.currentStep(), -1);
    t.apply(*parseProgressLine(R"({"event":"progress","rank":0,"step":1,"done":3,"total":8})"));
    t.apply(*parseProgressLine(R"({"event":"progress","rank":1,"step":0,"done":8,"total":8})"));
    EXPECT_EQ(t.currentStep(), 0);
    EXPECT_EQ(t.render(), "step 1/3 (warm-up) · rank 0 3/8 · rank 1 8/8");
    EXPECT_EQ(t.laggards(), "rank 1 at step 0, 8/8 actions");
    t.apply(*parseProgressLine(R"({"event":"progress","rank":1,"step":1,"done":1,"total":8})"));
    EXPECT_EQ(t.render(), "step 2/3 · rank 0 3/8 · rank 1 1/8");
    EXPECT_EQ(t.laggards(), "rank 1 at step 1, 1/8 actions");
}

TEST(MpirunFailureScanner, NamesASignalledRank)
{
    MpirunFailureScanner s;
    s.feed("--------------------------------------------------------------------------");
    s.feed("Primary job  terminated normally, but 1 process returned");
    s.feed("mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 11 (Segmentation fault).");
    ASSERT_TRUE(s.failure());
    EXPECT_EQ(s.failure()->rank, 1);
    EXPECT_EQ(s.failure()->cause, "exited on signal 11 (Segmentation fault)");
}

TEST(MpirunFailureScanner, NamesARankThatExitedNonZero)
{
    MpirunFailureScanner s;
    s.feed("mpirun detected that one or more processes exited with non-zero status, thus causing");
    s.feed("the job to be terminated. The first process to do so was:");
    s.feed("");
    s.feed("  Process name: [[17948,1],3]");
    s.feed("  Exit code:    3");
    ASSERT_TRUE(s.failure());
    EXPECT_EQ(s.failure()->rank, 3);
    EXPECT_EQ(s.failure()->cause, "exit code 3");
}

TEST(MpirunFailureScanner, NamesAnAbortingRankAndKeepsTheFirst)
{
    MpirunFailureScanner s;
    s.feed("MPI_ABORT was invoked on rank 2 in communicator MPI_COMM_WORLD");
    s.feed("mpirun noticed that process rank 0 with PID 7 on node vm exited on signal 9 (Killed).");
    ASSERT_TRUE(s.failure());
    EXPECT_EQ(s.failure()->rank, 2);
    EXPECT_EQ(s.failure()->cause, "called MPI_Abort");
}

TEST(ProcessTree, FindsLiveDescendantsParentsFirst)
{
    // sh → sh → sleep: both shells wait on their child, so the tree stays until the group is killed.
    ChildProcess child({ "/bin/sh", "-c", "/bin/sh -c '/bin/sleep 30; :' & wait" }, environmentWith({}));
    std::vector<pid_t> below;
    for (int i = 0; i < 200 && below.size() < 2; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        below = descendantProcesses(child.pid());
    }
    ASSERT_EQ(below.size(), 2u);
    EXPECT_TRUE(processIsAlive(child.pid()));
    EXPECT_TRUE(processIsAlive(below[0]));
    EXPECT_TRUE(processIsAlive(below[1]));
    EXPECT_EQ(descendantProcesses(below[0]), std::vector<pid_t> { below[1] }); // the parent came first
    EXPECT_TRUE(descendantProcesses(below[1]).empty());
    child.finish();
    EXPECT_FALSE(processIsAlive(child.pid()));
    EXPECT_FALSE(processIsAlive(0));
}

TEST(LineSplitter, KeepsPartialLinesForLater)
{
    LineSplitter s;
    EXPECT_TRUE(s.feed("ab", 2).empty());
    const auto lines = s.feed("c\nde\n\nf", 7);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0], "abc");
    EXPECT_EQ(lines[1], "de");
    EXPECT_EQ(lines[2], "");
    EXPECT_EQ(s.takeRest(), "f");
    EXPECT_EQ(s.takeRest(), "");
}

TEST(ChildProcess, SeparatesStdoutAndStderrAndReportsTheExitCode)
{
    ChildProcess child({ "/bin/sh", "-c", "echo out; echo err >&2; exit 3" }, environmentWith({}));
    std::string out, err;
    char buffer[256];
    for (ssize_t n; (n = ::read(child.stdoutFd(), buffer, sizeof buffer)) > 0;)
        out.append(buffer, static_cast<std::size_t>(n));
    for (ssize_t n; (n = ::read(child.stderrFd(), buffer, sizeof buffer)) > 0;)
        err.append(buffer, static_cast<std::size_t>(n));
    EXPECT_EQ(out, "out\n");
    EXPECT_EQ(err, "err\n");
    const ExitStatus status = child.finish();
    EXPECT_EQ(status.exitCode, 3);
    EXPECT_EQ(status.describe(), "exit code 3");
}

TEST(ChildProcess, LeadsItsOwnProcessGroupWithStdinFromDevNull)
{
    ChildProcess child({ "/bin/sh", "-c", "ps -o pgid= -p $$; cat" }, environmentWith({ "DPS_X=1" }));
    std::string out;
    char buffer[256];
    for (ssize_t n; (n = ::read(child.stdoutFd(), buffer, sizeof buffer)) > 0;)
        out.append(buffer, static_cast<std::size_t>(n));
    EXPECT_EQ(std::stoi(out), child.pid());
    EXPECT_EQ(child.finish().exitCode, 0); // cat read end-of-file at once
}

TEST(ChildProcess, ReportsWhatCannotStart)
{
    try {
        ChildProcess child({ "/nonexistent/mpirun" }, environmentWith({}));
        FAIL() << "started";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), ENOENT);
    }
}

TEST(ChildProcess, EnvironmentOverridesReplaceEntries)
{
    ::setenv("DPS_TEST_VAR", "old", 1);
    const auto env = environmentWith({ "DPS_TEST_VAR=new" });
    EXPECT_EQ(std::count(env.begin(), env.end(), "DPS_TEST_VAR=new"), 1);
    EXPECT_EQ(std::count(env.begin(), env.end(), "DPS_TEST_VAR=old"), 0);
}

TEST(ChildProcess, CaptureOutputGivesUpOnAHangingCommand)
{
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(captureOutput({ "/bin/sleep", "30" }, std::chrono::milliseconds(200)));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    EXPECT_EQ(captureOutput({ "/bin/echo", "hi" }, std::chrono::seconds(5)), "hi\n");
}

TEST(Devices, ReportsCoresCudaAndMpirun)
{
    ::setenv("DPSTUDIO_MPIRUN", DPS_TEST_DATA "/fake/fake-mpirun.sh", 1);
    DeviceReport report = probeDevices();
    EXPECT_GE(report.cpuCores, 1);
    EXPECT_FALSE(report.cpuModel.empty());
    EXPECT_EQ(report.mpirunVersion, "mpirun (Open MPI) 4.1.4-fake");
#ifndef DPS_HAVE_CUDA
    EXPECT_FALSE(report.gpus.cudaBuilt);
    EXPECT_EQ(report.gpus.message, "cuda: not built");
    EXPECT_NE(formatDevices(report).find("cuda: not built\n"), std::string::npos);
#endif
    const std::string json = devicesJson(report);
    EXPECT_NE(json.find("\"cores\""), std::string::npos);
    EXPECT_NE(json.find("4.1.4-fake"), std::string::npos);

    ::setenv("DPSTUDIO_MPIRUN", "/nonexistent/mpirun", 1);
    report = probeDevices();
    EXPECT_TRUE(report.mpirunPath.empty());
    EXPECT_NE(formatDevices(report).find("mpirun: not found (DPSTUDIO_MPIRUN=/nonexistent/mpirun is not an executable"),
        std::string::npos);
    ::unsetenv("DPSTUDIO_MPIRUN");
}
