#include "runtime/layers/edges.h"

#include "runtime/layers/rmsnorm.h"

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
    requireFp32(backend, "the embedding");
}

std::vector<ParamShape> Embedding::parameterShapes() const
{
    return { { "embed_tokens", static_cast<std::size_t>(m_vocab), static_cast<std::size_t>(m_hidden) } };
}

Tensor Embedding::forward(Lane lane, const ParamSet& p, const std::vector<int>& ids, Saved& saved) const
{
    requirePhase(saved, Phase::Empty, "embedding F");
    checkIds(ids, m_vocab, "embedding: token");
    const auto h = static_cast<std::size_t>(m_hidden);
    Tensor x(m_backend, ids.size(), h, kWork);
    if (!ids.empty())
        m_backend.gatherRows(lane, p[0].weight, h, ids.data(), nullptr, ids.size(), x.data());
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

void Embedding::weightGrad(Lane lane, const ParamSet& p, Saved& saved, const std::vector<int>& ids) const
{
    requirePhase(saved, Phase::AfterInputGrad, "embedding W");
    const Tensor& dy = saved.at(eDy);
    requireShape(dy, ids.size(), static_cast<std::size_t>(m_hidden), "embedding W: dy");
    checkIds(ids, m_vocab, "embedding: token");
    const auto h = static_cast<std::size_t>(m_hidden);
    if (!ids.empty())
        m_backend.scatterAddRows(lane, dy.data(), h, ids.data(), nullptr, ids.size(), p[0].grad);
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
    requireFp32(backend, "the LM head");
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
    rmsNormForward(m_backend, lane, x.data(), h, p[0], xn.data(), h, t, h);
    Tensor logits(m_backend, t, v, kAct); // fp32 (the model library's 4·T·vocab; the layers are fp32 only)
    linearForward(m_backend, lane, xn.data(), p[1], logits.data(), t);
    // L = (1/T) Σ_t [log Σ_j exp(z_tj − max_t) + max_t − z_t,target] (the log-sum-exp with the row maximum out),
    // the tokens' terms summed on the host in token order.
    std::vector<double> losses(t, 0.0);
    if (t > 0)
        m_backend.crossEntropyForward(lane, logits.data(), t, v, targets.data(), losses.data());
    double sum = 0.0;
    for (const double loss : losses)
        sum += loss;
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
    const double scale = t == 0 ? 0.0 : 1.0 / static_cast<double>(t);
    if (t > 0)
        m_backend.crossEntropyBackward(lane, saved[hLogits].data(), t, v, targets.data(), scale);
    Tensor dxn(m_backend, t, h, kWork);
    linearInputGrad(m_backend, lane, saved[hLogits].data(), p[1], dxn.data(), t);
    Tensor dx(m_backend, t, h, kWork);
    if (!dx.empty())
        m_backend.setZero(lane, dx.data(), dx.bytes());
    rmsNormBackward(m_backend, lane, saved[hX].data(), h, p[0], dxn.data(), h, dx.data(), h, t, h);
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
