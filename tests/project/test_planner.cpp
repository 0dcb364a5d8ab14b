// The planner (engine/project/planner.h) and the step time it ranks by (dataparallel.h, Prediction::stepUs):
// pruning never changes the best step or the Pareto front (against an exhaustive enumeration of the same space),
// every candidate is exactly its variant's prediction, the partition, the memory parser, the ring formula, and
// compare's same-devices mode.
#include "base/errors.h"
#include "project/compare.h"
#include "project/dataparallel.h"
#include "project/modelinfo.h"
#include "project/planner.h"
#include "project/predict.h"
#include "project/presets.h"
#include "project/project.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace dps;

namespace {

/// DeepSeek-V3's shapes cut to 8 layers (3 dense, 5 MoE) with ep 8, on H800 nodes of 8: a small MoE space.
Project smallMoeProject()
{
    Project p = defaultProject();
    ModelPreset preset = modelPreset("deepseek-v3");
    p.model = preset.model;
    p.model.layers = 8;
    p.model.seqLen = 1024;
    p.model.transformer.moe.ep = 8;
    p.training = preset.training;
    p.cluster = devicePreset("h800");
    p.costs = CostSettings {};
    Variant v;
    v.name = "seed";
    v.kind = ScheduleKind::OneFOneB;
    v.ranks = 8;
    v.microbatches = 8;
    v.dp = 8;
    p.variants = { v };
    p.activeVariant = "seed";
    validateProject(p);
    return p;
}

std::set<std::string> frontOf(const PlanResult& r)
{
    std::set<std::string> names;
    for (const PlanCandidate& c : r.candidates)
        if (c.pareto)
            names.insert(c.variant.name);
    return names;
}

/// The planner with pruning against every candidate simulated: the same best step (to 0.1 %) and front.
void expectSameAsExhaustive(const Project& project, PlanRequest request, bool expectPruning)
{
    request.prune = true;
    const PlanResult pruned = plan(project, request);
    request.prune = false;
    const PlanResult all = plan(project, request);
    ASSERT_FALSE(all.candidates.empty());
    ASSERT_FALSE(pruned.candidates.empty());
    EXPECT_EQ(pruned.enumerated, all.enumerated);
    EXPECT_EQ(all.pruned, 0);
    EXPECT_EQ(all.simulated, all.enumerated);
    if (expectPruning) {
        EXPECT_GT(pruned.pruned, 0) << "the bounds prune nothing on this space";
    }
    EXPECT_EQ(pruned.simulated + pruned.pruned, pruned.enumerated);
    EXPECT_NEAR(pruned.candidates.front().stepUs, all.candidates.front().stepUs, 1e-3 * all.candidates.front().stepUs);
    EXPECT_EQ(pruned.candidates.front().variant.name, all.candidates.front().variant.name);
    EXPECT_EQ(frontOf(pruned), frontOf(all));
    EXPECT_FALSE(frontOf(all).empty());
}

} // namespace

TEST(Planner, MinMaxPartitionIsTheBestContiguousSplit)
{
    // 1 2 3 | 4 5: largest 9 (1 2 3 4 | 5 gives 10); 1 2 3 | 4 | 5: largest 6.
    EXPECT_EQ(minMaxPartition({ 1, 2, 3, 4, 5 }, 2), (std::vector<int> { 3, 2 }));
    EXPECT_EQ(minMaxPartition({ 1, 2, 3, 4, 5 }, 3), (std::vector<int> { 3, 1, 1 }));
    // A heavy first layer (the embedding) and last (the head): 5 | 1 1 1 | 1 1 1 | 4.
    EXPECT_EQ(minMaxPartition({ 5, 1, 1, 1, 1, 1, 1, 4 }, 4), (std::vector<int> { 1, 3, 3, 1 }));
    EXPECT_EQ(minMaxPartition({ 1, 1 }, 2), (std::vector<int> { 1, 1 }));
    EXPECT_TRUE(minMaxPartition({ 1, 1 }, 3).empty());
    EXPECT_TRUE(minMaxPartition({ 1, 1 }, 0).empty());
}

TEST(Planner, MemorySizesInBytesOrUnits)
{
    EXPECT_DOUBLE_EQ(parseMemorySize("80e9", "--memory-limit"), 80e9);
    EXPECT_DOUBLE_EQ(parseMemorySize("80GB", "--memory-limit"), 80e9);
    EXPECT_DOUBLE_EQ(parseMemorySize("80GiB", "--memory-limit"), 85899345920.0);
    EXPECT_DOUBLE_EQ(parseMemorySize("512MiB", "--memory-limit"), 536870912.0);
    EXPECT_DOUBLE_EQ(parseMemorySize("1.5 kB", "--memory-limit"), 1500.0);
    for (const char* bad : { "", "GB", "80 XB", "-1", "nan", "80GBs", "0x50", "inf", "0", "-0", "1e30", "0.5" }) {
        try {
            parseMemorySize(bad, "--memory-limit");
            ADD_FAILURE() << bad;
        } catch (const ConstraintError& e) {
            EXPECT_NE(std::string(e.what()).find("--memory-limit: '"), std::string::npos) << e.what();
        }
    }
}

TEST(Planner, ParetoFront)
{
    // (1, 9) and (3, 2) and (2, 5) are not dominated; (3, 9) is by all; (3, 2) twice: neither dominates the other.
    const std::vector<std::pair<double, double>> points { { 1, 9 }, { 3, 9 }, { 3, 2 }, { 2, 5 }, { 3, 2 } };
    EXPECT_EQ(paretoFront(points), (std::vector<std::size_t> { 0, 2, 3, 4 }));
}

TEST(DataParallel, RingAllReduce)
{
    // 2 (4 − 1)/4 × 1e6 B ÷ 1e3 B/µs + 2 (4 − 1) × 5 µs = 1500 + 30.
    EXPECT_DOUBLE_EQ(ringAllReduceUs(1e6, 4, 5.0, 1e3), 1530.0);
    EXPECT_DOUBLE_EQ(ringAllReduceUs(1e6, 1, 5.0, 1e3), 0.0);
    EXPECT_DOUBLE_EQ(ringAllReduceUs(0.0, 4, 5.0, 1e3), 0.0);
    EXPECT_DOUBLE_EQ(ringAllReduceUs(1e6, 2, 5.0, 0.0), 10.0); // unlimited bandwidth: latency only
}

TEST(DataParallel, StepIsTheLatestRankEndPlusItsAllReduce)
{
    SimResult sim;
    sim.makespanUs = 10.0;
    sim.ranks.resize(2);
    sim.ranks[0].endUs = 10.0;
    sim.ranks[1].endUs = 8.0;
    EXPECT_DOUBLE_EQ(stepTimeUs(sim, { 1.0, 5.0 }), 13.0); // max(10 + 1, 8 + 5)
    EXPECT_DOUBLE_EQ(stepTimeUs(sim, { 0.0, 1.0 }), 10.0); // hidden in the cool-down
    EXPECT_DOUBLE_EQ(stepTimeUs(sim, {}), 10.0);
}

TEST(DataParallel, DefaultProjectFigures)
{
    const Project project = defaultProject();
    // dp 1: the step is the makespan, the numbers of the default project unchanged.
    const Prediction dualpipe = predict(project, "dualpipe");
    ASSERT_TRUE(dualpipe.valid());
    EXPECT_NEAR(dualpipe.makespanUs, 2365010.3104, 1e-4);
    EXPECT_DOUBLE_EQ(dualpipe.stepUs, dualpipe.makespanUs);
    EXPECT_DOUBLE_EQ(dualpipe.allReduceUs, 0.0);
    EXPECT_EQ(dualpipe.devices, 8);
    EXPECT_DOUBLE_EQ(dualpipe.tokensPerStep, 20.0 * 2 * 128); // microbatches × size × seq len × dp
    EXPECT_DOUBLE_EQ(dualpipe.tokensPerSecond(), 5120.0 / dualpipe.stepUs * 1e6);
    EXPECT_DOUBLE_EQ(dualpipe.tokensPerSecondPerDevice(), dualpipe.tokensPerSecond() / 8);

    // DualPipeV on 4 ranks × dp 2: a rank holds 2 stages of 2 blocks, 2 × 2 × 512 × 2048 × 2 = 8,388,608 fp32
    // parameters = 33,554,432 gradient bytes; a ring of 2 on the one link (5000 B/µs, 2 µs):
    // 2 (1)/2 × 33554432 ÷ 5000 + 2 × 2 = 6714.8864 µs.
    Variant v = *project.find("dualpipev");
    v.dp = 2;
    v.microbatches = 10;
    const Prediction p = predict(project, v);
    ASSERT_TRUE(p.valid()) << p.error;
    ASSERT_EQ(p.allReduceUsPerRank.size(), 4u);
    for (double us : p.allReduceUsPerRank)
        EXPECT_NEAR(us, 6714.8864, 1e-9);
    double expected = p.makespanUs;
    for (std::size_t r = 0; r < 4; ++r)
        expected = std::max(expected, p.sim.ranks[r].endUs + 6714.8864);
    EXPECT_NEAR(p.stepUs, expected, 1e-6);
    EXPECT_NEAR(p.exposedAllReduceUs, p.stepUs - p.makespanUs, 1e-9);
    EXPECT_EQ(p.devices, 8);
    EXPECT_EQ(p.dp, 2);
    EXPECT_DOUBLE_EQ(p.tokensPerStep, 10.0 * 2 * 128 * 2);
}

TEST(DataParallel, InterNodeLinkWhenTheReplicasSpanNodes)
{
    Project project = smallMoeProject(); // ep 8, 8 GPUs per node
    Variant v = project.variants[0];
    v.ranks = 8;
    v.dp = 8; // D = 8: each rank's replicas fill one node
    const Schedule s8 = buildSchedule(project, v);
    const CostModel c8 = buildCostModel(project, v);
    const DataParallelAllReduce in = dataParallelAllReduce(project, v, s8, c8);
    for (char inter : in.interNode)
        EXPECT_EQ(inter, 0);
    // Rank 0 holds layer 0 (dense, with the embedding): no experts; the ring of 8 on NVLink.
    EXPECT_DOUBLE_EQ(in.expertBytes[0], 0.0);
    EXPECT_DOUBLE_EQ(
        in.us[0], ringAllReduceUs(in.denseBytes[0], 8, project.cluster.latencyUs, project.cluster.bandwidthBytesPerUs));
    // Rank 7 holds an MoE layer: its experts' ring has dp ÷ ep = 1 member (nothing to reduce).
    EXPECT_GT(in.expertBytes[7], 0.0);
    EXPECT_DOUBLE_EQ(
        in.us[7], ringAllReduceUs(in.denseBytes[7], 8, project.cluster.latencyUs, project.cluster.bandwidthBytesPerUs));
    // dp 16 on 4 ranks: 16 replicas span 2 nodes: the dense ring on the inter-node link; the expert ring of 2
    // (replica 0 and 8) crosses nodes too.
    v.ranks = 4;
    v.dp = 16;
    v.layerPartition.clear();
    const Schedule s16 = buildSchedule(project, v);
    const CostModel c16 = buildCostModel(project, v);
    const DataParallelAllReduce across = dataParallelAllReduce(project, v, s16, c16);
    const ClusterDesc& cl = project.cluster;
    for (std::size_t r = 0; r < 4; ++r) {
        EXPECT_EQ(across.interNode[r], 1);
        EXPECT_DOUBLE_EQ(across.us[r],
            ringAllReduceUs(across.denseBytes[r], 16, cl.interNodeLatencyUs, cl.interNodeBandwidthBytesPerUs)
                + ringAllReduceUs(across.expertBytes[r], 2, cl.interNodeLatencyUs, cl.interNodeBandwidthBytesPerUs));
    }
}

TEST(Planner, PruningKeepsTheBestAndTheFrontOfTheBlockModel)
{
    PlanRequest request;
    request.devices = 8;
    request.globalBatch = 40;
    request.memoryLimitBytes = 8e9;
    // Every candidate does the same work per device (the block model's microbatch size is fixed): no bound
    // shows one dominated, so nothing is pruned; the comparison still holds.
    expectSameAsExhaustive(defaultProject(), request, false);
    request.memoryLimitBytes = 130.0 * 1024 * 1024; // some candidates do not fit
    expectSameAsExhaustive(defaultProject(), request, false);
}

TEST(Planner, PruningKeepsTheBestAndTheFrontOfAnMoeModel)
{
    PlanRequest request;
    request.devices = 64;
    request.globalBatch = 64;
    request.memoryLimitBytes = 80e9;
    request.maxMicrobatchSize = 4;
    expectSameAsExhaustive(smallMoeProject(), request, true);
    request.memoryLimitBytes = 40e9; // static memory alone rules some out
    expectSameAsExhaustive(smallMoeProject(), request, true);
}

TEST(Planner, EveryCandidateIsItsVariantsPrediction)
{
    const Project project = smallMoeProject();
    PlanRequest request;
    request.devices = 64;
    request.globalBatch = 64;
    request.memoryLimitBytes = 80e9;
    request.maxMicrobatchSize = 4;
    const PlanResult result = plan(project, request);
    ASSERT_GE(result.candidates.size(), 3u);
    for (std::size_t i = 1; i < result.candidates.size(); ++i)
        EXPECT_LE(result.candidates[i - 1].stepUs, result.candidates[i].stepUs);
    // Written into the project, saved as text and read back, as `plan --add-variants` then `simulate` do.
    const int all = static_cast<int>(result.candidates.size());
    const Project added = parseProject(serializeProject(withPlanVariants(project, result, all)), "added");
    ASSERT_EQ(added.variants.size(), result.candidates.size() + 1);
    EXPECT_EQ(added.activeVariant, result.candidates[0].variant.name);
    for (std::size_t i = 0; i < result.candidates.size(); ++i) {
        const PlanCandidate& c = result.candidates[i];
        EXPECT_EQ(c.variant.ranks * c.dp * c.tp * c.cp, 64);
        EXPECT_EQ(c.variant.tp, c.tp);
        EXPECT_EQ(c.variant.sequenceParallel, c.tp > 1);
        EXPECT_EQ(c.microbatches * c.microbatchSize * c.dp, 64);
        const Prediction p = predict(added, c.variant.name, PredictOptions::peaksOnly());
        ASSERT_TRUE(p.valid()) << c.variant.name << ": " << p.error;
        EXPECT_TRUE(p.report.valid());
        EXPECT_EQ(p.stepUs, c.stepUs) << c.variant.name;
        EXPECT_EQ(p.peakMemoryBytes, c.peakMemoryBytes) << c.variant.name;
        for (const RankResult& r : p.sim.ranks)
            EXPECT_LE(r.peakMemoryBytes, 80e9) << c.variant.name;
        EXPECT_DOUBLE_EQ(c.tokensPerSecond, 64.0 * 1024 / c.stepUs * 1e6);
        EXPECT_DOUBLE_EQ(c.tokensPerSecondPerDevice, c.tokensPerSecond / 64);
    }
}

TEST(Planner, NothingFitsSaysTheSmallestPeak)
{
    PlanRequest request;
    request.devices = 8;
    request.globalBatch = 40;
    request.memoryLimitBytes = 40.0 * 1024 * 1024; // below every candidate's peak (the least is above 58 MiB)
    const PlanResult result = plan(defaultProject(), request);
    EXPECT_TRUE(result.candidates.empty());
    EXPECT_GT(result.smallestPeakBytes, request.memoryLimitBytes);
    EXPECT_FALSE(result.smallestPeakCandidate.empty());
    EXPECT_GT(result.overLimit + result.pruned, 0);
    EXPECT_THROW(plan(defaultProject(), PlanRequest {}), ConstraintError);
}

TEST(Planner, KindsAndCancel)
{
    PlanRequest request;
    request.devices = 8;
    request.globalBatch = 40;
    request.kinds = { ScheduleKind::DualPipe, ScheduleKind::DualPipeV };
    const PlanResult two = plan(defaultProject(), request);
    ASSERT_FALSE(two.candidates.empty());
    ASSERT_EQ(two.kinds.size(), 2u);
    for (const PlanCandidate& c : two.candidates)
        EXPECT_TRUE(c.kind == ScheduleKind::DualPipe || c.kind == ScheduleKind::DualPipeV);
    int calls = 0;
    request.progress = [&calls](int, int) { return ++calls < 3; };
    const PlanResult cancelled = plan(defaultProject(), request);
    EXPECT_TRUE(cancelled.cancelled);
    EXPECT_EQ(calls, 3);
}

TEST(Compare, SameDevicesKeepsTheGlobalBatch)
{
    const Project project = defaultProject();
    const Variant& v = *project.find("dualpipev");
    EXPECT_EQ(devicesOf(project, v), 4);
    const Variant same = onSameDevices(project, v, 8);
    EXPECT_EQ(same.dp, 2);
    EXPECT_EQ(same.microbatches, 10);
    EXPECT_EQ(same.ranks, 4);
    const VariantComparison a = compareVariant(project, *project.find("dualpipe"));
    const VariantComparison b = compareVariant(project, same);
    ASSERT_TRUE(a.error.empty() && b.error.empty());
    EXPECT_EQ(a.devices, 8);
    EXPECT_EQ(b.devices, 8);
    EXPECT_DOUBLE_EQ(a.tokensPerStep, 5120.0);
    EXPECT_DOUBLE_EQ(b.tokensPerStep, 5120.0);
    EXPECT_DOUBLE_EQ(a.tokensPerSecond, 5120.0 / a.stepUs * 1e6);
    EXPECT_DOUBLE_EQ(b.tokensPerSecondPerDevice, b.tokensPerSecond / 8);
    EXPECT_THROW(onSameDevices(project, v, 6), ConstraintError);
    Variant odd = v;
    odd.microbatches = 9;
    EXPECT_THROW(onSameDevices(project, odd, 8), ConstraintError);
}

TEST(Planner, PruningKeepsTheBestAndTheFrontAtScale)
{
    // DeepSeek-V3 on 256 H800s (ep 64, so dp 64, 128 or 256), global batch 1024, 80 GB: hundreds of candidates.
    Project project = smallMoeProject();
    ModelPreset preset = modelPreset("deepseek-v3");
    project.model = preset.model;
    project.variants[0].dp = 64;
    project.variants[0].ranks = 4;
    validateProject(project);
    PlanRequest request;
    request.devices = 256;
    request.globalBatch = 1024;
    request.memoryLimitBytes = 80e9;
    expectSameAsExhaustive(project, request, true);
}

TEST(Planner, PruningKeepsTheBestAndTheFrontAtTheIssuesScale)
{
    // Llama 3 70B on 64 H100s, global batch 512, 80 GB (the benchmark's first case), every kind.
    Project project = defaultProject();
    ModelPreset preset = modelPreset("llama3-70b");
    project.model = preset.model;
    project.training = preset.training;
    project.cluster = devicePreset("h100-sxm");
    project.costs = CostSettings {};
    PlanRequest request;
    request.devices = 64;
    request.globalBatch = 512;
    request.memoryLimitBytes = 80e9;
    expectSameAsExhaustive(project, request, true);

    // DeepSeek-V3 on 2048 H800s, global batch 15,360 (the second case).
    preset = modelPreset("deepseek-v3");
    project.model = preset.model;
    project.training = preset.training;
    project.cluster = devicePreset("h800");
    request.devices = 2048;
    request.globalBatch = 15360;
    expectSameAsExhaustive(project, request, true);
}

TEST(Planner, DeepSeekV3sQuestionGetsDeepSeeksOwnConfiguration)
{
    // DeepSeek-V3 report §3.2: DualPipe over 16 ranks, dp 128, no tensor parallelism, on 2048 H800s of 80 GB. Its
    // time-balanced split (more layers on the cheap dense stage 0) runs over the limit or, where it fits, is slower
    // than the even split; the even split with the model's own recompute (norm-up-projection) fits, and is the
    // fastest DualPipe without tensor parallelism.
    Project project = defaultProject();
    const ModelPreset preset = modelPreset("deepseek-v3");
    project.model = preset.model;
    project.training = preset.training;
    project.cluster = devicePreset("h800");
    project.costs = CostSettings {};
    PlanRequest request;
    request.devices = 2048;
    request.globalBatch = 15360;
    request.kinds = { ScheduleKind::DualPipe };
    request.tps = { 1 };
    const PlanResult result = plan(project, request);
    ASSERT_FALSE(result.candidates.empty());
    const PlanCandidate& best = result.candidates.front();
    EXPECT_EQ(best.pp, 16);
    EXPECT_EQ(best.dp, 128);
    EXPECT_EQ(best.microbatches, 120);
    EXPECT_EQ(best.microbatchSize, 1);
    EXPECT_EQ(best.recompute, model::Recompute::NormUpProjection);
    EXPECT_LE(best.peakMemoryBytes, 80e9);
}

namespace {

/// Llama 3 8B's shapes (32 heads, 8 kv heads, hidden 4096) cut to `layers` layers on H100 nodes of 8.
Project smallDenseProject(int layers, int seqLen)
{
    Project p = defaultProject();
    ModelPreset preset = modelPreset("llama3-8b");
    p.model = preset.model;
    p.model.layers = layers;
    p.model.seqLen = seqLen;
    p.training = preset.training;
    p.cluster = devicePreset("h100-sxm");
    p.costs = CostSettings {};
    p.variants.clear();
    p.activeVariant.clear();
    return p;
}

} // namespace

TEST(Planner, TensorParallelismWhenPipelineAndDataAloneDoNotFit)
{
    // 4 layers on 32 devices: pp is at most 4, so a device holds at least a quarter of the model, its embedding
    // or head whole, whatever dp is (ZeRO-1 shards the optimizer state only). Every tp = 1 candidate's peak, from
    // the exhaustive search without a limit, is above the limit set below; tp 2 and 4 halve and quarter the
    // weights of a device, so the plan must use them.
    const Project project = smallDenseProject(4, 4096);
    PlanRequest request;
    request.devices = 32;
    request.globalBatch = 32;
    request.maxMicrobatchSize = 2;
    request.prune = false;
    request.tps = { 1 };
    request.memoryLimitBytes = 1e15;
    const PlanResult alone = plan(project, request);
    ASSERT_FALSE(alone.candidates.empty());
    double least = alone.candidates.front().peakMemoryBytes;
    for (const PlanCandidate& c : alone.candidates) {
        EXPECT_EQ(c.tp, 1);
        least = std::min(least, c.peakMemoryBytes);
    }
    request = PlanRequest {};
    request.devices = 32;
    request.globalBatch = 32;
    request.maxMicrobatchSize = 2;
    request.memoryLimitBytes = 0.9 * least;
    const PlanResult result = plan(project, request); // the default tp choices: 1, 2, 4 (hidden 4096 ÷ 4 = 1024)
    ASSERT_FALSE(result.candidates.empty()) << "smallest peak " << result.smallestPeakBytes;
    std::set<int> tps;
    for (const PlanCandidate& c : result.candidates) {
        EXPECT_GT(c.tp, 1) << c.variant.name;
        EXPECT_LE(c.peakMemoryBytes, request.memoryLimitBytes);
        tps.insert(c.tp);
    }
    EXPECT_TRUE(tps.count(2) + tps.count(4) > 0);
    EXPECT_EQ(tps.count(8), 0u) << "hidden 4096 ÷ 8 = 512 is below the smallest share searched";
    const PlanCandidate& best = result.candidates.front();
    EXPECT_TRUE(best.sequenceParallel);
    EXPECT_NE(best.variant.name.find("-tp" + std::to_string(best.tp) + "-"), std::string::npos) << best.variant.name;
    // MFU: the model's FLOPs of the step over the devices' bf16 peak for the step time.
    const double flops = trainingFlopsPerToken(project) * 32.0 * 4096;
    EXPECT_NEAR(best.mfu, flops / (best.stepUs * 1e-6 * 32 * project.cluster.deviceFlops), 1e-12);
    EXPECT_GT(best.mfu, 0.0);
    EXPECT_LT(best.mfu, project.cluster.efficiency);
}

TEST(Planner, PruningKeepsTheBestAndTheFrontOverTensorContextAndZero)
{
    // A dense model at a long sequence (16384: cp 2, 4 and 8 are searched) with ZeRO 0 to 3, tp 1, 2, 4.
    const Project project = smallDenseProject(8, 16384);
    PlanRequest request;
    request.devices = 32;
    request.globalBatch = 16;
    request.maxMicrobatchSize = 2;
    request.zeros = { 0, 1, 2, 3 };
    request.recomputes = { model::Recompute::Selective, model::Recompute::Full };
    request.memoryLimitBytes = 80e9;
    expectSameAsExhaustive(project, request, true);
    request.memoryLimitBytes = 30e9; // some do not fit, some by their static memory alone
    expectSameAsExhaustive(project, request, true);
    const PlanResult result = plan(project, request);
    std::set<int> cps, zeros;
    for (const PlanCandidate& c : result.candidates) {
        cps.insert(c.cp);
        zeros.insert(c.zero);
        EXPECT_EQ(c.tp * c.cp * c.variant.ranks * c.dp, 32);
    }
    EXPECT_GT(cps.size(), 1u);
    EXPECT_GT(zeros.size(), 1u);
}

TEST(Planner, PruningKeepsTheBestAndTheFrontOfAnMoeModelWithTensorParallelismAndZero3)
{
    PlanRequest request;
    request.devices = 64;
    request.globalBatch = 64;
    request.maxMicrobatchSize = 2;
    request.tps = { 1, 2 };
    request.cps = { 1, 2 };
    request.zeros = { 1, 3 };
    request.memoryLimitBytes = 60e9;
    expectSameAsExhaustive(smallMoeProject(), request, true);
}

TEST(Planner, ZeroStagesShardTheStaticMemory)
{
    // The same variant under ZeRO 0 and 3: the planner predicts each with its own training.zero, and the
    // candidate says which; ZeRO-3's peak is below ZeRO-0's (parameters, gradients and optimizer sharded over dp 8).
    const Project project = smallDenseProject(8, 4096);
    PlanRequest request;
    request.devices = 32;
    request.globalBatch = 32;
    request.maxMicrobatchSize = 1;
    request.kinds = { ScheduleKind::OneFOneB };
    request.recomputes = { model::Recompute::Full };
    request.tps = { 1 };
    request.cps = { 1 };
    request.zeros = { 0, 3 };
    request.memoryLimitBytes = 1e15;
    request.prune = false;
    const PlanResult result = plan(project, request);
    const auto find = [&](int zero) -> const PlanCandidate* {
        for (const PlanCandidate& c : result.candidates)
            if (c.zero == zero && c.pp == 4 && c.dp == 8)
                return &c;
        return nullptr;
    };
    const PlanCandidate* z0 = find(0);
    const PlanCandidate* z3 = find(3);
    ASSERT_TRUE(z0 && z3);
    EXPECT_LT(z3->peakMemoryBytes, z0->peakMemoryBytes);
    EXPECT_EQ(z0->variant.name, "1f1b-pp4-dp8-mb4x1-full-z0"); // the preset's ZeRO-1 is the default: z0 named
    EXPECT_EQ(z3->variant.name, "1f1b-pp4-dp8-mb4x1-full-z3");
    Project zero3 = project;
    zero3.training.zero = 3;
    EXPECT_EQ(predict(zero3, z3->variant, PredictOptions::peaksOnly()).peakMemoryBytes, z3->peakMemoryBytes);
    // Written into the project: training.zero becomes the best candidate's, the others' stage left out.
    const Project added = withPlanVariants(project, result, static_cast<int>(result.candidates.size()));
    EXPECT_EQ(added.training.zero, result.candidates.front().zero);
    for (const Variant& v : added.variants)
        EXPECT_NE(v.name.find("-z" + std::to_string(added.training.zero)), std::string::npos) << v.name;
}

TEST(Planner, RequestsTheModelRefusesNameTheFlag)
{
    const Project project = smallDenseProject(4, 4096);
    PlanRequest request;
    request.devices = 8;
    request.globalBatch = 8;
    const auto message = [&](PlanRequest r) -> std::string {
        try {
            plan(project, r);
        } catch (const ConstraintError& e) {
            return e.what();
        }
        return "no error";
    };
    PlanRequest r = request;
    r.tps = { 3 };
    EXPECT_EQ(message(r), "--tp: 3 does not divide model.heads 32");
    r.tps = { 16 }; // divides the 32 heads, not the 8 kv heads
    EXPECT_EQ(message(r), "--tp: 16 does not divide model.kv_heads 8");
    r = request;
    r.cps = { 3 };
    EXPECT_EQ(message(r), "--cp: 3 does not divide model.seq_len 4096");
    r = request;
    r.zeros = { 4 };
    EXPECT_EQ(message(r), "--zero: 4 is not a ZeRO stage (0, 1, 2 or 3)");
    PlanRequest block;
    block.devices = 8;
    block.globalBatch = 40;
    block.tps = { 2 };
    EXPECT_THROW(plan(defaultProject(), block), ConstraintError);
    block.tps.clear();
    block.zeros = { 1 };
    EXPECT_THROW(plan(defaultProject(), block), ConstraintError); // no training object
}

TEST(Planner, VariantNamesCarryTensorContextAndZero)
{
    const Project project = smallDenseProject(4, 4096);
    Variant v;
    v.kind = ScheduleKind::Interleaved1F1B;
    v.ranks = 2;
    v.stagesPerRank = 2;
    v.dp = 4;
    v.tp = 8;
    v.cp = 2;
    v.microbatches = 16;
    v.microbatchSize = 1;
    v.recompute = model::Recompute::Selective;
    EXPECT_EQ(planVariantName(v, project), "interleaved-1f1b-pp2-v2-tp8-cp2-dp4-mb16x1-selective");
    EXPECT_EQ(
        planVariantName(v, project, project.training.zero), "interleaved-1f1b-pp2-v2-tp8-cp2-dp4-mb16x1-selective");
    EXPECT_EQ(planVariantName(v, project, 3), "interleaved-1f1b-pp2-v2-tp8-cp2-dp4-mb16x1-selective-z3");
}
