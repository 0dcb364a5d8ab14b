#include "runtime/layers/edges.h"

#include "runtime/layers/rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dps::runtime::layers {

namespace {

constexpr auto kAct = MemoryCategory::Activation;
constexpr auto kWork = MemoryCategory::Workspace;

/// The embedding keeps dy (after I); the head keeps x, xn, logits (after F), then xn, dlogits (after I).
enum EmbeddingSlot : std::size_t { eDy };
enum HeadSlot : std::size_t { hX, hXn, hLogits };

void checkSizes(int vocab, int hidden, const char* what)
{
    if (vocab < 1 || hidden < 1)
        throw RuntimeError(std::string(what) + ": vocab and hidden must be at least 1, got " + std::to_string(vocab)
            + " and " + std::to_string(hidden));
}

/// Throws RuntimeError naming the first id of `ids` outside [0, vocab).
void checkIds(const std::vector<int>& ids, int vocab, const char* what)
{
    for (std::size_t t = 0; t < ids.size(); ++t)
        if (ids[t] < 0 || ids[t] >= vocab)
            throw RuntimeError(std::string(what) + " " + std::to_string(t) + ": " + std::to_string(ids[t])
                + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

} // namespace

// ------------------------------------------------------------------------------------------ Embedding

Embedding::Embedding(Backend& backend, int vocab, int hidden)
    : m_backend(backend)
    , m_vocab(vocab)
    , m_hidden(hidden)
{
    checkSizes(vocab, hidden, "embedding");
    requireHostFp32(backend, "the embedding");
}

std::vector<ParamShape> Embedding::parameterShapes() const
{
    return { { "embed_tokens", static_cast<std::size_t>(m_vocab), static_cast<std::size_t>(m_hidden) } };
}

Tensor Embedding::forward(Lane, const ParamSet& p, const std::vector<int>& ids, Saved& saved) const
{
    requirePhase(saved, Phase::Empty, "embedding F");
    checkIds(ids, m_vocab, "embedding: token");
    const auto h = static_cast<std::size_t>(m_hidden);
    Tensor x(m_backend, ids.size(), h, kWork);
    const float* e = floats(p[0].weight);
    float* out = floats(x);
    for (std::size_t t = 0; t < ids.size(); ++t)
        std::memcpy(out + t * h, e + static_cast<std::size_t>(ids[t]) * h, h * sizeof(float));
    saved.phase = Phase::AfterForward;
    return x;
}

void Embedding::inputGrad(Lane, const ParamSet&, Saved& saved, Tensor dy) const
{
    requirePhase(saved, Phase::AfterForward, "embedding I");
    requireShape(dy, dy.rows(), static_cast<std::size_t>(m_hidden), "embedding I: dy");
    dy.recategorize(kAct);
    saved[eDy] = std::move(dy);
    saved.phase = Phase::AfterInputGrad;
}

void Embedding::weightGrad(Lane, const ParamSet& p, Saved& saved, const std::vector<int>& ids) const
{
    requirePhase(saved, Phase::AfterInputGrad, "embedding W");
    const Tensor& dy = saved.at(eDy);
    requireShape(dy, ids.size(), static_cast<std::size_t>(m_hidden), "embedding W: dy");
    checkIds(ids, m_vocab, "embedding: token");
    const auto h = static_cast<std::size_t>(m_hidden);
    float* de = floats(p[0].grad);
    const float* g = floats(dy);
    for (std::size_t t = 0; t < ids.size(); ++t) {
        float* row = de + static_cast<std::size_t>(ids[t]) * h;
        for (std::size_t c = 0; c < h; ++c)
            row[c] += g[t * h + c];
    }
    saved.clear();
}

void Embedding::backward(Lane lane, const ParamSet& p, Saved& saved, Tensor dy, const std::vector<int>& ids) const
{
    inputGrad(lane, p, saved, std::move(dy));
    weightGrad(lane, p, saved, ids);
}

// ------------------------------------------------------------------------------------------ LmHead

LmHead::LmHead(Backend& backend, int vocab, int hidden)
    : m_backend(backend)
    , m_vocab(vocab)
    , m_hidden(hidden)
{
    checkSizes(vocab, hidden, "LM head");
    requireHostFp32(backend, "the LM head");
}

std::vector<ParamShape> LmHead::parameterShapes() const
{
    return { { "norm", 1, static_cast<std::size_t>(m_hidden) },
        { "lm_head", static_cast<std::size_t>(m_vocab), static_cast<std::size_t>(m_hidden) } };
}

double LmHead::forward(Lane lane, const ParamSet& p, Tensor x, const std::vector<int>& targets, Saved& saved) const
{
    requirePhase(saved, Phase::Empty, "LM head F");
    const auto h = static_cast<std::size_t>(m_hidden);
    const auto v = static_cast<std::size_t>(m_vocab);
    const std::size_t t = targets.size();
    requireShape(x, t, h, "LM head F: x");
    checkIds(targets, m_vocab, "LM head: target of token");
    x.recategorize(kAct);
    Tensor xn(m_backend, t, h, kAct);
    rmsNormForward(floats(x), h, floats(p[0].weight), floats(xn), h, t, h);
    Tensor logits(m_backend, t, v, kAct); // fp32 whatever the model's dtype (the model library's 4·T·vocab)
    linearForward(m_backend, lane, xn.data(), p[1], logits.data(), t);
    // L = (1/T) Σ_t [log Σ_j exp(z_tj − max_t) + max_t − z_t,target] (the log-sum-exp with the row maximum out).
    const float* z = floats(logits);
    double sum = 0.0;
    for (std::size_t row = 0; row < t; ++row) {
        const float* zr = z + row * v;
        const float top = *std::max_element(zr, zr + v);
        double partition = 0.0;
        for (std::size_t j = 0; j < v; ++j)
            partition += std::exp(static_cast<double>(zr[j]) - top);
        sum += std::log(partition) + top - zr[static_cast<std::size_t>(targets[row])];
    }
    saved[hX] = std::move(x);
    saved[hXn] = std::move(xn);
    saved[hLogits] = std::move(logits);
    saved.phase = Phase::AfterForward;
    return t == 0 ? 0.0 : sum / static_cast<double>(t);
}

Tensor LmHead::inputGrad(Lane lane, const ParamSet& p, Saved& saved, const std::vector<int>& targets) const
{
    requirePhase(saved, Phase::AfterForward, "LM head I");
    const auto h = static_cast<std::size_t>(m_hidden);
    const auto v = static_cast<std::size_t>(m_vocab);
    const std::size_t t = targets.size();
    requireShape(saved.at(hLogits), t, v, "LM head I: logits");
    checkIds(targets, m_vocab, "LM head: target of token");
    // dL/dz_tj = (softmax(z_t)_j − [j = target_t]) / T, in place of the logits.
    float* z = floats(saved[hLogits]);
    const double scale = t == 0 ? 0.0 : 1.0 / static_cast<double>(t);
    for (std::size_t row = 0; row < t; ++row) {
        float* zr = z + row * v;
        const float top = *std::max_element(zr, zr + v);
        double partition = 0.0;
        for (std::size_t j = 0; j < v; ++j)
            partition += std::exp(static_cast<double>(zr[j]) - top);
        for (std::size_t j = 0; j < v; ++j)
            zr[j] = static_cast<float>(std::exp(static_cast<double>(zr[j]) - top) / partition * scale);
        zr[static_cast<std::size_t>(targets[row])] -= static_cast<float>(scale);
    }
    Tensor dxn(m_backend, t, h, kWork);
    linearInputGrad(m_backend, lane, saved[hLogits].data(), p[1], dxn.data(), t);
    Tensor dx(m_backend, t, h, kWork);
    m_backend.setZero(lane, dx.data(), dx.bytes());
    rmsNormBackward(floats(saved[hX]), h, floats(p[0].weight), floats(dxn), h, floats(dx), h, floats(p[0].grad), t, h);
    saved[hX].reset();
    saved.phase = Phase::AfterInputGrad;
    return dx;
}

void LmHead::weightGrad(Lane lane, const ParamSet& p, Saved& saved) const
{
    requirePhase(saved, Phase::AfterInputGrad, "LM head W");
    const Tensor& dz = saved.at(hLogits);
    linearWeightGrad(m_backend, lane, dz.data(), saved.at(hXn).data(), p[1], dz.rows());
    saved.clear();
}

Tensor LmHead::backward(Lane lane, const ParamSet& p, Saved& saved, const std::vector<int>& targets) const
{
    Tensor dx = inputGrad(lane, p, saved, targets);
    weightGrad(lane, p, saved);
    return dx;
}

} // namespace dps::runtime::layers
