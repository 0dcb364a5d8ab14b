// The worker on the platform dpstudio-worker uses (CudaWorkerPlatform), ranks as threads: --backend auto
// picks cpu where there is no GPU and records why; --backend cuda without a GPU ends every rank cleanly
// with status 3 and one error naming why. On a machine with a GPU both tests skip (the GPU check covers it).
// What the worker decides from the job's choice alone (data-parallel replicas on the cuda backend: through host
// buffers, over NCCL, and expert parallelism, which NCCL does not carry) runs on a platform that reports a cuda
// choice but computes on the CPU, on every machine.
#include "project/presets.h"
#include "project/project.h"
#include "runtime/cpubackend.h"
#include "runtime/cuda/gpuinfo.h"
#include "runtime/cuda/workerplatform.h"
#include "runtime/threadcomm.h"
#include "runtime/worker.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
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

/// A platform that reports the cuda backend over `comm` ("mpi-host", "nccl") but computes on the CPU over the
/// job's comm as it is: the worker's decisions that depend on the choice alone, without a GPU.
class CudaChoiceOnCpu final : public WorkerPlatform {
public:
    explicit CudaChoiceOnCpu(std::string comm)
        : m_comm(std::move(comm))
    {
    }
    JobChoice choose(Comm&, const std::string&) override
    {
        return JobChoice { "cuda", m_comm, "backend cuda, comm " + m_comm + ": test (computes on the cpu)" };
    }
    std::unique_ptr<Backend> createBackend(bool, int cpuThreads) override
    {
        return std::make_unique<CpuBackend>(cpuThreads);
    }
    std::unique_ptr<Comm> createComm(Comm&, Backend&) override { return nullptr; }

private:
    std::string m_comm;
};

/// Runs the worker with a platform from `makePlatform` per rank (default: CudaWorkerPlatform) over `ranks`
/// threads.
PlatformRun runOnPlatform(
    const WorkerOptions& options, int ranks, const std::function<std::unique_ptr<WorkerPlatform>()>& makePlatform = {})
{
    PlatformRun run;
    run.codes.assign(static_cast<std::size_t>(ranks), -1);
    std::vector<std::ostringstream> events(static_cast<std::size_t>(ranks)), logs(static_cast<std::size_t>(ranks));
    ThreadWorld world(ranks);
    world.run([&](Comm& comm) {
        const auto r = static_cast<std::size_t>(comm.rank());
        std::unique_ptr<WorkerPlatform> platform
            = makePlatform ? makePlatform() : std::make_unique<CudaWorkerPlatform>();
        run.codes[r] = runWorker(options, comm, WorkerStreams { events[r], logs[r] }, *platform);
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

namespace {

/// A scratch folder for one test, removed at its end.
class ScratchDir {
public:
    explicit ScratchDir(const std::string& name)
        : m_path(fs::temp_directory_path() / ("dps_workerplatform_" + name + "_" + std::to_string(::getpid())))
    {
        fs::create_directories(m_path);
    }
    ~ScratchDir() { fs::remove_all(m_path); }
    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

/// `dpstudio init --model deepseek-v3 --scale tiny --schedule dualpipev --ranks 2 --microbatches 4`: MLA, the
/// routed experts split over EP 2, DualPipeV on 2 ranks × dp 2 (4 processes), written to `file`.
void writeTinyMoe(const fs::path& file)
{
    dps::ModelPreset full = dps::modelPreset("deepseek-v3");
    full.model.preset = "deepseek-v3";
    const dps::ModelPreset tiny = dps::scaledPreset(std::move(full), "tiny");
    dps::Project p = dps::defaultProject();
    p.name = "tiny MoE";
    p.model = tiny.model;
    p.training = tiny.training;
    p.cluster = dps::devicePreset("cpu");
    p.costs = dps::CostSettings {};
    dps::Variant v;
    v.name = "dualpipev-ep";
    v.kind = dps::ScheduleKind::DualPipeV;
    v.ranks = 2;
    v.microbatches = 4;
    v.dp = 2;
    p.variants = { v };
    p.activeVariant = v.name;
    ASSERT_TRUE(p.model.transformer.isMoe());
    ASSERT_EQ(p.model.transformer.moe.ep, 2);
    dps::saveProject(p, file);
}

WorkerOptions replicaOptions(const fs::path& project, const std::string& variant, const fs::path& dir)
{
    WorkerOptions o;
    o.project = project.string();
    o.variant = variant;
    o.backend = "cuda";
    o.steps = 1;
    o.warmup = 0;
    o.output = (dir / "measured.json").string();
    return o;
}

} // namespace

TEST(WorkerReplicas, RunOnTheCudaBackendThroughHostBuffersWithExpertParallelism)
{
    // 2 ranks × dp 2 with EP 2 over MPI through host buffers (ranks sharing a GPU): the run goes ahead and its
    // correctness check (the cuda thresholds) passes.
    const ScratchDir dir("moe_host");
    const fs::path project = dir.path() / "tiny-moe.dpstudio.json";
    writeTinyMoe(project);
    const WorkerOptions o = replicaOptions(project, "dualpipev-ep", dir.path());
    const PlatformRun run = runOnPlatform(o, 4, [] { return std::make_unique<CudaChoiceOnCpu>("mpi-host"); });
    ASSERT_EQ(run.codes, (std::vector<int> { 0, 0, 0, 0 })) << run.logs[0];
    std::ifstream in(o.output);
    const json m = json::parse(in);
    EXPECT_EQ(m["backend"], "cuda");
    EXPECT_EQ(m["correctness"]["passed"], true);
    EXPECT_EQ(m["ranks"].size(), 2u); // replica 0's pipeline
}

TEST(WorkerReplicas, RunOverNcclWithoutExpertParallelism)
{
    // The block model on DualPipeV 2 ranks × dp 2 with an NCCL choice: replicas are no longer refused there
    // (NcclComm gets each replica's transfer order, jobsetup.h); this platform's comm is the threads' own.
    const ScratchDir dir("dp_nccl");
    const WorkerOptions o = replicaOptions(
        std::string(DPS_TEST_DATA) + "/projects/runtime_dp.dpstudio.json", "dualpipev-2-dp2", dir.path());
    const PlatformRun run = runOnPlatform(o, 4, [] { return std::make_unique<CudaChoiceOnCpu>("nccl"); });
    ASSERT_EQ(run.codes, (std::vector<int> { 0, 0, 0, 0 })) << run.logs[0];
    std::ifstream in(o.output);
    EXPECT_EQ(json::parse(in)["correctness"]["passed"], true);
}

TEST(WorkerReplicas, ExpertParallelismOverNcclIsRefusedNamingTheVariantAndTheWayOut)
{
    const ScratchDir dir("moe_nccl");
    const fs::path project = dir.path() / "tiny-moe.dpstudio.json";
    writeTinyMoe(project);
    const PlatformRun run = runOnPlatform(replicaOptions(project, "dualpipev-ep", dir.path()), 4,
        [] { return std::make_unique<CudaChoiceOnCpu>("nccl"); });
    EXPECT_EQ(run.codes, (std::vector<int> { 3, 3, 3, 3 }));
    ASSERT_EQ(run.events[0].size(), 2u);
    EXPECT_EQ(run.events[0][1]["event"], "error");
    const std::string message = run.events[0][1]["message"].get<std::string>();
    EXPECT_EQ(message.rfind("variant dualpipev-ep: model.moe.ep 2 over NCCL: ", 0), 0u) << message;
    EXPECT_NE(message.find("CUDA_VISIBLE_DEVICES=0"), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(dir.path() / "measured.json"));
}
