// Stage costs of transformer models on a cluster (project/transformercost.h): the placement rule, times and
// chains with the expert all-to-all, training memory with ZeRO-1, the embedding and head stages, recompute,
// and a format-1 project's cost model left as it was. Hand-computed values, written as arithmetic.
#include "base/errors.h"
#include "project/modelcost.h"
#include "project/project.h"
#include "project/transformercost.h"
#include "support/transformers.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <vector>

using namespace dps;

namespace {

/// DeepSeek-V3 (config.json of deepseek-ai/DeepSeek-V3; report §2.1, §3.2.2) without the MTP module, one
/// sequence of 4096 tokens per microbatch, on H800-like nodes of 8 GPUs: 989 TFLOP/s dense BF16 at half of
/// it, NVLink 160 GB/s and InfiniBand 50 GB/s per GPU (report §3.2.2), latencies 3 µs and 8 µs (test values).
Project deepSeek(int ranks, int ep, int dp = 1)
{
    Project p;
    p.model.kind = ModelKind::Transformer;
    p.model.layers = 61;
    p.model.hidden = 7168;
    p.model.ffn = 18432;
    p.model.seqLen = 4096;
    p.model.microbatchSize = 1;
    p.model.dtype = DType::BF16;
    model::Transformer& t = p.model.transformer;
    t.layers = 61;
    t.hidden = 7168;
    t.ffn = 18432;
    t.heads = 128;
    t.kvHeads = 128;
    t.vocab = 129280;
    t.attention = model::Attention::MLA;
    t.mla = { 1536, 512, 128, 64, 128 };
    t.moe = { 256, 8, 2048, 1, 3, 18432, ep, 1, 2, 4 };
    t.seqLen = 4096;
    t.microbatchSize = 1;
    t.dtypeBytes = 2;
    p.cluster.deviceFlops = 989e12;
    p.cluster.efficiency = 0.5;
    p.cluster.latencyUs = 3;
    p.cluster.bandwidthBytesPerUs = 1.6e5;
    p.cluster.gpusPerNode = 8;
    p.cluster.interNodeLatencyUs = 8;
    p.cluster.interNodeBandwidthBytesPerUs = 5e4;
    p.cluster.commComputeShare = 20.0 / 132.0;
    Variant v;
    v.name = "dualpipe";
    v.kind = ScheduleKind::DualPipe;
    v.ranks = ranks;
    v.microbatches = 2 * ranks;
    v.dp = dp;
    p.variants = { v };
    p.activeVariant = v.name;
    return p;
}

/// A small dense GQA model: 8 layers, h 64, 4 heads of 16 (2 KV heads), SwiGLU 128, vocab 1000, 2 × 32 tokens,
/// bf16, on 1 TFLOP/s at half of it; 1F1B on 4 ranks (2 layers a stage).
Project smallDense()
{
    return test::smallDenseTransformer(8, ScheduleKind::OneFOneB, 4, 8, "1f1b");
}

/// A small MoE model: 4 MoE layers, h 64, MHA 4 × 16, 8 experts of 32 (top-2), no shared expert, ep 4, vocab
/// 1000, 2 × 32 tokens, bf16; 1F1B on 4 ranks (one layer a stage), dp 8.
Project smallMoe(int dp = 8)
{
    Project p;
    p.model.kind = ModelKind::Transformer;
    p.model.layers = 4;
    p.model.hidden = 64;
    p.model.ffn = 128;
    p.model.seqLen = 32;
    p.model.microbatchSize = 2;
    p.model.dtype = DType::BF16;
    model::Transformer& t = p.model.transformer;
    t.layers = 4;
    t.hidden = 64;
    t.ffn = 128;
    t.heads = 4;
    t.kvHeads = 4;
    t.headDim = 16;
    t.vocab = 1000;
    t.attention = model::Attention::MHA;
    t.moe.experts = 8;
    t.moe.topK = 2;
    t.moe.expertFfn = 32;
    t.moe.ep = 4;
    t.seqLen = 32;
    t.microbatchSize = 2;
    t.dtypeBytes = 2;
    p.cluster.deviceFlops = 1e12;
    p.cluster.efficiency = 0.5;
    p.cluster.latencyUs = 2;
    p.cluster.bandwidthBytesPerUs = 1000;
    Variant v;
    v.name = "1f1b";
    v.kind = ScheduleKind::OneFOneB;
    v.ranks = 4;
    v.microbatches = 8;
    v.dp = dp;
    p.variants = { v };
    p.activeVariant = v.name;
    return p;
}

double sum(const std::vector<Chunk>& chain)
{
    double s = 0.0;
    for (const Chunk& c : chain)
        s += c.us;
    return s;
}

template <typename F> std::string errorOf(F&& f)
{
    try {
        f();
    } catch (const FormatError& e) {
        return e.what();
    }
    return "";
}

// DeepSeek-V3, one MoE layer, T = 4096 tokens (DeepSeek-V2 §2.1 for MLA's shapes):
constexpr double kT = 4096;
// MLA weights: W^DQ h×1536, W^UQ 1536×128·(128+64), W^DKV h×(512+64), W^UK,UV 512×128·(128+128), W^O 128·128×h
constexpr double kAttnWeights
    = 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168; // 187,105,280
// The attention core, causal half: ½ × 2·T·s·n_h·(d_k + d_v)
constexpr double kCore = kT * 4096 * 128 * (192 + 128);
// One token passes the router (h×256), the shared expert and 8 routed experts (3·h·2048 each)
constexpr double kMlpWeights = 7168.0 * 256 + 9 * 3.0 * 7168 * 2048; // 398,196,736
constexpr double kAttnF = 2 * kT * kAttnWeights + kCore;
constexpr double kAttnI = 2 * kT * kAttnWeights + 2 * kCore;
constexpr double kMlpF = 2 * kT * kMlpWeights;
constexpr double kWeightFlops = 2 * kT * (kAttnWeights + kMlpWeights); // W of the layer
constexpr double kRate = 989e12 * 0.5 / 1e6; // FLOP per µs
// All-to-all of one MoE layer, ep 64 over 8 nodes (7 peers on the node), at most 4 nodes per token:
// dispatch (FP8, 1 + 4/128 bytes an element with its 1×128 tiles' scales): 4096·8·63/64 pairs × 7168 × 1.03125 =
// 238,436,352 bytes; to other nodes: at most one copy per remote node a token reaches, 4096·4·7168·1.03125 =
// 121,110,528 (of 238,436,352·56/63); on NVLink the rest, 117,325,824. NVLink 3 + 117,325,824 / 1.6e5 =
// 736.2864 µs beside InfiniBand 8 + 121,110,528 / 5e4 = 2430.21056 µs.
constexpr double kDispatchUs = 8 + 121110528.0 / 5e4;
// combine (BF16): twice the bytes, 462,422,016; InfiniBand 234,881,024: 8 + 4697.62048 µs (NVLink: 1425.1312).
constexpr double kCombineUs = 8 + 234881024.0 / 5e4;

} // namespace

// ------------------------------------------------------------------------------------------ placement

TEST(TransformerPlacement, SixteenRanksOfEp64OnNodesOfEightCrossNodesEveryHop)
{
    const Project p = deepSeek(16, 64);
    const DevicePlacement placement = placementOf(p, p.variants[0]);
    EXPECT_EQ(placement.replicas, 64); // D = max(dp 1, ep 64)
    ASSERT_EQ(placement.rankNode.size(), 16u);
    for (int r = 0; r < 16; ++r)
        EXPECT_EQ(placement.rankNode[static_cast<std::size_t>(r)], r * 64 / 8) << r; // device 64·r on node 8·r
    EXPECT_EQ(placement.ep.peersInNode, 7); // min(64, 8) − 1
    EXPECT_EQ(placement.ep.nodesSpanned, 8); // 64 / 8

    const CostModel costs = buildCostModel(p, p.variants[0]);
    EXPECT_EQ(costs.rankNode, placement.rankNode);
    for (int r = 0; r + 1 < 16; ++r)
        EXPECT_TRUE(costs.crossesNodes(r, r + 1)) << r;
    EXPECT_DOUBLE_EQ(costs.interNodeLatencyUs, 8);
    EXPECT_DOUBLE_EQ(costs.interNodeBandwidthBytesPerUs, 5e4);
    EXPECT_DOUBLE_EQ(costs.commComputeShare, 20.0 / 132.0);
}

TEST(TransformerPlacement, ReplicasOfARankSitOnConsecutiveDevices)
{
    Project p = deepSeek(16, 64, 128);
    const DevicePlacement placement = placementOf(p, p.variants[0]);
    EXPECT_EQ(placement.replicas, 128);
    EXPECT_EQ(placement.rankNode[1], 16); // device 128 on node 16
    EXPECT_EQ(placement.rankNode[15], 240);

    // An EP group inside a node: ep 4 on nodes of 8 has 3 peers on its node.
    p = deepSeek(4, 4, 8);
    EXPECT_EQ(placementOf(p, p.variants[0]).ep.peersInNode, 3);
    EXPECT_EQ(placementOf(p, p.variants[0]).ep.nodesSpanned, 1);
    EXPECT_EQ(placementOf(p, p.variants[0]).rankNode, (std::vector<int> { 0, 1, 2, 3 }));

    // Neither divides the other: ep 8 on nodes of 6, device 0's group [0, 8): 5 peers on node 0, 2 nodes.
    p = deepSeek(2, 8, 8);
    p.cluster.gpusPerNode = 6;
    EXPECT_EQ(placementOf(p, p.variants[0]).ep.peersInNode, 5);
    EXPECT_EQ(placementOf(p, p.variants[0]).ep.nodesSpanned, 2);
    EXPECT_EQ(placementOf(p, p.variants[0]).rankNode, (std::vector<int> { 0, 1 })); // device 8 on node 1
}

TEST(TransformerPlacement, WithoutGpusPerNodeEverythingIsOneNode)
{
    Project p = deepSeek(16, 64);
    p.cluster.gpusPerNode = 0;
    const DevicePlacement placement = placementOf(p, p.variants[0]);
    EXPECT_TRUE(placement.rankNode.empty());
    EXPECT_EQ(placement.ep.peersInNode, 63);
    EXPECT_EQ(placement.ep.nodesSpanned, 1);
    const CostModel costs = buildCostModel(p, p.variants[0]);
    EXPECT_TRUE(costs.rankNode.empty());
    // Every exchange on NVLink: dispatch 3 + 238,436,352 / 1.6e5 µs, no byte to another node.
    const StageCost& s = costs.stages[5];
    ASSERT_EQ(s.forwardChain.size(), 16u);
    EXPECT_DOUBLE_EQ(s.forwardChain[1].us, 3 + 238436352.0 / 1.6e5);
    EXPECT_DOUBLE_EQ(s.forwardChain[3].us, 3 + 462422016.0 / 1.6e5);
}

TEST(TransformerPlacement, EpMustDivideDp)
{
    Project p = deepSeek(16, 64, 96);
    EXPECT_EQ(errorOf([&] { placementOf(p, p.variants[0]); }),
        "variants[0].dp: 96 is not a multiple of model.moe.ep 64 (an expert-parallel group is formed across the "
        "data-parallel replicas of one stage)");
    EXPECT_EQ(errorOf([&] { buildCostModel(p, p.variants[0]); }),
        "variants[0].dp: 96 is not a multiple of model.moe.ep 64 (an expert-parallel group is formed across the "
        "data-parallel replicas of one stage)");
}

// ---------------------------------------------------------------------------------------- stage costs

TEST(TransformerStageCost, FourMoeLayersOfDeepSeekV3OnH800)
{
    const Project p = deepSeek(16, 64);
    const DevicePlacement placement = placementOf(p, p.variants[0]);
    const StageCost c = transformerStageCost(p, p.variants[0], placement, 3, 4, false, false, "stage");

    // F: 4 × (attention + experts) compute plus 4 × (dispatch + combine).
    const double f = 4 * (kAttnF + kMlpF) / kRate + 4 * (kDispatchUs + kCombineUs);
    EXPECT_NEAR(c.forwardUs, f, f * 1e-12);
    // I: 4 × the inputs' gradients plus 4 × two return exchanges: the combine's gradient at the dispatch's FP8
    // volume, the dispatch's gradient at the combine's BF16 volume.
    const double i = 4 * (kAttnI + 2 * kT * kMlpWeights) / kRate + 4 * (kDispatchUs + kCombineUs);
    EXPECT_NEAR(c.inputGradUs, i, i * 1e-12);
    // W: rounded to the last bit of B (so that I + W is B exactly).
    EXPECT_NEAR(c.weightGradUs, 4 * kWeightFlops / kRate, 4 * kWeightFlops / kRate * 1e-15);
    EXPECT_FALSE(c.backwardUs);

    // The chains: per layer attention → dispatch → experts → combine; backward the reverse.
    ASSERT_EQ(c.forwardChain.size(), 16u);
    EXPECT_EQ(c.forwardChain[0].lane, Chunk::Compute);
    EXPECT_EQ(c.forwardChain[0].layer, 3);
    EXPECT_DOUBLE_EQ(c.forwardChain[0].us, kAttnF / kRate);
    EXPECT_EQ(c.forwardChain[1].lane, Chunk::Comm);
    EXPECT_DOUBLE_EQ(c.forwardChain[1].us, kDispatchUs);
    EXPECT_DOUBLE_EQ(c.forwardChain[2].us, kMlpF / kRate);
    EXPECT_EQ(c.forwardChain[3].lane, Chunk::Comm);
    EXPECT_DOUBLE_EQ(c.forwardChain[3].us, kCombineUs);
    EXPECT_EQ(c.forwardChain[15].layer, 6);
    ASSERT_EQ(c.backwardChain.size(), 16u);
    EXPECT_EQ(c.backwardChain[0].lane, Chunk::Comm);
    EXPECT_EQ(c.backwardChain[0].layer, 6);
    EXPECT_DOUBLE_EQ(c.backwardChain[0].us, kDispatchUs); // combine's gradient, FP8
    EXPECT_DOUBLE_EQ(c.backwardChain[1].us, (2 * kT * kMlpWeights * 2) / kRate); // experts I + W
    EXPECT_DOUBLE_EQ(c.backwardChain[2].us, kCombineUs); // dispatch's gradient, BF16
    EXPECT_DOUBLE_EQ(c.backwardChain[3].us, (kAttnI + 2 * kT * kAttnWeights) / kRate);
    EXPECT_EQ(c.backwardChain[15].layer, 3);

    // Memory of one device: 4 of the 256 experts (256 / ep 64) besides attention, router and shared expert.
    const double perLayer = kAttnWeights + 7168 + 1536 + 512 // MLA and its three RMSNorms
        + 7168.0 * 256 + 5 * 3.0 * 7168 * 2048 + 7168; // router, shared + 4 routed experts, RMSNorm
    EXPECT_DOUBLE_EQ(c.parameterCount, 4 * perLayer); // 4 × 409,157,632
    EXPECT_DOUBLE_EQ(c.parameterBytes, 4 * perLayer * 2);
    EXPECT_DOUBLE_EQ(c.gradientBytes, 4 * perLayer * 2); // no training section: the model's dtype
    EXPECT_FALSE(c.optimizerBytes);
    EXPECT_DOUBLE_EQ(c.messageBytes, 4096.0 * 7168 * 2);
    EXPECT_DOUBLE_EQ(c.a2aBytes, 4 * (238436352.0 + 462422016.0));
    const model::LayerCost layer = model::layerCost(transformerOf(p.model), 3, model::Recompute::None, placement.ep);
    EXPECT_DOUBLE_EQ(c.activationBytes, 4 * layer.activationBytes);
    EXPECT_DOUBLE_EQ(c.weightGradKeptBytes, 4 * layer.weightGradKeptBytes);
}

TEST(TransformerStageCost, TheAllToAllsMeasuredRatesTimeItsInterNodePartOnly)
{
    // cluster.kernels' measured rates (DeepEP's EP 64 figures on the H800: dispatch 46 GB/s, combine 45 GB/s)
    // replace the inter-node link's 50 GB/s for the bytes the exchanges send to other nodes: the dispatch's
    // 121,110,528 and the combine's 234,881,024 (as above); the NVLink parts stay shorter.
    Project p = deepSeek(16, 64);
    p.cluster.kernels = KernelModel {};
    p.cluster.kernels->hbmBandwidthBytesPerUs = 3.35e6;
    p.cluster.kernels->smCount = 132;
    const StageCost link
        = transformerStageCost(p, p.variants[0], placementOf(p, p.variants[0]), 3, 4, false, false, "stage");
    p.cluster.kernels->dispatchInterNodeBytesPerUs = 4.6e4;
    p.cluster.kernels->combineInterNodeBytesPerUs = 4.5e4;
    const StageCost c
        = transformerStageCost(p, p.variants[0], placementOf(p, p.variants[0]), 3, 4, false, false, "stage");
    ASSERT_EQ(c.forwardChain.size(), 16u);
    ASSERT_EQ(c.backwardChain.size(), 16u);
    const double dispatchUs = 8 + 121110528.0 / 4.6e4; // 2640.8375 µs
    const double combineUs = 8 + 234881024.0 / 4.5e4; // 5227.5783 µs
    EXPECT_DOUBLE_EQ(c.forwardChain[1].us, dispatchUs);
    EXPECT_DOUBLE_EQ(c.forwardChain[3].us, combineUs);
    EXPECT_DOUBLE_EQ(c.backwardChain[0].us, dispatchUs); // the combine's backward is a dispatch
    EXPECT_DOUBLE_EQ(c.backwardChain[2].us, combineUs); // the dispatch's backward is a combine
    EXPECT_DOUBLE_EQ(link.forwardChain[1].us, kDispatchUs);
    // The compute chunks do not change.
    EXPECT_EQ(c.forwardChain[0].us, link.forwardChain[0].us);
    EXPECT_EQ(c.backwardChain[1].us, link.backwardChain[1].us);
    // A pipeline hop keeps the inter-node link's bandwidth.
    const CostModel costs = buildCostModel(p, p.variants[0]);
    EXPECT_DOUBLE_EQ(costs.interNodeBandwidthBytesPerUs, 5e4);
}

TEST(TransformerStageCost, ChainsSumToTheSlotTimesExactly)
{
    for (const model::Recompute recompute :
        { model::Recompute::None, model::Recompute::Selective, model::Recompute::Full }) {
        Project p = deepSeek(16, 64);
        p.variants[0].recompute = recompute;
        const CostModel costs = buildCostModel(p, p.variants[0]);
        ASSERT_EQ(costs.stages.size(), 16u);
        for (std::size_t s = 0; s < costs.stages.size(); ++s) {
            const StageCost& c = costs.stages[s];
            ASSERT_FALSE(c.forwardChain.empty()) << s;
            EXPECT_EQ(c.forwardUs, sum(c.forwardChain)) << s;
            EXPECT_EQ(c.backward(), sum(c.backwardChain)) << s;
            EXPECT_EQ(c.inputGradUs + c.weightGradUs, sum(c.backwardChain)) << s;
        }
    }
}

TEST(TransformerStageCost, FirstStageMergesEmbeddingAndDenseLayers)
{
    // 61 layers on 16 stages: 13 stages of 4 and 3 of 3. Stage 0: the embedding, dense layers 0–2, MoE layer 3.
    const Project p = deepSeek(16, 64);
    const CostModel costs = buildCostModel(p, p.variants[0]);
    const StageCost& first = costs.stages[0];
    // Embedding (a lookup, 0 FLOPs) + 3 dense layers + layer 3's attention, then its exchange and experts.
    const double denseWeights = 3.0 * 7168 * 18432;
    const double dense = kAttnF + 2 * kT * denseWeights;
    ASSERT_EQ(first.forwardChain.size(), 4u);
    EXPECT_EQ(first.forwardChain[0].layer, 3);
    EXPECT_NEAR(first.forwardChain[0].us, (3 * dense + kAttnF) / kRate, 1e-9);
    EXPECT_DOUBLE_EQ(first.forwardChain[1].us, kDispatchUs);
    EXPECT_DOUBLE_EQ(first.forwardChain[2].us, kMlpF / kRate);
    EXPECT_DOUBLE_EQ(first.forwardChain[3].us, kCombineUs);
    // Backward: combine-grad, experts, dispatch-grad, then layer 3's attention with layers 2–0 and the embedding.
    ASSERT_EQ(first.backwardChain.size(), 4u);
    EXPECT_EQ(first.backwardChain[3].layer, 0);
    EXPECT_DOUBLE_EQ(first.a2aBytes, 238436352.0 + 462422016.0);

    // The last stage (3 MoE layers 58–60) ends its F with the LM head (2·T·h·vocab FLOPs) as its own chunk.
    const StageCost& last = costs.stages[15];
    ASSERT_EQ(last.forwardChain.size(), 13u);
    EXPECT_EQ(last.forwardChain[12].lane, Chunk::Compute);
    EXPECT_EQ(last.forwardChain[12].layer, -1);
    EXPECT_DOUBLE_EQ(last.forwardChain[12].us, 2 * kT * 7168 * 129280 / kRate);
    EXPECT_EQ(last.backwardChain[0].layer, -1);
    EXPECT_DOUBLE_EQ(last.backwardChain[0].us, 2 * 2 * kT * 7168 * 129280 / kRate);
}

TEST(TransformerStageCost, NoExchangeKeepsTheStagesFlat)
{
    // ep 1: the same model without an all-to-all: no chains, no share taken.
    Project p = deepSeek(16, 1);
    p.variants[0].dp = 1;
    const CostModel costs = buildCostModel(p, p.variants[0]);
    EXPECT_DOUBLE_EQ(costs.commComputeShare, 0.0);
    for (const StageCost& c : costs.stages) {
        EXPECT_TRUE(c.forwardChain.empty());
        EXPECT_TRUE(c.backwardChain.empty());
        EXPECT_DOUBLE_EQ(c.a2aBytes, 0.0);
    }
    // Stage 5 holds MoE layers 20–23: compute only, and every expert (256 / ep 1).
    const StageCost& c = costs.stages[5];
    EXPECT_DOUBLE_EQ(c.forwardUs, 4 * (kAttnF + kMlpF) / kRate);
    EXPECT_DOUBLE_EQ(c.inputGradUs, 4 * (kAttnI + 2 * kT * kMlpWeights) / kRate);
    EXPECT_DOUBLE_EQ(c.weightGradUs, 4 * kWeightFlops / kRate);
    EXPECT_DOUBLE_EQ(
        c.parameterCount, 4 * (kAttnWeights + 7168 + 1536 + 512 + 7168.0 * 256 + 257 * 3.0 * 7168 * 2048 + 7168));
}

TEST(TransformerStageCost, SmallDenseModelAndItsEdgeStages)
{
    const Project p = smallDense();
    const CostModel costs = buildCostModel(p, p.variants[0]);
    ASSERT_EQ(costs.stages.size(), 4u);
    EXPECT_TRUE(costs.rankNode.empty());
    EXPECT_DOUBLE_EQ(costs.commComputeShare, 0.0);
    // Per layer, T = 64: W^Q, W^O 64×64, W^K, W^V 64×32; SwiGLU 3 × 64×128; two RMSNorms of 64.
    const double layerParameters = 4096 + 2 * 2048 + 4096 + 3 * 64 * 128 + 2 * 64; // 36,992
    // F: 2·T per weight, plus the causal core T·s·n_h·(16 + 16) = 64·32·4·32.
    const double layerF = 2 * 64 * (12288 + 24576) + 64 * 32 * 4 * 32; // 4,980,736
    const StageCost& middle = costs.stages[1];
    EXPECT_DOUBLE_EQ(middle.parameterCount, 2 * layerParameters);
    EXPECT_DOUBLE_EQ(middle.forwardUs, 2 * layerF / 5e5); // 5e11 FLOP/s = 5e5 FLOP/µs: 19.922944 µs
    EXPECT_DOUBLE_EQ(middle.messageBytes, 64 * 64 * 2);

    // The embedding (vocab × h) on the first stage, the final norm and the head on the last: heavier by exactly
    // their bytes.
    EXPECT_DOUBLE_EQ(costs.stages[0].parameterBytes - middle.parameterBytes, 1000 * 64 * 2);
    EXPECT_DOUBLE_EQ(costs.stages[3].parameterBytes - middle.parameterBytes, (64 + 1000 * 64) * 2);
    EXPECT_DOUBLE_EQ(costs.stages[0].gradientBytes - middle.gradientBytes, 1000 * 64 * 2);
    EXPECT_DOUBLE_EQ(costs.stages[2].parameterBytes, middle.parameterBytes);
    // Activations: the lookup keeps nothing until I; the head keeps its two T×h inputs and fp32 logits.
    EXPECT_DOUBLE_EQ(costs.stages[0].activationBytes, middle.activationBytes);
    EXPECT_DOUBLE_EQ(costs.stages[3].activationBytes - middle.activationBytes, 2 * 64 * 64 * 2 + 4 * 64 * 1000);
    // The head's GEMM: 2·T·h·vocab FLOPs each of F, I and W.
    EXPECT_DOUBLE_EQ(costs.stages[3].forwardUs, (2 * layerF + 2 * 64 * 64 * 1000) / 5e5);
    EXPECT_DOUBLE_EQ(costs.stages[3].weightGradUs - middle.weightGradUs, 2 * 64 * 64 * 1000 / 5e5);
}

TEST(TransformerStageCost, TiedEmbeddingsOnOneStageAreCountedOnce)
{
    Project p = smallDense();
    p.model.transformer.tiedEmbeddings = true;
    p.variants[0].ranks = 1;
    const CostModel costs = buildCostModel(p, p.variants[0]);
    ASSERT_EQ(costs.stages.size(), 1u);
    EXPECT_DOUBLE_EQ(costs.stages[0].parameterCount, 8 * 36992.0 + 1000 * 64 + 64);
    // On two stages the head's stage holds the embedding's copy (as Megatron does).
    p.variants[0].ranks = 2;
    const CostModel two = buildCostModel(p, p.variants[0]);
    EXPECT_DOUBLE_EQ(two.stages[0].parameterCount, 4 * 36992.0 + 1000 * 64);
    EXPECT_DOUBLE_EQ(two.stages[1].parameterCount, 4 * 36992.0 + 1000 * 64 + 64);
}

TEST(TransformerStageCost, RecomputeOrdersActivationBytes)
{
    Project p = deepSeek(16, 64);
    double bytes[3] = {};
    double inputGrad[3] = {};
    const model::Recompute policies[3]
        = { model::Recompute::Full, model::Recompute::Selective, model::Recompute::None };
    for (int k = 0; k < 3; ++k) {
        p.variants[0].recompute = policies[k];
        const StageCost c = buildCostModel(p, p.variants[0]).stages[5];
        bytes[k] = c.activationBytes;
        inputGrad[k] = c.inputGradUs;
    }
    EXPECT_LT(bytes[0], bytes[1]);
    EXPECT_LT(bytes[1], bytes[2]);
    // Full keeps each layer's input only: 4 × T·h·2 bytes.
    EXPECT_DOUBLE_EQ(bytes[0], 4 * kT * 7168 * 2);
    // Selective drops the softmax output (2·n_h·s·T bytes a layer) and reruns the core before the backward.
    EXPECT_DOUBLE_EQ(bytes[2] - bytes[1], 4 * 2.0 * 128 * 4096 * kT);
    EXPECT_NEAR(inputGrad[1] - inputGrad[2], 4 * kCore / kRate, 1e-6);
    EXPECT_NEAR(inputGrad[0] - inputGrad[2], 4 * (kAttnF + kMlpF) / kRate, 1e-6);
    // The model's policy applies when the variant has none.
    p.variants[0].recompute.reset();
    p.model.recompute = model::Recompute::Full;
    EXPECT_DOUBLE_EQ(buildCostModel(p, p.variants[0]).stages[5].activationBytes, bytes[0]);
}

TEST(TransformerStageCost, VariantMicrobatchSizeOverridesTheModels)
{
    Project p = smallDense();
    EXPECT_EQ(microbatchSizeOf(p, p.variants[0]), 2);
    p.variants[0].microbatchSize = 4;
    EXPECT_EQ(microbatchSizeOf(p, p.variants[0]), 4);
    const CostModel costs = buildCostModel(p, p.variants[0]);
    EXPECT_DOUBLE_EQ(costs.stages[1].messageBytes, 4 * 32 * 64 * 2);
}

// ---------------------------------------------------------------------------------------- training memory

TEST(TransformerMemory, ZeroOneShardsDenseOverDpAndExpertsOverDpOverEp)
{
    Project p = smallMoe(8);
    p.training.present = true; // Adam, fp32 master copy, fp32 moments, fp32 gradients
    p.training.zero = 1;
    // Stage 1 (layer 1): attention 4·64·64 + norm 64, router 64·8, 8 / ep 4 = 2 experts of 3·64·32, norm 64.
    const double expert = 2 * 3 * 64 * 32; // 12,288
    const double dense = 4 * 64 * 64 + 64 + 64 * 8 + 64; // 17,024
    StageCost c = buildCostModel(p, p.variants[0]).stages[1];
    EXPECT_DOUBLE_EQ(c.parameterCount, dense + expert);
    EXPECT_DOUBLE_EQ(c.gradientBytes, (dense + expert) * 4);
    ASSERT_TRUE(c.optimizerBytes);
    // 4 (master) + 2 × 4 (moments) = 12 bytes a parameter; dense over dp 8, experts over dp / ep = 2.
    EXPECT_DOUBLE_EQ(*c.optimizerBytes, 12 * dense / 8 + 12 * expert / 2); // 25,536 + 73,728

    p.training.zero = 0;
    EXPECT_DOUBLE_EQ(*buildCostModel(p, p.variants[0]).stages[1].optimizerBytes, 12 * (dense + expert));
    p.training.zero = 1;
    p.variants[0].dp = 1; // nothing to shard over
    EXPECT_DOUBLE_EQ(*buildCostModel(p, p.variants[0]).stages[1].optimizerBytes, 12 * (dense + expert));
    // DeepSeek-V3 keeps the moments in BF16 (report §3.3.3); an fp32 model has no master copy.
    p.variants[0].dp = 8;
    p.training.momentBytes = 2;
    EXPECT_DOUBLE_EQ(*buildCostModel(p, p.variants[0]).stages[1].optimizerBytes, 8 * dense / 8 + 8 * expert / 2);
    p.model.dtype = DType::FP32;
    EXPECT_DOUBLE_EQ(*buildCostModel(p, p.variants[0]).stages[1].optimizerBytes, 4 * dense / 8 + 4 * expert / 2);
}

TEST(TransformerMemory, ZeroTwoAndThreeShardGradientsAndParameters)
{
    Project p = smallMoe(8);
    p.training.present = true;
    const double expert = 2 * 3 * 64 * 32; // 12,288 (as above)
    const double dense = 4 * 64 * 64 + 64 + 64 * 8 + 64; // 17,024
    p.training.zero = 2; // gradients (fp32) sharded like the optimizer state
    StageCost c = buildCostModel(p, p.variants[0]).stages[1];
    EXPECT_DOUBLE_EQ(c.gradientBytes, 4 * (dense / 8 + expert / 2));
    EXPECT_DOUBLE_EQ(c.expertGradientBytes, 4 * expert / 2);
    EXPECT_DOUBLE_EQ(c.parameterBytes, 2 * (dense + expert));
    p.training.zero = 3; // parameters too, plus the one gathered layer (the stage's only layer)
    c = buildCostModel(p, p.variants[0]).stages[1];
    EXPECT_DOUBLE_EQ(c.parameterBytes, 2 * (dense / 8 + expert / 2 + dense + expert));
    // The gathers before F and B: (S − 1)/S × bytes ÷ 1000 bytes/µs + (S − 1) × 2 µs on the one link, dense over
    // 8 shards, experts over 2; F's compute hides part of them.
    const double gather = 7.0 / 8 * dense * 2 / 1000 + 7 * 2 + 1.0 / 2 * expert * 2 / 1000 + 1 * 2; // 58.08 µs
    p.training.zero = 1;
    const StageCost one = buildCostModel(p, p.variants[0]).stages[1];
    EXPECT_DOUBLE_EQ(c.forwardUs,
        one.forwardUs
            + std::max(0.0, gather - 2 * 64 * (4096 * 4 + 64 * 8 + 2 * 3 * 64 * 32) / 5e5 - 64 * 32 * 4 * 32 / 5e5));
}

TEST(TransformerStageCost, TensorParallelAllReducesHoldTheComputeStream)
{
    // The small dense model, tp 2 on one node: per layer two all-reduces of T×h bf16 (64·64·2 = 8192 bytes) in
    // F and two in B, each 2(2 − 1)/2 × 8192 ÷ bandwidth + 2 × latency.
    Project p = smallDense();
    p.variants[0].tp = 2;
    const CostModel costs = buildCostModel(p, p.variants[0]);
    const Project whole = smallDense();
    const CostModel wholeCosts = buildCostModel(whole, whole.variants[0]);
    const StageCost& one = wholeCosts.stages[1];
    const StageCost& split = costs.stages[1];
    const double allReduce = 8192.0 / p.cluster.bandwidthBytesPerUs + 2 * p.cluster.latencyUs;
    // Compute halves (every GEMM and the core split by heads / columns), plus 2 layers × 2 all-reduces.
    EXPECT_DOUBLE_EQ(split.forwardUs, one.forwardUs / 2 + 4 * allReduce);
    EXPECT_DOUBLE_EQ(split.inputGradUs, one.inputGradUs / 2 + 4 * allReduce);
    EXPECT_DOUBLE_EQ(split.weightGradUs, one.weightGradUs / 2);
    // Parameters: the two norms of 64 per layer stay whole.
    EXPECT_DOUBLE_EQ(split.parameterCount, (one.parameterCount - 2 * 128) / 2 + 2 * 128);
}

TEST(TransformerStageCost, Fp8GemmsRunAtTheFp8PeakButNotTheAttentionCore)
{
    Project p = smallDense();
    p.cluster.deviceFlopsFp8 = 2e12; // twice the 1e12 BF16 peak
    p.training.present = true;
    p.training.gemmBytes = 1;
    const CostModel model = buildCostModel(p, p.variants[0]);
    const StageCost& c = model.stages[1];
    const double gemm = 2 * 2 * 64 * (12288 + 24576); // F of the 2 layers' weight GEMMs
    const double core = 2 * 64 * 32 * 4 * 32; // the 2 layers' attention cores
    EXPECT_DOUBLE_EQ(c.forwardUs, gemm / 1e6 + core / 5e5); // 1e12 × 0.5 and 2e12 × 0.5 FLOP/s
    EXPECT_DOUBLE_EQ(c.weightGradUs, gemm / 1e6);
    // A device without an FP8 peak runs them at its BF16 rate.
    p.cluster.deviceFlopsFp8 = 0;
    EXPECT_DOUBLE_EQ(buildCostModel(p, p.variants[0]).stages[1].forwardUs, (gemm + core) / 5e5);
}

TEST(TransformerMemory, SmallMoeExchangesOnOneNode)
{
    const Project p = smallMoe(8);
    const CostModel costs = buildCostModel(p, p.variants[0]);
    const StageCost& c = costs.stages[1];
    // Dispatch and combine in bf16: 64 tokens × 2 × 3/4 leave the device, × 64 × 2 bytes = 12,288 bytes,
    // on the one link: 2 + 12,288 / 1000 µs.
    ASSERT_EQ(c.forwardChain.size(), 4u);
    EXPECT_DOUBLE_EQ(c.forwardChain[1].us, 2 + 12288 / 1000.0);
    EXPECT_DOUBLE_EQ(c.forwardChain[3].us, 2 + 12288 / 1000.0);
    EXPECT_DOUBLE_EQ(c.a2aBytes, 2 * 12288.0);
    EXPECT_DOUBLE_EQ(costs.commComputeShare, 20.0 / 132.0);
    EXPECT_TRUE(costs.rankNode.empty());
}

// ----------------------------------------------------------------------------------------- limits

TEST(TransformerLimits, TooSlowADeviceOrLinkIsNamed)
{
    Project p = smallDense();
    p.cluster.deviceFlops = 1e-9;
    EXPECT_EQ(errorOf([&] { buildCostModel(p, p.variants[0]); }).rfind("cluster.device_flops: 1e-09 FLOP/s", 0), 0u);
    p = smallMoe(8);
    p.cluster.bandwidthBytesPerUs = 1e-15;
    EXPECT_EQ(errorOf([&] { buildCostModel(p, p.variants[0]); })
                  .rfind("cluster.bandwidth_bytes_per_us: 1e-15 bytes/µs is too slow: an expert all-to-all of "
                         "variants[0] stage 0 (even split of model.layers) sends 12288 bytes",
                      0),
        0u);
}

// ----------------------------------------------------------------------------------------- format 1

TEST(TransformerCost, BlockProjectKeepsItsCostModel)
{
    const Project p = defaultProject();
    for (const Variant& v : p.variants) {
        const CostModel costs = buildCostModel(p, v);
        EXPECT_TRUE(costs.rankNode.empty());
        EXPECT_DOUBLE_EQ(costs.commComputeShare, 0.0);
        EXPECT_DOUBLE_EQ(costs.interNodeLatencyUs, 0.0);
        EXPECT_DOUBLE_EQ(costs.interNodeBandwidthBytesPerUs, 0.0);
        ASSERT_EQ(costs.stages.size(), 8u);
        for (std::size_t s = 0; s < 8; ++s) {
            const StageCost expected = blockStageCost(p.model, p.cluster, 2, s == 7, 4);
            const StageCost& c = costs.stages[s];
            EXPECT_EQ(c.forwardUs, expected.forwardUs);
            EXPECT_EQ(c.inputGradUs, expected.inputGradUs);
            EXPECT_EQ(c.weightGradUs, expected.weightGradUs);
            EXPECT_EQ(c.activationBytes, expected.activationBytes);
            EXPECT_EQ(c.weightGradKeptBytes, expected.weightGradKeptBytes);
            EXPECT_EQ(c.parameterBytes, expected.parameterBytes);
            EXPECT_EQ(c.messageBytes, expected.messageBytes);
            EXPECT_FALSE(c.optimizerBytes);
            EXPECT_TRUE(c.forwardChain.empty());
            EXPECT_TRUE(c.backwardChain.empty());
        }
        // 2 layers of 4·T·h·f = 4 · 256 · 512 · 2048 FLOPs at 1e11 × 0.6 FLOP/s.
        EXPECT_DOUBLE_EQ(costs.stages[0].forwardUs, 2 * 4.0 * 256 * 512 * 2048 / 6e10 * 1e6);
    }
}

TEST(TransformerCost, BlockModelOnNodesHopsBetweenThem)
{
    // A block model placed on nodes of 2 GPUs, dp 1: ranks 0–1 on node 0, 2–3 on node 1, …
    Project p = defaultProject();
    p.cluster.gpusPerNode = 2;
    const CostModel costs = buildCostModel(p, p.variants[0]);
    EXPECT_EQ(costs.rankNode, (std::vector<int> { 0, 0, 1, 1, 2, 2, 3, 3 }));
    EXPECT_FALSE(costs.crossesNodes(0, 1));
    EXPECT_TRUE(costs.crossesNodes(1, 2));
    EXPECT_DOUBLE_EQ(costs.commComputeShare, 0.0);
}

TEST(TransformerKernels, AGemmPassRunsItsTilesInWavesAndNoFasterThanItsBytesMove)
{
    GemmRates r;
    r.flopsPerSecond = 1e12;
    r.smCount = 4;
    r.memoryBytesPerUs = 1e4;
    const model::Gemm g { 256, 1024, 384 }; // 2·256·1024·384 = 201,326,592 FLOPs
    // F writes 256 × 384: 2 × 3 = 6 tiles in 2 waves of 4, a wave efficiency of 6/8.
    EXPECT_DOUBLE_EQ(gemmPassUs(g, GemmPass::F, r), 201326592.0 / (1e12 * 0.75) * 1e6);
    // I writes 256 × 1024 (16 tiles) and W 1024 × 384 (24 tiles): whole waves.
    EXPECT_DOUBLE_EQ(gemmPassUs(g, GemmPass::I, r), 201.326592);
    EXPECT_DOUBLE_EQ(gemmPassUs(g, GemmPass::W, r), 201.326592);
    // At 1000 bytes/µs F's bytes take longer: (256·1024 + 1024·384)·2 + 256·384·2 = 1,507,328 bytes.
    r.memoryBytesPerUs = 1e3;
    EXPECT_DOUBLE_EQ(gemmPassUs(g, GemmPass::F, r), 1507.328);
    // A grouped GEMM: 4 groups of 128 rows, each 1 × 1 tile in F (4 tiles, one wave), in W 1 × 1 tile each.
    r.memoryBytesPerUs = 1e9;
    const model::Gemm grouped { 512, 64, 128, 4.0 };
    EXPECT_DOUBLE_EQ(gemmPassUs(grouped, GemmPass::F, r), 2.0 * 512 * 64 * 128 / 1e12 * 1e6);
    // FP8 operands halve the input bytes: F of g at 1000 bytes/µs moves 655,360 + 196,608 bytes.
    r.memoryBytesPerUs = 1e3;
    r.operandBytes = 1.0;
    EXPECT_DOUBLE_EQ(gemmPassUs(g, GemmPass::F, r), 851.968);
}

TEST(TransformerKernels, ALayersGemmsAddUpToItsWeightFlops)
{
    for (const Project& p : { deepSeek(16, 64), smallDense() }) {
        const model::Transformer m = transformerOf(p.model);
        for (int layer : { 0, m.layers - 1 }) {
            SCOPED_TRACE(layer);
            const model::LayerCost c = model::layerCost(m, layer, model::Recompute::None);
            double flops = 0.0;
            for (const model::Gemm& g : c.gemms)
                flops += g.flops();
            const double weightFlops = c.attention.f - c.attentionCoreFlops + c.mlp.f;
            EXPECT_NEAR(flops, weightFlops, weightFlops * 1e-12);
        }
    }
}

namespace {

/// Per-operation rates small enough for hand arithmetic: 2 SMs, 10⁴ bytes/µs of HBM, GEMMs at half the peak,
/// attention at a quarter in F and a fifth in B, memory at half its bandwidth.
KernelModel smallKernels()
{
    KernelModel k;
    k.smCount = 2;
    k.hbmBandwidthBytesPerUs = 1e4;
    k.gemmEfficiency = 0.5;
    k.gemmEfficiencyFp8 = 0.5;
    k.attentionForwardEfficiency = 0.25;
    k.attentionBackwardEfficiency = 0.2;
    k.memoryEfficiency = 0.5;
    return k;
}

/// F, I and W of layers 2 and 3 of `p`'s transformer added up by hand from their GEMM passes at `r`, the attention
/// core at a quarter (F) and a fifth (B) of the device's BF16 peak and the memory-bound bytes (plus the FP8
/// quantization bytes of each pass, per layer) at `r`'s memory rate, µs.
struct PassSums {
    double f = 0.0, i = 0.0, w = 0.0;
};
PassSums layerSumsByHand(const Project& p, const Variant& v, const GemmRates& r, double quantizeF = 0.0,
    double quantizeI = 0.0, double quantizeW = 0.0)
{
    const model::Transformer m = transformerFor(p, v);
    PassSums sums;
    for (int layer : { 2, 3 }) {
        const model::LayerCost lc = model::layerCost(m, layer, model::Recompute::None);
        for (const model::Gemm& g : lc.gemms) {
            sums.f += gemmPassUs(g, GemmPass::F, r);
            sums.i += gemmPassUs(g, GemmPass::I, r);
            sums.w += gemmPassUs(g, GemmPass::W, r);
        }
        const double memory = lc.attentionMemoryBytes + lc.mlpMemoryBytes;
        sums.f
            += lc.attentionCoreFlops / (p.cluster.deviceFlops * 0.25) * 1e6 + (memory + quantizeF) / r.memoryBytesPerUs;
        sums.i += 2.0 * lc.attentionCoreFlops / (p.cluster.deviceFlops * 0.2) * 1e6
            + (2.0 * memory + lc.attentionBackwardMemoryBytes + quantizeI) / r.memoryBytesPerUs;
        sums.w += quantizeW / r.memoryBytesPerUs;
    }
    return sums;
}

} // namespace

TEST(TransformerKernels, ADenseStageIsTheSumOfItsOperations)
{
    Project p = smallDense();
    p.cluster.kernels = smallKernels();
    const Variant& v = p.variants[0];
    const StageCost c = transformerStageCost(p, v, placementOf(p, v), 2, 2, false, false, "stage");

    GemmRates r;
    r.flopsPerSecond = p.cluster.deviceFlops * 0.5;
    r.smCount = 2;
    r.memoryBytesPerUs = 1e4 * 0.5;
    const PassSums hand = layerSumsByHand(p, v, r);
    EXPECT_NEAR(c.forwardUs, hand.f, hand.f * 1e-12);
    EXPECT_NEAR(c.inputGradUs, hand.i, hand.i * 1e-12);
    EXPECT_NEAR(c.weightGradUs, hand.w, hand.w * 1e-12);
    // Without the kernel model the same stage takes its FLOPs at device_flops × efficiency.
    p.cluster.kernels.reset();
    const StageCost flat = transformerStageCost(p, v, placementOf(p, v), 2, 2, false, false, "stage");
    EXPECT_NE(flat.forwardUs, c.forwardUs);
}

namespace {

/// smallDense() timed with smallKernels(), its weight GEMMs in FP8 at a peak of `fp8Peak` FLOP/s.
Project smallFp8(double fp8Peak)
{
    Project p = smallDense();
    p.cluster.kernels = smallKernels();
    p.cluster.deviceFlopsFp8 = fp8Peak;
    p.training.present = true;
    p.training.gemmBytes = 1;
    return p;
}

/// smallKernels()' rates for an FP8 GEMM running at `flopsPerSecond`.
GemmRates smallFp8Rates(double flopsPerSecond)
{
    GemmRates r;
    r.flopsPerSecond = flopsPerSecond;
    r.smCount = 2;
    r.memoryBytesPerUs = 1e4 * 0.5;
    r.operandBytes = 1.0;
    return r;
}

/// layerSumsByHand of smallFp8's layers, with their FP8 quantization bytes. Per layer (T = 64, h 64, q·k·v 128 wide,
/// SwiGLU 128), each element read in BF16 and written in FP8 with its 1×128 tile's scale (2 + 1.03125 bytes): F
/// quantizes the inputs of q·k·v, of the output projection and of gate·up (3 × 64·64; the SwiGLU writes the down
/// projection's input in FP8); I the output gradients of q·k·v (64·128), of the output projection and of down (64·64
/// each; the SwiGLU's backward writes gate·up's); W reads both FP8 copies of each GEMM and writes them transposed,
/// 2 × 1.03125 bytes per element of 64 × (64 + 128), 64 × (64 + 64), 64 × (64 + 256) and 64 × (128 + 64).
PassSums fp8LayerSumsByHand(const Project& p, const Variant& v, const GemmRates& r)
{
    const double quantizeF = 3 * 64 * 64 * 3.03125; // 37,248 bytes
    const double quantizeI = (64 * 128 + 2 * 64 * 64) * 3.03125; // 49,664
    const double quantizeW = 64.0 * (192 + 128 + 320 + 192) * 2 * 1.03125; // 109,824
    return layerSumsByHand(p, v, r, quantizeF, quantizeI, quantizeW);
}

} // namespace

TEST(TransformerKernels, Fp8GemmsQuantizeTheirOperandsInPassesOfTheirOwn)
{
    const Project p = smallFp8(2e12);
    const Variant& v = p.variants[0];
    const StageCost c = transformerStageCost(p, v, placementOf(p, v), 2, 2, false, false, "stage");
    const PassSums hand = fp8LayerSumsByHand(p, v, smallFp8Rates(2e12 * 0.5));
    EXPECT_NEAR(c.forwardUs, hand.f, hand.f * 1e-12);
    EXPECT_NEAR(c.inputGradUs, hand.i, hand.i * 1e-12);
    EXPECT_NEAR(c.weightGradUs, hand.w, hand.w * 1e-12);
}

TEST(TransformerKernels, Fp8WeightGradientsRunAtTheirOwnRateWhereTheDeviceHasOne)
{
    Project p = smallFp8(2e10); // low enough for the GEMMs to be FLOP-bound, not byte-bound
    p.cluster.kernels->wgradEfficiencyFp8 = 0.25; // W at half the rate of F and I
    const Variant& v = p.variants[0];
    const StageCost c = transformerStageCost(p, v, placementOf(p, v), 2, 2, false, false, "stage");
    // The Wgrad rate changes W's GEMMs only, not the quantization.
    const PassSums hand = fp8LayerSumsByHand(p, v, smallFp8Rates(2e10 * 0.5));
    const PassSums handW = fp8LayerSumsByHand(p, v, smallFp8Rates(2e10 * 0.25));
    EXPECT_NEAR(c.forwardUs, hand.f, hand.f * 1e-12);
    EXPECT_NEAR(c.inputGradUs, hand.i, hand.i * 1e-12);
    EXPECT_NEAR(c.weightGradUs, handW.w, handW.w * 1e-12);
    EXPECT_GT(handW.w, hand.w * 1.5); // the GEMMs dominate W here

    // A file says so with the field, and refuses a share above 1 naming it.
    p.cluster.kernels->wgradEfficiencyFp8 = 1.5;
    try {
        validateProject(p);
        FAIL() << "no error";
    } catch (const FormatError& e) {
        EXPECT_EQ(std::string(e.what()),
            "cluster.kernels.wgrad_efficiency_fp8: must be 0 (the FP8 GEMM efficiency) or in (0, 1], got 1.5");
    }
}
