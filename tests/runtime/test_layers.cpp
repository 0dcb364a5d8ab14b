// The transformer and MoE layers (engine/runtime/layers/, docs/layers.md) on the CPU backend:
//  - each block's output against a straightforward double-precision reference written here (loops, no GEMM,
//    no head-major layouts), tolerance 1e-6 × (1 + max |y|);
//  - every gradient (input and each weight) of F, I, W against central finite differences of the reference's
//    loss L = Σ y ⊙ dy in double (step 1e-6, so the differences are exact to ~1e-9), tolerance 1e-6 × (1 + max
//    |gradient|) per tensor (fp32 leaves at most 1.3e-7 here);
//  - B (fused) gives bit for bit the gradients of I then W;
//  - the tensors kept after F and after I are the model library's ledger (engine/model/transformer.h with
//    4-byte elements), and all memory is returned after W and after B;
//  - top-k ties go to the lower expert index; GQA with fewer key-value heads than query heads; the causal mask;
//    MLA's parameter shapes are the model library's (DeepSeek-V3: 187,105,280 projection weights).
#include "model/transformer.h"
#include "runtime/cpubackend.h"
#include "runtime/layers/attention.h"
#include "runtime/layers/moe.h"
#include "runtime/layers/rmsnorm.h"
#include "runtime/layers/rope.h"
#include "runtime/layers/swiglu.h"
#include "runtime/layers/transformerlayer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>

using namespace dps;
using namespace dps::runtime;
using namespace dps::runtime::layers;

namespace {

using Vec = std::vector<double>;
using Params = std::vector<Vec>;

// ------------------------------------------------------------------------------------------- the reference

/// y (rows × out) = x (rows × in) · Wᵀ, W out × in.
Vec linear(const Vec& x, std::size_t rows, const Vec& w, std::size_t out, std::size_t in)
{
    Vec y(rows * out, 0.0);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < out; ++o) {
            double sum = 0.0;
            for (std::size_t i = 0; i < in; ++i)
                sum += x[r * in + i] * w[o * in + i];
            y[r * out + o] = sum;
        }
    return y;
}

Vec rmsnorm(const Vec& x, std::size_t rows, std::size_t n, const Vec& g)
{
    Vec y(rows * n);
    for (std::size_t r = 0; r < rows; ++r) {
        double ms = 0.0;
        for (std::size_t c = 0; c < n; ++c)
            ms += x[r * n + c] * x[r * n + c];
        const double inv = 1.0 / std::sqrt(ms / static_cast<double>(n) + static_cast<double>(kRmsNormEps));
        for (std::size_t c = 0; c < n; ++c)
            y[r * n + c] = g[c] * x[r * n + c] * inv;
    }
    return y;
}

/// Rotate-half rotary embedding of `dim` columns at offset + j·headStride of each head, row t at position t mod s.
void rope(Vec& x, std::size_t rows, std::size_t rowStride, int heads, std::size_t headStride, std::size_t offset,
    int dim, int seqLen, double base = 10000.0)
{
    const auto half = static_cast<std::size_t>(dim / 2);
    for (std::size_t t = 0; t < rows; ++t)
        for (int h = 0; h < heads; ++h)
            for (std::size_t j = 0; j < half; ++j) {
                const double angle = static_cast<double>(t % static_cast<std::size_t>(seqLen))
                    * std::pow(base, -2.0 * static_cast<double>(j) / dim);
                double& a = x[t * rowStride + offset + static_cast<std::size_t>(h) * headStride + j];
                double& b = x[t * rowStride + offset + static_cast<std::size_t>(h) * headStride + j + half];
                const double na = a * std::cos(angle) - b * std::sin(angle);
                const double nb = b * std::cos(angle) + a * std::sin(angle);
                a = na;
                b = nb;
            }
}

/// Causal attention, token-major: q T × nh·dk, k T × nkv·dk, v T × nkv·dv → T × nh·dv.
Vec attend(const Vec& q, const Vec& k, const Vec& v, int batch, int s, int nh, int nkv, int dk, int dv)
{
    const auto T = static_cast<std::size_t>(batch * s);
    Vec out(T * static_cast<std::size_t>(nh * dv), 0.0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(dk));
    for (int b = 0; b < batch; ++b)
        for (int h = 0; h < nh; ++h) {
            const int g = h / (nh / nkv);
            for (int i = 0; i < s; ++i) {
                const auto ti = static_cast<std::size_t>(b * s + i);
                Vec w(static_cast<std::size_t>(i + 1));
                double top = -1e300;
                for (int j = 0; j <= i; ++j) {
                    const auto tj = static_cast<std::size_t>(b * s + j);
                    double dot = 0.0;
                    for (int c = 0; c < dk; ++c)
                        dot += q[ti * static_cast<std::size_t>(nh * dk) + static_cast<std::size_t>(h * dk + c)]
                            * k[tj * static_cast<std::size_t>(nkv * dk) + static_cast<std::size_t>(g * dk + c)];
                    w[static_cast<std::size_t>(j)] = dot * scale;
                    top = std::max(top, dot * scale);
                }
                double sum = 0.0;
                for (auto& x : w)
                    sum += (x = std::exp(x - top));
                for (int j = 0; j <= i; ++j) {
                    const auto tj = static_cast<std::size_t>(b * s + j);
                    for (int c = 0; c < dv; ++c)
                        out[ti * static_cast<std::size_t>(nh * dv) + static_cast<std::size_t>(h * dv + c)]
                            += w[static_cast<std::size_t>(j)] / sum
                            * v[tj * static_cast<std::size_t>(nkv * dv) + static_cast<std::size_t>(g * dv + c)];
                }
            }
        }
    return out;
}

Vec add(Vec a, const Vec& b)
{
    for (std::size_t i = 0; i < a.size(); ++i)
        a[i] += b[i];
    return a;
}

/// SwiGLU FFN: down(SiLU(gate(x)) ⊙ up(x)).
Vec swiglu(const Vec& x, std::size_t rows, std::size_t h, std::size_t f, const Vec& wg, const Vec& wu, const Vec& wd)
{
    const Vec g = linear(x, rows, wg, f, h);
    const Vec u = linear(x, rows, wu, f, h);
    Vec a(rows * f);
    for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    return linear(a, rows, wd, h, f);
}

Vec gqaReference(const Vec& x, const Params& w, const AttentionConfig& c)
{
    const auto T = static_cast<std::size_t>(c.tokens());
    const auto h = static_cast<std::size_t>(c.hidden);
    const auto qd = static_cast<std::size_t>(c.heads * c.headDim);
    const auto kvd = static_cast<std::size_t>(c.kvHeads * c.headDim);
    const Vec xn = rmsnorm(x, T, h, w[0]);
    Vec q = linear(xn, T, w[1], qd, h);
    Vec k = linear(xn, T, w[2], kvd, h);
    const Vec v = linear(xn, T, w[3], kvd, h);
    rope(q, T, qd, c.heads, static_cast<std::size_t>(c.headDim), 0, c.headDim, c.seqLen);
    rope(k, T, kvd, c.kvHeads, static_cast<std::size_t>(c.headDim), 0, c.headDim, c.seqLen);
    const Vec ctx = attend(q, k, v, c.batch, c.seqLen, c.heads, c.kvHeads, c.headDim, c.headDim);
    return add(x, linear(ctx, T, w[4], h, qd));
}

Vec mlaReference(const Vec& x, const Params& w, const AttentionConfig& c)
{
    const auto T = static_cast<std::size_t>(c.tokens());
    const auto h = static_cast<std::size_t>(c.hidden);
    const int nh = c.heads;
    const auto ql = static_cast<std::size_t>(c.mla.qLoraRank);
    const auto kvl = static_cast<std::size_t>(c.mla.kvLoraRank);
    const int dn = c.mla.qkNopeHeadDim, dr = c.mla.qkRopeHeadDim, dv = c.mla.vHeadDim, dk = dn + dr;
    const auto qDim = static_cast<std::size_t>(nh * dk);
    std::size_t i = 1;
    const Vec xn = rmsnorm(x, T, h, w[0]);
    Vec q;
    if (ql > 0) {
        const Vec cq = linear(xn, T, w[i], ql, h);
        const Vec cqn = rmsnorm(cq, T, ql, w[i + 1]);
        q = linear(cqn, T, w[i + 2], qDim, ql);
        i += 3;
    } else {
        q = linear(xn, T, w[i++], qDim, h);
    }
    Vec kva = linear(xn, T, w[i], kvl + static_cast<std::size_t>(dr), h);
    Vec ckv(T * kvl);
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t cc = 0; cc < kvl; ++cc)
            ckv[t * kvl + cc] = kva[t * (kvl + static_cast<std::size_t>(dr)) + cc];
    const Vec ckvn = rmsnorm(ckv, T, kvl, w[i + 1]);
    const auto kvDim = static_cast<std::size_t>(nh * (dn + dv));
    const Vec kv = linear(ckvn, T, w[i + 2], kvDim, kvl);
    rope(q, T, qDim, nh, static_cast<std::size_t>(dk), static_cast<std::size_t>(dn), dr, c.seqLen);
    rope(kva, T, kvl + static_cast<std::size_t>(dr), 1, 0, kvl, dr, c.seqLen);
    Vec k(T * qDim), v(T * static_cast<std::size_t>(nh * dv));
    for (std::size_t t = 0; t < T; ++t)
        for (int hh = 0; hh < nh; ++hh) {
            for (int cc = 0; cc < dn; ++cc)
                k[t * qDim + static_cast<std::size_t>(hh * dk + cc)]
                    = kv[t * kvDim + static_cast<std::size_t>(hh * (dn + dv) + cc)];
            for (int cc = 0; cc < dr; ++cc)
                k[t * qDim + static_cast<std::size_t>(hh * dk + dn + cc)]
                    = kva[t * (kvl + static_cast<std::size_t>(dr)) + kvl + static_cast<std::size_t>(cc)];
            for (int cc = 0; cc < dv; ++cc)
                v[t * static_cast<std::size_t>(nh * dv) + static_cast<std::size_t>(hh * dv + cc)]
                    = kv[t * kvDim + static_cast<std::size_t>(hh * (dn + dv) + dn + cc)];
        }
    const Vec ctx = attend(q, k, v, c.batch, c.seqLen, nh, nh, dk, dv);
    return add(x, linear(ctx, T, w[i + 3], h, static_cast<std::size_t>(nh * dv)));
}

Vec mlpReference(const Vec& x, const Params& w, const MlpConfig& c)
{
    const auto T = static_cast<std::size_t>(c.tokens);
    const auto h = static_cast<std::size_t>(c.hidden);
    const Vec xn = rmsnorm(x, T, h, w[0]);
    return add(x, swiglu(xn, T, h, static_cast<std::size_t>(c.ffn), w[1], w[2], w[3]));
}

/// The MoE block; `routesOut` receives each token's experts.
Vec moeReference(const Vec& x, const Params& w, const MoeConfig& c, std::vector<int>* routesOut = nullptr)
{
    const auto T = static_cast<std::size_t>(c.tokens);
    const auto h = static_cast<std::size_t>(c.hidden);
    const auto E = static_cast<std::size_t>(c.experts);
    const auto f = static_cast<std::size_t>(c.expertFfn);
    const auto k = static_cast<std::size_t>(c.topK);
    const Vec xn = rmsnorm(x, T, h, w[0]);
    const Vec logits = linear(xn, T, w[1], E, h);
    Vec y = x;
    for (int s = 0; s < c.sharedExperts; ++s) {
        const auto b = 2 + 3 * static_cast<std::size_t>(s);
        y = add(y, swiglu(xn, T, h, f, w[b], w[b + 1], w[b + 2]));
    }
    for (std::size_t t = 0; t < T; ++t) {
        Vec s(E);
        double z = 0.0;
        const double top = *std::max_element(
            logits.begin() + static_cast<long>(t * E), logits.begin() + static_cast<long>(t * E + E));
        for (std::size_t e = 0; e < E; ++e)
            z += std::exp(logits[t * E + e] - top);
        for (std::size_t e = 0; e < E; ++e)
            s[e] = c.gating.kind == Gating::Sigmoid ? 1.0 / (1.0 + std::exp(-logits[t * E + e]))
                                                    : std::exp(logits[t * E + e] - top) / z;
        std::vector<int> order(E);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
            [&](int a, int b) { return s[static_cast<std::size_t>(a)] > s[static_cast<std::size_t>(b)]; });
        double sum = 0.0;
        for (std::size_t j = 0; j < k; ++j)
            sum += s[static_cast<std::size_t>(order[j])];
        const Vec row(xn.begin() + static_cast<long>(t * h), xn.begin() + static_cast<long>(t * h + h));
        for (std::size_t j = 0; j < k; ++j) {
            const auto e = static_cast<std::size_t>(order[j]);
            if (routesOut)
                routesOut->push_back(order[j]);
            const double g = c.gating.scale * (c.gating.normalizeTopK ? s[e] / sum : s[e]);
            const auto b = 2 + 3 * static_cast<std::size_t>(c.sharedExperts) + 3 * e;
            const Vec out = swiglu(row, 1, h, f, w[b], w[b + 1], w[b + 2]);
            for (std::size_t cc = 0; cc < h; ++cc)
                y[t * h + cc] += g * out[cc];
        }
    }
    return y;
}

using Reference = std::function<Vec(const Vec&, const Params&)>;

struct Gradients {
    Vec dx;
    Params dw;
};

/// Central differences of L = Σ y ⊙ dy, step 1e-6, for x and every weight except those in `skip`.
Gradients finiteDifferences(
    const Reference& f, const Vec& x, const Params& w, const Vec& dy, const std::vector<std::size_t>& skip = {})
{
    const double step = 1e-6;
    auto loss = [&](const Vec& xx, const Params& ww) {
        const Vec y = f(xx, ww);
        return std::inner_product(y.begin(), y.end(), dy.begin(), 0.0);
    };
    Gradients g;
    Vec xx = x;
    for (std::size_t i = 0; i < x.size(); ++i) {
        xx[i] = x[i] + step;
        const double up = loss(xx, w);
        xx[i] = x[i] - step;
        const double down = loss(xx, w);
        xx[i] = x[i];
        g.dx.push_back((up - down) / (2 * step));
    }
    Params ww = w;
    for (std::size_t p = 0; p < w.size(); ++p) {
        g.dw.emplace_back();
        if (std::find(skip.begin(), skip.end(), p) != skip.end())
            continue;
        for (std::size_t i = 0; i < w[p].size(); ++i) {
            ww[p][i] = w[p][i] + step;
            const double up = loss(x, ww);
            ww[p][i] = w[p][i] - step;
            const double down = loss(x, ww);
            ww[p][i] = w[p][i];
            g.dw.back().push_back((up - down) / (2 * step));
        }
    }
    return g;
}

/// Every element of `actual` within tol × (1 + max |expected|) of `expected`.
void expectClose(const std::vector<float>& actual, const Vec& expected, double tol, const std::string& what)
{
    ASSERT_EQ(actual.size(), expected.size()) << what;
    double scale = 0.0;
    for (double v : expected)
        scale = std::max(scale, std::fabs(v));
    double worst = 0.0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < actual.size(); ++i) {
        const double d = std::fabs(static_cast<double>(actual[i]) - expected[i]);
        if (d > worst) {
            worst = d;
            at = i;
        }
    }
    EXPECT_LE(worst, tol * (1.0 + scale)) << what << ": element " << at << " is " << actual[at] << ", expected "
                                          << expected[at] << " (max |expected| " << scale << ")";
}

Vec randomVec(std::mt19937& rng, std::size_t n, double bound)
{
    std::uniform_real_distribution<double> u(-bound, bound);
    Vec v(n);
    for (auto& x : v)
        x = u(rng);
    return v;
}

std::vector<float> toFloats(const Vec& v)
{
    return { v.begin(), v.end() };
}

Vec toDoubles(const std::vector<float>& v)
{
    return { v.begin(), v.end() };
}

/// Weights for a layer's shapes: norms (rows 1, named *norm*) 1 ± 0.2, matrices uniform(±1/√cols), rounded to
/// floats so the reference and the layer start from the same values.
Params randomWeights(std::mt19937& rng, const std::vector<ParamShape>& shapes)
{
    Params w;
    for (const auto& s : shapes) {
        Vec v = randomVec(
            rng, s.elements(), s.name.find("norm") != std::string::npos ? 0.2 : 1.0 / std::sqrt(double(s.cols)));
        if (s.name.find("norm") != std::string::npos)
            for (auto& x : v)
                x += 1.0;
        w.push_back(toDoubles(toFloats(v)));
    }
    return w;
}

/// A layer run on the CPU backend: F, then I and W (split) or B (fused).
struct LayerRun {
    std::vector<float> y;
    std::vector<float> dx;
    std::vector<std::vector<float>> dw;
    std::size_t keptAfterForward = 0;
    std::size_t activationAfterForward = 0; ///< the allocator's Activation bytes after F
    std::size_t keptAfterInput = 0;
    std::size_t activationAfterInput = 0;
    std::size_t leftAfter = 0; ///< bytes still allocated besides the parameters at the end
};

Tensor upload(Backend& backend, const Vec& v, std::size_t rows, std::size_t cols)
{
    Tensor t(backend, rows, cols, MemoryCategory::Communication);
    const std::vector<float> f = toFloats(v);
    backend.uploadFloats(0, t.data(), f.data(), f.size());
    return t;
}

std::vector<float> download(Backend& backend, const Tensor& t)
{
    std::vector<float> out(t.elements());
    backend.downloadFloats(0, out.data(), t.data(), out.size());
    return out;
}

LayerRun run(CpuBackend& backend, const Layer& layer, const Params& w, const Vec& x, const Vec& dy, std::size_t rows,
    std::size_t cols, bool fused, Saved* keepSaved = nullptr)
{
    ParamStorage storage(backend, layer.parameterShapes());
    for (std::size_t i = 0; i < w.size(); ++i)
        storage.setWeight(i, toFloats(w[i]));
    const std::size_t base = backend.memory().total();
    LayerRun r;
    {
        Saved saved;
        Tensor y = layer.forward(0, storage.params(), upload(backend, x, rows, cols), saved);
        r.y = download(backend, y);
        y.reset();
        r.keptAfterForward = saved.bytes();
        r.activationAfterForward = backend.memory().live(MemoryCategory::Activation);
        Tensor dx;
        if (fused) {
            dx = layer.backward(0, storage.params(), saved, upload(backend, dy, rows, cols));
        } else {
            dx = layer.inputGrad(0, storage.params(), saved, upload(backend, dy, rows, cols));
            r.keptAfterInput = saved.bytes();
            r.activationAfterInput = backend.memory().live(MemoryCategory::Activation);
            layer.weightGrad(0, storage.params(), saved);
        }
        r.dx = download(backend, dx);
        if (keepSaved)
            *keepSaved = std::move(saved);
    }
    for (std::size_t i = 0; i < w.size(); ++i)
        r.dw.push_back(storage.grad(i));
    r.leftAfter = backend.memory().total() - base;
    return r;
}

/// Forward against the reference, gradients against finite differences, B against I then W, memory returned.
LayerRun checkLayer(CpuBackend& backend, const Layer& layer, const Reference& ref, const Params& w, const Vec& x,
    const Vec& dy, std::size_t rows, std::size_t cols, const std::vector<std::size_t>& skipFd = {})
{
    const LayerRun split = run(backend, layer, w, x, dy, rows, cols, false);
    const LayerRun fused = run(backend, layer, w, x, dy, rows, cols, true);
    expectClose(split.y, ref(x, w), 1e-6, layer.kind() + " forward");
    const Gradients fd = finiteDifferences(ref, x, w, dy, skipFd);
    const auto shapes = layer.parameterShapes();
    expectClose(split.dx, fd.dx, 1e-6, layer.kind() + " dx");
    for (std::size_t p = 0; p < w.size(); ++p)
        if (std::find(skipFd.begin(), skipFd.end(), p) == skipFd.end())
            expectClose(split.dw[p], fd.dw[p], 1e-6, layer.kind() + " d" + shapes[p].name);
    EXPECT_EQ(fused.y, split.y);
    EXPECT_EQ(fused.dx, split.dx) << layer.kind() << ": B's input gradient differs from I's";
    for (std::size_t p = 0; p < w.size(); ++p)
        EXPECT_EQ(fused.dw[p], split.dw[p]) << layer.kind() << ": B's d" << shapes[p].name << " differs from W's";
    EXPECT_EQ(split.keptAfterForward, split.activationAfterForward);
    EXPECT_EQ(split.keptAfterInput, split.activationAfterInput);
    EXPECT_EQ(split.leftAfter, 0u) << layer.kind() << ": memory left after I and W";
    EXPECT_EQ(fused.leftAfter, 0u) << layer.kind() << ": memory left after B";
    return split;
}

/// A small transformer for the model library's figures (fp32: 4 bytes per element).
model::Transformer tinyModel(model::Attention attention)
{
    model::Transformer m;
    m.layers = 2;
    m.hidden = 16;
    m.heads = 4;
    m.kvHeads = attention == model::Attention::MLA ? 4 : 2;
    m.headDim = 4;
    m.ffn = 24;
    m.vocab = 32;
    m.attention = attention;
    m.mla = model::Mla { 6, 8, 4, 2, 4 }; // q_l 6, kv_l 8, d_n 4, d_r 2, d_v 4
    m.moe.experts = 4;
    m.moe.topK = 2;
    m.moe.expertFfn = 8;
    m.moe.sharedExperts = 1;
    m.moe.denseLayers = 1;
    m.seqLen = 5;
    m.microbatchSize = 2;
    m.dtypeBytes = 4;
    return m;
}

class Layers : public ::testing::Test {
protected:
    CpuBackend backend { 1 };
    std::mt19937 rng { 16 };
};

} // namespace

// ---------------------------------------------------------------------------------------------------- ops

TEST(LayerOps, RmsNormOfAHandComputedRow)
{
    // x = (3, 4): mean(x²) = 12.5, r = 1/√(12.5 + 1e-6); g = (1, 2).
    const float x[2] = { 3.0f, 4.0f };
    const float g[2] = { 1.0f, 2.0f };
    float y[2];
    rmsNormForward(x, 2, g, y, 2, 1, 2);
    const double r = 1.0 / std::sqrt(12.5 + 1e-6);
    EXPECT_NEAR(y[0], 3.0 * r, 1e-7);
    EXPECT_NEAR(y[1], 8.0 * r, 1e-6);
    // dy = (1, 0): Σ g·dy·x = 3, dx = r·(g·dy − x·r²·3/2), dg = dy·x·r.
    const float dy[2] = { 1.0f, 0.0f };
    float dx[2] = { 0.5f, 0.5f }; // accumulates
    float dg[2] = { 0.0f, 0.0f };
    rmsNormBackward(x, 2, g, dy, 2, dx, 2, dg, 1, 2);
    EXPECT_NEAR(dx[0], 0.5 + r * (1.0 - 3.0 * r * r * 1.5), 1e-7);
    EXPECT_NEAR(dx[1], 0.5 + r * (0.0 - 4.0 * r * r * 1.5), 1e-7);
    EXPECT_NEAR(dg[0], 3.0 * r, 1e-7);
    EXPECT_EQ(dg[1], 0.0f);
}

TEST(LayerOps, RopeTurnsPairsByPositionTimesTheta)
{
    // d = 4: pairs (0, 2) with θ_0 = 1 and (1, 3) with θ_1 = 100^(−1/2)... base 100 → θ_1 = 0.1.
    std::vector<float> x = { 1, 1, 0, 0, /*position 1:*/ 1, 1, 0, 0 };
    ropeApply(x.data(), 2, 4, 1, 0, 0, 4, 2, 100.0, false);
    EXPECT_EQ(x[0], 1.0f); // position 0: unchanged
    EXPECT_EQ(x[2], 0.0f);
    EXPECT_NEAR(x[4], std::cos(1.0), 1e-7);
    EXPECT_NEAR(x[6], std::sin(1.0), 1e-7);
    EXPECT_NEAR(x[5], std::cos(0.1), 1e-7);
    EXPECT_NEAR(x[7], std::sin(0.1), 1e-7);
    ropeApply(x.data(), 2, 4, 1, 0, 0, 4, 2, 100.0, true); // the backward undoes it
    EXPECT_NEAR(x[4], 1.0, 1e-7);
    EXPECT_NEAR(x[6], 0.0, 1e-7);
    EXPECT_THROW(ropeApply(x.data(), 2, 4, 1, 0, 0, 3, 2, 100.0, false), RuntimeError);
}

TEST(LayerOps, TopKBreaksTiesByLowerExpertIndex)
{
    const float s[5] = { 0.5f, 0.7f, 0.7f, 0.1f, 0.7f };
    EXPECT_EQ(topK(s, 5, 1), (std::vector<int> { 1 }));
    EXPECT_EQ(topK(s, 5, 2), (std::vector<int> { 1, 2 }));
    EXPECT_EQ(topK(s, 5, 4), (std::vector<int> { 1, 2, 4, 0 }));
    const float equal[4] = { 0.25f, 0.25f, 0.25f, 0.25f };
    EXPECT_EQ(topK(equal, 4, 3), (std::vector<int> { 0, 1, 2 }));
    EXPECT_THROW(topK(s, 5, 6), RuntimeError);
    EXPECT_THROW(topK(s, 5, 0), RuntimeError);
}

// --------------------------------------------------------------------------------------------- attention

TEST_F(Layers, GqaWithFewerKvHeadsMatchesReferenceAndFiniteDifferences)
{
    for (int kvHeads : { 2, 1, 4 }) { // GQA, MQA, MHA
        AttentionConfig c;
        c.hidden = 12;
        c.heads = 4;
        c.kvHeads = kvHeads;
        c.headDim = 4;
        c.batch = 2;
        c.seqLen = 5;
        const GqaAttention layer(backend, c);
        const auto t = static_cast<std::size_t>(c.tokens());
        const Params w = randomWeights(rng, layer.parameterShapes());
        const Vec x = randomVec(rng, t * 12, 1.0);
        const Vec dy = randomVec(rng, t * 12, 1.0);
        SCOPED_TRACE("kv heads " + std::to_string(kvHeads));
        const LayerRun r = checkLayer(
            backend, layer, [&](const Vec& xx, const Params& ww) { return gqaReference(xx, ww, c); }, w, x, dy, t, 12);
        // The model library's ledger, 4-byte elements: T(2h + 2·n_h·d + 2·n_kv·d) + n_h·s·T after F (the full
        // square of probabilities), T(2h + 2·n_h·d + 2·n_kv·d) after I.
        const std::size_t qd = 16, kvd = static_cast<std::size_t>(kvHeads) * 4;
        EXPECT_EQ(r.keptAfterForward, 4 * (t * (2 * 12 + 2 * qd + 2 * kvd) + 4 * 5 * t));
        EXPECT_EQ(r.keptAfterInput, 4 * t * (2 * 12 + 2 * qd + 2 * kvd));
    }
}

TEST_F(Layers, CausalMaskKeepsEarlierTokensAndOtherSequencesUnchanged)
{
    AttentionConfig c;
    c.hidden = 8;
    c.heads = 2;
    c.kvHeads = 1;
    c.headDim = 4;
    c.batch = 2;
    c.seqLen = 6;
    const GqaAttention layer(backend, c);
    const Params w = randomWeights(rng, layer.parameterShapes());
    const Vec x = randomVec(rng, 12 * 8, 1.0);
    const Vec dy(12 * 8, 1.0);
    Vec changed = x;
    for (std::size_t col = 0; col < 8; ++col)
        changed[3 * 8 + col] += 0.5; // token 3 of sequence 0
    const LayerRun a = run(backend, layer, w, x, dy, 12, 8, false);
    const LayerRun b = run(backend, layer, w, changed, dy, 12, 8, false);
    for (std::size_t i = 0; i < 12 * 8; ++i) {
        const std::size_t token = i / 8;
        if (token < 3 || token >= 6) {
            EXPECT_EQ(a.y[i], b.y[i]) << "token " << token << " saw token 3";
        } else if (i % 8 == 0) {
            EXPECT_NE(a.y[i], b.y[i]) << "token " << token << " did not see token 3";
        }
    }
}

TEST_F(Layers, MlaWithAndWithoutLowRankQueryMatchesReferenceAndFiniteDifferences)
{
    for (int qLora : { 6, 0 }) {
        AttentionConfig c;
        c.hidden = 12;
        c.heads = 3;
        c.mla = model::Mla { qLora, 8, 4, 2, 4 };
        c.batch = 2;
        c.seqLen = 4;
        const MlaAttention layer(backend, c);
        const auto t = static_cast<std::size_t>(c.tokens());
        const Params w = randomWeights(rng, layer.parameterShapes());
        const Vec x = randomVec(rng, t * 12, 1.0);
        const Vec dy = randomVec(rng, t * 12, 1.0);
        SCOPED_TRACE("q_lora_rank " + std::to_string(qLora));
        const LayerRun r = checkLayer(
            backend, layer, [&](const Vec& xx, const Params& ww) { return mlaReference(xx, ww, c); }, w, x, dy, t, 12);
        // Ledger (docs/model-library.md, 4-byte elements), h 12, n_h 3, q_l, kv_l 8, d_n 4, d_r 2, d_v 4, s 4:
        // F: T(2h + 2q_l + 2kv_l + 2n_h(d_n + d_r) + 2n_h·d_v) + n_h·s·T;
        // I: T(2h + 2q_l + (kv_l + d_r) + kv_l + n_h(d_n + d_r) + n_h(d_n + d_v) + n_h·d_v).
        const auto ql = static_cast<std::size_t>(qLora);
        EXPECT_EQ(r.keptAfterForward, 4 * (t * (24 + 2 * ql + 16 + 36 + 24) + 3 * 4 * t));
        EXPECT_EQ(r.keptAfterInput, 4 * t * (24 + 2 * ql + 10 + 8 + 18 + 24 + 12));
    }
}

TEST(LayerShapes, MlaParametersAreTheModelLibrarysForDeepSeekV3)
{
    CpuBackend backend(1);
    AttentionConfig c;
    c.hidden = 7168;
    c.heads = 128;
    c.mla = model::Mla { 1536, 512, 128, 64, 128 };
    c.seqLen = 4096;
    const MlaAttention layer(backend, c); // allocates nothing
    const auto shapes = layer.parameterShapes();
    ASSERT_EQ(shapes.size(), 8u);
    EXPECT_EQ(shapes[1].name, "q_a_proj");
    EXPECT_EQ(shapes[1].rows, 1536u);
    EXPECT_EQ(shapes[3].rows, 128u * 192u); // q_b_proj: n_h·(d_n + d_r) × q_l
    EXPECT_EQ(shapes[4].rows, 512u + 64u); // kv_a_proj_with_mqa: kv_l + d_r
    EXPECT_EQ(shapes[6].rows, 128u * 256u); // kv_b_proj: n_h·(d_n + d_v) × kv_l
    // docs/model-library.md: 187,105,280 projection weights and 9,216 norm weights.
    EXPECT_EQ(parameterElements(shapes), 187105280u + 9216u);
}

// ------------------------------------------------------------------------------------------- MLP and MoE

TEST_F(Layers, SwigluMlpMatchesReferenceAndFiniteDifferences)
{
    const MlpConfig c { 12, 20, 6 };
    const DenseMlp layer(backend, c);
    const Params w = randomWeights(rng, layer.parameterShapes());
    const Vec x = randomVec(rng, 6 * 12, 1.0);
    const Vec dy = randomVec(rng, 6 * 12, 1.0);
    const LayerRun r = checkLayer(
        backend, layer, [&](const Vec& xx, const Params& ww) { return mlpReference(xx, ww, c); }, w, x, dy, 6, 12);
    EXPECT_EQ(r.keptAfterForward, 4u * 6u * (2u * 12u + 3u * 20u)); // T(2h + 3f)
    EXPECT_EQ(r.keptAfterInput, 4u * 6u * (2u * 12u + 3u * 20u));
}

TEST_F(Layers, MoeWithBothGatingsMatchesReferenceAndFiniteDifferences)
{
    struct Case {
        MoeGating gating;
        int shared;
        const char* name;
    };
    for (const Case& k : { Case { MoeGating::deepSeekV3(), 1, "deepseek-v3 gating, 1 shared expert" },
             Case { MoeGating::mixtral(), 0, "mixtral gating, no shared expert" },
             Case { MoeGating { Gating::Softmax, false, 1.0 }, 2, "softmax without normalisation, 2 shared" } }) {
        SCOPED_TRACE(k.name);
        MoeConfig c;
        c.hidden = 8;
        c.experts = 5;
        c.topK = 2;
        c.expertFfn = 6;
        c.sharedExperts = k.shared;
        c.tokens = 7;
        c.gating = k.gating;
        const MoeBlock layer(backend, c);
        Params w = randomWeights(rng, layer.parameterShapes());
        for (auto& v : w[1]) // a router that separates the experts well (no near-ties in fp32 vs double)
            v *= 4.0;
        const Vec x = randomVec(rng, 7 * 8, 1.0);
        const Vec dy = randomVec(rng, 7 * 8, 1.0);
        Saved saved;
        {
            ParamStorage storage(backend, layer.parameterShapes());
            for (std::size_t i = 0; i < w.size(); ++i)
                storage.setWeight(i, toFloats(w[i]));
            layer.forward(0, storage.params(), upload(backend, x, 7, 8), saved);
        }
        std::vector<int> routes;
        moeReference(x, w, c, &routes);
        EXPECT_EQ(saved.routes, routes);
        saved.clear();
        const LayerRun r = checkLayer(
            backend, layer, [&](const Vec& xx, const Params& ww) { return moeReference(xx, ww, c); }, w, x, dy, 7, 8);
        // F: T(2h + 3·S·f_e) + T·E (fp32 affinities) + T·k(2h + 3f_e); I: T·h + T·E + (S > 0: T(h + 3·S·f_e))
        // + T·k(2h + 3f_e).
        const std::size_t s = static_cast<std::size_t>(k.shared);
        const std::size_t pairs = 7 * 2 * (16 + 18);
        EXPECT_EQ(r.keptAfterForward, 4 * (7 * (16 + 18 * s) + 7 * 5 + pairs));
        EXPECT_EQ(r.keptAfterInput, 4 * (7 * 8 + 7 * 5 + (s > 0 ? 7 * (8 + 18 * s) : 0) + pairs));
    }
}

TEST_F(Layers, MoeTiesRouteToLowerExpertsAndIdleExpertsWork)
{
    // A zero router: every affinity is σ(0) = 0.5, so every token takes experts 0 and 1 (gates 0.5 · 2.5 each)
    // and experts 2 and 3 get no token at all.
    MoeConfig c;
    c.hidden = 8;
    c.experts = 4;
    c.topK = 2;
    c.expertFfn = 6;
    c.sharedExperts = 1;
    c.tokens = 5;
    c.gating = MoeGating::deepSeekV3();
    const MoeBlock layer(backend, c);
    Params w = randomWeights(rng, layer.parameterShapes());
    std::fill(w[1].begin(), w[1].end(), 0.0);
    const Vec x = randomVec(rng, 5 * 8, 1.0);
    const Vec dy = randomVec(rng, 5 * 8, 1.0);
    Saved saved;
    ParamStorage storage(backend, layer.parameterShapes());
    for (std::size_t i = 0; i < w.size(); ++i)
        storage.setWeight(i, toFloats(w[i]));
    layer.forward(0, storage.params(), upload(backend, x, 5, 8), saved);
    EXPECT_EQ(saved.routes, (std::vector<int> { 0, 1, 0, 1, 0, 1, 0, 1, 0, 1 }));
    EXPECT_EQ(saved.expertRows[0].size(), 5u);
    EXPECT_EQ(saved.expertRows[1].size(), 5u);
    EXPECT_TRUE(saved.expertRows[2].empty());
    EXPECT_TRUE(saved.expertRows[3].empty());
    EXPECT_EQ(layer.gates(saved), std::vector<double>(10, 1.25));
    saved.clear();
    // Perturbing the router's weights breaks the ties, so its finite differences are left out; x does not.
    checkLayer(backend, layer, [&](const Vec& xx, const Params& ww) { return moeReference(xx, ww, c); }, w, x, dy, 5, 8,
        { 1 });
}

TEST_F(Layers, MoePeakMemoryOfEachActionDoesNotDependOnTheRouting)
{
    // The same block with a zero router (every token to experts 0 and 1) and with a random one (tokens spread):
    // the allocator's high-water mark of F, I, W and B above the action's start must be equal, so the memory a
    // run measures can be predicted from the sizes alone (docs/memory.md).
    MoeConfig c;
    c.hidden = 8;
    c.experts = 4;
    c.topK = 2;
    c.expertFfn = 6;
    c.sharedExperts = 1;
    c.tokens = 9;
    c.gating = MoeGating::deepSeekV3();
    const MoeBlock layer(backend, c);
    const Params random = randomWeights(rng, layer.parameterShapes());
    Params skewed = random;
    std::fill(skewed[1].begin(), skewed[1].end(), 0.0);
    const Vec x = randomVec(rng, 9 * 8, 1.0);
    std::vector<std::vector<std::size_t>> peaks;
    std::vector<std::size_t> largestExpert;
    for (const Params* w : { static_cast<const Params*>(&skewed), &random }) {
        ParamStorage storage(backend, layer.parameterShapes());
        for (std::size_t i = 0; i < w->size(); ++i)
            storage.setWeight(i, toFloats((*w)[i]));
        std::vector<std::size_t> p;
        auto measure = [&](const std::function<void()>& action) {
            const std::size_t start = backend.memory().total();
            backend.memory().resetPeak();
            action();
            p.push_back(backend.memory().peak() - start);
        };
        for (bool fused : { false, true }) {
            Saved saved;
            Tensor in = upload(backend, x, 9, 8);
            Tensor y;
            measure([&] { y = layer.forward(0, storage.params(), std::move(in), saved); });
            if (!fused) {
                std::size_t most = 0;
                for (const auto& rows : saved.expertRows)
                    most = std::max(most, rows.size());
                largestExpert.push_back(most);
            }
            Tensor dy = upload(backend, x, 9, 8);
            Tensor dx;
            if (fused) {
                measure([&] { dx = layer.backward(0, storage.params(), saved, std::move(dy)); });
            } else {
                measure([&] { dx = layer.inputGrad(0, storage.params(), saved, std::move(dy)); });
                measure([&] { layer.weightGrad(0, storage.params(), saved); });
            }
        }
        peaks.push_back(p);
    }
    EXPECT_EQ(largestExpert[0], 9u); // skewed: experts 0 and 1 take every token
    EXPECT_LT(largestExpert[1], 9u); // spread
    EXPECT_EQ(peaks[0], peaks[1]) << "F, I, W, F, B";
}

// ---------------------------------------------------------------------------------- the model library's ledger

TEST_F(Layers, AWholeLayersKeptBytesAndParametersAreTheModelLibrarys)
{
    for (auto attention : { model::Attention::GQA, model::Attention::MLA }) {
        const model::Transformer m = tinyModel(attention);
        const auto t = static_cast<std::size_t>(m.tokens());
        const auto h = static_cast<std::size_t>(m.hidden);
        for (int l = 0; l < m.layers; ++l) {
            SCOPED_TRACE(std::string(model::attentionName(attention)) + " layer " + std::to_string(l));
            const TransformerLayer blocks = makeTransformerLayer(backend, m, l, MoeGating::deepSeekV3());
            const Layer* attn = blocks.attention.get();
            const Layer* mlp = blocks.mlp.get();
            EXPECT_EQ(attn->kind(), attention == model::Attention::MLA ? "mla" : "gqa");
            EXPECT_EQ(mlp->kind(), l == 0 ? "swiglu" : "moe");
            const model::LayerCost cost = model::layerCost(m, l, model::Recompute::None);
            EXPECT_EQ(static_cast<double>(
                          parameterElements(attn->parameterShapes()) + parameterElements(mlp->parameterShapes())),
                cost.parametersTotal);

            ParamStorage pa(backend, attn->parameterShapes());
            ParamStorage pm(backend, mlp->parameterShapes());
            for (ParamStorage* ps : { &pa, &pm })
                for (std::size_t i = 0; i < ps->shapes().size(); ++i)
                    ps->setWeight(i, toFloats(randomWeights(rng, { ps->shapes()[i] })[0]));
            Saved sa, sm;
            Tensor y = attn->forward(0, pa.params(), upload(backend, randomVec(rng, t * h, 1.0), t, h), sa);
            y = mlp->forward(0, pm.params(), std::move(y), sm);
            EXPECT_EQ(static_cast<double>(sa.bytes() + sm.bytes()), cost.activationBytes);
            Tensor d = mlp->inputGrad(0, pm.params(), sm, upload(backend, randomVec(rng, t * h, 1.0), t, h));
            d = attn->inputGrad(0, pa.params(), sa, std::move(d));
            EXPECT_EQ(static_cast<double>(sa.bytes() + sm.bytes()), cost.weightGradKeptBytes);
            mlp->weightGrad(0, pm.params(), sm);
            attn->weightGrad(0, pa.params(), sa);
            EXPECT_EQ(sa.bytes() + sm.bytes(), 0u);
        }
    }
}

TEST_F(Layers, ActionsOutOfOrderAndWrongShapesAreRefused)
{
    const MlpConfig c { 4, 8, 3 };
    const DenseMlp layer(backend, c);
    ParamStorage storage(backend, layer.parameterShapes());
    Saved saved;
    const Vec zeros(12, 0.0);
    EXPECT_THROW(layer.weightGrad(0, storage.params(), saved), RuntimeError);
    EXPECT_THROW(layer.inputGrad(0, storage.params(), saved, upload(backend, zeros, 3, 4)), RuntimeError);
    EXPECT_THROW(layer.forward(0, storage.params(), upload(backend, zeros, 4, 3), saved), RuntimeError);
    layer.forward(0, storage.params(), upload(backend, zeros, 3, 4), saved);
    EXPECT_THROW(layer.weightGrad(0, storage.params(), saved), RuntimeError); // W before I
    EXPECT_THROW(layer.forward(0, storage.params(), upload(backend, zeros, 3, 4), saved), RuntimeError);
    EXPECT_THROW(makeTransformerLayer(backend, tinyModel(model::Attention::GQA), 2), RuntimeError);
    AttentionConfig bad;
    bad.hidden = 8;
    bad.heads = 3;
    bad.kvHeads = 2;
    bad.headDim = 4;
    EXPECT_THROW(GqaAttention(backend, bad), RuntimeError); // 2 kv heads do not divide 3
}

namespace {

/// A backend with the base interface only (none of the transformer layers' kernels) and a chosen element size:
/// host memory, counted; GEMMs and kernels do nothing.
class BareBackend final : public Backend {
public:
    explicit BareBackend(int elementBytes)
        : m_elementBytes(elementBytes)
    {
    }
    std::string name() const override { return "bare"; }
    std::string deviceDescription() const override { return "test"; }
    int elementBytes() const override { return m_elementBytes; }
    bool hostAccessible() const override { return true; }
    void* allocate(std::size_t bytes, MemoryCategory category) override
    {
        m_memory.add(category, bytes);
        return ::operator new(bytes);
    }
    void deallocate(void* ptr, std::size_t bytes, MemoryCategory category) override
    {
        m_memory.remove(category, bytes);
        ::operator delete(ptr);
    }
    void gemm(Lane, Transpose, Transpose, int, int, int, float, const void*, const void*, float, void*) override { }
    void geluForward(Lane, const void*, void*, std::size_t) override { }
    void geluBackward(Lane, const void*, const void*, void*, std::size_t) override { }
    void mseLoss(Lane, const void*, const void*, std::size_t, void*, double*) override { }
    void axpy(Lane, std::size_t, float, const void*, void*) override { }
    void setZero(Lane, void* ptr, std::size_t bytes) override { std::memset(ptr, 0, bytes); }
    void copyHostToDevice(Lane, void* dst, const void* src, std::size_t bytes) override
    {
        std::memcpy(dst, src, bytes);
    }
    void copyDeviceToHost(Lane, void* dst, const void* src, std::size_t bytes) override
    {
        std::memcpy(dst, src, bytes);
    }
    void copyDeviceToDevice(Lane, void* dst, const void* src, std::size_t bytes) override
    {
        std::memcpy(dst, src, bytes);
    }
    void uploadFloats(Lane, void* dst, const float* src, std::size_t n) override
    {
        std::memcpy(dst, src, n * sizeof(float));
    }
    void downloadFloats(Lane, float* dst, const void* src, std::size_t n) override
    {
        std::memcpy(dst, src, n * sizeof(float));
    }
    void runConcurrently(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second) override
    {
        first(0);
        second(1);
    }
    void synchronize() override { }

private:
    int m_elementBytes;
};

} // namespace

TEST(LayerBackends, ABf16BackendAndOneWithoutTheLayerKernelsAreRefusedByName)
{
    BareBackend bf16(2);
    try {
        const DenseMlp layer(bf16, MlpConfig { 4, 8, 3 });
        FAIL() << "a bf16 backend was accepted";
    } catch (const RuntimeError& e) {
        EXPECT_STREQ(e.what(),
            "dense mlp: the bare backend computes in bf16 elements; the transformer layers run in "
            "fp32 only");
    }
    EXPECT_THROW(MoeBlock(bf16, MoeConfig { 4, 2, 1, 8, 0, 3, {}, 1, 0 }), RuntimeError);

    BareBackend bare(4); // fp32 but no kernels: the layer is built, its first elementwise op names what is missing
    const DenseMlp layer(bare, MlpConfig { 4, 8, 3 });
    ParamStorage storage(bare, layer.parameterShapes());
    Saved saved;
    try {
        layer.forward(0, storage.params(), upload(bare, Vec(12, 0.5), 3, 4), saved);
        FAIL() << "a backend without the layers' kernels ran the layer";
    } catch (const RuntimeError& e) {
        EXPECT_STREQ(e.what(), "the bare backend has no kernel rmsNormForward for the transformer layers");
    }
}
