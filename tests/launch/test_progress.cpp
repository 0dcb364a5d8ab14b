// The worker's progress stream as data, the human line, mpirun's failure messages, and child processes.
#include "launch/devices.h"
#include "launch/process.h"
#include "launch/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <system_error>
#include <unistd.h>

using namespace dps::launch;

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
