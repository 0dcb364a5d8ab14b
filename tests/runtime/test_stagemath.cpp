// The stage math: the activation ledger equals modelcost.h's numbers at every action boundary, I then W
// equals B, gradients match finite differences of the loss, and the initialisation is deterministic.
#include "project/modelcost.h"
#include "runtime/cpubackend.h"
#include "runtime/stagemath.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace dps;
using namespace dps::runtime;

namespace {

ModelSpec spec(std::vector<int> partition, int hidden = 16, int ffn = 64, int tokens = 8)
{
    ModelSpec s;
    s.hidden = hidden;
    s.ffn = ffn;
    s.tokens = tokens;
    s.partition = std::move(partition);
    s.seed = 7;
    return s;
}

/// The project model matching a spec (tokens = 2 × 4).
ModelDesc modelOf(const ModelSpec& s)
{
    ModelDesc m;
    m.layers = s.totalLayers();
    m.hidden = s.hidden;
    m.ffn = s.ffn;
    m.microbatchSize = 2;
    m.seqLen = s.tokens / 2;
    return m;
}

Tensor deviceValues(Backend& backend, const std::vector<float>& values, std::size_t rows, std::size_t cols)
{
    Tensor t(backend, rows, cols, MemoryCategory::Communication);
    backend.uploadFloats(0, t.data(), values.data(), values.size());
    return t;
}

class StageMathTest : public ::testing::Test {
protected:
    std::size_t ledger() const { return backend.memory().live(MemoryCategory::Activation); }
    Tensor input(const ModelSpec& s, int m)
    {
        return deviceValues(
            backend, microbatchInput(s, m), static_cast<std::size_t>(s.tokens), static_cast<std::size_t>(s.hidden));
    }
    Tensor target(const ModelSpec& s, int m)
    {
        return deviceValues(
            backend, microbatchTarget(s, m), static_cast<std::size_t>(s.tokens), static_cast<std::size_t>(s.hidden));
    }

    /// The loss of microbatch m through all stages.
    double loss(const ModelSpec& s, std::vector<std::unique_ptr<StageParams>>& stages, int m)
    {
        const StageMath math(backend, s);
        Tensor x = input(s, m);
        const Tensor t = target(s, m);
        double value = 0.0;
        for (int st = 0; st < s.stages(); ++st) {
            SavedActivations saved;
            x = math.forward(
                0, *stages[static_cast<std::size_t>(st)], std::move(x), saved, st == s.stages() - 1, &t, &value);
        }
        return value;
    }

    CpuBackend backend { 1 };
    ClusterDesc cluster;
};

} // namespace

TEST_F(StageMathTest, LedgerAfterEachActionIsModelcostsActivationBytes)
{
    const ModelSpec s = spec({ 2, 3 });
    const ModelDesc model = modelOf(s);
    for (int stage : { 0, 1 }) {
        const bool last = stage == 1;
        const StageCost cost = blockStageCost(model, cluster, s.layersOf(stage), last, 4);
        StageParams params(backend, s, stage);
        const StageMath math(backend, s);
        const Tensor t = target(s, 0);
        SavedActivations saved;
        double loss = 0.0;
        Tensor out = math.forward(0, params, input(s, 0), saved, last, &t, &loss);
        EXPECT_EQ(ledger(), static_cast<std::size_t>(cost.activationBytes)) << "after F, stage " << stage;
        EXPECT_EQ(saved.bytes(), ledger());
        Tensor grad = last ? Tensor() : deviceValues(backend, microbatchTarget(s, 3), 8, 16);
        Tensor dx = math.inputGrad(0, params, saved, std::move(grad), stage > 0);
        EXPECT_EQ(ledger(), static_cast<std::size_t>(cost.weightGradKeptBytes)) << "after I, stage " << stage;
        EXPECT_EQ(dx.empty(), stage == 0);
        math.weightGrad(0, params, saved);
        EXPECT_EQ(ledger(), 0u) << "after W, stage " << stage;
    }
}

TEST_F(StageMathTest, LedgerOfAFullBackwardAndOfAStageWithoutLayers)
{
    const ModelSpec s = spec({ 2, 0 });
    const ModelDesc model = modelOf(s);
    StageParams params(backend, s, 1);
    EXPECT_EQ(params.layerCount(), 0);
    const StageMath math(backend, s);
    const Tensor t = target(s, 0);
    SavedActivations saved;
    double loss = 0.0;
    math.forward(0, params, input(s, 0), saved, true, &t, &loss);
    EXPECT_EQ(ledger(), static_cast<std::size_t>(blockStageCost(model, cluster, 0, true, 4).activationBytes));
    EXPECT_EQ(ledger(), 8u * 16u * 4u); // only dL/dY
    const Tensor dx = math.backward(0, params, saved, Tensor(), true);
    EXPECT_EQ(ledger(), 0u);
    EXPECT_EQ(dx.elements(), 8u * 16u);
}

TEST_F(StageMathTest, InputThenWeightGradientEqualsFullBackward)
{
    const ModelSpec s = spec({ 2 });
    StageParams split(backend, s, 0);
    StageParams full(backend, s, 0);
    const StageMath math(backend, s);
    const Tensor t = target(s, 1);
    double loss = 0.0;
    SavedActivations a, b;
    math.forward(0, split, input(s, 1), a, true, &t, &loss);
    math.forward(0, full, input(s, 1), b, true, &t, &loss);
    const Tensor dxSplit = math.inputGrad(0, split, a, Tensor(), true);
    math.weightGrad(0, split, a);
    const Tensor dxFull = math.backward(0, full, b, Tensor(), true);
    std::vector<float> x(dxSplit.elements()), y(dxFull.elements());
    backend.downloadFloats(0, x.data(), dxSplit.data(), x.size());
    backend.downloadFloats(0, y.data(), dxFull.data(), y.size());
    EXPECT_EQ(x, y);
    for (int l = 0; l < 2; ++l)
        for (Matrix m : { Matrix::W1, Matrix::W2 })
            EXPECT_EQ(split.gradient(backend, l, m), full.gradient(backend, l, m));
}

TEST_F(StageMathTest, WeightGradientsMatchFiniteDifferencesOfTheLoss)
{
    const ModelSpec s = spec({ 1, 1 }, 4, 8, 2);
    std::vector<std::unique_ptr<StageParams>> stages;
    for (int st = 0; st < 2; ++st)
        stages.push_back(std::make_unique<StageParams>(backend, s, st));
    // Analytic gradients of microbatch 0.
    {
        const StageMath math(backend, s);
        const Tensor t = target(s, 0);
        SavedActivations saved[2];
        double value = 0.0;
        Tensor x = math.forward(0, *stages[0], input(s, 0), saved[0], false, &t, &value);
        math.forward(0, *stages[1], std::move(x), saved[1], true, &t, &value);
        Tensor g = math.backward(0, *stages[1], saved[1], Tensor(), true);
        math.backward(0, *stages[0], saved[0], std::move(g), false);
    }
    const double h = 1e-2;
    for (int st = 0; st < 2; ++st)
        for (Matrix m : { Matrix::W1, Matrix::W2 }) {
            const std::vector<float> grad = stages[static_cast<std::size_t>(st)]->gradient(backend, 0, m);
            const LayerParams& p = stages[static_cast<std::size_t>(st)]->layer(0);
            float* w = static_cast<float*>(m == Matrix::W1 ? p.w1 : p.w2);
            for (std::size_t i = 0; i < grad.size(); i += 5) {
                const float saved = w[i];
                w[i] = saved + static_cast<float>(h);
                const double up = loss(s, stages, 0);
                w[i] = saved - static_cast<float>(h);
                const double down = loss(s, stages, 0);
                w[i] = saved;
                const double fd = (up - down) / (2 * h);
                EXPECT_NEAR(grad[i], fd, 2e-3 * (1.0 + std::fabs(fd))) << "stage " << st << " element " << i;
            }
        }
}

TEST(ModelInit, DeterministicFromSeedAndGlobalLayerAndBounded)
{
    ModelSpec s = spec({ 1, 2 });
    const auto a = initialWeights(s, 2, Matrix::W1);
    EXPECT_EQ(a, initialWeights(s, 2, Matrix::W1));
    EXPECT_NE(a, initialWeights(s, 1, Matrix::W1));
    EXPECT_NE(a, initialWeights(s, 2, Matrix::W2));
    const float bound1 = 1.0f / std::sqrt(16.0f), bound2 = 1.0f / std::sqrt(64.0f);
    for (float v : a)
        EXPECT_LE(std::fabs(v), bound1);
    for (float v : initialWeights(s, 0, Matrix::W2))
        EXPECT_LE(std::fabs(v), bound2);
    EXPECT_EQ(microbatchInput(s, 3), microbatchInput(s, 3));
    EXPECT_NE(microbatchInput(s, 3), microbatchInput(s, 4));
    EXPECT_NE(microbatchInput(s, 3), microbatchTarget(s, 3));
    s.seed = 8;
    EXPECT_NE(a, initialWeights(s, 2, Matrix::W1));
}

TEST_F(StageMathTest, StageParamsRebuildTheSameWeightsAnywhere)
{
    const ModelSpec s = spec({ 1, 2 });
    StageParams one(backend, s, 1);
    CpuBackend other(1);
    StageParams two(other, s, 1);
    const std::size_t n = 16 * 64;
    std::vector<float> a(n), b(n);
    backend.downloadFloats(0, a.data(), one.layer(1).w2, n);
    other.downloadFloats(0, b.data(), two.layer(1).w2, n);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, initialWeights(s, 2, Matrix::W2));
}
