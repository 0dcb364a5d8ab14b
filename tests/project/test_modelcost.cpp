// Model-derived costs: the formulas and activation ledger of modelcost.h, summed over the layer partition.
#include "project/modelcost.h"
#include "project/project.h"

#include <gtest/gtest.h>

using namespace dps;

namespace {

/// T = 2 × 4 = 8 tokens, h = 8, f = 32; 0.5 GFLOP/s sustained.
ModelDesc smallModel()
{
    ModelDesc m;
    m.layers = 4;
    m.hidden = 8;
    m.ffn = 32;
    m.seqLen = 4;
    m.microbatchSize = 2;
    m.dtype = DType::FP32;
    return m;
}

ClusterDesc slowCluster()
{
    ClusterDesc c;
    c.deviceFlops = 1e9;
    c.efficiency = 0.5;
    c.latencyUs = 2;
    c.bandwidthBytesPerUs = 100;
    return c;
}

Project smallProject(std::vector<int> partition)
{
    Project p;
    p.model = smallModel();
    p.cluster = slowCluster();
    Variant v;
    v.name = "v";
    v.kind = ScheduleKind::OneFOneB;
    v.ranks = static_cast<int>(partition.size());
    v.microbatches = 4;
    v.layerPartition = std::move(partition);
    p.variants = { v };
    p.activeVariant = "v";
    return p;
}

constexpr double kLayerUs = 8192.0 / 5e8 * 1e6; // 4·T·h·f FLOPs at 0.5 GFLOP/s = 16.384 µs

} // namespace

TEST(ModelCost, LayerFlopsAreFourTHF)
{
    EXPECT_DOUBLE_EQ(layerForwardFlops(smallModel()), 4.0 * 8 * 8 * 32);
    EXPECT_EQ(computeBytes(smallModel(), true), 4);
    ModelDesc bf16 = smallModel();
    bf16.dtype = DType::BF16;
    EXPECT_EQ(computeBytes(bf16, false), 2);
    EXPECT_EQ(computeBytes(bf16, true), 4);
}

TEST(ModelCost, StageOfTwoLayersFollowsTheLedger)
{
    const StageCost c = blockStageCost(smallModel(), slowCluster(), 2, false, 4);
    EXPECT_DOUBLE_EQ(c.forwardUs, 2 * kLayerUs);
    EXPECT_DOUBLE_EQ(c.inputGradUs, 2 * kLayerUs);
    EXPECT_DOUBLE_EQ(c.weightGradUs, 2 * kLayerUs);
    EXPECT_FALSE(c.backwardUs);
    EXPECT_DOUBLE_EQ(c.backward(), 4 * kLayerUs);
    EXPECT_FALSE(c.overlapUs);
    EXPECT_DOUBLE_EQ(c.activationBytes, 2 * 8 * (8 + 32) * 4); // X + H per layer: 2560
    EXPECT_DOUBLE_EQ(c.weightGradKeptBytes, 2 * 2 * 8 * (8 + 32) * 4); // X, A, dH, dY: 5120
    EXPECT_DOUBLE_EQ(c.parameterCount, 2 * 2 * 8 * 32); // 1024
    EXPECT_DOUBLE_EQ(c.parameterBytes, 4096);
    EXPECT_DOUBLE_EQ(c.gradientBytes, 4096);
    EXPECT_DOUBLE_EQ(c.messageBytes, 8 * 8 * 4); // T × h × 4 = 256
}

TEST(ModelCost, LastStageKeepsTheLossGradient)
{
    const StageCost c = blockStageCost(smallModel(), slowCluster(), 2, true, 4);
    EXPECT_DOUBLE_EQ(c.activationBytes, 2560 + 8 * 8 * 4);
    EXPECT_DOUBLE_EQ(c.weightGradKeptBytes, 5120);
}

TEST(ModelCost, TheRuntimesBuffersPerOp)
{
    // T = 8, h = 8, f = 32, fp32: th = T·h·4 = 256, tf = T·f·4 = 1024; 2 layers (docs/memory.md).
    const StageCost c = blockStageCost(smallModel(), slowCluster(), 2, false, 4);
    ASSERT_TRUE(c.engine);
    const EngineBuffers& b = *c.engine;
    const auto op = [&](OpKind k, bool first) { return b.op(static_cast<int>(k), first); };
    EXPECT_DOUBLE_EQ(op(OpKind::F, false).highWaterBytes, 3584); // 2(tf + th) + tf
    EXPECT_DOUBLE_EQ(op(OpKind::F, false).netBytes, 2560); // the ledger's 2(th + tf); its input out, output in
    EXPECT_DOUBLE_EQ(op(OpKind::I, false).highWaterBytes, 3328); // (tf + th) + tf + max(tf, th)
    EXPECT_DOUBLE_EQ(op(OpKind::I, false).netBytes, 2560); // 2tf + th + dX
    EXPECT_DOUBLE_EQ(op(OpKind::I, true).netBytes, 2304); // no dX on the first stage
    EXPECT_DOUBLE_EQ(op(OpKind::W, false).highWaterBytes, 0);
    EXPECT_DOUBLE_EQ(op(OpKind::W, true).netBytes, -5120); // all that I kept
    EXPECT_DOUBLE_EQ(op(OpKind::B, false).highWaterBytes, 1280); // tf + th: the top layer's buffer and dX
    EXPECT_DOUBLE_EQ(op(OpKind::B, false).netBytes, -2560); // the ledger and dY go, dX stays
    EXPECT_DOUBLE_EQ(op(OpKind::B, true).netBytes, -2816);
    EXPECT_DOUBLE_EQ(b.inputBytes, 256);
    EXPECT_DOUBLE_EQ(b.targetBytes, 0) << "not the last stage";
    // One layer: B on the first stage makes no dX, so only GELU(H)'s buffer (tf) comes above its start.
    EXPECT_DOUBLE_EQ(blockStageCost(smallModel(), slowCluster(), 1, false, 4).engine->op(3, true).highWaterBytes, 1024);
}

TEST(ModelCost, TheLastStagesForwardMakesTheLossGradientWhileYIsLive)
{
    // h = 8 > f = 4: th = 256 > tf = 128, so dL/dY (th) beside Y tops F's last layer (tf beside it).
    ModelDesc m = smallModel();
    m.ffn = 4;
    const EngineBuffers last = *blockStageCost(m, slowCluster(), 1, true, 4).engine;
    EXPECT_DOUBLE_EQ(last.op(0, false).highWaterBytes, 384 + 256); // (tf + th) + max(tf, th)
    EXPECT_DOUBLE_EQ(last.op(0, false).netBytes, 384); // + dL/dY − Y's input
    EXPECT_DOUBLE_EQ(last.targetBytes, 256);
    const EngineBuffers inner = *blockStageCost(m, slowCluster(), 1, false, 4).engine;
    EXPECT_DOUBLE_EQ(inner.op(0, false).highWaterBytes, 384 + 128);
    // A stage without layers passes its messages on; the last one makes dL/dY from its input.
    const EngineBuffers empty = *blockStageCost(m, slowCluster(), 0, true, 4).engine;
    EXPECT_DOUBLE_EQ(empty.op(0, false).highWaterBytes, 256);
    EXPECT_DOUBLE_EQ(empty.op(0, false).netBytes, 0);
    EXPECT_DOUBLE_EQ(empty.op(1, true).netBytes, -256) << "the first stage's I drops dY";
    EXPECT_DOUBLE_EQ(empty.op(1, false).netBytes, 0) << "a later stage's I passes it on";
}

TEST(ModelCost, Bf16HalvesTheBytesNotTheTimes)
{
    const StageCost c = blockStageCost(smallModel(), slowCluster(), 1, false, 2);
    EXPECT_DOUBLE_EQ(c.forwardUs, kLayerUs);
    EXPECT_DOUBLE_EQ(c.activationBytes, 8 * 40 * 2);
    EXPECT_DOUBLE_EQ(c.parameterBytes, 2 * 8 * 32 * 2);
    EXPECT_DOUBLE_EQ(c.messageBytes, 8 * 8 * 2);
}

TEST(BuildCostModel, UnevenPartitionGivesUnevenStages)
{
    const Project p = smallProject({ 3, 1 });
    const CostModel m = buildCostModel(p, p.variants[0]);
    ASSERT_EQ(m.stages.size(), 2u);
    EXPECT_DOUBLE_EQ(m.stages[0].forwardUs, 3 * kLayerUs);
    EXPECT_DOUBLE_EQ(m.stages[1].forwardUs, kLayerUs);
    EXPECT_DOUBLE_EQ(m.stages[0].activationBytes, 3 * 1280);
    EXPECT_DOUBLE_EQ(m.stages[1].activationBytes, 1280 + 256);
    EXPECT_DOUBLE_EQ(m.stages[0].parameterCount, 3 * 512);
    EXPECT_DOUBLE_EQ(m.stages[1].parameterCount, 512);
    EXPECT_DOUBLE_EQ(m.latencyUs, 2);
    EXPECT_DOUBLE_EQ(m.bandwidthBytesPerUs, 100);
    EXPECT_DOUBLE_EQ(m.overlapFactor, 1.0);
    EXPECT_DOUBLE_EQ(m.transferTime(m.stages[0].messageBytes), 2 + 256.0 / 100);
}

TEST(BuildCostModel, OverridesReplaceOnlyWhatIsSet)
{
    Project p = smallProject({ 2, 2 });
    p.costs.stages.resize(2);
    p.costs.stages[1].forwardUs = 7;
    p.costs.stages[1].backwardUs = 20;
    p.costs.stages[0].overlapUs = 30;
    p.costs.overlapFactor = 0.75;
    p.costs.optimizerBytesPerParameter = 12;
    p.costs.latencyUs = 0.5;
    p.costs.bandwidthBytesPerUs = 0;
    const CostModel m = buildCostModel(p, p.variants[0]);
    EXPECT_DOUBLE_EQ(m.stages[0].forwardUs, 2 * kLayerUs);
    EXPECT_DOUBLE_EQ(m.stages[1].forwardUs, 7);
    EXPECT_DOUBLE_EQ(m.stages[1].inputGradUs, 2 * kLayerUs);
    EXPECT_DOUBLE_EQ(m.stages[1].backward(), 20);
    EXPECT_DOUBLE_EQ(m.overlapTime(0, 1), 30);
    EXPECT_DOUBLE_EQ(m.overlapTime(1, 0), 0.75 * (7 + 4 * kLayerUs));
    EXPECT_DOUBLE_EQ(m.optimizerBytesPerParameter, 12);
    EXPECT_DOUBLE_EQ(m.latencyUs, 0.5);
    EXPECT_DOUBLE_EQ(m.bandwidthBytesPerUs, 0);
}

TEST(BuildCostModel, CpuRunUsesFourBytesForABf16Model)
{
    Project p = smallProject({ 4 });
    p.model.dtype = DType::BF16;
    EXPECT_DOUBLE_EQ(buildCostModel(p, p.variants[0]).stages[0].messageBytes, 128);
    EXPECT_DOUBLE_EQ(buildCostModel(p, p.variants[0], 4).stages[0].messageBytes, 256);
}

TEST(BuildCostModel, DefaultProjectStages)
{
    const Project p = defaultProject();
    for (const auto& v : p.variants) {
        const CostModel m = buildCostModel(p, v);
        ASSERT_EQ(m.stages.size(), 8u);
        const double t = 2 * 128;
        const double layerUs = 4 * t * 512 * 2048 / (1e11 * 0.6) * 1e6;
        EXPECT_DOUBLE_EQ(m.stages[0].forwardUs, 2 * layerUs);
        EXPECT_DOUBLE_EQ(m.stages[0].activationBytes, 2 * t * (512 + 2048) * 4);
        EXPECT_DOUBLE_EQ(m.stages[7].activationBytes, 2 * t * (512 + 2048) * 4 + t * 512 * 4);
        EXPECT_DOUBLE_EQ(m.stages[3].messageBytes, t * 512 * 4);
        EXPECT_DOUBLE_EQ(m.latencyUs, 2);
        EXPECT_DOUBLE_EQ(m.bandwidthBytesPerUs, 5000);
    }
}
