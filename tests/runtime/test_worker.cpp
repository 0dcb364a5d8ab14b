// The worker's program logic in-process (ranks as threads): command line, progress stream, measured.json,
// traces, and the refusals that must end every rank the same way.
#include "runtime/threadcomm.h"
#include "runtime/worker.h"
#include "schedule/schedule.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace dps::runtime;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kProject = std::string(DPS_TEST_DATA) + "/projects/runtime_small.dpstudio.json";

/// A fresh folder under the temp dir, removed at the end of the test.
class TempDir {
public:
    TempDir()
        : m_path(fs::temp_directory_path()
            / ("dps_worker_test_" + std::to_string(::getpid()) + "_"
                + ::testing::UnitTest::GetInstance()->current_test_info()->name()))
    {
        fs::remove_all(m_path);
        fs::create_directories(m_path);
    }
    ~TempDir() { fs::remove_all(m_path); }
    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

struct WorkerRun {
    std::vector<int> codes;
    std::vector<std::vector<json>> events; ///< per rank, one per line
    std::vector<std::vector<std::string>> lines; ///< the same as text
    std::vector<std::string> logs;
};

WorkerRun runInProcess(const WorkerOptions& options, int ranks)
{
    WorkerRun run;
    run.codes.assign(static_cast<std::size_t>(ranks), -1);
    std::vector<std::ostringstream> events(static_cast<std::size_t>(ranks)), logs(static_cast<std::size_t>(ranks));
    ThreadWorld world(ranks);
    world.run([&](Comm& comm) {
        const auto r = static_cast<std::size_t>(comm.rank());
        run.codes[r] = runWorker(options, comm, WorkerStreams { events[r], logs[r] });
    });
    for (int r = 0; r < ranks; ++r) {
        std::istringstream in(events[static_cast<std::size_t>(r)].str());
        std::vector<json> parsed;
        std::vector<std::string> text;
        for (std::string line; std::getline(in, line);) {
            parsed.push_back(json::parse(line));
            text.push_back(line);
        }
        run.events.push_back(parsed);
        run.lines.push_back(text);
        run.logs.push_back(logs[static_cast<std::size_t>(r)].str());
    }
    return run;
}

json readJson(const fs::path& file)
{
    std::ifstream in(file);
    return json::parse(in);
}

WorkerOptions options(const std::string& variant, const fs::path& dir)
{
    WorkerOptions o;
    o.project = kProject;
    o.variant = variant;
    o.steps = 2;
    o.warmup = 1;
    o.output = (dir / "measured.json").string();
    return o;
}

} // namespace

TEST(WorkerArgs, ParsesEveryFlag)
{
    const WorkerOptions o = parseWorkerArgs({ "--project", "p.json", "--variant=v", "--backend", "cpu", "--steps", "4",
        "--warmup", "0", "--threads", "2", "--output", "m.json", "--trace-dir", "t", "--command", "dpstudio run p" });
    EXPECT_EQ(o.project, "p.json");
    EXPECT_EQ(o.variant, "v");
    EXPECT_EQ(o.backend, "cpu");
    EXPECT_EQ(o.steps, 4);
    EXPECT_EQ(o.warmup, 0);
    EXPECT_EQ(o.threads, 2);
    EXPECT_EQ(o.output, "m.json");
    EXPECT_EQ(o.traceDir, "t");
    EXPECT_EQ(o.command, "dpstudio run p");
}

TEST(WorkerArgs, RefusesBadFlags)
{
    EXPECT_THROW(parseWorkerArgs({ "--output", "m.json" }), UsageError);
    EXPECT_THROW(parseWorkerArgs({ "--project", "p" }), UsageError);
    EXPECT_THROW(parseWorkerArgs({ "--project", "p", "--output", "m", "--steps", "0" }), UsageError);
    EXPECT_THROW(parseWorkerArgs({ "--project", "p", "--output", "m", "--threads", "x" }), UsageError);
    EXPECT_THROW(parseWorkerArgs({ "--project", "p", "--output", "m", "--backend", "tpu" }), UsageError);
    EXPECT_THROW(parseWorkerArgs({ "--project", "p", "--output", "m", "--bogus", "1" }), UsageError);
    EXPECT_THROW(parseWorkerArgs({ "--project" }), UsageError);
}

TEST(Worker, RunsAVariantAndWritesTheMeasuredTraceAndChromeTraces)
{
    TempDir dir;
    WorkerOptions o = options("dualpipev-2", dir.path());
    o.traceDir = (dir.path() / "traces").string();
    const WorkerRun run = runInProcess(o, 2);
    EXPECT_EQ(run.codes, (std::vector<int> { 0, 0 })) << run.logs[0];

    const auto& rank0 = run.events[0];
    ASSERT_GE(rank0.size(), 2u);
    EXPECT_EQ(rank0.front()["event"], "hello");
    EXPECT_EQ(run.lines[0].front().rfind("{\"event\":\"hello\"", 0), 0u) << run.lines[0].front();
    EXPECT_EQ(run.lines[0].back().rfind("{\"event\":\"done\"", 0), 0u) << run.lines[0].back();
    EXPECT_EQ(rank0.front()["ranks"], 2);
    EXPECT_EQ(rank0.front()["steps"], 2);
    EXPECT_EQ(rank0.front()["warmup"], 1);
    EXPECT_EQ(rank0.back()["event"], "done");
    EXPECT_EQ(rank0.back()["correctness"]["passed"], true);
    EXPECT_EQ(rank0.back()["step_makespan_us"].size(), 2u);
    for (const json& e : run.events[1])
        EXPECT_EQ(e["event"], "progress");
    EXPECT_EQ(run.events[1].back()["step"], 2);
    EXPECT_EQ(run.events[1].back()["done"], run.events[1].back()["total"]);

    const json m = readJson(o.output);
    EXPECT_EQ(m["format_version"], 1);
    EXPECT_EQ(m["backend"], "cpu");
    EXPECT_EQ(m["comm"], "thread");
    EXPECT_EQ(m["variant"], "dualpipev-2");
    EXPECT_EQ(m["warmup"], 1);
    EXPECT_EQ(m["correctness"]["passed"], true);
    EXPECT_EQ(m["correctness"]["thresholds"]["grad"], 1e-10);
    EXPECT_EQ(m["steps"].size(), 2u);
    EXPECT_LT(m["median_step"].get<int>(), 2);
    EXPECT_EQ(m["project"], readJson(kProject));
    ASSERT_EQ(m["ranks"].size(), 2u);
    for (const json& rank : m["ranks"]) {
        const json& first = rank["actions"][0];
        for (const char* key : { "action", "step", "start_us", "end_us", "wait_us", "bytes_sent", "bytes_received",
                 "memory_bytes", "activation_bytes" })
            EXPECT_TRUE(first.contains(key)) << key;
        EXPECT_NO_THROW(dps::parseAction(first["action"].get<std::string>()));
    }
    // The documented keys, in the order the worker has always written them (docs/worker-protocol.md).
    std::ifstream in(o.output);
    const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(in);
    std::vector<std::string> keys;
    for (const auto& item : ordered.items())
        keys.push_back(item.key());
    EXPECT_EQ(keys,
        (std::vector<std::string> { "format_version", "command", "host", "cpu", "device", "mpi_version", "backend",
            "comm", "backend_choice", "variant", "threads", "warmup", "correctness", "steps", "median_step", "warnings",
            "ranks", "project" }));
    std::vector<std::string> actionKeys;
    for (const auto& item : ordered["ranks"][0]["actions"][0].items())
        actionKeys.push_back(item.key());
    EXPECT_EQ(actionKeys,
        (std::vector<std::string> { "action", "step", "start_us", "end_us", "wait_us", "compute_us", "bytes_sent",
            "bytes_received", "memory_bytes", "activation_bytes" }));
    // Each rank's host (here all threads of this one): what says which transfers crossed hosts.
    std::vector<std::string> rankKeys;
    for (const auto& item : ordered["ranks"][1].items())
        rankKeys.push_back(item.key());
    EXPECT_EQ(rankKeys, (std::vector<std::string> { "rank", "host", "actions" }));
    EXPECT_FALSE(m["host"].get<std::string>().empty());
    EXPECT_EQ(m["ranks"][0]["host"], m["host"]);
    EXPECT_EQ(m["ranks"][1]["host"], m["host"]);
    EXPECT_EQ(readJson(dir.path() / "traces" / "combined.trace.json")["otherData"]["hosts"],
        json::array({ m["host"], m["host"] }));
    EXPECT_EQ(m["correctness"]["losses"].size(), 6u); // one per microbatch
    for (const char* name : { "rank0.trace.json", "rank1.trace.json", "combined.trace.json" })
        EXPECT_TRUE(fs::exists(dir.path() / "traces" / name)) << name;
    const json trace = readJson(dir.path() / "traces" / "rank1.trace.json");
    EXPECT_EQ(trace["distributedInfo"]["rank"], 1);
}

TEST(Worker, AWorldSizeThatDoesNotMatchTheVariantEndsEveryRankWithStatus1)
{
    TempDir dir;
    const WorkerRun run = runInProcess(options("dualpipev-2", dir.path()), 3);
    EXPECT_EQ(run.codes, (std::vector<int> { 1, 1, 1 }));
    ASSERT_EQ(run.events[0].size(), 2u);
    EXPECT_EQ(run.events[0][0]["event"], "hello");
    EXPECT_EQ(run.events[0][1]["event"], "error");
    EXPECT_NE(run.events[0][1]["message"].get<std::string>().find("2 ranks but the job has 3"), std::string::npos);
    EXPECT_TRUE(run.events[1].empty());
    EXPECT_FALSE(fs::exists(dir.path() / "measured.json"));
}

TEST(Worker, UnknownVariantAndUnreadableProject)
{
    TempDir dir;
    EXPECT_EQ(runInProcess(options("nope", dir.path()), 2).codes, (std::vector<int> { 1, 1 }));
    WorkerOptions missing = options("dualpipev-2", dir.path());
    missing.project = (dir.path() / "missing.json").string();
    const WorkerRun run = runInProcess(missing, 2);
    EXPECT_EQ(run.codes, (std::vector<int> { 3, 3 }));
    EXPECT_EQ(run.events[0].back()["event"], "error");
}

TEST(Worker, ABf16ProjectRunsInFp32WithAWarning)
{
    TempDir dir;
    json project = readJson(kProject);
    project["model"]["dtype"] = "bf16";
    project["active_variant"] = "zb-v";
    const fs::path file = dir.path() / "bf16.dpstudio.json";
    std::ofstream(file) << project.dump(2);
    WorkerOptions o = options("", dir.path());
    o.project = file.string();
    const WorkerRun run = runInProcess(o, 2);
    EXPECT_EQ(run.codes, (std::vector<int> { 0, 0 })) << run.logs[0];
    const json m = readJson(o.output);
    EXPECT_EQ(m["variant"], "zb-v");
    EXPECT_EQ(m["correctness"]["thresholds"]["loss"], 1e-6);
    ASSERT_EQ(m["warnings"].size(), 1u);
    EXPECT_NE(m["warnings"][0].get<std::string>().find("fp32"), std::string::npos);
    EXPECT_NE(run.logs[0].find("warning"), std::string::npos);
}

TEST(Worker, WithoutTheCudaPlatformCudaIsRefusedOnEveryRankWithStatus3)
{
    TempDir dir;
    WorkerOptions o = options("dualpipev-2", dir.path());
    o.backend = "cuda";
    const WorkerRun run = runInProcess(o, 2);
    EXPECT_EQ(run.codes, (std::vector<int> { 3, 3 }));
    ASSERT_EQ(run.events[0].size(), 2u);
    EXPECT_EQ(run.events[0][0]["event"], "hello");
    EXPECT_EQ(run.events[0][1]["event"], "error");
    EXPECT_NE(run.events[0][1]["message"].get<std::string>().find("cuda: not built"), std::string::npos);
    EXPECT_TRUE(run.events[1].empty());
    EXPECT_FALSE(fs::exists(o.output));
}

TEST(ProgressThrottle, WritesEveryStepEndAndOtherwiseAtMostOnePerInterval)
{
    using namespace std::chrono_literals;
    const ProgressThrottle::Clock::time_point t0 {};
    ProgressThrottle throttle(t0, 100ms);
    EXPECT_FALSE(throttle.admit(1, 1000, t0 + 1ms)); // within the first interval
    EXPECT_TRUE(throttle.admit(2, 1000, t0 + 100ms));
    EXPECT_FALSE(throttle.admit(3, 1000, t0 + 150ms));
    EXPECT_FALSE(throttle.admit(4, 1000, t0 + 199ms));
    EXPECT_TRUE(throttle.admit(5, 1000, t0 + 200ms));
    EXPECT_TRUE(throttle.admit(1000, 1000, t0 + 201ms)); // a step's last action: always
    EXPECT_FALSE(throttle.admit(1, 1000, t0 + 250ms)); // the interval restarts at that one
    EXPECT_TRUE(throttle.admit(1000, 1000, t0 + 251ms));
    EXPECT_TRUE(throttle.admit(2, 1000, t0 + 400ms));

    // Thousands of actions a second: at most one line per interval besides the step ends.
    ProgressThrottle busy(t0, 100ms);
    int written = 0;
    for (int i = 1; i <= 10000; ++i)
        written += busy.admit(i, 10000, t0 + i * 100us) ? 1 : 0; // 10000 actions in one second
    EXPECT_LE(written, 11);
    EXPECT_GE(written, 10);
}

TEST(Worker, ProgressIsThrottledButEveryStepEndIsWritten)
{
    TempDir dir;
    WorkerOptions o = options("dualpipev-2", dir.path());
    o.steps = 3;
    const WorkerRun run = runInProcess(o, 2);
    ASSERT_EQ(run.codes, (std::vector<int> { 0, 0 })) << run.logs[0];
    for (int r = 0; r < 2; ++r) {
        std::vector<int> ends;
        for (const json& e : run.events[static_cast<std::size_t>(r)])
            if (e["event"] == "progress" && e["done"] == e["total"])
                ends.push_back(e["step"].get<int>());
        EXPECT_EQ(ends, (std::vector<int> { 0, 1, 2, 3 })) << "rank " << r;
    }
}
