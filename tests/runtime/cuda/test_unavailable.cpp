// A process whose CUDA module cannot be loaded ($DPSTUDIO_CUDA_MODULE names a file that does not exist, set
// before anything loads it): the GPU listing, `dpstudio devices`' status, backend selection and the worker's
// platform all say why with the loader's one line; auto runs on the CPU and records it; --backend cuda ends
// every rank with status 3. In a build without the module the same paths say "cuda: not built".
#include "base/gpus.h"
#include "base/gpus_module.h"
#include "runtime/cuda/gpuinfo.h"
#include "runtime/cuda/jobsetup.h"
#include "runtime/cuda/workerplatform.h"
#include "runtime/threadcomm.h"
#include "runtime/worker.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace dps::runtime;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const char* const kMissing = "/nonexistent/dps-test/libdpstudio-cuda.so";

// Before main, so before the first (and only) load of this process.
const bool kEnvironmentSet = ::setenv("DPSTUDIO_CUDA_MODULE", kMissing, 1) == 0;

/// The one line every path reports.
std::string expectedWhy()
{
    if (!dps::cudaModuleBuilt())
        return "cuda: not built";
    return std::string("CUDA backend not available: ") + kMissing
        + ": cannot open shared object file: No such file or directory";
}

struct WorkerRun {
    std::vector<int> codes;
    std::vector<std::string> events; ///< rank 0's JSON lines
    std::string log; ///< rank 0's
};

WorkerRun runWorkerOnPlatform(const WorkerOptions& options)
{
    WorkerRun run;
    run.codes.assign(2, -1);
    std::vector<std::ostringstream> events(2), logs(2);
    ThreadWorld world(2);
    world.run([&](Comm& comm) {
        const auto r = static_cast<std::size_t>(comm.rank());
        CudaWorkerPlatform platform;
        run.codes[r] = runWorker(options, comm, WorkerStreams { events[r], logs[r] }, platform);
    });
    std::istringstream in(events[0].str());
    for (std::string line; std::getline(in, line);)
        run.events.push_back(line);
    run.log = logs[0].str();
    return run;
}

class CudaUnavailable : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_TRUE(kEnvironmentSet);
        m_dir = fs::temp_directory_path() / ("dps_cuda_unavailable_" + std::to_string(::getpid()));
        fs::create_directories(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }

    WorkerOptions options(const std::string& backend) const
    {
        WorkerOptions o;
        o.project = std::string(DPS_TEST_DATA) + "/projects/runtime_small.dpstudio.json";
        o.variant = "dualpipev-2";
        o.backend = backend;
        o.steps = 1;
        o.warmup = 0;
        o.output = (m_dir / "measured.json").string();
        return o;
    }

    fs::path m_dir;
};

} // namespace

TEST_F(CudaUnavailable, EveryQuerySaysWhy)
{
    EXPECT_FALSE(cudaBuilt());
    EXPECT_FALSE(ncclBuilt());
    EXPECT_EQ(cudaRuntime(), nullptr);
    EXPECT_EQ(cudaWhyNot(), expectedWhy());
    std::string why;
    EXPECT_TRUE(dps::listGpus(&why).empty());
    EXPECT_EQ(why, expectedWhy());
    const dps::GpuStatus status = dps::gpuStatus();
    EXPECT_FALSE(status.cudaBuilt);
    EXPECT_EQ(status.runtimeVersion, "");
    EXPECT_EQ(status.message, dps::cudaModuleBuilt() ? "cuda: " + expectedWhy() : expectedWhy());
    EXPECT_EQ(cudaVersionText(), "CUDA not available");
    EXPECT_EQ(ncclVersionText(), "NCCL not available");
}

TEST_F(CudaUnavailable, JobSetupRefusesCudaWithTheReason)
{
    const Selection s { "cuda", "mpi-host", { 0 }, { 0 }, "test" };
    try {
        makeBackend(s, 0, false, 1);
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& e) {
        EXPECT_EQ(std::string(e.what()), expectedWhy());
    }
    const Selection autoCpu = selectBackend(cudaRequest(BackendChoice::Auto), { localRankDevices() });
    EXPECT_EQ(autoCpu.backend, "cpu");
    EXPECT_EQ(autoCpu.reason, "cpu (auto: " + expectedWhy() + ")");
}

TEST_F(CudaUnavailable, AutoRunsOnTheCpuAndRecordsWhy)
{
    const WorkerOptions o = options("auto");
    const WorkerRun run = runWorkerOnPlatform(o);
    ASSERT_EQ(run.codes, (std::vector<int> { 0, 0 })) << run.log;
    std::ifstream in(o.output);
    const json m = json::parse(in);
    EXPECT_EQ(m["backend"], "cpu");
    EXPECT_EQ(m["backend_choice"], "backend cpu, comm thread: cpu (auto: " + expectedWhy() + ")");
    EXPECT_EQ(m["correctness"]["passed"], true);
}

TEST_F(CudaUnavailable, CudaEndsEveryRankWithStatus3AndTheReason)
{
    const WorkerRun run = runWorkerOnPlatform(options("cuda"));
    EXPECT_EQ(run.codes, (std::vector<int> { 3, 3 }));
    ASSERT_EQ(run.events.size(), 2u) << run.log;
    const json error = json::parse(run.events[1]);
    EXPECT_EQ(error["event"], "error");
    EXPECT_EQ(error["message"], "--backend cuda: " + expectedWhy());
    EXPECT_FALSE(fs::exists(m_dir / "measured.json"));
}
