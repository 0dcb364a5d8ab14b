// The worker on the platform dpstudio-worker uses (CudaWorkerPlatform), ranks as threads: --backend auto
// picks cpu where there is no GPU and records why; --backend cuda without a GPU ends every rank cleanly
// with status 3 and one error naming why. On a machine with a GPU both tests skip (the GPU check covers it).
#include "runtime/cuda/gpuinfo.h"
#include "runtime/cuda/workerplatform.h"
#include "runtime/threadcomm.h"
#include "runtime/worker.h"

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

struct PlatformRun {
    std::vector<int> codes;
    std::vector<std::vector<json>> events; ///< per rank
    std::vector<std::string> logs;
};

/// Runs the worker with a CudaWorkerPlatform per rank over `ranks` threads.
PlatformRun runOnPlatform(const WorkerOptions& options, int ranks)
{
    PlatformRun run;
    run.codes.assign(static_cast<std::size_t>(ranks), -1);
    std::vector<std::ostringstream> events(static_cast<std::size_t>(ranks)), logs(static_cast<std::size_t>(ranks));
    ThreadWorld world(ranks);
    world.run([&](Comm& comm) {
        const auto r = static_cast<std::size_t>(comm.rank());
        CudaWorkerPlatform platform;
        run.codes[r] = runWorker(options, comm, WorkerStreams { events[r], logs[r] }, platform);
    });
    for (std::size_t r = 0; r < events.size(); ++r) {
        std::istringstream in(events[r].str());
        std::vector<json> parsed;
        for (std::string line; std::getline(in, line);)
            parsed.push_back(json::parse(line));
        run.events.push_back(parsed);
        run.logs.push_back(logs[r].str());
    }
    return run;
}

/// Skips the test when this process sees a GPU; returns why there is none otherwise.
std::string whyNoGpu()
{
    std::string why;
    dps::listGpus(&why);
    return why;
}

class WorkerPlatformTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_why = whyNoGpu();
        if (m_why.empty())
            GTEST_SKIP() << "this machine has a GPU: the cpu fallback is not what runs here";
        m_dir = fs::temp_directory_path() / ("dps_workerplatform_" + std::to_string(::getpid()));
        fs::create_directories(m_dir);
    }
    void TearDown() override
    {
        if (!m_dir.empty())
            fs::remove_all(m_dir);
    }
    WorkerOptions options(const std::string& backend) const
    {
        WorkerOptions o;
        o.project = kProject;
        o.variant = "dualpipev-2";
        o.backend = backend;
        o.steps = 1;
        o.warmup = 0;
        o.output = (m_dir / "measured.json").string();
        return o;
    }

    std::string m_why;
    fs::path m_dir;
};

} // namespace

TEST_F(WorkerPlatformTest, AutoPicksCpuWithoutAGpuAndRecordsWhy)
{
    const WorkerOptions o = options("auto");
    const PlatformRun run = runOnPlatform(o, 2);
    ASSERT_EQ(run.codes, (std::vector<int> { 0, 0 })) << run.logs[0];
    ASSERT_FALSE(run.events[0].empty());
    EXPECT_EQ(run.events[0].front()["event"], "hello");
    EXPECT_EQ(run.events[0].front()["backend"], "cpu");
    EXPECT_EQ(run.events[0].front()["comm"], "thread");
    EXPECT_NE(run.logs[0].find("backend cpu, comm thread: cpu (auto: "), std::string::npos) << run.logs[0];
    std::ifstream in(o.output);
    const json m = json::parse(in);
    EXPECT_EQ(m["backend"], "cpu");
    EXPECT_EQ(m["comm"], "thread");
    const std::string choice = m["backend_choice"].get<std::string>();
    EXPECT_EQ(choice.rfind("backend cpu, comm thread: cpu (auto: ", 0), 0u) << choice;
    EXPECT_EQ(m["correctness"]["passed"], true);
}

TEST_F(WorkerPlatformTest, CudaWithoutAGpuEndsEveryRankWithOneErrorNamingWhy)
{
    const PlatformRun run = runOnPlatform(options("cuda"), 2);
    EXPECT_EQ(run.codes, (std::vector<int> { 3, 3 }));
    ASSERT_EQ(run.events[0].size(), 2u);
    EXPECT_EQ(run.events[0][0]["event"], "hello");
    EXPECT_EQ(run.events[0][0]["backend"], "cuda");
    EXPECT_EQ(run.events[0][1]["event"], "error");
    const std::string message = run.events[0][1]["message"].get<std::string>();
    EXPECT_EQ(message.rfind("--backend cuda: ", 0), 0u) << message;
    // No module: "cuda: not built" or "CUDA backend not available: …" (test_unavailable.cpp); the module
    // without a device: "rank 0 on HOST has no GPU (<the driver's reason>)".
    if (cudaBuilt())
        EXPECT_NE(message.find("has no GPU (" + m_why + ")"), std::string::npos) << message;
    else
        EXPECT_EQ(message, "--backend cuda: " + cudaWhyNot());
    EXPECT_TRUE(run.events[1].empty());
    EXPECT_FALSE(fs::exists(m_dir / "measured.json"));
}
