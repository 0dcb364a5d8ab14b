// The transformer and MoE layers (engine/runtime/layers/) on the cuda backend against the CPU backend: every
// layer kind (GQA, MLA with and without the low-rank query, the SwiGLU MLP, MoE with a shared expert under both
// gatings, the embedding, the LM head with its cross-entropy) runs F, I and W, and F then B, on both backends with
// the same weights and inputs; the outputs, the input gradient and every weight gradient agree within 1e-4
// relative (‖gpu − cpu‖ / ‖cpu‖, fp32 with TF32 off: the backend's CUBLAS_DEFAULT_MATH with CUBLAS_COMPUTE_32F,
// cudabackend.h). The GPU's sums run in another order (block reductions, cuBLAS), so the results are close, not
// equal; the MoE routing itself is the same host code on both. A bf16 cuda backend is refused by name. Every test
// skips with the reason when this machine has no GPU (CI: CUDA toolkit, stub driver, no device).
#include "runtime/backend.h"
#include "runtime/correctness.h"
#include "runtime/cpubackend.h"
#include "runtime/cuda/cudabackend.h"
#include "runtime/cuda/gpuinfo.h"
#include "runtime/layers/attention.h"
#include "runtime/layers/edges.h"
#include "runtime/layers/moe.h"
#include "runtime/layers/swiglu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace dps::runtime;
using namespace dps::runtime::layers;

namespace {

constexpr double kTolerance = 1e-4;

std::vector<float> randomFloats(std::size_t n, unsigned seed, float scale)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng);
    return v;
}

std::vector<float> download(Backend& b, const Tensor& t)
{
    std::vector<float> out(t.elements());
    b.synchronize();
    if (!out.empty())
        b.downloadFloats(0, out.data(), t.data(), out.size());
    return out;
}

Tensor upload(Backend& b, const std::vector<float>& values, std::size_t rows, std::size_t cols)
{
    Tensor t(b, rows, cols, MemoryCategory::Workspace);
    b.uploadFloats(0, t.data(), values.data(), values.size());
    return t;
}

/// What one run of a layer gave: the output (or the loss), the input gradient and every weight gradient.
struct LayerRun {
    std::vector<float> y;
    double loss = 0.0;
    std::vector<float> dx;
    std::vector<std::vector<float>> grads;
};

/// Weights for `shapes`: norms near 1, matrices N(0, 1/√cols).
std::vector<std::vector<float>> weightsFor(const std::vector<ParamShape>& shapes, unsigned seed)
{
    std::vector<std::vector<float>> w;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        const ParamShape& s = shapes[i];
        std::vector<float> v = randomFloats(s.elements(), seed + static_cast<unsigned>(i),
            s.rows == 1 ? 0.1f : 1.0f / std::sqrt(static_cast<float>(s.cols)));
        if (s.rows == 1)
            for (auto& x : v)
                x += 1.0f;
        w.push_back(std::move(v));
    }
    return w;
}

/// F, then I and W (fused false) or B (fused true), of `layer` on `b`: F and I on lane 0, or everything on lane 1
/// for B (the second stream, after the uploads on lane 0 are waited for).
LayerRun runLayer(Backend& b, const Layer& layer, const std::vector<std::vector<float>>& weights,
    const std::vector<float>& x, const std::vector<float>& dy, std::size_t rows, std::size_t cols, bool fused)
{
    ParamStorage ps(b, layer.parameterShapes());
    for (std::size_t i = 0; i < weights.size(); ++i)
        ps.setWeight(i, weights[i]);
    Tensor xt = upload(b, x, rows, cols);
    Tensor dyt = upload(b, dy, rows, cols);
    b.synchronize();
    const Lane lane = fused ? 1 : 0;
    Saved saved;
    LayerRun run;
    Tensor y = layer.forward(lane, ps.params(), std::move(xt), saved);
    run.y = download(b, y);
    Tensor dx;
    if (fused) {
        dx = layer.backward(lane, ps.params(), saved, std::move(dyt));
    } else {
        dx = layer.inputGrad(lane, ps.params(), saved, std::move(dyt));
        layer.weightGrad(lane, ps.params(), saved);
    }
    run.dx = download(b, dx);
    for (std::size_t i = 0; i < weights.size(); ++i)
        run.grads.push_back(ps.grad(i));
    return run;
}

class CudaLayers : public ::testing::Test {
protected:
    void SetUp() override
    {
        std::string why;
        if (dps::listGpus(&why).empty())
            GTEST_SKIP() << "needs a GPU: " << why;
        m_gpu = std::make_unique<CudaBackend>(CudaBackendOptions {}); // fp32, TF32 off
    }

    /// The layer `make` builds, on both backends, with the same weights and inputs (T × h), F-I-W and F-B.
    void compare(const std::string& what, const std::function<std::unique_ptr<Layer>(Backend&)>& make, std::size_t rows,
        std::size_t cols)
    {
        const auto cpuLayer = make(m_cpu);
        const auto gpuLayer = make(*m_gpu);
        const std::vector<ParamShape> shapes = cpuLayer->parameterShapes();
        const auto weights = weightsFor(shapes, 100);
        const auto x = randomFloats(rows * cols, 1, 1.0f);
        const auto dy = randomFloats(rows * cols, 2, 1.0f);
        for (const bool fused : { false, true }) {
            const std::string path = what + (fused ? " F, B" : " F, I, W");
            const LayerRun cpu = runLayer(m_cpu, *cpuLayer, weights, x, dy, rows, cols, fused);
            const LayerRun gpu = runLayer(*m_gpu, *gpuLayer, weights, x, dy, rows, cols, fused);
            EXPECT_LE(relativeError(gpu.y, cpu.y), kTolerance) << path << ": output";
            EXPECT_LE(relativeError(gpu.dx, cpu.dx), kTolerance) << path << ": input gradient";
            for (std::size_t i = 0; i < shapes.size(); ++i)
                EXPECT_LE(relativeError(gpu.grads[i], cpu.grads[i]), kTolerance)
                    << path << ": gradient of " << shapes[i].name;
        }
    }

    CpuBackend m_cpu { 1 };
    std::unique_ptr<CudaBackend> m_gpu;
};

AttentionConfig attentionConfig()
{
    AttentionConfig c;
    c.hidden = 48;
    c.heads = 4;
    c.kvHeads = 2;
    c.headDim = 12;
    c.batch = 2;
    c.seqLen = 9;
    c.mla.kvLoraRank = 16;
    c.mla.qkNopeHeadDim = 8;
    c.mla.qkRopeHeadDim = 6;
    c.mla.vHeadDim = 10;
    return c;
}

} // namespace

TEST_F(CudaLayers, GqaAttentionMatchesTheCpu)
{
    const AttentionConfig c = attentionConfig();
    compare(
        "gqa", [&](Backend& b) { return std::make_unique<GqaAttention>(b, c); }, static_cast<std::size_t>(c.tokens()),
        static_cast<std::size_t>(c.hidden));
}

TEST_F(CudaLayers, MlaAttentionWithAndWithoutTheLowRankQueryMatchesTheCpu)
{
    for (const int qLora : { 0, 20 }) {
        AttentionConfig c = attentionConfig();
        c.mla.qLoraRank = qLora;
        compare(
            "mla (q_lora_rank " + std::to_string(qLora) + ")",
            [&](Backend& b) { return std::make_unique<MlaAttention>(b, c); }, static_cast<std::size_t>(c.tokens()),
            static_cast<std::size_t>(c.hidden));
    }
}

TEST_F(CudaLayers, SwigluMlpMatchesTheCpu)
{
    const MlpConfig c { 40, 72, 18 };
    compare(
        "swiglu", [&](Backend& b) { return std::make_unique<DenseMlp>(b, c); }, 18, 40);
}

TEST_F(CudaLayers, MoeWithASharedExpertMatchesTheCpuUnderBothGatings)
{
    for (const MoeGating& gating : { MoeGating::deepSeekV3(), MoeGating::mixtral() }) {
        MoeConfig c;
        c.hidden = 32;
        c.experts = 6;
        c.topK = 2;
        c.expertFfn = 24;
        c.sharedExperts = 1;
        c.tokens = 20;
        c.gating = gating;
        compare(
            std::string("moe (") + (gating.kind == Gating::Sigmoid ? "sigmoid" : "softmax") + ")",
            [&](Backend& b) { return std::make_unique<MoeBlock>(b, c); }, 20, 32);
    }
}

TEST_F(CudaLayers, EmbeddingMatchesTheCpu)
{
    const int vocab = 23;
    const int hidden = 16;
    const std::vector<int> ids { 3, 0, 22, 3, 7, 7, 7, 1, 22, 5 }; // repeated ids: the scatter-add in token order
    const auto table = randomFloats(static_cast<std::size_t>(vocab * hidden), 3, 1.0f);
    const auto dy = randomFloats(ids.size() * static_cast<std::size_t>(hidden), 4, 1.0f);
    for (const bool fused : { false, true }) {
        std::vector<std::vector<float>> outputs;
        std::vector<std::vector<float>> grads;
        for (Backend* b : std::initializer_list<Backend*> { &m_cpu, m_gpu.get() }) {
            const Embedding layer(*b, vocab, hidden);
            ParamStorage ps(*b, layer.parameterShapes());
            ps.setWeight(0, table);
            Saved saved;
            Tensor x = layer.forward(0, ps.params(), ids, saved);
            outputs.push_back(download(*b, x));
            Tensor dyt = upload(*b, dy, ids.size(), static_cast<std::size_t>(hidden));
            if (fused) {
                layer.backward(0, ps.params(), saved, std::move(dyt), ids);
            } else {
                layer.inputGrad(0, ps.params(), saved, std::move(dyt));
                layer.weightGrad(0, ps.params(), saved, ids);
            }
            b->synchronize();
            grads.push_back(ps.grad(0));
        }
        EXPECT_EQ(outputs[1], outputs[0]) << "the lookup copies rows"; // no arithmetic: exact
        EXPECT_LE(relativeError(grads[1], grads[0]), kTolerance) << (fused ? "B" : "I, W") << ": embed_tokens";
    }
}

TEST_F(CudaLayers, LmHeadAndCrossEntropyMatchTheCpu)
{
    const int vocab = 300; // above one block of threads: the row reductions take several passes
    const int hidden = 24;
    const std::vector<int> targets { 0, 299, 17, 17, 256, 3, 42, 100 };
    const std::size_t t = targets.size();
    const auto x = randomFloats(t * static_cast<std::size_t>(hidden), 5, 1.0f);
    for (const bool fused : { false, true }) {
        std::vector<LayerRun> runs;
        for (Backend* b : std::initializer_list<Backend*> { &m_cpu, m_gpu.get() }) {
            const LmHead head(*b, vocab, hidden);
            const auto shapes = head.parameterShapes();
            ParamStorage ps(*b, shapes);
            const auto weights = weightsFor(shapes, 200);
            for (std::size_t i = 0; i < weights.size(); ++i)
                ps.setWeight(i, weights[i]);
            Saved saved;
            LayerRun run;
            run.loss = head.forward(0, ps.params(), upload(*b, x, t, static_cast<std::size_t>(hidden)), targets, saved);
            Tensor dx;
            if (fused) {
                dx = head.backward(0, ps.params(), saved, targets);
            } else {
                dx = head.inputGrad(0, ps.params(), saved, targets);
                head.weightGrad(0, ps.params(), saved);
            }
            run.dx = download(*b, dx);
            for (std::size_t i = 0; i < shapes.size(); ++i)
                run.grads.push_back(ps.grad(i));
            runs.push_back(std::move(run));
        }
        const std::string path = fused ? "F, B" : "F, I, W";
        EXPECT_NEAR(runs[1].loss, runs[0].loss, kTolerance * std::fabs(runs[0].loss)) << path << ": loss";
        EXPECT_GT(runs[0].loss, 0.0);
        EXPECT_LE(relativeError(runs[1].dx, runs[0].dx), kTolerance) << path << ": input gradient";
        EXPECT_LE(relativeError(runs[1].grads[0], runs[0].grads[0]), kTolerance) << path << ": norm";
        EXPECT_LE(relativeError(runs[1].grads[1], runs[0].grads[1]), kTolerance) << path << ": lm_head";
    }
}

TEST_F(CudaLayers, ABf16BackendIsRefusedNamingTheLayerAndTheType)
{
    CudaBackendOptions options;
    options.bf16 = true;
    CudaBackend bf16(options);
    try {
        const GqaAttention layer(bf16, attentionConfig());
        FAIL() << "a bf16 backend was accepted";
    } catch (const RuntimeError& e) {
        const std::string text = e.what();
        EXPECT_NE(text.find("gqa attention"), std::string::npos) << text;
        EXPECT_NE(text.find("bf16"), std::string::npos) << text;
    }
    EXPECT_THROW(MoeBlock(bf16, MoeConfig { 8, 2, 1, 8, 0, 4, {}, 1, 0 }), RuntimeError);
    EXPECT_THROW(LmHead(bf16, 10, 8), RuntimeError);
}
