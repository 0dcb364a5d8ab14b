#include "runtime/layers/moe.h"

#include "runtime/layers/rmsnorm.h"
#include "runtime/layers/swiglu.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dps::runtime::layers {

namespace {
constexpr auto kAct = MemoryCategory::Activation;
constexpr auto kWork = MemoryCategory::Workspace;

std::size_t z(int v)
{
    return static_cast<std::size_t>(v);
}

// Slots: the block input, the norm output, the affinities (after I: the router logits' gradient), the output
// gradient (kept for W when there are shared experts), then 3 per shared expert (swiglu.h) and 5 per routed
// expert: its 3 FFN slots, its dispatched input and its output (after I: the gradient of its output).
enum MoeSlot : std::size_t { eX, eXn, eScores, eDy, eFirstExpertSlot };
constexpr std::size_t kExpertInput = 3;
constexpr std::size_t kExpertOutput = 4;

/// The tokens of `pairs` (pair p is token p / k): the rows the dispatch gathers and the combine adds to.
std::vector<int> tokensOf(const std::vector<int>& pairs, std::size_t k)
{
    std::vector<int> tokens(pairs.size());
    for (std::size_t r = 0; r < pairs.size(); ++r)
        tokens[r] = static_cast<int>(z(pairs[r]) / k);
    return tokens;
}

/// The gates of `pairs` in fp32 (as the combine multiplies by them).
std::vector<float> gatesOf(const std::vector<int>& pairs, const std::vector<double>& g)
{
    std::vector<float> gates(pairs.size());
    for (std::size_t r = 0; r < pairs.size(); ++r)
        gates[r] = static_cast<float>(g[z(pairs[r])]);
    return gates;
}
} // namespace

MoeConfig MoeConfig::of(const model::Transformer& m, const MoeGating& gating)
{
    model::check(m);
    MoeConfig c;
    c.hidden = m.hidden;
    c.experts = m.moe.experts;
    c.topK = m.moe.topK;
    c.expertFfn = m.moe.expertFfn;
    c.sharedExperts = m.moe.sharedExperts;
    c.tokens = m.microbatchSize * m.seqLen;
    c.gating = gating;
    return c;
}

std::vector<int> topK(const float* scores, int n, int k)
{
    if (k < 1 || k > n)
        throw RuntimeError("moe top-k: k " + std::to_string(k) + " outside [1, " + std::to_string(n) + "]");
    std::vector<int> order(z(n));
    std::iota(order.begin(), order.end(), 0);
    // Largest first; among equal affinities the lower expert index first.
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
        [scores](int a, int b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
    order.resize(z(k));
    return order;
}

MoeBlock::MoeBlock(Backend& backend, const MoeConfig& config)
    : m_backend(backend)
    , m_c(config)
{
    requireFp32(backend, "moe");
    if (m_c.hidden < 1 || m_c.experts < 1 || m_c.expertFfn < 1 || m_c.tokens < 1)
        throw RuntimeError("moe: hidden " + std::to_string(m_c.hidden) + ", experts " + std::to_string(m_c.experts)
            + ", expert ffn " + std::to_string(m_c.expertFfn) + " and tokens " + std::to_string(m_c.tokens)
            + " must be at least 1");
    if (m_c.topK < 1 || m_c.topK > m_c.experts)
        throw RuntimeError(
            "moe: top_k " + std::to_string(m_c.topK) + " outside [1, experts " + std::to_string(m_c.experts) + "]");
    if (m_c.sharedExperts < 0)
        throw RuntimeError("moe: shared experts must not be negative, got " + std::to_string(m_c.sharedExperts));
    if (m_c.ep < 1 || m_c.experts % m_c.ep != 0 || m_c.member < 0 || m_c.member >= m_c.ep)
        throw RuntimeError("moe: expert parallelism " + std::to_string(m_c.ep) + " must divide the experts "
            + std::to_string(m_c.experts) + " (member " + std::to_string(m_c.member) + ")");
}

std::size_t MoeBlock::sharedSlot(int s) const
{
    return eFirstExpertSlot + 3 * z(s);
}

std::size_t MoeBlock::expertSlot(int e) const
{
    return eFirstExpertSlot + 3 * z(m_c.sharedExperts) + 5 * z(e);
}

std::size_t MoeBlock::expertParam(int e) const
{
    return 2 + 3 * z(m_c.sharedExperts) + 3 * z(e - firstLocalExpert()); // the routed experts held here
}

std::vector<ParamShape> MoeBlock::parameterShapes() const
{
    const std::size_t h = z(m_c.hidden);
    const std::size_t f = z(m_c.expertFfn);
    std::vector<ParamShape> shapes { { "post_attention_layernorm", 1, h }, { "gate", z(m_c.experts), h } };
    auto expert = [&](const std::string& prefix) {
        shapes.push_back({ prefix + ".gate_proj", f, h });
        shapes.push_back({ prefix + ".up_proj", f, h });
        shapes.push_back({ prefix + ".down_proj", h, f });
    };
    for (int s = 0; s < m_c.sharedExperts; ++s)
        expert("shared_experts." + std::to_string(s));
    for (int e = firstLocalExpert(); e < firstLocalExpert() + localExperts(); ++e)
        expert("experts." + std::to_string(e));
    return shapes;
}

std::vector<double> MoeBlock::gates(const Saved& sv) const
{
    m_backend.synchronize(); // the affinities may have been written on either lane
    return gatesOn(0, sv);
}

std::vector<double> MoeBlock::gatesOn(Lane lane, const Saved& sv) const
{
    const std::size_t k = z(m_c.topK);
    const Tensor& kept = sv.at(eScores);
    const std::vector<float> hostScores = download(m_backend, lane, kept.data(), kept.elements());
    const float* scores = hostScores.data();
    std::vector<double> g(sv.routes.size());
    for (std::size_t t = 0; t * k < sv.routes.size(); ++t) {
        double sum = 0.0;
        for (std::size_t j = 0; j < k; ++j)
            sum += scores[t * z(m_c.experts) + z(sv.routes[t * k + j])];
        for (std::size_t j = 0; j < k; ++j) {
            const double s = scores[t * z(m_c.experts) + z(sv.routes[t * k + j])];
            g[t * k + j] = m_c.gating.scale * (m_c.gating.normalizeTopK ? s / sum : s);
        }
    }
    return g;
}

void MoeBlock::route(Lane lane, const ParamSet& p, const Tensor& xn, Saved& sv) const
{
    const std::size_t t = z(m_c.tokens);
    const std::size_t experts = z(m_c.experts);
    const std::size_t k = z(m_c.topK);
    Backend& b = m_backend;
    // Router: logits = xn·W_rᵀ, then the affinities in place, on the host (T × E floats: the same routing on
    // every backend), uploaded back to be kept.
    Tensor scores(b, t, experts, kAct);
    linearForward(b, lane, xn.data(), p[1], scores.data(), t);
    std::vector<float> hostScores = download(b, lane, scores.data(), t * experts);
    float* sp = hostScores.data();
    for (std::size_t r = 0; r < t; ++r) {
        float* row = sp + r * experts;
        if (m_c.gating.kind == Gating::Sigmoid) {
            for (std::size_t e = 0; e < experts; ++e)
                row[e] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(row[e]))));
        } else {
            const float top = *std::max_element(row, row + experts);
            double sum = 0.0;
            for (std::size_t e = 0; e < experts; ++e)
                sum += std::exp(static_cast<double>(row[e] - top));
            for (std::size_t e = 0; e < experts; ++e)
                row[e] = static_cast<float>(std::exp(static_cast<double>(row[e] - top)) / sum);
        }
    }
    sv.routes.assign(t * k, 0);
    sv.expertRows.assign(experts, {});
    for (std::size_t r = 0; r < t; ++r) {
        const std::vector<int> chosen = topK(sp + r * experts, m_c.experts, m_c.topK);
        for (std::size_t j = 0; j < k; ++j) {
            sv.routes[r * k + j] = chosen[j];
            sv.expertRows[z(chosen[j])].push_back(static_cast<int>(r * k + j));
        }
    }
    b.uploadFloats(lane, scores.data(), sp, t * experts);
    sv[eScores] = std::move(scores);
}

MoeBlock::ForwardStart MoeBlock::beginForward(Lane lane, const ParamSet& p, Tensor& x, Saved& sv) const
{
    const std::size_t t = z(m_c.tokens);
    const std::size_t h = z(m_c.hidden);
    Backend& b = m_backend;
    requireShape(x, t, h, "moe F: input");
    x.recategorize(kAct);
    Tensor xn(b, t, h, kAct);
    rmsNormForward(b, lane, x.data(), h, p[0], xn.data(), h, t, h);
    route(lane, p, xn, sv);
    std::vector<double> gates = gatesOn(lane, sv);
    Tensor y = copyOf(b, lane, x, kWork);
    for (int s = 0; s < m_c.sharedExperts; ++s) {
        const std::size_t w = sharedParam(s);
        swigluForward(b, lane, p[w], p[w + 1], p[w + 2], xn.data(), t, sv, sharedSlot(s), y.data(), 1.0f);
    }
    return { std::move(xn), std::move(gates), std::move(y) };
}

Tensor MoeBlock::forward(Lane lane, const ParamSet& p, Tensor x, Saved& sv) const
{
    if (m_c.ep > 1)
        return forwardEp(lane, p, std::move(x), sv);
    requirePhase(sv, Phase::Empty, "moe F");
    const std::size_t h = z(m_c.hidden);
    const std::size_t k = z(m_c.topK);
    Backend& b = m_backend;
    auto [xn, g, y] = beginForward(lane, p, x, sv);
    for (int e = 0; e < m_c.experts; ++e) {
        const std::vector<int>& pairs = sv.expertRows[z(e)];
        const std::size_t n = pairs.size();
        const std::size_t slot = expertSlot(e);
        const std::vector<int> tokens = tokensOf(pairs, k);
        // Dispatch: the rows of the tokens routed to e, in token order.
        Tensor xe(b, n, h, kAct);
        if (n > 0)
            b.gatherRows(lane, xn.data(), h, tokens.data(), nullptr, n, xe.data());
        Tensor out(b, n, h, kAct);
        const std::size_t w = expertParam(e);
        swigluForward(b, lane, p[w], p[w + 1], p[w + 2], xe.data(), n, sv, slot, out.data(), 0.0f);
        // Combine: y_t += g · out.
        if (n > 0)
            b.scatterAddRows(lane, out.data(), h, tokens.data(), gatesOf(pairs, g).data(), n, y.data());
        sv[slot + kExpertInput] = std::move(xe);
        sv[slot + kExpertOutput] = std::move(out);
    }
    sv[eX] = std::move(x);
    sv[eXn] = std::move(xn);
    sv.phase = Phase::AfterForward;
    return std::move(y); // a structured binding is not moved from implicitly
}

Tensor MoeBlock::logitGradient(Lane lane, const Saved& sv, const Tensor& dy, MemoryCategory category) const
{
    const std::size_t t = z(m_c.tokens);
    const std::size_t h = z(m_c.hidden);
    const std::size_t experts = z(m_c.experts);
    const std::size_t k = z(m_c.topK);
    // The gates' gradients dg = ⟨dy_t, out⟩ (on the backend), then on the host the affinities', then the router
    // logits' (uploaded, kept for W).
    std::vector<double> dg(t * k, 0.0);
    std::vector<double> dots;
    for (int e = 0; e < m_c.experts; ++e) {
        const std::vector<int>& pairs = sv.expertRows[z(e)];
        if (pairs.empty())
            continue;
        const std::vector<int> tokens = tokensOf(pairs, k);
        dots.assign(pairs.size(), 0.0);
        m_backend.rowDots(
            lane, dy.data(), tokens.data(), sv.at(expertSlot(e) + kExpertOutput).data(), pairs.size(), h, dots.data());
        for (std::size_t r = 0; r < pairs.size(); ++r)
            dg[z(pairs[r])] = dots[r];
    }
    Tensor dlogits(m_backend, t, experts, category);
    {
        const Tensor& kept = sv.at(eScores);
        const std::vector<float> hostScores = download(m_backend, lane, kept.data(), kept.elements());
        const float* sp = hostScores.data();
        std::vector<float> hostLogits(t * experts);
        float* dl = hostLogits.data();
        std::vector<double> ds(experts);
        for (std::size_t r = 0; r < t; ++r) {
            std::fill(ds.begin(), ds.end(), 0.0);
            const float* s = sp + r * experts;
            double sum = 0.0; // Z = Σ selected s
            double weighted = 0.0; // Σ dg_i s_i
            for (std::size_t j = 0; j < k; ++j) {
                const auto e = z(sv.routes[r * k + j]);
                sum += s[e];
                weighted += dg[r * k + j] * s[e];
            }
            for (std::size_t j = 0; j < k; ++j) {
                const auto e = z(sv.routes[r * k + j]);
                const double d = dg[r * k + j];
                // g_i = c·s_i/Z: ∂L/∂s_j = c·(dg_j/Z − Σ_i dg_i s_i/Z²); without normalisation c·dg_j.
                ds[e] = m_c.gating.scale * (m_c.gating.normalizeTopK ? d / sum - weighted / (sum * sum) : d);
            }
            if (m_c.gating.kind == Gating::Sigmoid) {
                for (std::size_t e = 0; e < experts; ++e)
                    dl[r * experts + e] = static_cast<float>(ds[e] * s[e] * (1.0 - s[e]));
            } else {
                double dot = 0.0;
                for (std::size_t e = 0; e < experts; ++e)
                    dot += ds[e] * s[e];
                for (std::size_t e = 0; e < experts; ++e)
                    dl[r * experts + e] = static_cast<float>(s[e] * (ds[e] - dot));
            }
        }
        if (!hostLogits.empty())
            m_backend.uploadFloats(lane, dlogits.data(), dl, hostLogits.size());
    }
    return dlogits;
}

Tensor MoeBlock::beginBackward(Lane lane, const ParamSet& p, Saved& sv, Tensor& dy, Tensor& dxn, bool fused) const
{
    requirePhase(sv, Phase::AfterForward, fused ? "moe B" : "moe I");
    const std::size_t t = z(m_c.tokens);
    const std::size_t h = z(m_c.hidden);
    requireShape(dy, t, h, "moe backward: output gradient");
    const MemoryCategory keep = fused ? kWork : kAct;
    dy.recategorize(m_c.sharedExperts > 0 ? keep : kWork);
    Tensor dlogits = logitGradient(lane, sv, dy, keep);
    sv[eScores].reset();
    dxn = Tensor(m_backend, t, h, kWork);
    linearInputGrad(m_backend, lane, dlogits.data(), p[1], dxn.data(), t);
    if (fused) {
        linearWeightGrad(m_backend, lane, dlogits.data(), sv[eXn].data(), p[1], t);
        dlogits.reset();
    }
    return dlogits;
}

Tensor MoeBlock::backwardImpl(Lane lane, const ParamSet& p, Saved& sv, Tensor dy, bool fused) const
{
    if (m_c.ep > 1)
        return backwardEp(lane, p, sv, std::move(dy), fused);
    const std::size_t t = z(m_c.tokens);
    const std::size_t h = z(m_c.hidden);
    const std::size_t k = z(m_c.topK);
    Backend& b = m_backend;
    const MemoryCategory keep = fused ? kWork : kAct;
    const std::vector<double> g = gatesOn(lane, sv);
    Tensor dxn;
    Tensor dlogits = beginBackward(lane, p, sv, dy, dxn, fused);

    // Routed experts: the gradient of each output is g · dy_t; the input gradients go back to their tokens. The
    // workspaces are allocated once for all T·k pairs (and reused by the shared experts, T ≤ T·k rows), so the
    // action's peak is the same whatever the routing: each expert's output is freed before its gradient (the
    // same size) is made.
    Tensor da(b, t * k, z(m_c.expertFfn), kWork);
    Tensor dxeAll(b, t * k, h, kWork);
    for (int e = 0; e < m_c.experts; ++e) {
        const std::vector<int>& pairs = sv.expertRows[z(e)];
        const std::size_t n = pairs.size();
        const std::size_t slot = expertSlot(e);
        sv[slot + kExpertOutput].reset();
        const std::vector<int> tokens = tokensOf(pairs, k);
        Tensor dout(b, n, h, keep);
        if (n > 0)
            b.gatherRows(lane, dy.data(), h, tokens.data(), gatesOf(pairs, g).data(), n, dout.data());
        const std::size_t w = expertParam(e);
        swigluInputGrad(b, lane, p[w], p[w + 1], p[w + 2], sv[slot + kExpertInput].data(), dout.data(), n, sv, slot,
            dxeAll.data(), 0.0f, da.data(), fused);
        if (n > 0)
            b.scatterAddRows(lane, dxeAll.data(), h, tokens.data(), nullptr, n, dxn.data());
        if (fused)
            sv[slot + kExpertInput].reset();
        else
            sv[slot + kExpertOutput] = std::move(dout);
    }
    dxeAll.reset();
    return finishBackward(lane, p, sv, dxn, std::move(dy), std::move(dlogits), da.data(), fused);
}

Tensor MoeBlock::finishBackward(
    Lane lane, const ParamSet& p, Saved& sv, Tensor& dxn, Tensor dy, Tensor dlogits, void* da, bool fused) const
{
    const std::size_t t = z(m_c.tokens);
    const std::size_t h = z(m_c.hidden);
    for (int s = 0; s < m_c.sharedExperts; ++s) {
        const std::size_t w = sharedParam(s);
        swigluInputGrad(m_backend, lane, p[w], p[w + 1], p[w + 2], sv[eXn].data(), dy.data(), t, sv, sharedSlot(s),
            dxn.data(), 1.0f, da, fused);
    }
    if (fused)
        sv[eXn].reset();
    Tensor dx = preNormResidualBackward(m_backend, lane, p[0], sv[eX], dxn, dy, t, h);
    if (fused) {
        dy.reset();
        sv.clear();
        return dx;
    }
    sv[eScores] = std::move(dlogits);
    if (m_c.sharedExperts > 0)
        sv[eDy] = std::move(dy);
    sv.phase = Phase::AfterInputGrad;
    return dx;
}

void MoeBlock::routerAndSharedWeightGrad(Lane lane, const ParamSet& p, Saved& sv) const
{
    const std::size_t t = z(m_c.tokens);
    linearWeightGrad(m_backend, lane, sv[eScores].data(), sv[eXn].data(), p[1], t);
    for (int s = 0; s < m_c.sharedExperts; ++s) {
        const std::size_t w = sharedParam(s);
        swigluWeightGrad(
            m_backend, lane, p[w], p[w + 1], p[w + 2], sv[eXn].data(), sv[eDy].data(), t, sv, sharedSlot(s));
    }
}

Tensor MoeBlock::inputGrad(Lane lane, const ParamSet& p, Saved& sv, Tensor dy) const
{
    return backwardImpl(lane, p, sv, std::move(dy), false);
}

Tensor MoeBlock::backward(Lane lane, const ParamSet& p, Saved& sv, Tensor dy) const
{
    return backwardImpl(lane, p, sv, std::move(dy), true);
}

void MoeBlock::weightGrad(Lane lane, const ParamSet& p, Saved& sv) const
{
    if (m_c.ep > 1)
        return weightGradEp(lane, p, sv);
    requirePhase(sv, Phase::AfterInputGrad, "moe W");
    for (int e = 0; e < m_c.experts; ++e) {
        const std::size_t slot = expertSlot(e);
        const std::size_t w = expertParam(e);
        swigluWeightGrad(m_backend, lane, p[w], p[w + 1], p[w + 2], sv[slot + kExpertInput].data(),
            sv[slot + kExpertOutput].data(), sv.expertRows[z(e)].size(), sv, slot);
    }
    routerAndSharedWeightGrad(lane, p, sv);
    sv.clear();
}

} // namespace dps::runtime::layers
