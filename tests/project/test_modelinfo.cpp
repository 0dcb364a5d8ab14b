// What `dpstudio model-info` reports (project/modelinfo.h): whole-model figures, each stage's layers, parameters,
// times and bytes, each rank's parameters from the schedule's placement. Hand-computed values.
#include "project/modelinfo.h"
#include "project/predict.h"
#include "project/project.h"
#include "support/transformers.h"

#include <gtest/gtest.h>

using namespace dps;

namespace {

/// support/transformers.h's dense model, `ranks` ranks, 2 × ranks microbatches.
Project dense(int layers, ScheduleKind kind, int ranks)
{
    return test::smallDenseTransformer(layers, kind, ranks, 2 * ranks);
}

constexpr double kLayerParameters = 36992;

} // namespace

TEST(ModelInfo, BlockModelOfTheDefaultProject)
{
    const Project p = defaultProject();
    const ModelInfo info = modelInfo(p, p.variants[0]);
    // 16 blocks of 2·h·f = 2 · 512 · 2048 parameters; training 3 × 2 FLOPs per parameter and token.
    EXPECT_DOUBLE_EQ(info.parametersTotal, 16 * 2.0 * 512 * 2048); // 33,554,432
    EXPECT_DOUBLE_EQ(info.parametersActive, info.parametersTotal);
    EXPECT_DOUBLE_EQ(info.flopsPerTokenTraining, 3 * 2 * 16 * 2.0 * 512 * 2048);
    ASSERT_EQ(info.stages.size(), 8u);
    // A stage of 2 layers of 4·T·h·f = 4 · 256 · 512 · 2048 FLOPs at 1e11 × 0.6 FLOP/s.
    const double opUs = 2 * 4.0 * 256 * 512 * 2048 / 6e10 * 1e6;
    for (const StageInfo& s : info.stages) {
        EXPECT_EQ(s.layers, 2);
        EXPECT_DOUBLE_EQ(s.parameters, 2 * 2.0 * 512 * 2048);
        EXPECT_DOUBLE_EQ(s.fUs, opUs);
        EXPECT_DOUBLE_EQ(s.iUs, opUs);
        EXPECT_DOUBLE_EQ(s.wUs, opUs);
        EXPECT_DOUBLE_EQ(s.bUs, 2 * opUs);
        EXPECT_DOUBLE_EQ(s.fbUs, 3 * opUs); // overlap_factor 1 × (F + B)
        EXPECT_DOUBLE_EQ(s.a2aBytes, 0.0);
    }
    EXPECT_EQ(info.stages[7].stage, 7);
    EXPECT_DOUBLE_EQ(info.stages[0].activationBytes, 2 * 256.0 * (512 + 2048) * 4);
    EXPECT_DOUBLE_EQ(info.stages[7].activationBytes, 2 * 256.0 * (512 + 2048) * 4 + 256 * 512 * 4);
    // DualPipe: each of the 8 ranks holds two stages (s and 7 − s).
    ASSERT_EQ(info.ranks.size(), 8u);
    for (const RankInfo& r : info.ranks) {
        EXPECT_DOUBLE_EQ(r.parameters, 2 * 2 * 2.0 * 512 * 2048);
        EXPECT_DOUBLE_EQ(r.parameterBytes, 2 * 2 * 2.0 * 512 * 2048 * 4);
    }
    EXPECT_EQ(info.ranks[3].rank, 3);
}

TEST(ModelInfo, TransformerTotalsAndStages)
{
    const Project p = dense(8, ScheduleKind::OneFOneB, 4);
    const ModelInfo info = modelInfo(p, p.variants[0]);
    // 8 layers, the embedding 1000 × 64, the final norm 64 and the head 1000 × 64.
    EXPECT_DOUBLE_EQ(info.parametersTotal, 8 * kLayerParameters + 64000 + 64 + 64000);
    EXPECT_DOUBLE_EQ(info.parametersActive, info.parametersTotal);
    // Per token: 2 FLOPs per GEMM weight (12,288 + 24,576 a layer), the causal core s·n_h·(16 + 16) = 32·4·32
    // a layer, and the head's 2 · 64 · 1000; training 3 × that.
    EXPECT_DOUBLE_EQ(info.flopsPerTokenTraining, 3 * (8 * (2 * 36864.0 + 32 * 4 * 32) + 2 * 64 * 1000.0));
    ASSERT_EQ(info.stages.size(), 4u);
    EXPECT_EQ(info.stages[1].layers, 2);
    EXPECT_DOUBLE_EQ(info.stages[1].parameters, 2 * kLayerParameters);
    EXPECT_DOUBLE_EQ(info.stages[0].parameters, 2 * kLayerParameters + 64000);
    EXPECT_DOUBLE_EQ(info.stages[3].parameters, 2 * kLayerParameters + 64064);
    const CostModel costs = buildCostModel(p, p.variants[0]);
    for (std::size_t s = 0; s < 4; ++s) {
        EXPECT_EQ(info.stages[s].fUs, costs.stages[s].forwardUs);
        EXPECT_EQ(info.stages[s].bUs, costs.stages[s].backward());
        EXPECT_EQ(info.stages[s].fbUs, costs.overlapTime(static_cast<int>(s), static_cast<int>(s)));
        EXPECT_EQ(info.stages[s].activationBytes, costs.stages[s].activationBytes);
    }
    // 1F1B: rank r holds stage r.
    ASSERT_EQ(info.ranks.size(), 4u);
    EXPECT_DOUBLE_EQ(info.ranks[0].parameters, 2 * kLayerParameters + 64000);
    EXPECT_DOUBLE_EQ(info.ranks[2].parameterBytes, 2 * kLayerParameters * 2);
}

TEST(ModelInfo, DualPipeMiddleRankHoldsTwiceDualPipeVs)
{
    // 16 devices, 64 layers: DualPipe has 16 stages of 4 layers and each rank holds two (s and 15 − s); DualPipeV
    // has 32 stages of 2 layers, two a rank.
    const Project dualPipe = dense(64, ScheduleKind::DualPipe, 16);
    const Project dualPipeV = dense(64, ScheduleKind::DualPipeV, 16);
    const ModelInfo a = modelInfo(dualPipe, dualPipe.variants[0]);
    const ModelInfo b = modelInfo(dualPipeV, dualPipeV.variants[0]);
    ASSERT_EQ(a.ranks.size(), 16u);
    ASSERT_EQ(b.ranks.size(), 16u);
    EXPECT_DOUBLE_EQ(a.ranks[5].parameters, 8 * kLayerParameters);
    EXPECT_DOUBLE_EQ(b.ranks[5].parameters, 4 * kLayerParameters);
    EXPECT_DOUBLE_EQ(a.ranks[5].parameterBytes, 2 * b.ranks[5].parameterBytes);
    // Rank 0 holds the first and the last stage in both: the embedding and the head (with its norm) too.
    EXPECT_DOUBLE_EQ(a.ranks[0].parameters, 8 * kLayerParameters + 64000 + 64064);
    EXPECT_DOUBLE_EQ(b.ranks[0].parameters, 4 * kLayerParameters + 64000 + 64064);
}

TEST(ModelInfo, MoeStagesReportTheirExchange)
{
    Project p = dense(4, ScheduleKind::OneFOneB, 4);
    model::Transformer& t = p.model.transformer;
    t.moe.experts = 8;
    t.moe.topK = 2;
    t.moe.expertFfn = 32;
    t.moe.ep = 4;
    p.cluster.latencyUs = 2;
    p.cluster.bandwidthBytesPerUs = 1000;
    const ModelInfo info = modelInfo(p, p.variants[0]);
    const CostModel costs = buildCostModel(p, p.variants[0]);
    ASSERT_EQ(info.stages.size(), 4u);
    // 64 tokens × top-2 × 3/4 leave the device, × 64 × 2 bytes, in the dispatch and again in the combine.
    EXPECT_DOUBLE_EQ(info.stages[1].a2aBytes, 2 * 64 * 2 * 0.75 * 64 * 2);
    EXPECT_EQ(info.stages[1].fbUs, costs.overlapTime(1, 1));
    // Every expert counts in the total, top-2 of 8 in the active count (each expert 3 · 64 · 32).
    EXPECT_DOUBLE_EQ(info.parametersTotal - info.parametersActive, 4 * 6 * 3.0 * 64 * 32);
    // A device holds 8 / ep 4 = 2 experts of its layer.
    // Attention 12,288 and its norm, the router 64 × 8, the experts, the MLP's norm.
    EXPECT_DOUBLE_EQ(info.ranks[1].parameters, 12288 + 64 + 64 * 8 + 2 * 3 * 64 * 32 + 64);
}
