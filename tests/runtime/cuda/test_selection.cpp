// Backend and communication selection as a table (selection.h), the job-wide agreement over a comm, GPU
// listing without a device, and the check-failure message format.
#include "runtime/backend.h"
#include "runtime/cuda/check.h"
#include "runtime/cuda/gpuinfo.h"
#include "runtime/cuda/jobsetup.h"
#include "runtime/cuda/selection.h"
#include "runtime/cuda/transferorder.h"
#include "runtime/threadcomm.h"
#include "schedule/generator.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

using namespace dps::runtime;

namespace {

/// `ranks` ranks on one host that all see the GPUs `uuids` (empty: no GPU).
std::vector<RankDevices> oneHost(int ranks, std::vector<std::string> uuids, const std::string& host = "node0")
{
    std::vector<RankDevices> out;
    for (int r = 0; r < ranks; ++r)
        out.push_back(RankDevices { host, r, uuids, uuids.empty() ? "no GPU (0 devices)" : "" });
    return out;
}

std::vector<std::string> gpus(int n, const std::string& host = "node0")
{
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i)
        out.push_back("GPU-" + host + "-" + std::to_string(i));
    return out;
}

SelectionRequest request(BackendChoice backend, bool cuda = true, bool nccl = true, CommChoice comm = CommChoice::Auto)
{
    return SelectionRequest { backend, comm, cuda, nccl, "" };
}

struct Row {
    const char* name;
    SelectionRequest request;
    std::vector<RankDevices> ranks;
    const char* backend;
    const char* comm;
    std::vector<int> devices;
};

} // namespace

TEST(Selection, Table)
{
    const std::vector<Row> rows {
        { "cpu asked", request(BackendChoice::Cpu), oneHost(2, gpus(2)), "cpu", "mpi", { -1, -1 } },
        { "auto, not built", request(BackendChoice::Auto, false, false), oneHost(2, gpus(2)), "cpu", "mpi",
            { -1, -1 } },
        { "auto, no GPU", request(BackendChoice::Auto), oneHost(2, {}), "cpu", "mpi", { -1, -1 } },
        { "auto, a GPU per rank", request(BackendChoice::Auto), oneHost(2, gpus(2)), "cuda", "nccl", { 0, 1 } },
        { "auto, 8 GPUs 4 ranks", request(BackendChoice::Auto), oneHost(4, gpus(8)), "cuda", "nccl", { 0, 1, 2, 3 } },
        { "auto, ranks share 1 GPU", request(BackendChoice::Auto), oneHost(4, gpus(1)), "cuda", "mpi-host",
            { 0, 0, 0, 0 } },
        { "auto, 4 ranks on 2 GPUs", request(BackendChoice::Auto), oneHost(4, gpus(2)), "cuda", "mpi-host",
            { 0, 1, 0, 1 } },
        { "cuda, NCCL not built", request(BackendChoice::Cuda, true, false), oneHost(2, gpus(2)), "cuda", "mpi-host",
            { 0, 1 } },
        { "cuda, --comm mpi", request(BackendChoice::Cuda, true, true, CommChoice::Mpi), oneHost(2, gpus(2)), "cuda",
            "mpi-host", { 0, 1 } },
        { "cuda, 1 rank", request(BackendChoice::Cuda), oneHost(1, gpus(1)), "cuda", "nccl", { 0 } },
    };
    for (const Row& row : rows) {
        SCOPED_TRACE(row.name);
        const Selection s = selectBackend(row.request, row.ranks);
        EXPECT_EQ(s.backend, row.backend);
        EXPECT_EQ(s.comm, row.comm);
        EXPECT_EQ(s.deviceOfRank, row.devices);
        EXPECT_FALSE(s.reason.empty());
        EXPECT_EQ(s.usesNccl(), std::string(row.comm) == "nccl");
    }
}

TEST(Selection, SharedGpusFallBackToMpiAndSaySo)
{
    const Selection s = selectBackend(request(BackendChoice::Auto), oneHost(2, gpus(1)));
    EXPECT_EQ(s.comm, "mpi-host");
    EXPECT_NE(s.reason.find("ranks 0 and 1 share GPU GPU-node0-0"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find("NCCL needs one GPU per rank"), std::string::npos) << s.reason;
    EXPECT_NE(s.reason.find("auto"), std::string::npos) << s.reason;
}

TEST(Selection, TwoHostsWithTheirOwnGpusUseNccl)
{
    auto ranks = oneHost(2, gpus(2, "a"), "a");
    for (auto& r : oneHost(2, gpus(2, "b"), "b"))
        ranks.push_back(r);
    const Selection s = selectBackend(request(BackendChoice::Auto), ranks);
    EXPECT_EQ(s.comm, "nccl");
    EXPECT_EQ(s.deviceOfRank, (std::vector<int> { 0, 1, 0, 1 }));
}

TEST(Selection, OneVisibleGpuPerRankIsNotSharing)
{
    // A launcher that sets CUDA_VISIBLE_DEVICES per rank: every rank sees "device 0", but distinct GPUs.
    std::vector<RankDevices> ranks;
    for (int r = 0; r < 4; ++r)
        ranks.push_back(RankDevices { "node0", r, { "GPU-" + std::to_string(r) }, "" });
    const Selection s = selectBackend(request(BackendChoice::Auto), ranks);
    EXPECT_EQ(s.comm, "nccl");
    EXPECT_EQ(s.deviceOfRank, (std::vector<int> { 0, 0, 0, 0 }));
}

TEST(Selection, LocalRanksAreDerivedPerHostWhenUnknown)
{
    std::vector<RankDevices> ranks;
    for (const char* host : { "a", "b", "a", "b" })
        ranks.push_back(RankDevices { host, -1, gpus(2, host), "" });
    const Selection s = selectBackend(request(BackendChoice::Auto), ranks);
    EXPECT_EQ(s.localRankOfRank, (std::vector<int> { 0, 0, 1, 1 }));
    EXPECT_EQ(s.deviceOfRank, (std::vector<int> { 0, 0, 1, 1 }));
    EXPECT_EQ(s.comm, "nccl");
}

TEST(Selection, ImpossibleRequestsNameTheCause)
{
    auto expectError = [](const SelectionRequest& r, const std::vector<RankDevices>& ranks, const std::string& text) {
        try {
            selectBackend(r, ranks);
            ADD_FAILURE() << "expected RuntimeError containing '" << text << "'";
        } catch (const RuntimeError& e) {
            EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
        }
    };
    expectError(request(BackendChoice::Cuda, false, false), oneHost(2, gpus(2)), "--backend cuda: cuda: not built");
    SelectionRequest unavailable = request(BackendChoice::Cuda, false, false);
    unavailable.cudaWhyNot = "CUDA backend not available: libcudart.so.13: cannot open shared object file";
    expectError(unavailable, oneHost(2, gpus(2)),
        "--backend cuda: CUDA backend not available: libcudart.so.13: cannot open shared object file");
    auto ranks = oneHost(2, gpus(2));
    ranks[1].gpuUuids.clear();
    ranks[1].whyNoGpu = "no GPU (cudaGetDeviceCount: CUDA driver version is insufficient)";
    expectError(request(BackendChoice::Cuda), ranks, "rank 1 on node0 has no GPU (no GPU (cudaGetDeviceCount");
    expectError(request(BackendChoice::Cuda, true, true, CommChoice::Nccl), oneHost(2, gpus(1)),
        "--comm nccl: ranks 0 and 1 share GPU");
    expectError(request(BackendChoice::Cuda, true, false, CommChoice::Nccl), oneHost(2, gpus(2)), "NCCL is not built");
    expectError(request(BackendChoice::Auto), {}, "no ranks");
}

TEST(Selection, AutoWithoutTheCudaBackendSaysWhy)
{
    SelectionRequest r = request(BackendChoice::Auto, false, false);
    EXPECT_EQ(selectBackend(r, oneHost(2, gpus(2))).reason, "cpu (auto: cuda: not built)");
    r.cudaWhyNot = "CUDA backend not available: libdpstudio-cuda.so not found in /opt/x/bin";
    const Selection s = selectBackend(r, oneHost(2, gpus(2)));
    EXPECT_EQ(s.backend, "cpu");
    EXPECT_EQ(s.reason, "cpu (auto: CUDA backend not available: libdpstudio-cuda.so not found in /opt/x/bin)");
}

TEST(Selection, AutoWithoutAGpuOnOneRankNamesIt)
{
    auto ranks = oneHost(3, gpus(3));
    ranks[2].gpuUuids.clear();
    ranks[2].whyNoGpu = "no GPU (0 devices)";
    const Selection s = selectBackend(request(BackendChoice::Auto), ranks);
    EXPECT_EQ(s.backend, "cpu");
    EXPECT_NE(s.reason.find("rank 2 on node0 has no GPU"), std::string::npos) << s.reason;
}

TEST(Selection, ChoicesParse)
{
    EXPECT_EQ(parseBackendChoice("auto"), BackendChoice::Auto);
    EXPECT_EQ(parseBackendChoice("cpu"), BackendChoice::Cpu);
    EXPECT_EQ(parseBackendChoice("cuda"), BackendChoice::Cuda);
    EXPECT_FALSE(parseBackendChoice("gpu").has_value());
    EXPECT_EQ(parseCommChoice("nccl"), CommChoice::Nccl);
    EXPECT_EQ(parseCommChoice("mpi"), CommChoice::Mpi);
    EXPECT_FALSE(parseCommChoice("mpi-host").has_value());
}

TEST(Selection, RankReportsRoundTrip)
{
    const RankDevices d { "host-7", 3, { "GPU-a", "GPU-b" }, "" };
    const RankDevices back = decodeRankDevices(encodeRankDevices(d));
    EXPECT_EQ(back.host, d.host);
    EXPECT_EQ(back.localRank, 3);
    EXPECT_EQ(back.gpuUuids, d.gpuUuids);
    EXPECT_THROW(decodeRankDevices({ 'x' }), RuntimeError);
}

TEST(Selection, TheJobAgreesOverAComm)
{
    ThreadWorld world(3);
    std::mutex mutex;
    std::vector<Selection> results(3);
    world.run([&](Comm& comm) {
        RankDevices mine { "node0", comm.rank(), gpus(1), "" };
        const Selection s = selectForJob(comm, request(BackendChoice::Auto), mine);
        std::lock_guard lock(mutex);
        results[static_cast<std::size_t>(comm.rank())] = s;
    });
    for (const auto& s : results) {
        EXPECT_EQ(s.backend, "cuda");
        EXPECT_EQ(s.comm, "mpi-host");
        EXPECT_EQ(s.deviceOfRank, (std::vector<int> { 0, 0, 0 }));
        EXPECT_EQ(s.reason, results[0].reason);
    }
}

TEST(Selection, EveryRankGetsTheSameError)
{
    ThreadWorld world(2);
    std::mutex mutex;
    std::vector<std::string> errors(2);
    world.run([&](Comm& comm) {
        RankDevices mine { "node0", comm.rank(), {}, "no GPU (0 devices)" };
        try {
            selectForJob(comm, request(BackendChoice::Cuda), mine);
        } catch (const RuntimeError& e) {
            std::lock_guard lock(mutex);
            errors[static_cast<std::size_t>(comm.rank())] = e.what();
        }
    });
    EXPECT_NE(errors[0].find("has no GPU"), std::string::npos) << errors[0];
    EXPECT_EQ(errors[0], errors[1]);
}

TEST(GpuInfo, WithoutADeviceSaysWhy)
{
    std::string why;
    const auto list = dps::listGpus(&why);
    if (!list.empty())
        GTEST_SKIP() << "this machine has " << list.size() << " GPU(s); the no-GPU answer cannot be checked";
    if (cudaBuilt())
        EXPECT_EQ(why.rfind("no GPU", 0), 0u) << why;
    else
        EXPECT_EQ(why, cudaWhyNot());
    EXPECT_FALSE(cudaVersionText().empty());
    EXPECT_EQ(ncclVersionText().rfind("NCCL", 0), 0u);
}

TEST(GpuInfo, LocalReportHasTheHost)
{
    const RankDevices mine = localRankDevices();
    EXPECT_FALSE(mine.host.empty());
    if (mine.gpuUuids.empty()) {
        EXPECT_FALSE(mine.whyNoGpu.empty());
    }
}

TEST(JobSetup, CpuSelectionGivesTheCpuBackendAndPlainMpi)
{
    const Selection s = selectBackend(request(BackendChoice::Cpu), oneHost(1, {}));
    auto backend = makeBackend(s, 0, false, 1);
    EXPECT_EQ(backend->name(), "cpu");
    ThreadWorld world(1);
    EXPECT_EQ(makeComm(s, world.comm(0), *backend), nullptr);
}

TEST(JobSetup, SharedGpuCommIsRecordedAsMpiHost)
{
    Selection s;
    s.backend = "cpu"; // the renaming does not depend on the backend
    s.comm = "mpi-host";
    auto backend = makeBackend(s, 0, false, 1);
    ThreadWorld world(1);
    const auto comm = makeComm(s, world.comm(0), *backend);
    ASSERT_NE(comm, nullptr);
    EXPECT_EQ(comm->name(), "mpi-host");
    EXPECT_EQ(comm->size(), 1);
    EXPECT_FALSE(comm->acceptsDevicePointers());
}

TEST(JobSetup, CudaWithoutTheBuildOrADeviceThrows)
{
    Selection s { "cuda", "nccl", { 0 }, { 0 }, "test" };
    std::string why;
    if (!dps::listGpus(&why).empty())
        GTEST_SKIP() << "a GPU is present: the failure path cannot be exercised";
    try {
        makeBackend(s, 0, false, 1);
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& e) {
        const std::string what = e.what();
        // Without the module: its reason; with it (the error crosses from the module): the device's.
        if (cudaBuilt())
            EXPECT_NE(what.find("cudaGetDeviceCount(&count) failed"), std::string::npos) << what;
        else
            EXPECT_EQ(what, cudaWhyNot());
    }
}

TEST(JobSetup, NcclTransfersFollowThePlanWithTheExecutorsTagsAndReplicaPeers)
{
    // DualPipe on 4 ranks: rank 0 holds stages 0 and 7, so it talks to rank 1 (both pipelines' neighbour)
    // and shares its stages with rank 3 (the replica gradient exchange).
    const dps::Schedule s = dps::generate({ dps::ScheduleKind::DualPipe, 4, 8, 0 });
    const TransferPlan plan = deriveTransferPlan(s);
    const auto tagOf = [](const Transfer& t) { return t.consumer.stage * 1000 + t.consumer.microbatch; };
    const NcclTransfers mine = ncclTransfersOf(s, 0, tagOf, 4096);
    EXPECT_EQ(mine.peers, (std::vector<int> { 1, 3 }));
    const auto& entries = plan.ranks[0].entries;
    ASSERT_EQ(mine.transfers.size(), entries.size());
    ASSERT_FALSE(entries.empty());
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const Transfer& t = plan.transfers[static_cast<std::size_t>(entries[i].transfer)];
        EXPECT_EQ(mine.transfers[i].send, entries[i].send) << i;
        EXPECT_EQ(mine.transfers[i].peer, 1) << i;
        EXPECT_EQ(mine.transfers[i].tag, t.consumer.stage * 1000 + t.consumer.microbatch) << i;
        EXPECT_EQ(mine.transfers[i].bytes, 4096u) << i;
    }
}

TEST(JobSetup, NcclTransfersOfAReplicaTalkToTheSameReplicaAndSumWithEveryHolder)
{
    // 1F1B on 2 ranks × dp 2 (comm rank = rank × 2 + replica): comm rank 3 is pipeline rank 1 of replica 1. Its
    // transfers are pipeline rank 1's, in the same order with the same tags, each with comm rank 1 (pipeline
    // rank 0 of replica 1); it sums its stage's gradients with comm rank 2 (the same stage in replica 0).
    const dps::Schedule s = dps::generate({ dps::ScheduleKind::OneFOneB, 2, 4, 0 });
    const auto tagOf = [](const Transfer& t) { return t.consumer.stage * 1000 + t.consumer.microbatch; };
    const NcclTransfers single = ncclTransfersOf(s, 1, tagOf, 256);
    const NcclTransfers mine = ncclTransfersOf(s, 3, tagOf, 256, 2);
    EXPECT_EQ(single.peers, (std::vector<int> { 0 }));
    EXPECT_EQ(mine.peers, (std::vector<int> { 1, 2 }));
    ASSERT_EQ(mine.transfers.size(), single.transfers.size());
    ASSERT_EQ(mine.transfers.size(), 8u); // 4 activations in, 4 gradients out
    for (std::size_t i = 0; i < mine.transfers.size(); ++i) {
        EXPECT_EQ(mine.transfers[i].send, single.transfers[i].send) << i;
        EXPECT_EQ(mine.transfers[i].tag, single.transfers[i].tag) << i;
        EXPECT_EQ(mine.transfers[i].bytes, 256u) << i;
        EXPECT_EQ(mine.transfers[i].peer, 1) << i;
    }
    // DualPipe on 2 ranks × dp 2: every rank holds both stages, so comm rank 1 (pipeline rank 0, replica 1)
    // talks to comm rank 3 (pipeline rank 1, replica 1) and sums with all three others.
    const dps::Schedule dual = dps::generate({ dps::ScheduleKind::DualPipe, 2, 4, 0 });
    const NcclTransfers holder = ncclTransfersOf(dual, 1, tagOf, 256, 2);
    EXPECT_EQ(holder.peers, (std::vector<int> { 0, 2, 3 }));
    ASSERT_FALSE(holder.transfers.empty());
    for (const PlannedTransfer& t : holder.transfers)
        EXPECT_EQ(t.peer, 3);
    EXPECT_THROW(ncclTransfersOf(s, 4, tagOf, 256, 2), RuntimeError); // 2 ranks × 2 replicas: comm ranks 0–3
    EXPECT_THROW(ncclTransfersOf(s, 0, tagOf, 256, 0), RuntimeError);
}

TEST(CheckMacros, FailureTextNamesRankHostCallFileAndLine)
{
    setCheckRank(5);
    const std::string text
        = checkFailureText("cudaMalloc(&p, n)", "/src/x/engine/runtime/cuda/a.cpp", 42, "out of memory");
    EXPECT_EQ(text.rfind("rank 5 on ", 0), 0u) << text;
    EXPECT_NE(text.find(": cudaMalloc(&p, n) failed (engine/runtime/cuda/a.cpp:42): out of memory"), std::string::npos)
        << text;
    setCheckRank(-1);
    EXPECT_EQ(checkRank(), -1);
}

TEST(JobSetup, AutoWithoutAGpuRunsEveryRankOnTheCpuOverPlainMpi)
{
    std::string why;
    if (!dps::listGpus(&why).empty())
        GTEST_SKIP() << "a GPU is present: auto would choose cuda";
    ThreadWorld world(2);
    std::mutex mutex;
    std::vector<std::string> described(2);
    world.run([&](Comm& comm) {
        Job job = setUpJob(comm, BackendChoice::Auto, false, 1);
        EXPECT_EQ(job.backend->name(), "cpu");
        EXPECT_EQ(job.comm, &comm);
        EXPECT_EQ(job.ownComm, nullptr);
        job.backend->stepStarted(); // no device clock on the CPU: compute_us is the host's
        EXPECT_FALSE(job.backend->lastActionDeviceUs().has_value());
        std::lock_guard lock(mutex);
        described[static_cast<std::size_t>(comm.rank())] = job.describe();
    });
    EXPECT_EQ(described[0], described[1]);
    // With the CUDA module: the device is missing; without it: why the module is.
    if (cudaBuilt())
        EXPECT_EQ(described[0].rfind("backend cpu, comm mpi: cpu (auto: rank 0 on ", 0), 0u) << described[0];
    else
        EXPECT_EQ(described[0], "backend cpu, comm mpi: cpu (auto: " + cudaWhyNot() + ")");
}

TEST(JobSetup, CudaWithoutAGpuFailsOnEveryRankAlike)
{
    std::string why;
    if (!dps::listGpus(&why).empty())
        GTEST_SKIP() << "a GPU is present: --backend cuda would succeed";
    ThreadWorld world(2);
    std::mutex mutex;
    std::vector<std::string> errors(2);
    world.run([&](Comm& comm) {
        try {
            setUpJob(comm, BackendChoice::Cuda, false, 1);
        } catch (const RuntimeError& e) {
            std::lock_guard lock(mutex);
            errors[static_cast<std::size_t>(comm.rank())] = e.what();
        }
    });
    EXPECT_FALSE(errors[0].empty());
    EXPECT_EQ(errors[0], errors[1]);
}
