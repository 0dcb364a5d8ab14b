// The transformer and MoE arithmetic (engine/model/transformer.h): every preset's totals against the published
// counts, one layer of each preset against numbers computed by hand (written below as arithmetic on the
// published shapes, with the formula each term comes from: docs/model-library.md), the recompute ordering and
// check()'s messages. The models are built here from the published configs, not read from the preset files
// (tests/project tests those files).
#include "base/errors.h"
#include "model/transformer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

using namespace dps::model;

namespace {

// DeepSeek-V3 config.json (huggingface.co/deepseek-ai/DeepSeek-V3), without the MTP module.
Transformer deepseekV3()
{
    Transformer m;
    m.layers = 61;
    m.hidden = 7168;
    m.heads = 128;
    m.kvHeads = 128;
    m.ffn = 18432;
    m.vocab = 129280;
    m.tiedEmbeddings = false;
    m.attention = Attention::MLA;
    m.mla = Mla { 1536, 512, 128, 64, 128 };
    m.moe.experts = 256;
    m.moe.topK = 8;
    m.moe.expertFfn = 2048;
    m.moe.sharedExperts = 1;
    m.moe.denseLayers = 3;
    m.moe.denseFfn = 18432;
    m.moe.ep = 64;
    m.moe.dispatchBytes = 1; // FP8 dispatch, BF16 combine (report §3.3.3)
    m.moe.combineBytes = 2;
    m.moe.maxNodesPerToken = 4; // report §2.1.2
    m.seqLen = 4096;
    m.microbatchSize = 1;
    m.dtypeBytes = 2;
    return m;
}

// Llama 3 (Llama Team 2024, "The Llama 3 Herd of Models", Table 3; the models' config.json).
Transformer llama3(int layers, int hidden, int heads, int ffn)
{
    Transformer m;
    m.layers = layers;
    m.hidden = hidden;
    m.heads = heads;
    m.kvHeads = 8;
    m.headDim = 128;
    m.ffn = ffn;
    m.vocab = 128256;
    m.attention = Attention::GQA;
    m.seqLen = 8192;
    m.microbatchSize = 1;
    m.dtypeBytes = 2;
    return m;
}
Transformer llama3_8b()
{
    return llama3(32, 4096, 32, 14336);
}
Transformer llama3_70b()
{
    return llama3(80, 8192, 64, 28672);
}
Transformer llama3_405b()
{
    return llama3(126, 16384, 128, 53248);
}

// Mixtral 8x7B config.json (huggingface.co/mistralai/Mixtral-8x7B-v0.1); Jiang et al. 2024.
Transformer mixtral()
{
    Transformer m;
    m.layers = 32;
    m.hidden = 4096;
    m.heads = 32;
    m.kvHeads = 8;
    m.headDim = 128;
    m.ffn = 14336;
    m.vocab = 32000;
    m.attention = Attention::GQA;
    m.moe.experts = 8;
    m.moe.topK = 2;
    m.moe.expertFfn = 14336;
    m.seqLen = 4096;
    m.microbatchSize = 1;
    m.dtypeBytes = 2;
    return m;
}

void expectWithin(double value, double published, double relative)
{
    EXPECT_LE(std::abs(value - published), relative * published) << value << " vs published " << published;
}

std::string checkMessage(const Transformer& m)
{
    try {
        check(m);
    } catch (const dps::FormatError& e) {
        return e.what();
    }
    return "accepted";
}

} // namespace

// --- Whole-model totals against the published ones --------------------------------------------------------

TEST(ModelTotals, DeepSeekV3MatchesPublished671BTotal37BActivated)
{
    const Totals t = totals(deepseekV3());
    // Per layer: MLA 187,105,280 projection weights + 9,216 norm weights (h, q_lora, kv_lora) = 187,114,496;
    // dense MLP 3·7168·18432 = 396,361,728 + norm 7168; MoE: router 7168·256, (1 + 256) experts of 3·7168·2048
    // = 44,040,192, norm 7168. Embedding and head 129280·7168 = 926,679,040 each, final norm 7168.
    const double attention = 187114496.0;
    const double dense = attention + 396361728.0 + 7168.0;
    const double moe = attention + 7168.0 * 256 + 257.0 * 44040192.0 + 7168.0;
    const double moeActive = attention + 7168.0 * 256 + (1.0 + 8.0) * 44040192.0 + 7168.0;
    EXPECT_DOUBLE_EQ(t.parametersTotal, 3 * dense + 58 * moe + 2 * 926679040.0 + 7168.0);
    EXPECT_DOUBLE_EQ(t.parametersTotal, 671026404352.0);
    EXPECT_DOUBLE_EQ(t.parametersActive, 3 * dense + 58 * moeActive + 2 * 926679040.0 + 7168.0);
    EXPECT_DOUBLE_EQ(t.parametersActive, 37552282624.0);
    expectWithin(t.parametersTotal, 671e9, 0.02);
    expectWithin(t.parametersActive, 37e9, 0.05);
}

TEST(ModelTotals, Llama3MatchesPublished)
{
    // 8B: layer = 4096·128·(2·32 + 2·8) attention + 3·4096·14336 MLP + 2·4096 norms = 218,112,000;
    // embedding and head 128256·4096 each, final norm 4096.
    EXPECT_DOUBLE_EQ(totals(llama3_8b()).parametersTotal, 32 * 218112000.0 + 2 * 128256.0 * 4096 + 4096);
    EXPECT_DOUBLE_EQ(totals(llama3_8b()).parametersTotal, 8030261248.0);
    // 70B: layer = 8192·128·(2·64 + 2·8) + 3·8192·28672 + 2·8192 = 855,654,400.
    EXPECT_DOUBLE_EQ(totals(llama3_70b()).parametersTotal, 80 * 855654400.0 + 2 * 128256.0 * 8192 + 8192);
    EXPECT_DOUBLE_EQ(totals(llama3_70b()).parametersTotal, 70553706496.0);
    // 405B: layer = 16384·128·(2·128 + 2·8) + 3·16384·53248 + 2·16384 = 3,187,703,808.
    EXPECT_DOUBLE_EQ(totals(llama3_405b()).parametersTotal, 126 * 3187703808.0 + 2 * 128256.0 * 16384 + 16384);
    EXPECT_DOUBLE_EQ(totals(llama3_405b()).parametersTotal, 405853388800.0);
    expectWithin(totals(llama3_8b()).parametersTotal, 8.03e9, 0.01);
    expectWithin(totals(llama3_70b()).parametersTotal, 70.55e9, 0.01);
    expectWithin(totals(llama3_405b()).parametersTotal, 405.8e9, 0.01);
    // A dense model: every parameter is active.
    EXPECT_DOUBLE_EQ(totals(llama3_8b()).parametersActive, totals(llama3_8b()).parametersTotal);
}

TEST(ModelTotals, MixtralMatchesPublished)
{
    const Totals t = totals(mixtral());
    // Layer: attention 41,943,040 + norms 8192 + router 4096·8 + 8 experts of 3·4096·14336 = 176,160,768.
    EXPECT_DOUBLE_EQ(
        t.parametersTotal, 32 * (41943040.0 + 8192 + 4096 * 8 + 8 * 176160768.0) + 2 * 32000.0 * 4096 + 4096);
    EXPECT_DOUBLE_EQ(t.parametersTotal, 46702792704.0);
    EXPECT_DOUBLE_EQ(
        t.parametersActive, 32 * (41943040.0 + 8192 + 4096 * 8 + 2 * 176160768.0) + 2 * 32000.0 * 4096 + 4096);
    EXPECT_DOUBLE_EQ(t.parametersActive, 12879925248.0);
    expectWithin(t.parametersTotal, 46.7e9, 0.01);
    expectWithin(t.parametersActive, 12.9e9, 0.01);
}

TEST(ModelTotals, FlopsPerTokenTrainingIsThreeForwardsWithAttentionAndHead)
{
    // Llama 3 8B at seq 8192, per token: 2 × 218,103,808 weight-GEMM elements + the causal core
    // 8192·32·(128 + 128), per layer; the head 2·4096·128256; the embedding lookup 0.
    const double layer = 2 * 218103808.0 + 8192.0 * 32 * 256;
    EXPECT_DOUBLE_EQ(totals(llama3_8b()).flopsPerTokenTraining, 3 * (32 * layer + 2 * 4096.0 * 128256));
    // It does not depend on the microbatch size.
    Transformer m = llama3_8b();
    m.microbatchSize = 3;
    EXPECT_DOUBLE_EQ(totals(m).flopsPerTokenTraining, 3 * (32 * layer + 2 * 4096.0 * 128256));
    // DeepSeek-V3 at seq 4096: per token, dense layer 2·(187,105,280 + 396,361,728), MoE layer
    // 2·(187,105,280 + 7168·256 + 9·44,040,192), each with the core 4096·128·(192 + 128); head 2·7168·129280.
    const double core = 4096.0 * 128 * 320;
    const double dense = 2 * (187105280.0 + 396361728.0) + core;
    const double moe = 2 * (187105280.0 + 7168.0 * 256 + 9 * 44040192.0) + core;
    EXPECT_DOUBLE_EQ(totals(deepseekV3()).flopsPerTokenTraining, 3 * (3 * dense + 58 * moe + 2 * 7168.0 * 129280));
}

TEST(ModelTotals, TiedEmbeddingsCountOnceButTheLastStageHoldsACopy)
{
    Transformer tied = llama3_8b();
    tied.tiedEmbeddings = true;
    EXPECT_DOUBLE_EQ(totals(tied).parametersTotal, totals(llama3_8b()).parametersTotal - 128256.0 * 4096);
    EXPECT_DOUBLE_EQ(headCost(tied, Recompute::None).parameters, 4096 + 128256.0 * 4096);
    EXPECT_DOUBLE_EQ(embeddingCost(tied).parameters, 128256.0 * 4096);
}

// --- One layer of each preset, by hand --------------------------------------------------------------------

TEST(ModelLayer, Llama3_8B)
{
    const Transformer m = llama3_8b();
    const double T = 8192; // tokens: 1 × 8192
    // Attention weights: Wq 4096×4096, Wk and Wv 4096×1024, Wo 4096×4096; the MLP 3 × 4096×14336.
    const double attention = 4096.0 * 4096 + 2 * 4096.0 * 1024 + 4096.0 * 4096;
    const double mlp = 3 * 4096.0 * 14336;
    const double core = T * 8192 * 32 * (128 + 128); // ½ · 2·T·s·n_h·(d_k + d_v)
    const LayerCost c = layerCost(m, 5, Recompute::None);
    EXPECT_FALSE(c.moe);
    EXPECT_DOUBLE_EQ(c.parameters, attention + mlp + 2 * 4096);
    EXPECT_DOUBLE_EQ(c.parametersTotal, c.parameters);
    EXPECT_DOUBLE_EQ(c.parametersActive, c.parameters);
    EXPECT_DOUBLE_EQ(c.expertParameters, 0);
    EXPECT_DOUBLE_EQ(c.attention.f, 2 * T * attention + core);
    EXPECT_DOUBLE_EQ(c.attention.i, 2 * T * attention + 2 * core);
    EXPECT_DOUBLE_EQ(c.attention.w, 2 * T * attention);
    EXPECT_DOUBLE_EQ(c.mlp.f, 2 * T * mlp);
    EXPECT_DOUBLE_EQ(c.mlp.i, 2 * T * mlp);
    EXPECT_DOUBLE_EQ(c.mlp.w, 2 * T * mlp);
    // Kept F→I, bf16: attention X, norm output, Q (4096), K, V (1024 each), context (4096); softmax 32·s per
    // token; MLP X, norm output, gate and up (14336 each), down input (14336).
    const double attentionKept = T * 2 * (2 * 4096 + 2 * 4096 + 2 * 1024);
    const double softmax = 2.0 * 32 * 8192 * T;
    const double mlpKept = T * 2 * (2 * 4096 + 3 * 14336);
    EXPECT_DOUBLE_EQ(c.activationBytes, attentionKept + softmax + mlpKept);
    EXPECT_DOUBLE_EQ(c.activationBytes, 301989888.0 + 4294967296.0 + 838860800.0); // 5.06 GiB, 79 % softmax
    EXPECT_DOUBLE_EQ(c.recomputeFlops, 0);
    // Kept I→W: norm output, dQ, dK, dV, context, d(out); MLP norm output, d(gate), d(up), down input, d(out).
    EXPECT_DOUBLE_EQ(c.weightGradKeptBytes, T * 2 * (2 * 4096 + 2 * 4096 + 2 * 1024) + T * 2 * (2 * 4096 + 3 * 14336));
    EXPECT_DOUBLE_EQ(c.dispatchBytes, 0);
    EXPECT_DOUBLE_EQ(c.combineBytes, 0);

    const LayerCost s = layerCost(m, 5, Recompute::Selective);
    EXPECT_DOUBLE_EQ(s.activationBytes, attentionKept + mlpKept);
    EXPECT_DOUBLE_EQ(s.recomputeFlops, core);
    EXPECT_DOUBLE_EQ(s.attention.f, c.attention.f); // recompute is reported apart, not added to F or I
    EXPECT_DOUBLE_EQ(s.weightGradKeptBytes, c.weightGradKeptBytes);
    const LayerCost f = layerCost(m, 5, Recompute::Full);
    EXPECT_DOUBLE_EQ(f.activationBytes, T * 4096 * 2);
    EXPECT_DOUBLE_EQ(f.recomputeFlops, 2 * T * (attention + mlp) + core);
}

TEST(ModelLayer, Llama3_70B)
{
    const Transformer m = llama3_70b();
    const double T = 8192;
    const double attention = 8192.0 * 8192 + 2 * 8192.0 * 1024 + 8192.0 * 8192;
    const double mlp = 3 * 8192.0 * 28672;
    const double core = T * 8192 * 64 * 256;
    const LayerCost c = layerCost(m, 79, Recompute::None);
    EXPECT_DOUBLE_EQ(c.parameters, 855654400.0);
    EXPECT_DOUBLE_EQ(c.parameters, attention + mlp + 2 * 8192);
    EXPECT_DOUBLE_EQ(c.attention.f, 2 * T * attention + core);
    EXPECT_DOUBLE_EQ(c.attention.i, 2 * T * attention + 2 * core);
    EXPECT_DOUBLE_EQ(c.attention.w, 2 * T * attention);
    EXPECT_DOUBLE_EQ(c.mlp.f + c.mlp.i + c.mlp.w, 3 * 2 * T * mlp);
    const double attentionKept = T * 2 * (2 * 8192 + 2 * 8192 + 2 * 1024);
    const double softmax = 2.0 * 64 * 8192 * T;
    const double mlpKept = T * 2 * (2 * 8192 + 3 * 28672);
    EXPECT_DOUBLE_EQ(c.activationBytes, attentionKept + softmax + mlpKept);
    EXPECT_DOUBLE_EQ(layerCost(m, 79, Recompute::Selective).activationBytes, attentionKept + mlpKept);
    EXPECT_DOUBLE_EQ(layerCost(m, 79, Recompute::Full).activationBytes, T * 8192 * 2);
    EXPECT_DOUBLE_EQ(layerCost(m, 79, Recompute::Selective).recomputeFlops, core);
    EXPECT_DOUBLE_EQ(layerCost(m, 79, Recompute::Full).recomputeFlops, 2 * T * (attention + mlp) + core);
}

TEST(ModelLayer, Llama3_405B)
{
    const Transformer m = llama3_405b();
    const double T = 8192;
    const double attention = 16384.0 * 16384 + 2 * 16384.0 * 1024 + 16384.0 * 16384;
    const double mlp = 3 * 16384.0 * 53248;
    const double core = T * 8192 * 128 * 256;
    const LayerCost c = layerCost(m, 0, Recompute::None);
    EXPECT_DOUBLE_EQ(c.parameters, 3187703808.0);
    EXPECT_DOUBLE_EQ(c.attention.f, 2 * T * attention + core);
    EXPECT_DOUBLE_EQ(c.attention.i, 2 * T * attention + 2 * core);
    EXPECT_DOUBLE_EQ(c.attention.w, 2 * T * attention);
    EXPECT_DOUBLE_EQ(c.mlp.f, 2 * T * mlp);
    const double attentionKept = T * 2 * (2 * 16384 + 2 * 16384 + 2 * 1024);
    const double softmax = 2.0 * 128 * 8192 * T;
    const double mlpKept = T * 2 * (2 * 16384 + 3 * 53248);
    EXPECT_DOUBLE_EQ(c.activationBytes, attentionKept + softmax + mlpKept);
    EXPECT_DOUBLE_EQ(layerCost(m, 0, Recompute::Selective).activationBytes, attentionKept + mlpKept);
    EXPECT_DOUBLE_EQ(layerCost(m, 0, Recompute::Full).activationBytes, T * 16384 * 2);
}

TEST(ModelLayer, Mixtral8x7B)
{
    const Transformer m = mixtral();
    const double T = 4096;
    const double attention = 4096.0 * 4096 + 2 * 4096.0 * 1024 + 4096.0 * 4096;
    const double expert = 3 * 4096.0 * 14336;
    const double core = T * 4096 * 32 * 256;
    const LayerCost c = layerCost(m, 0, Recompute::None);
    EXPECT_TRUE(c.moe); // no dense layers
    // ep 1: the device holds all 8 experts; a token computes top-2.
    EXPECT_DOUBLE_EQ(c.parameters, attention + 4096.0 * 8 + 8 * expert + 2 * 4096);
    EXPECT_DOUBLE_EQ(c.parametersTotal, c.parameters);
    EXPECT_DOUBLE_EQ(c.parametersActive, attention + 4096.0 * 8 + 2 * expert + 2 * 4096);
    EXPECT_DOUBLE_EQ(c.expertParameters, 8 * expert);
    EXPECT_DOUBLE_EQ(c.attention.f, 2 * T * attention + core);
    EXPECT_DOUBLE_EQ(c.mlp.f, 2 * T * (4096.0 * 8 + 2 * expert)); // router + top-2 experts
    EXPECT_DOUBLE_EQ(c.mlp.i, c.mlp.f);
    EXPECT_DOUBLE_EQ(c.mlp.w, c.mlp.f);
    // MoE kept F→I: X, norm output; router scores in fp32 (4·T·8); per routed pair (T·2 of them): its input,
    // gate, up, down input and its output.
    const double attentionKept = T * 2 * (2 * 4096 + 2 * 4096 + 2 * 1024);
    const double softmax = 2.0 * 32 * 4096 * T;
    const double moeKept = T * 2 * (2 * 4096) + 4 * T * 8 + T * 2 * 2 * (2 * 4096 + 3 * 14336);
    EXPECT_DOUBLE_EQ(c.activationBytes, attentionKept + softmax + moeKept);
    EXPECT_DOUBLE_EQ(layerCost(m, 0, Recompute::Selective).activationBytes, attentionKept + moeKept);
    EXPECT_DOUBLE_EQ(layerCost(m, 0, Recompute::Full).activationBytes, T * 4096 * 2);
    // I→W without shared experts: norm output, d(router logits) in fp32, per routed pair input, d(gate),
    // d(up), down input, d(its output).
    EXPECT_DOUBLE_EQ(c.weightGradKeptBytes,
        T * 2 * (2 * 4096 + 2 * 4096 + 2 * 1024) + T * 2 * 4096 + 4 * T * 8 + T * 2 * 2 * (2 * 4096 + 3 * 14336));
    EXPECT_DOUBLE_EQ(c.dispatchBytes, 0); // ep 1: no all-to-all
}

TEST(ModelLayer, DeepSeekV3DenseLayer)
{
    const Transformer m = deepseekV3();
    const double T = 4096;
    // MLA weights: W^DQ 7168×1536, W^UQ 1536×128·192, W^DKV 7168×(512 + 64), W^UKV 512×128·(128 + 128),
    // W^O 128·128×7168.
    const double mla = 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168;
    EXPECT_DOUBLE_EQ(mla, 187105280.0);
    const double core = T * 4096 * 128 * (192 + 128);
    const LayerCost c = layerCost(m, 2, Recompute::None);
    EXPECT_FALSE(c.moe);
    EXPECT_DOUBLE_EQ(c.parameters, mla + (7168 + 1536 + 512) + 3 * 7168.0 * 18432 + 7168);
    EXPECT_DOUBLE_EQ(c.attention.f, 2 * T * mla + core);
    EXPECT_DOUBLE_EQ(c.attention.i, 2 * T * mla + 2 * core);
    EXPECT_DOUBLE_EQ(c.mlp.f, 2 * T * 3 * 7168.0 * 18432);
    EXPECT_DOUBLE_EQ(c.dispatchBytes, 0); // a dense layer has no all-to-all even with ep 64
}

TEST(ModelLayer, DeepSeekV3MoeLayerWithEp64On8GpuNodes)
{
    const Transformer m = deepseekV3();
    const double T = 4096;
    const double mla = 187105280.0;
    const double expert = 3 * 7168.0 * 2048; // 44,040,192
    const double core = T * 4096 * 128 * (192 + 128);
    const EpPlacement eightPerNode { 7, 8 }; // ep 64 over 8 nodes of 8: 7 peers on this node
    const LayerCost c = layerCost(m, 3, Recompute::None, eightPerNode);
    EXPECT_TRUE(c.moe);
    // Held: MLA + its norms, the router 7168×256, 1 shared expert, 256/64 = 4 routed experts, the norm.
    EXPECT_DOUBLE_EQ(c.parameters, mla + 9216 + 7168.0 * 256 + expert + 4 * expert + 7168);
    EXPECT_DOUBLE_EQ(c.parameters, 409157632.0);
    EXPECT_DOUBLE_EQ(c.parametersTotal, mla + 9216 + 7168.0 * 256 + 257 * expert + 7168);
    EXPECT_DOUBLE_EQ(c.parametersActive, mla + 9216 + 7168.0 * 256 + 9 * expert + 7168);
    EXPECT_DOUBLE_EQ(c.expertParameters, 4 * expert);
    EXPECT_DOUBLE_EQ(c.attention.f, 2 * T * mla + core);
    EXPECT_DOUBLE_EQ(c.attention.i, 2 * T * mla + 2 * core);
    EXPECT_DOUBLE_EQ(c.attention.w, 2 * T * mla);
    // Balanced routing: T·8 routed pairs on every device whatever ep is, plus the shared expert and router.
    EXPECT_DOUBLE_EQ(c.mlp.f, 2 * T * (7168.0 * 256 + expert + 8 * expert));
    EXPECT_DOUBLE_EQ(c.mlp.w, c.mlp.f);
    // F→I: X, norm output, c_q and its norm (1536 each), c_kv and its norm (512 each), Q and K (128·192 each),
    // V and context (128·128 each); softmax 128·s per token; MoE: X, norm output, the shared expert's gate,
    // up, down input (2048 each), router scores 4·T·256, per routed pair (T·8): input, output (7168 each),
    // gate, up, down input (2048 each).
    const double attentionKept = T * 2 * (2 * 7168 + 2 * 1536 + 2 * 512 + 2 * 128 * 192 + 2 * 128 * 128);
    const double softmax = 2.0 * 128 * 4096 * T;
    const double moeKept = T * 2 * (2 * 7168 + 3 * 2048) + 4 * T * 256 + T * 8 * 2 * (2 * 7168 + 3 * 2048);
    EXPECT_DOUBLE_EQ(c.activationBytes, attentionKept + softmax + moeKept);
    EXPECT_DOUBLE_EQ(layerCost(m, 3, Recompute::Selective).activationBytes, attentionKept + moeKept);
    EXPECT_DOUBLE_EQ(layerCost(m, 3, Recompute::Full).activationBytes, T * 7168 * 2);
    EXPECT_DOUBLE_EQ(layerCost(m, 3, Recompute::Selective).recomputeFlops, core);
    EXPECT_DOUBLE_EQ(layerCost(m, 3, Recompute::Full).recomputeFlops, c.attention.f + c.mlp.f);
    // I→W: X, dc_q, d[c_kv; k_rope] (576), norm(c_q), dQ (128·192), norm(c_kv), d[K_nope; V] (128·256),
    // context (128·128), d(out); MoE: X, d(router logits) fp32, d(out) + the shared expert's 3·2048, per pair
    // input, d(out), 3·2048.
    EXPECT_DOUBLE_EQ(c.weightGradKeptBytes,
        T * 2 * (2 * 7168 + 2 * 1536 + 576 + 512 + 128 * 192 + 128 * 256 + 128 * 128) + T * 2 * 7168 + 4 * T * 256
            + T * 2 * (7168 + 3 * 2048) + T * 8 * 2 * (2 * 7168 + 3 * 2048));
    // All-to-all: T·8 pairs, 63/64 leave the device; FP8 dispatch (1 byte and an FP32 scale per 1×128 tile:
    // 1.03125 bytes an element), BF16 combine (2 bytes).
    EXPECT_DOUBLE_EQ(c.dispatchBytes, T * 8 * 7168 * 1.03125 * 63 / 64);
    EXPECT_DOUBLE_EQ(c.combineBytes, T * 8 * 7168 * 2 * 63 / 64);
    // Off-node share 56/63 of it would be T·8·7168·56/64 = 7·T·7168; node-limited routing (4 nodes) caps it at
    // one copy per remote node: 4·T·7168 per byte of element.
    EXPECT_DOUBLE_EQ(c.dispatchInterNodeBytes, 4 * T * 7168 * 1.03125);
    EXPECT_DOUBLE_EQ(c.combineInterNodeBytes, 4 * T * 7168 * 2);

    Transformer unlimited = m;
    unlimited.moe.maxNodesPerToken = 0;
    const LayerCost u = layerCost(unlimited, 3, Recompute::None, eightPerNode);
    EXPECT_DOUBLE_EQ(u.dispatchInterNodeBytes, T * 8 * 7168 * 1.03125 * 56 / 64);
    EXPECT_DOUBLE_EQ(u.combineInterNodeBytes, T * 8 * 7168 * 2 * 56 / 64);

    // The default placement is one node: nothing crosses nodes.
    const LayerCost oneNode = layerCost(m, 3, Recompute::None);
    EXPECT_DOUBLE_EQ(oneNode.dispatchBytes, c.dispatchBytes);
    EXPECT_DOUBLE_EQ(oneNode.dispatchInterNodeBytes, 0);
    // ep 1: no all-to-all, every routed expert on the device.
    Transformer noEp = m;
    noEp.moe.ep = 1;
    const LayerCost n = layerCost(noEp, 3, Recompute::None);
    EXPECT_DOUBLE_EQ(n.dispatchBytes, 0);
    EXPECT_DOUBLE_EQ(n.combineBytes, 0);
    EXPECT_DOUBLE_EQ(n.expertParameters, 256 * expert);
    EXPECT_DOUBLE_EQ(n.mlp.f, c.mlp.f); // the same compute whatever ep is
}

TEST(ModelLayer, Fp8QuantizesEachTensorOnceWhereDeepSeekV3Does)
{
    const double T = 4096;
    const LayerCost c = layerCost(deepseekV3(), 3, Recompute::None, EpPlacement { 7, 8 });
    // q_a, q_b, kv_a, kv_b, o, router, shared gate·up, shared down, routed gate·up, routed down.
    ASSERT_EQ(c.gemms.size(), 10u);
    const auto quantized = [&](std::size_t i) {
        return std::pair { c.gemms[i].inputRowsQuantized(), c.gemms[i].gradRowsQuantized() };
    };
    EXPECT_EQ(quantized(0), std::pair(T, T)); // q_a quantizes x
    EXPECT_EQ(quantized(1), std::pair(T, T));
    EXPECT_EQ(quantized(2), std::pair(0.0, T)); // kv_a reads q_a's FP8 copy of x
    EXPECT_EQ(quantized(3), std::pair(T, T));
    EXPECT_EQ(quantized(4), std::pair(T, T));
    EXPECT_FALSE(c.gemms[5].lowPrecision); // the router stays in BF16
    EXPECT_EQ(quantized(6), std::pair(T, 0.0)); // the SwiGLU's backward writes gate·up's gradient in FP8
    EXPECT_EQ(quantized(7), std::pair(0.0, T)); // the SwiGLU writes down's input in FP8
    // The routed experts read the dispatched FP8 tokens and the FP8 gradient of the combine's backward: both
    // the T×h tensors the shared expert quantizes.
    EXPECT_EQ(c.gemms[8].rows, 8 * T);
    EXPECT_EQ(quantized(8), std::pair(0.0, 0.0));
    EXPECT_EQ(quantized(9), std::pair(0.0, 0.0));
    // Without a shared expert the routed experts quantize those T×h tensors themselves, once per token.
    Transformer noShared = deepseekV3();
    noShared.moe.sharedExperts = 0;
    const LayerCost n = layerCost(noShared, 3, Recompute::None, EpPlacement { 7, 8 });
    ASSERT_EQ(n.gemms.size(), 8u);
    EXPECT_EQ(n.gemms[6].inputRowsQuantized(), T);
    EXPECT_EQ(n.gemms[7].gradRowsQuantized(), T);
    // FP8 on the wire carries an FP32 scale per 1×128 tile.
    EXPECT_DOUBLE_EQ(wireBytesPerElement(1), 1.03125);
    EXPECT_DOUBLE_EQ(wireBytesPerElement(2), 2.0);
    EXPECT_DOUBLE_EQ(wireBytesPerElement(4), 4.0);
}

TEST(ModelLayer, MlaWithoutQueryCompression)
{
    Transformer m = deepseekV3();
    m.mla.qLoraRank = 0; // DeepSeek-V2-Lite style: h → n_h·(nope + rope) directly
    const LayerCost c = layerCost(m, 0, Recompute::Selective);
    const double mla = 7168.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168;
    EXPECT_DOUBLE_EQ(c.parameters, mla + 7168 + 512 + 3 * 7168.0 * 18432 + 7168);
    EXPECT_DOUBLE_EQ(c.activationBytes,
        4096.0 * 2 * (2 * 7168 + 2 * 512 + 2 * 128 * 192 + 2 * 128 * 128) + 4096.0 * 2 * (2 * 7168 + 3 * 18432));
}

TEST(ModelEdges, EmbeddingAndHead)
{
    const Transformer m = llama3_8b();
    const double T = 8192;
    const EdgeCost e = embeddingCost(m);
    EXPECT_DOUBLE_EQ(e.parameters, 128256.0 * 4096);
    EXPECT_DOUBLE_EQ(e.flops.f + e.flops.i + e.flops.w, 0); // a lookup and a scatter-add
    EXPECT_DOUBLE_EQ(e.activationBytes, 0);
    EXPECT_DOUBLE_EQ(e.weightGradKeptBytes, T * 4096 * 2);
    const EdgeCost h = headCost(m, Recompute::None);
    EXPECT_DOUBLE_EQ(h.parameters, 4096 + 128256.0 * 4096);
    EXPECT_DOUBLE_EQ(h.flops.f, 2 * T * 4096 * 128256);
    EXPECT_DOUBLE_EQ(h.flops.i, h.flops.f);
    EXPECT_DOUBLE_EQ(h.flops.w, h.flops.f);
    // The final norm's input and the head's input (bf16), fp32 logits: Korthikanti's 4sbh + 4sbv.
    EXPECT_DOUBLE_EQ(h.activationBytes, 2 * T * 4096 * 2 + 4 * T * 128256);
    EXPECT_DOUBLE_EQ(h.weightGradKeptBytes, T * 4096 * 2 + T * 128256 * 2);
    EXPECT_DOUBLE_EQ(headCost(m, Recompute::Full).activationBytes, h.activationBytes);
}

TEST(ModelLayer, FullKeepsLessThanSelectiveLessThanNone)
{
    for (const Transformer& m : { deepseekV3(), llama3_8b(), llama3_70b(), llama3_405b(), mixtral() }) {
        for (int layer : { 0, m.layers - 1 }) {
            const double none = layerCost(m, layer, Recompute::None).activationBytes;
            const double selective = layerCost(m, layer, Recompute::Selective).activationBytes;
            const double full = layerCost(m, layer, Recompute::Full).activationBytes;
            EXPECT_LT(full, selective) << m.hidden << " layer " << layer;
            EXPECT_LT(selective, none) << m.hidden << " layer " << layer;
        }
    }
}

TEST(ModelLayer, TensorParallelismSplitsHeadsColumnsAndTheNonResidualActivations)
{
    // Llama 3 8B, tp 4 (Megatron-LM: q/k/v/o by heads, the MLP by columns; Korthikanti et al. 2022 §4.2).
    Transformer m = llama3_8b();
    m.tp = 4;
    const double T = 8192;
    const double attention = 4096.0 * 4096 + 2 * 4096.0 * 1024 + 4096.0 * 4096;
    const double mlp = 3 * 4096.0 * 14336;
    const double core = T * 8192 * 32 * (128 + 128);
    const LayerCost c = layerCost(m, 5, Recompute::None);
    EXPECT_DOUBLE_EQ(c.parameters, attention / 4 + mlp / 4 + 2 * 4096); // the two norms whole on every rank
    EXPECT_DOUBLE_EQ(c.parametersTotal, attention + mlp + 2 * 4096);
    EXPECT_DOUBLE_EQ(c.attention.f, 2 * T * attention / 4 + core / 4);
    EXPECT_DOUBLE_EQ(c.attention.i, 2 * T * attention / 4 + 2 * core / 4);
    EXPECT_DOUBLE_EQ(c.mlp.w, 2 * T * mlp / 4);
    // Without sequence parallelism the norms' inputs and outputs (2 × T×h per block) stay whole.
    const double residual = T * 2 * (2 * 4096) * 2;
    const double split = T * 2 * (2 * 4096 + 2 * 1024) + 2.0 * 32 * 8192 * T + T * 2 * 3 * 14336;
    EXPECT_DOUBLE_EQ(c.activationBytes, residual + split / 4);
    EXPECT_DOUBLE_EQ(c.tensorAllReduceBytes, T * 4096 * 2); // one T×h bf16 tensor
    EXPECT_DOUBLE_EQ(c.contextKvBytes, 0);
    m.sequenceParallel = true;
    const LayerCost sp = layerCost(m, 5, Recompute::None);
    EXPECT_DOUBLE_EQ(sp.activationBytes, (residual + split) / 4);
    EXPECT_DOUBLE_EQ(layerCost(m, 5, Recompute::Full).activationBytes, T * 4096 * 2 / 4);
    // The whole model's totals do not depend on the split.
    EXPECT_DOUBLE_EQ(totals(m).parametersTotal, totals(llama3_8b()).parametersTotal);
}

TEST(ModelLayer, ContextParallelismSplitsTheTokensAndPassesKeysAndValues)
{
    Transformer m = llama3_8b();
    m.cp = 2;
    const double T = 4096; // 8192 tokens over 2 context ranks
    const double attention = 4096.0 * 4096 + 2 * 4096.0 * 1024 + 4096.0 * 4096;
    const double core = T * 8192 * 32 * (128 + 128); // this rank's queries against every key, causal half
    const LayerCost c = layerCost(m, 5, Recompute::Selective);
    EXPECT_DOUBLE_EQ(c.parameters, layerCost(llama3_8b(), 5, Recompute::Selective).parameters);
    EXPECT_DOUBLE_EQ(c.attention.f, 2 * T * attention + core);
    EXPECT_DOUBLE_EQ(c.activationBytes, layerCost(llama3_8b(), 5, Recompute::Selective).activationBytes / 2);
    EXPECT_DOUBLE_EQ(c.contextKvBytes, T * 2 * (2 * 1024)); // K and V: 8 kv heads × 128, bf16
}

TEST(ModelLayer, FlashAttentionBackwardPreAndPostprocessingBytes)
{
    // Per query row and head: dO and O read (2 × e × d_v), the log-sum-exp read and D and the base-2 log-sum-exp
    // written (3 × 4 bytes), the FP32 dQ accumulator cleared (4 × d_qk), then read back (4 × d_qk) and dQ written
    // (e × d_qk) (FlashAttention-2, Algorithm 2; flash-attention's FlashAttnBwdPreprocess and
    // FlashAttnBwdPostprocessConvertdQ).
    // DeepSeek-V3, one 4096-token sequence: 128 heads, d_qk 128 + 64, d_v 128: 4096 × 128 × 2444 bytes.
    const LayerCost mla = layerCost(deepseekV3(), 5, Recompute::NormUpProjection);
    EXPECT_DOUBLE_EQ(mla.attentionBackwardMemoryBytes, 4096.0 * 128 * (2 * 2 * 128 + 12 + 10 * 192));
    EXPECT_DOUBLE_EQ(mla.attentionBackwardMemoryBytes, 1281359872.0);
    // Llama 3 8B (32 query heads of 128; the 8 kv heads do not enter it), tp 4 and cp 2: a quarter of the heads
    // and half the tokens on each device.
    Transformer m = llama3_8b();
    m.tp = 4;
    m.cp = 2;
    const LayerCost gqa = layerCost(m, 5, Recompute::Selective);
    EXPECT_DOUBLE_EQ(gqa.attentionBackwardMemoryBytes, 4096.0 * 8 * (2 * 2 * 128 + 12 + 10 * 128));
}

TEST(ModelLayer, NormUpProjectionRecomputeOfDeepSeekV3)
{
    // DeepSeek-V3 report §3.2.3: RMSNorm outputs and MLA's up-projections recomputed in the backward.
    const Transformer m = deepseekV3();
    const double T = 4096;
    const double qDim = 128.0 * (128 + 64);
    const LayerCost none = layerCost(m, 5, Recompute::None);
    const LayerCost sel = layerCost(m, 5, Recompute::Selective);
    const LayerCost c = layerCost(m, 5, Recompute::NormUpProjection);
    // Freed against selective: attention norm output (7168), norm(c_q) (1536), norm(c_kv) (512), Q and K
    // (n_h·192 each), V (n_h·128); the MLP norm output (7168); the SwiGLUs' outputs (W_down's inputs) of the
    // shared expert and the 8 routed pairs (2048 each, report §3.3.2); bf16.
    const double freed = T * 2 * (7168 + 1536 + 512 + 2 * qDim + 128.0 * 128) + T * 2 * 7168 + T * 2 * 9 * 2048.0;
    EXPECT_DOUBLE_EQ(c.activationBytes, sel.activationBytes - freed);
    // Rerun: W^UQ (1536 × n_h·192) and W^UK, W^UV (512 × n_h·256).
    EXPECT_DOUBLE_EQ(c.recomputeFlops, 2 * T * (1536 * qDim + 512.0 * 128 * 256));
    EXPECT_DOUBLE_EQ(c.weightGradKeptBytes, none.weightGradKeptBytes);
    EXPECT_EQ(recomputeName(Recompute::NormUpProjection), "norm-up-projection");
}

TEST(ModelLayer, Fp8ActivationCacheHalvesTheGemmInputsKept)
{
    // DeepSeek-V3 report §3.3.1: the inputs of the GEMMs' backward cached in FP8 (1 byte instead of bf16's 2).
    Transformer m = deepseekV3();
    const double T = 4096;
    const LayerCost bf16 = layerCost(m, 5, Recompute::NormUpProjection);
    m.activationCacheBytes = 1;
    const LayerCost fp8 = layerCost(m, 5, Recompute::NormUpProjection);
    // Still kept and now in FP8: the context (n_h·128), the shared expert's gate/up inputs (2·2048), each of the
    // 8 routed pairs' input (7168) and gate/up inputs (2·2048); half their bf16 bytes saved (the down inputs are
    // rerun under this recompute).
    const double kept = T * 2 * (128.0 * 128 + 2 * 2048 + 8 * (7168 + 2 * 2048.0));
    EXPECT_DOUBLE_EQ(bf16.activationBytes - fp8.activationBytes, kept / 2);
    // With the down inputs (3·2048 per expert) where they are kept.
    const double inputs = T * 2 * (128.0 * 128 + 3 * 2048 + 8 * (7168 + 3 * 2048.0));
    // Without the recompute the norms' outputs (7168 + 1536 + 512 and the MLP's 7168) are cached in FP8 too.
    m.activationCacheBytes = 0;
    const double selective = layerCost(m, 5, Recompute::Selective).activationBytes;
    m.activationCacheBytes = 1;
    EXPECT_DOUBLE_EQ(selective - layerCost(m, 5, Recompute::Selective).activationBytes,
        inputs / 2 + T * (7168 + 1536 + 512 + 7168.0));
}

TEST(ModelLayer, ProbabilitiesScalingTheSwigluKeepNoExpertOutput)
{
    // Megatron-Core's weighted SwiGLU: each of the 8 routed pairs keeps its fp32 probability (4 bytes) instead
    // of its output (7168 bf16 elements).
    Transformer m = deepseekV3();
    const double T = 4096;
    const LayerCost combine = layerCost(m, 5, Recompute::None);
    m.moe.probsOnSwiglu = true;
    const LayerCost swiglu = layerCost(m, 5, Recompute::None);
    EXPECT_DOUBLE_EQ(combine.activationBytes - swiglu.activationBytes, T * 8 * (2 * 7168.0 - 4));
    EXPECT_DOUBLE_EQ(combine.weightGradKeptBytes, swiglu.weightGradKeptBytes);
}

TEST(ModelLayer, Fp8GemmsKeepWeightGradientOperandsInOneByte)
{
    // DeepSeek-V3 report Figure 6: Wgrad reads the FP8 input and output gradient; the router's fp32 logit
    // gradients (4·T·256 bytes) stay fp32.
    Transformer m = deepseekV3();
    const double T = 4096;
    const double bf16 = layerCost(m, 5, Recompute::None).weightGradKeptBytes;
    m.gemmBytes = 1;
    const double router = 4 * T * 256;
    EXPECT_DOUBLE_EQ(layerCost(m, 5, Recompute::None).weightGradKeptBytes, (bf16 - router) / 2 + router);
}

TEST(ModelLayer, ImbalanceScalesTheBusiestDevicesRoutedWork)
{
    Transformer m = deepseekV3();
    const LayerCost balanced = layerCost(m, 5, Recompute::Selective, EpPlacement { 7, 8 });
    m.moe.imbalance = 1.5;
    const LayerCost busy = layerCost(m, 5, Recompute::Selective, EpPlacement { 7, 8 });
    const double T = 4096;
    const double routed = 8 * 3 * 7168.0 * 2048; // top-8 experts of 3·h·2048
    EXPECT_DOUBLE_EQ(busy.mlp.f - balanced.mlp.f, 2 * T * 0.5 * routed);
    EXPECT_DOUBLE_EQ(busy.activationBytes - balanced.activationBytes, 0.5 * T * 8 * 2 * (2 * 7168.0 + 3 * 2048));
    EXPECT_DOUBLE_EQ(busy.dispatchBytes, 1.5 * balanced.dispatchBytes);
}

TEST(ModelLayer, RefusesLayerAndPlacementOutOfRange)
{
    EXPECT_THROW(layerCost(llama3_8b(), 32, Recompute::None), std::out_of_range);
    EXPECT_THROW(layerCost(llama3_8b(), -1, Recompute::None), std::out_of_range);
    EXPECT_THROW(layerCost(deepseekV3(), 3, Recompute::None, EpPlacement { 64, 8 }), std::invalid_argument);
    EXPECT_THROW(layerCost(deepseekV3(), 3, Recompute::None, EpPlacement { 0, 0 }), std::invalid_argument);
}

TEST(ModelNames, AttentionAndRecompute)
{
    EXPECT_EQ(attentionName(Attention::MHA), "mha");
    EXPECT_EQ(attentionName(Attention::GQA), "gqa");
    EXPECT_EQ(attentionName(Attention::MLA), "mla");
    EXPECT_EQ(recomputeName(Recompute::None), "none");
    EXPECT_EQ(recomputeName(Recompute::Selective), "selective");
    EXPECT_EQ(recomputeName(Recompute::Full), "full");
}

// --- check() --------------------------------------------------------------------------------------------

TEST(ModelCheck, AcceptsEveryPreset)
{
    for (const Transformer& m : { deepseekV3(), llama3_8b(), llama3_70b(), llama3_405b(), mixtral() })
        EXPECT_EQ(checkMessage(m), "accepted");
}

TEST(ModelCheck, NamesTheFieldAndTheValues)
{
    Transformer m = mixtral();
    m.moe.experts = -1;
    EXPECT_EQ(checkMessage(m), "model.moe.experts: must not be negative, got -1");
    m = mixtral();
    m.moe.topK = 9;
    EXPECT_EQ(checkMessage(m), "model.moe.top_k: 9 exceeds model.moe.experts 8");
    m = mixtral();
    m.moe.topK = 0;
    EXPECT_EQ(checkMessage(m), "model.moe.top_k: must be at least 1 when model.moe.experts is 8, got 0");
    m = mixtral();
    m.moe.expertFfn = 0;
    EXPECT_EQ(checkMessage(m), "model.moe.expert_ffn: must be at least 1 when model.moe.experts is 8, got 0");
    m = mixtral();
    m.moe.denseLayers = 33;
    EXPECT_EQ(checkMessage(m), "model.moe.dense_layers: 33 exceeds model.layers 32");
    m = mixtral();
    m.moe.ep = 0;
    EXPECT_EQ(checkMessage(m), "model.moe.ep: must be at least 1, got 0");
    m = mixtral();
    m.moe.ep = 16;
    EXPECT_EQ(checkMessage(m), "model.moe.ep: 16 exceeds model.moe.experts 8");
    m = mixtral();
    m.moe.ep = 3;
    EXPECT_EQ(checkMessage(m), "model.moe.ep: 3 does not divide model.moe.experts 8");
    m = llama3_8b();
    m.moe.ep = 4;
    EXPECT_EQ(checkMessage(m), "model.moe.ep: 4 needs routed experts (model.moe.experts is 0)");
    m = mixtral();
    m.moe.dispatchBytes = 3;
    EXPECT_EQ(checkMessage(m), "model.moe.dispatch_dtype: 3 bytes per element is not 1, 2 or 4");

    m = llama3_8b();
    m.headDim = 0;
    m.heads = 7;
    m.kvHeads = 7;
    EXPECT_EQ(checkMessage(m), "model.heads: 7 does not divide model.hidden 4096 (give model.head_dim)");
    m.headDim = 128; // a given head size needs no divisibility
    EXPECT_EQ(checkMessage(m), "accepted");
    m = llama3_8b();
    m.heads = 0;
    EXPECT_EQ(checkMessage(m), "model.heads: must be at least 1, got 0");
    m = llama3_8b();
    m.kvHeads = 3;
    EXPECT_EQ(checkMessage(m), "model.kv_heads: 3 does not divide model.heads 32");
    m = llama3_8b();
    m.attention = Attention::MHA;
    EXPECT_EQ(
        checkMessage(m), "model.kv_heads: 8 differs from model.heads 32 with model.attention \"mha\" (use \"gqa\")");
    m = llama3_8b();
    m.layers = 0;
    EXPECT_EQ(checkMessage(m), "model.layers: must be at least 1, got 0");
    m = llama3_8b();
    m.vocab = -5;
    EXPECT_EQ(checkMessage(m), "model.vocab: must be at least 1, got -5");
    m = deepseekV3();
    m.mla.kvLoraRank = 0;
    EXPECT_EQ(checkMessage(m), "model.mla.kv_lora_rank: must be at least 1, got 0");
    m = deepseekV3();
    m.mla.qLoraRank = -1;
    EXPECT_EQ(checkMessage(m), "model.mla.q_lora_rank: must not be negative, got -1");
    m = deepseekV3();
    m.kvHeads = 0; // MLA has no separate key/value heads: not read
    EXPECT_EQ(checkMessage(m), "accepted");
}
