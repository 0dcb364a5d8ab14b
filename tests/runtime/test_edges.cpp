// The embedding and the LM head with cross-entropy (engine/runtime/layers/edges.h): values against a float64
// reference written here, gradients against central finite differences of that reference, I then W equal to
// B, and the bytes kept between actions equal to the model library's ledger (embeddingCost, headCost).
#include "model/transformer.h"
#include "runtime/cpubackend.h"
#include "runtime/layers/edges.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace dps;
using namespace dps::runtime;
using namespace dps::runtime::layers;

namespace {

constexpr int kVocab = 11;
constexpr int kHidden = 8;
const std::vector<int> kIds { 3, 0, 10, 3, 7 }; // token 3 twice: its gradient row sums both
const std::vector<int> kTargets { 1, 4, 4, 9, 0 };

std::vector<float> randomValues(std::size_t n, unsigned seed, float scale = 1.0f)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v)
        x = u(rng);
    return v;
}

Tensor upload(Backend& backend, const std::vector<float>& values, std::size_t rows, std::size_t cols)
{
    Tensor t(backend, rows, cols, MemoryCategory::Workspace);
    backend.uploadFloats(0, t.data(), values.data(), values.size());
    return t;
}

std::vector<float> download(Backend& backend, const Tensor& t)
{
    std::vector<float> v(t.elements());
    backend.downloadFloats(0, v.data(), t.data(), v.size());
    return v;
}

/// The head's loss in float64: mean over tokens of −log softmax(RMSNorm(x; g)·Wᵀ)[target].
double referenceLoss(const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& w)
{
    const std::size_t t = kTargets.size();
    double sum = 0.0;
    for (std::size_t row = 0; row < t; ++row) {
        double squares = 0.0;
        for (int c = 0; c < kHidden; ++c)
            squares += x[row * kHidden + c] * x[row * kHidden + c];
        const double r = 1.0 / std::sqrt(squares / kHidden + 1e-6);
        std::vector<double> z(kVocab, 0.0);
        for (int j = 0; j < kVocab; ++j)
            for (int c = 0; c < kHidden; ++c)
                z[j] += g[c] * x[row * kHidden + c] * r * w[j * kHidden + c];
        double top = z[0];
        for (double v : z)
            top = std::max(top, v);
        double partition = 0.0;
        for (double v : z)
            partition += std::exp(v - top);
        sum += std::log(partition) + top - z[static_cast<std::size_t>(kTargets[row])];
    }
    return sum / static_cast<double>(t);
}

/// Central differences of referenceLoss by each element of `which` (0: x, 1: g, 2: W), step 1e-6.
std::vector<double> numericGradient(std::vector<double> x, std::vector<double> g, std::vector<double> w, int which)
{
    std::vector<double>& v = which == 0 ? x : which == 1 ? g : w;
    std::vector<double> grad(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        const double keep = v[i];
        v[i] = keep + 1e-6;
        const double up = referenceLoss(x, g, w);
        v[i] = keep - 1e-6;
        const double down = referenceLoss(x, g, w);
        v[i] = keep;
        grad[i] = (up - down) / 2e-6;
    }
    return grad;
}

/// max |a − b| over max |b|.
double relativeDifference(const std::vector<float>& a, const std::vector<double>& b)
{
    double diff = 0.0;
    double size = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, std::fabs(a[i] - b[i]));
        size = std::max(size, std::fabs(b[i]));
    }
    return diff / size;
}

std::vector<double> widened(const std::vector<float>& v)
{
    return { v.begin(), v.end() };
}

/// The model library's transformer of these sizes, in fp32, one sequence of the test's tokens.
model::Transformer libraryModel()
{
    model::Transformer m;
    m.hidden = kHidden;
    m.vocab = kVocab;
    m.seqLen = static_cast<int>(kTargets.size());
    m.microbatchSize = 1;
    m.dtypeBytes = 4;
    return m;
}

} // namespace

TEST(Embedding, ForwardLooksUpRowsAndWeightGradScatterAdds)
{
    CpuBackend backend(1);
    const Embedding embedding(backend, kVocab, kHidden);
    ParamStorage params(backend, embedding.parameterShapes());
    const std::vector<float> table = randomValues(kVocab * kHidden, 1);
    params.setWeight(0, table);
    Saved saved;
    const std::vector<float> x = download(backend, embedding.forward(0, params.params(), kIds, saved));
    for (std::size_t t = 0; t < kIds.size(); ++t)
        for (int c = 0; c < kHidden; ++c)
            EXPECT_EQ(x[t * kHidden + c], table[static_cast<std::size_t>(kIds[t]) * kHidden + c]);
    EXPECT_EQ(saved.bytes(), 0u); // nothing from F to I

    const std::vector<float> dy = randomValues(kIds.size() * kHidden, 2);
    embedding.inputGrad(0, params.params(), saved, upload(backend, dy, kIds.size(), kHidden));
    EXPECT_EQ(static_cast<double>(saved.bytes()), model::embeddingCost(libraryModel()).weightGradKeptBytes);
    embedding.weightGrad(0, params.params(), saved, kIds);
    EXPECT_EQ(saved.bytes(), 0u);
    const std::vector<float> grad = params.grad(0);
    for (int c = 0; c < kHidden; ++c) {
        EXPECT_FLOAT_EQ(grad[3 * kHidden + c], dy[0 * kHidden + c] + dy[3 * kHidden + c]); // token 3, twice
        EXPECT_EQ(grad[10 * kHidden + c], dy[2 * kHidden + c]);
        EXPECT_EQ(grad[5 * kHidden + c], 0.0f); // token 5 never appears
    }
}

TEST(Embedding, AnIdOutsideTheVocabularyIsNamed)
{
    CpuBackend backend(1);
    const Embedding embedding(backend, kVocab, kHidden);
    ParamStorage params(backend, embedding.parameterShapes());
    Saved saved;
    try {
        embedding.forward(0, params.params(), { 1, 2, 11 }, saved);
        FAIL() << "expected an error";
    } catch (const RuntimeError& e) {
        EXPECT_STREQ(e.what(), "embedding: token 2: 11 is outside the vocabulary [0, 11)");
    }
}

TEST(LmHead, LossAndEveryGradientMatchTheFloat64Reference)
{
    CpuBackend backend(1);
    const LmHead head(backend, kVocab, kHidden);
    ParamStorage params(backend, head.parameterShapes());
    const std::size_t t = kTargets.size();
    const std::vector<float> g = randomValues(kHidden, 3, 0.5f);
    std::vector<float> gShifted(g);
    for (float& v : gShifted)
        v += 1.0f; // norm weights near 1, as trained models have
    const std::vector<float> w = randomValues(kVocab * kHidden, 4, 0.7f);
    const std::vector<float> x = randomValues(t * kHidden, 5, 2.0f);
    params.setWeight(0, gShifted);
    params.setWeight(1, w);

    Saved saved;
    const double loss = head.forward(0, params.params(), upload(backend, x, t, kHidden), kTargets, saved);
    const model::EdgeCost ledger = model::headCost(libraryModel(), model::Recompute::None);
    EXPECT_EQ(static_cast<double>(saved.bytes()), ledger.activationBytes); // x, RMSNorm(x), fp32 logits
    EXPECT_NEAR(loss, referenceLoss(widened(x), widened(gShifted), widened(w)), 1e-6 * loss);

    const std::vector<float> dx = download(backend, head.inputGrad(0, params.params(), saved, kTargets));
    EXPECT_EQ(static_cast<double>(saved.bytes()), ledger.weightGradKeptBytes); // RMSNorm(x), dlogits
    head.weightGrad(0, params.params(), saved);
    EXPECT_EQ(saved.bytes(), 0u);

    EXPECT_LT(relativeDifference(dx, numericGradient(widened(x), widened(gShifted), widened(w), 0)), 1e-4);
    EXPECT_LT(relativeDifference(params.grad(0), numericGradient(widened(x), widened(gShifted), widened(w), 1)), 1e-4);
    EXPECT_LT(relativeDifference(params.grad(1), numericGradient(widened(x), widened(gShifted), widened(w), 2)), 1e-4);

    // B gives the same gradients as I then W (the same kernels in the same order): twice them after a second
    // pass through B (up to the rounding of adding into a non-zero accumulator).
    const std::vector<float> afterW0 = params.grad(0);
    const std::vector<float> afterW1 = params.grad(1);
    head.forward(0, params.params(), upload(backend, x, t, kHidden), kTargets, saved);
    const std::vector<float> dxB = download(backend, head.backward(0, params.params(), saved, kTargets));
    EXPECT_EQ(saved.bytes(), 0u);
    EXPECT_EQ(dxB, dx);
    const std::vector<float> twice0 = params.grad(0);
    const std::vector<float> twice1 = params.grad(1);
    for (std::size_t i = 0; i < twice0.size(); ++i)
        EXPECT_NEAR(twice0[i], 2.0f * afterW0[i], 1e-6 * std::fabs(afterW0[i]) + 1e-9) << "norm " << i;
    for (std::size_t i = 0; i < twice1.size(); ++i)
        EXPECT_NEAR(twice1[i], 2.0f * afterW1[i], 1e-6 * std::fabs(afterW1[i]) + 1e-9) << "lm_head " << i;
}

TEST(LmHead, AUniformPredictionCostsLogVocab)
{
    // All-zero head weights give equal logits: the loss is log(vocab) for any input and target.
    CpuBackend backend(1);
    const LmHead head(backend, kVocab, kHidden);
    ParamStorage params(backend, head.parameterShapes());
    params.setWeight(0, std::vector<float>(kHidden, 1.0f));
    Saved saved;
    const double loss = head.forward(0, params.params(),
        upload(backend, randomValues(kTargets.size() * kHidden, 6), kTargets.size(), kHidden), kTargets, saved);
    EXPECT_NEAR(loss, std::log(static_cast<double>(kVocab)), 1e-12);
}

TEST(LmHead, ATargetOutsideTheVocabularyIsNamed)
{
    CpuBackend backend(1);
    const LmHead head(backend, kVocab, kHidden);
    ParamStorage params(backend, head.parameterShapes());
    Saved saved;
    try {
        head.forward(
            0, params.params(), upload(backend, std::vector<float>(2 * kHidden, 1.0f), 2, kHidden), { 0, -1 }, saved);
        FAIL() << "expected an error";
    } catch (const RuntimeError& e) {
        EXPECT_STREQ(e.what(), "LM head: target of token 1: -1 is outside the vocabulary [0, 11)");
    }
}
