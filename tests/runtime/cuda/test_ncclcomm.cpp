// NcclComm on real GPUs: two ranks as two threads (ThreadComm bootstraps the unique id), each on its own
// GPU, exchange a schedule's messages with receives posted only when needed (so staging is exercised), then
// an unplanned exchange like the replica gradient sum. Skips without two GPUs.
#include "runtime/backend.h"
#include "runtime/cuda/cudabackend.h"
#include "runtime/cuda/gpuinfo.h"
#include "runtime/cuda/jobsetup.h"
#include "runtime/cuda/ncclcomm.h"
#include "runtime/threadcomm.h"
#include "schedule/generator.h"

#include <gtest/gtest.h>

#include <vector>

using namespace dps;
using namespace dps::runtime;

namespace {

constexpr std::size_t kElements = 1 << 16; // 256 KiB in fp32

int messageTag(const Schedule& s, int stage, int microbatch, int kind)
{
    return (microbatch * s.stages + stage) * 2 + kind;
}

/// Cross-rank inputs and outputs of one op, as (peer, tag).
std::vector<std::pair<int, int>> inputsOf(const Schedule& s, const Op& op, int rank)
{
    std::vector<std::pair<int, int>> out;
    if (op.kind == OpKind::F && op.stage > 0)
        out.emplace_back(s.placement.rankOf(op.stage - 1, op.microbatch), messageTag(s, op.stage, op.microbatch, 0));
    if ((op.kind == OpKind::I || op.kind == OpKind::B) && op.stage + 1 < s.stages)
        out.emplace_back(s.placement.rankOf(op.stage + 1, op.microbatch), messageTag(s, op.stage, op.microbatch, 1));
    std::erase_if(out, [rank](const auto& p) { return p.first == rank; });
    return out;
}

std::vector<std::pair<int, int>> outputsOf(const Schedule& s, const Op& op, int rank)
{
    std::vector<std::pair<int, int>> out;
    if (op.kind == OpKind::F && op.stage + 1 < s.stages)
        out.emplace_back(
            s.placement.rankOf(op.stage + 1, op.microbatch), messageTag(s, op.stage + 1, op.microbatch, 0));
    if ((op.kind == OpKind::I || op.kind == OpKind::B) && op.stage > 0)
        out.emplace_back(
            s.placement.rankOf(op.stage - 1, op.microbatch), messageTag(s, op.stage - 1, op.microbatch, 1));
    std::erase_if(out, [rank](const auto& p) { return p.first == rank; });
    return out;
}

/// One rank's step: receive each input just before its slot (checking it carries its tag), send outputs
/// filled with their tag.
void runRank(const Schedule& s, Comm& comm, CudaBackend& gpu)
{
    const int rank = comm.rank();
    std::vector<std::pair<RequestId, Tensor>> sends;
    std::vector<float> host(kElements);
    for (const Action& a : s.order[static_cast<std::size_t>(rank)]) {
        for (int h = 0; h < a.size(); ++h)
            for (const auto& [peer, tag] : inputsOf(s, a.at(h), rank)) {
                Tensor in(gpu, kElements, 1, MemoryCategory::Communication);
                const RequestId r = comm.irecv(in.data(), in.bytes(), peer, tag);
                comm.wait(r);
                gpu.downloadFloats(0, host.data(), in.data(), kElements);
                ASSERT_EQ(host.front(), static_cast<float>(tag)) << "rank " << rank << " got the wrong message";
                ASSERT_EQ(host.back(), static_cast<float>(tag));
            }
        for (int h = 0; h < a.size(); ++h)
            for (const auto& [peer, tag] : outputsOf(s, a.at(h), rank)) {
                Tensor out(gpu, kElements, 1, MemoryCategory::Communication);
                std::fill(host.begin(), host.end(), static_cast<float>(tag));
                gpu.uploadFloats(0, out.data(), host.data(), kElements);
                gpu.synchronize();
                const RequestId r = comm.isend(out.data(), out.bytes(), peer, tag);
                sends.emplace_back(r, std::move(out));
            }
    }
    for (auto& [r, t] : sends)
        comm.wait(r);
}

class NcclCommTest : public ::testing::TestWithParam<ScheduleKind> {
protected:
    void SetUp() override
    {
        std::string why;
        const auto gpus = dps::listGpus(&why);
        if (gpus.size() < 2)
            GTEST_SKIP() << "needs 2 GPUs, found " << gpus.size() << (why.empty() ? "" : ": " + why);
    }
};

} // namespace

TEST_P(NcclCommTest, ScheduleMessagesArriveInPlanOrderThenAnUnplannedExchange)
{
    const Schedule s = generate({ GetParam(), 2, 8, 0 });
    ThreadWorld world(2);
    world.run([&](Comm& bootstrap) {
        CudaBackendOptions options;
        options.device = bootstrap.rank();
        CudaBackend gpu(options);
        NcclComm nccl(bootstrap, gpu);
        EXPECT_EQ(nccl.name(), "nccl");
        EXPECT_TRUE(nccl.acceptsDevicePointers());
        const NcclTransfers mine = ncclTransfersOf(
            s, bootstrap.rank(),
            [&](const Transfer& t) {
                return messageTag(s, t.consumer.stage, t.consumer.microbatch, t.gradient() ? 1 : 0);
            },
            kElements * sizeof(float));
        nccl.setTransfers(mine.transfers, mine.peers);
        for (int step = 0; step < 2; ++step)
            runRank(s, nccl, gpu);
        EXPECT_EQ(nccl.stagingBuffers(), 0u);
        // Unplanned: both ranks post a receive and a send with the same tag, then wait.
        Tensor in(gpu, 1024, 1, MemoryCategory::Workspace);
        Tensor out(gpu, 1024, 1, MemoryCategory::Workspace);
        std::vector<float> host(1024, static_cast<float>(100 + bootstrap.rank()));
        gpu.uploadFloats(0, out.data(), host.data(), host.size());
        gpu.synchronize();
        const int peer = 1 - bootstrap.rank();
        const RequestId r = nccl.irecv(in.data(), in.bytes(), peer, 1 << 20);
        const RequestId w = nccl.isend(out.data(), out.bytes(), peer, 1 << 20);
        nccl.wait(r);
        nccl.wait(w);
        gpu.downloadFloats(0, host.data(), in.data(), host.size());
        EXPECT_EQ(host[0], static_cast<float>(100 + peer));
        nccl.barrier();
    });
}

INSTANTIATE_TEST_SUITE_P(Kinds, NcclCommTest,
    ::testing::Values(ScheduleKind::OneFOneB, ScheduleKind::ZBV, ScheduleKind::DualPipe, ScheduleKind::DualPipeV),
    [](const auto& p) {
        std::string name(kindName(p.param));
        std::erase(name, '-');
        return name;
    });
