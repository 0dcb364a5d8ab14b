#include "runtime/layers/attention.h"

#include "runtime/layers/rmsnorm.h"

#include <cmath>

namespace dps::runtime::layers {

namespace {

constexpr auto kAct = MemoryCategory::Activation;
constexpr auto kWork = MemoryCategory::Workspace;

std::size_t z(int v)
{
    return static_cast<std::size_t>(v);
}

void requirePositive(int value, const std::string& what)
{
    if (value < 1)
        throw RuntimeError(what + " must be at least 1, got " + std::to_string(value));
}

void zero(Backend& backend, Lane lane, Tensor& t)
{
    if (!t.empty())
        backend.setZero(lane, t.data(), t.bytes());
}

// GQA slots: kept from F until I (or B) ...
enum GqaSlot : std::size_t { gX, gXn, gQh, gKh, gVh, gP, gCtx, gDq, gDk, gDv, gDy };
// ... and MLA's.
enum MlaSlot : std::size_t { mX, mXn, mCq, mCqn, mCkv, mCkvn, mQh, mKh, mVh, mP, mCtx, mDcq, mDkva, mDq, mDkv, mDy };

// The checks GQA and MLA share, naming `what` ("gqa attention"): an fp32 backend, at least 1 for hidden and
// heads. Throws RuntimeError.
void requireCommon(const Backend& backend, const AttentionConfig& c, const std::string& what)
{
    requireFp32(backend, what);
    requirePositive(c.hidden, what + ": hidden");
    requirePositive(c.heads, what + ": heads");
}

// F after the per-head q, k, v of GQA and MLA alike: the core (Vaswani et al. 2017, eq. 1; attentioncore.h)
// keeps its probabilities, ctx = the heads back in token-major order (t × heads·dv, kept for W_O's gradient),
// and returns y = x + ctx·W_Oᵀ (t × h, Workspace).
Tensor coreAndOutputForward(Backend& b, Lane lane, const CoreShape& core, const Tensor& qh, const Tensor& kh,
    const Tensor& vh, const ParamView& o, const Tensor& x, Tensor& probs, Tensor& ctx)
{
    const std::size_t t = z(core.batch * core.seqLen);
    const std::size_t headRows = z(core.batch * core.heads * core.seqLen);
    const std::size_t ctxDim = z(core.heads * core.dv);
    probs = Tensor(b, headRows, z(core.seqLen), kAct);
    Tensor ctxh(b, headRows, z(core.dv), kWork);
    attentionCoreForward(b, lane, core, qh.data(), kh.data(), vh.data(), probs.data(), ctxh.data());
    ctx = Tensor(b, t, ctxDim, kAct);
    b.scatterHeads(lane, ctxh.data(), core.batch, core.seqLen, core.heads, core.dv, core.dv, 0, ctx.data(),
        { ctxDim, 0, z(core.dv) }, false);
    ctxh.reset();
    Tensor y = copyOf(b, lane, x, kWork);
    linearForward(b, lane, ctx.data(), o, y.data(), t, 1.0f);
    return y;
}

// The gradients of the per-head q, k, v (head-major, Workspace).
struct HeadGrads {
    Tensor dqh;
    Tensor dkh;
    Tensor dvh;
};

// I (or B) down to the per-head q, k, v of GQA and MLA alike: dctx = dy·W_O (with B, dW_O += dyᵀ·ctx and ctx
// freed), gathered per head, then the core's backward; frees the kept qh, kh, vh and probs.
HeadGrads outputAndCoreBackward(Backend& b, Lane lane, const CoreShape& core, const Tensor& dy, const ParamView& o,
    Tensor& ctx, Tensor& qh, Tensor& kh, Tensor& vh, Tensor& probs, bool fused)
{
    const std::size_t t = z(core.batch * core.seqLen);
    const std::size_t headRows = z(core.batch * core.heads * core.seqLen);
    const std::size_t kvRows = z(core.batch * core.kvHeads * core.seqLen);
    const std::size_t ctxDim = z(core.heads * core.dv);
    Tensor dctx(b, t, ctxDim, kWork);
    linearInputGrad(b, lane, dy.data(), o, dctx.data(), t);
    if (fused) {
        linearWeightGrad(b, lane, dy.data(), ctx.data(), o, t);
        ctx.reset();
    }
    Tensor dctxh(b, headRows, z(core.dv), kWork);
    b.gatherHeads(lane, dctx.data(), { ctxDim, 0, z(core.dv) }, core.batch, core.seqLen, core.heads, core.dv,
        dctxh.data(), core.dv, 0);
    dctx.reset();

    HeadGrads g { Tensor(b, headRows, z(core.dk), kWork), Tensor(b, kvRows, z(core.dk), kWork),
        Tensor(b, kvRows, z(core.dv), kWork) };
    {
        Tensor scratch(b, z(core.seqLen), z(core.seqLen), kWork);
        attentionCoreBackward(b, lane, core, qh.data(), kh.data(), vh.data(), probs.data(), dctxh.data(), g.dqh.data(),
            g.dkh.data(), g.dvh.data(), scratch.data());
    }
    dctxh.reset();
    qh.reset();
    kh.reset();
    vh.reset();
    probs.reset();
    return g;
}

} // namespace

AttentionConfig AttentionConfig::of(const model::Transformer& m)
{
    model::check(m);
    AttentionConfig c;
    c.hidden = m.hidden;
    c.heads = m.heads;
    c.kvHeads = m.attention == model::Attention::MLA ? m.heads : m.kvHeads;
    c.headDim = m.headDim > 0 ? m.headDim : m.hidden / m.heads;
    c.mla = m.mla;
    c.batch = m.microbatchSize;
    c.seqLen = m.seqLen;
    return c;
}

// ---------------------------------------------------------------------------------------------------------- GQA

GqaAttention::GqaAttention(Backend& backend, const AttentionConfig& config)
    : m_backend(backend)
    , m_c(config)
{
    requireCommon(backend, m_c, "gqa attention");
    requirePositive(m_c.kvHeads, "gqa attention: kv heads");
    requirePositive(m_c.headDim, "gqa attention: head size");
    requirePositive(m_c.batch, "gqa attention: batch");
    requirePositive(m_c.seqLen, "gqa attention: sequence length");
    if (m_c.heads % m_c.kvHeads != 0)
        throw RuntimeError("gqa attention: kv heads " + std::to_string(m_c.kvHeads) + " do not divide heads "
            + std::to_string(m_c.heads));
    if (m_c.headDim % 2 != 0)
        throw RuntimeError("gqa attention: head size " + std::to_string(m_c.headDim) + " is odd (rotary pairs)");
    m_core = CoreShape { m_c.batch, m_c.seqLen, m_c.heads, m_c.kvHeads, m_c.headDim, m_c.headDim,
        static_cast<float>(1.0 / std::sqrt(static_cast<double>(m_c.headDim))) };
}

std::vector<ParamShape> GqaAttention::parameterShapes() const
{
    const std::size_t h = z(m_c.hidden);
    const std::size_t qd = z(m_c.heads * m_c.headDim);
    const std::size_t kvd = z(m_c.kvHeads * m_c.headDim);
    return { { "input_layernorm", 1, h }, { "q_proj", qd, h }, { "k_proj", kvd, h }, { "v_proj", kvd, h },
        { "o_proj", h, qd } };
}

Tensor GqaAttention::forward(Lane lane, const ParamSet& p, Tensor x, Saved& sv) const
{
    requirePhase(sv, Phase::Empty, "gqa attention F");
    const std::size_t t = z(m_c.tokens());
    const std::size_t h = z(m_c.hidden);
    const int d = m_c.headDim;
    const std::size_t qd = z(m_c.heads * d);
    const std::size_t kvd = z(m_c.kvHeads * d);
    requireShape(x, t, h, "gqa attention F: input");
    Backend& b = m_backend;
    x.recategorize(kAct);
    Tensor xn(b, t, h, kAct);
    rmsNormForward(b, lane, x.data(), h, p[0], xn.data(), h, t, h);
    Tensor q(b, t, qd, kWork);
    Tensor k(b, t, kvd, kWork);
    Tensor v(b, t, kvd, kWork);
    linearForward(b, lane, xn.data(), p[1], q.data(), t);
    linearForward(b, lane, xn.data(), p[2], k.data(), t);
    linearForward(b, lane, xn.data(), p[3], v.data(), t);
    b.ropeApply(lane, q.data(), t, qd, m_c.heads, z(d), 0, d, m_c.seqLen, m_c.ropeBase, false);
    b.ropeApply(lane, k.data(), t, kvd, m_c.kvHeads, z(d), 0, d, m_c.seqLen, m_c.ropeBase, false);
    Tensor qh(b, z(m_c.batch * m_c.heads * m_c.seqLen), z(d), kAct);
    Tensor kh(b, z(m_c.batch * m_c.kvHeads * m_c.seqLen), z(d), kAct);
    Tensor vh(b, z(m_c.batch * m_c.kvHeads * m_c.seqLen), z(d), kAct);
    b.gatherHeads(lane, q.data(), { qd, 0, z(d) }, m_c.batch, m_c.seqLen, m_c.heads, d, qh.data(), d, 0);
    b.gatherHeads(lane, k.data(), { kvd, 0, z(d) }, m_c.batch, m_c.seqLen, m_c.kvHeads, d, kh.data(), d, 0);
    b.gatherHeads(lane, v.data(), { kvd, 0, z(d) }, m_c.batch, m_c.seqLen, m_c.kvHeads, d, vh.data(), d, 0);
    q.reset();
    k.reset();
    v.reset();
    Tensor probs;
    Tensor ctx;
    Tensor y = coreAndOutputForward(b, lane, m_core, qh, kh, vh, p[4], x, probs, ctx);
    sv[gX] = std::move(x);
    sv[gXn] = std::move(xn);
    sv[gQh] = std::move(qh);
    sv[gKh] = std::move(kh);
    sv[gVh] = std::move(vh);
    sv[gP] = std::move(probs);
    sv[gCtx] = std::move(ctx);
    sv.phase = Phase::AfterForward;
    return y;
}

Tensor GqaAttention::backwardImpl(Lane lane, const ParamSet& p, Saved& sv, Tensor dy, bool fused) const
{
    requirePhase(sv, Phase::AfterForward, fused ? "gqa attention B" : "gqa attention I");
    const std::size_t t = z(m_c.tokens());
    const std::size_t h = z(m_c.hidden);
    const int d = m_c.headDim;
    const std::size_t qd = z(m_c.heads * d);
    const std::size_t kvd = z(m_c.kvHeads * d);
    requireShape(dy, t, h, "gqa attention backward: output gradient");
    Backend& b = m_backend;
    const MemoryCategory keep = fused ? kWork : kAct; // what W needs: kept after I, dropped after B's use
    dy.recategorize(keep);

    // Output projection: dctx = dy · W_O; W: dW_O += dyᵀ · ctx. Then the core.
    auto [dqh, dkh, dvh]
        = outputAndCoreBackward(b, lane, m_core, dy, p[4], sv[gCtx], sv[gQh], sv[gKh], sv[gVh], sv[gP], fused);

    // Back to token-major, the rotary undone: the gradients of the projections' outputs.
    Tensor dq(b, t, qd, keep);
    Tensor dk(b, t, kvd, keep);
    Tensor dv(b, t, kvd, keep);
    b.scatterHeads(lane, dqh.data(), m_c.batch, m_c.seqLen, m_c.heads, d, d, 0, dq.data(), { qd, 0, z(d) }, false);
    b.scatterHeads(lane, dkh.data(), m_c.batch, m_c.seqLen, m_c.kvHeads, d, d, 0, dk.data(), { kvd, 0, z(d) }, false);
    b.scatterHeads(lane, dvh.data(), m_c.batch, m_c.seqLen, m_c.kvHeads, d, d, 0, dv.data(), { kvd, 0, z(d) }, false);
    dqh.reset();
    dkh.reset();
    dvh.reset();
    b.ropeApply(lane, dq.data(), t, qd, m_c.heads, z(d), 0, d, m_c.seqLen, m_c.ropeBase, true);
    b.ropeApply(lane, dk.data(), t, kvd, m_c.kvHeads, z(d), 0, d, m_c.seqLen, m_c.ropeBase, true);

    // Projections: dxn = dq·W_Q + dk·W_K + dv·W_V.
    Tensor dxn(b, t, h, kWork);
    linearInputGrad(b, lane, dq.data(), p[1], dxn.data(), t);
    linearInputGrad(b, lane, dk.data(), p[2], dxn.data(), t, 1.0f);
    linearInputGrad(b, lane, dv.data(), p[3], dxn.data(), t, 1.0f);
    if (fused) {
        linearWeightGrad(b, lane, dq.data(), sv[gXn].data(), p[1], t);
        linearWeightGrad(b, lane, dk.data(), sv[gXn].data(), p[2], t);
        linearWeightGrad(b, lane, dv.data(), sv[gXn].data(), p[3], t);
        dq.reset();
        dk.reset();
        dv.reset();
        sv[gXn].reset();
    }

    // The norm and the residual: dx = dy + RMSNorm'(x)ᵀ dxn (its weights' gradient here, in I).
    Tensor dx = preNormResidualBackward(b, lane, p[0], sv[gX], dxn, dy, t, h);
    if (fused) {
        dy.reset();
        sv.clear();
        return dx;
    }
    sv[gDq] = std::move(dq);
    sv[gDk] = std::move(dk);
    sv[gDv] = std::move(dv);
    sv[gDy] = std::move(dy);
    sv.phase = Phase::AfterInputGrad;
    return dx;
}

void GqaAttention::weightGrad(Lane lane, const ParamSet& p, Saved& sv) const
{
    requirePhase(sv, Phase::AfterInputGrad, "gqa attention W");
    const std::size_t t = z(m_c.tokens());
    Backend& b = m_backend;
    linearWeightGrad(b, lane, sv[gDy].data(), sv[gCtx].data(), p[4], t);
    linearWeightGrad(b, lane, sv[gDq].data(), sv[gXn].data(), p[1], t);
    linearWeightGrad(b, lane, sv[gDk].data(), sv[gXn].data(), p[2], t);
    linearWeightGrad(b, lane, sv[gDv].data(), sv[gXn].data(), p[3], t);
    sv.clear();
}

// ---------------------------------------------------------------------------------------------------------- MLA

MlaAttention::MlaAttention(Backend& backend, const AttentionConfig& config)
    : m_backend(backend)
    , m_c(config)
{
    requireCommon(backend, m_c, "mla attention");
    requirePositive(m_c.batch, "mla attention: batch");
    requirePositive(m_c.seqLen, "mla attention: sequence length");
    requirePositive(m_c.mla.kvLoraRank, "mla attention: kv_lora_rank");
    requirePositive(m_c.mla.qkNopeHeadDim, "mla attention: qk_nope_head_dim");
    requirePositive(m_c.mla.qkRopeHeadDim, "mla attention: qk_rope_head_dim");
    requirePositive(m_c.mla.vHeadDim, "mla attention: v_head_dim");
    if (m_c.mla.qLoraRank < 0)
        throw RuntimeError("mla attention: q_lora_rank must not be negative, got " + std::to_string(m_c.mla.qLoraRank));
    if (m_c.mla.qkRopeHeadDim % 2 != 0)
        throw RuntimeError(
            "mla attention: qk_rope_head_dim " + std::to_string(m_c.mla.qkRopeHeadDim) + " is odd (rotary pairs)");
    const int dk = m_c.mla.qkNopeHeadDim + m_c.mla.qkRopeHeadDim;
    // DeepSeek-V2 §2.1.3: the scores are scaled by 1/√(d_n + d_r) (without DeepSeek-V3's YaRN mscale).
    m_core = CoreShape { m_c.batch, m_c.seqLen, m_c.heads, m_c.heads, dk, m_c.mla.vHeadDim,
        static_cast<float>(1.0 / std::sqrt(static_cast<double>(dk))) };
    std::size_t i = 1;
    if (lowRankQuery()) {
        m_qa = i++;
        m_qaNorm = i++;
    }
    m_q = i++;
    m_kva = i++;
    m_kvaNorm = i++;
    m_kvb = i++;
    m_o = i++;
}

std::vector<ParamShape> MlaAttention::parameterShapes() const
{
    const std::size_t h = z(m_c.hidden);
    const std::size_t nh = z(m_c.heads);
    const std::size_t ql = z(m_c.mla.qLoraRank);
    const std::size_t kvl = z(m_c.mla.kvLoraRank);
    const std::size_t dn = z(m_c.mla.qkNopeHeadDim);
    const std::size_t dr = z(m_c.mla.qkRopeHeadDim);
    const std::size_t dv = z(m_c.mla.vHeadDim);
    std::vector<ParamShape> shapes { { "input_layernorm", 1, h } };
    if (lowRankQuery()) {
        shapes.push_back({ "q_a_proj", ql, h });
        shapes.push_back({ "q_a_layernorm", 1, ql });
        shapes.push_back({ "q_b_proj", nh * (dn + dr), ql });
    } else {
        shapes.push_back({ "q_proj", nh * (dn + dr), h });
    }
    shapes.push_back({ "kv_a_proj_with_mqa", kvl + dr, h });
    shapes.push_back({ "kv_a_layernorm", 1, kvl });
    shapes.push_back({ "kv_b_proj", nh * (dn + dv), kvl });
    shapes.push_back({ "o_proj", h, nh * dv });
    return shapes;
}

Tensor MlaAttention::forward(Lane lane, const ParamSet& p, Tensor x, Saved& sv) const
{
    requirePhase(sv, Phase::Empty, "mla attention F");
    const std::size_t t = z(m_c.tokens());
    const std::size_t h = z(m_c.hidden);
    const int nh = m_c.heads;
    const std::size_t ql = z(m_c.mla.qLoraRank);
    const std::size_t kvl = z(m_c.mla.kvLoraRank);
    const int dn = m_c.mla.qkNopeHeadDim;
    const int dr = m_c.mla.qkRopeHeadDim;
    const int dv = m_c.mla.vHeadDim;
    const int dk = dn + dr;
    const std::size_t qDim = z(nh * dk);
    const std::size_t kvDim = z(nh * (dn + dv));
    const std::size_t kvaDim = kvl + z(dr);
    const std::size_t headRows = z(m_c.batch * nh * m_c.seqLen);
    requireShape(x, t, h, "mla attention F: input");
    Backend& b = m_backend;
    x.recategorize(kAct);
    Tensor xn(b, t, h, kAct);
    rmsNormForward(b, lane, x.data(), h, p[0], xn.data(), h, t, h);

    // Query: q = RMSNorm(xn·W^DQᵀ)·W^UQᵀ (DeepSeek-V2 eq. 12-13), or xn·W^Qᵀ.
    Tensor cq;
    Tensor cqn;
    Tensor q(b, t, qDim, kWork);
    if (lowRankQuery()) {
        cq = Tensor(b, t, ql, kAct);
        cqn = Tensor(b, t, ql, kAct);
        linearForward(b, lane, xn.data(), p[m_qa], cq.data(), t);
        rmsNormForward(b, lane, cq.data(), ql, p[m_qaNorm], cqn.data(), ql, t, ql);
        linearForward(b, lane, cqn.data(), p[m_q], q.data(), t);
    } else {
        linearForward(b, lane, xn.data(), p[m_q], q.data(), t);
    }
    // Key-value latent and the shared rotary key: [c_kv, k_R] = xn·W^DKVᵀ (eq. 9, 15); k, v = RMSNorm(c_kv)·W^UKVᵀ.
    Tensor kva(b, t, kvaDim, kWork);
    linearForward(b, lane, xn.data(), p[m_kva], kva.data(), t);
    Tensor ckv(b, t, kvl, kAct);
    // c_kv, the first kv_l columns of each row: a gather of one "head" per row.
    b.gatherHeads(lane, kva.data(), { kvaDim, 0, 0 }, 1, static_cast<int>(t), 1, static_cast<int>(kvl), ckv.data(),
        static_cast<int>(kvl), 0);
    Tensor ckvn(b, t, kvl, kAct);
    rmsNormForward(b, lane, ckv.data(), kvl, p[m_kvaNorm], ckvn.data(), kvl, t, kvl);
    Tensor kv(b, t, kvDim, kWork);
    linearForward(b, lane, ckvn.data(), p[m_kvb], kv.data(), t);
    // Rotary on the decoupled dimensions only (eq. 14-15): each head's last d_r query columns, the shared key.
    b.ropeApply(lane, q.data(), t, qDim, nh, z(dk), z(dn), dr, m_c.seqLen, m_c.ropeBase, false);
    b.ropeApply(lane, kva.data(), t, kvaDim, 1, 0, kvl, dr, m_c.seqLen, m_c.ropeBase, false);

    // Per head: Q = [q_nope, q_rope], K = [k_nope, k_R shared], V (eq. 16-18).
    Tensor qh(b, headRows, z(dk), kAct);
    Tensor kh(b, headRows, z(dk), kAct);
    Tensor vh(b, headRows, z(dv), kAct);
    b.gatherHeads(lane, q.data(), { qDim, 0, z(dk) }, m_c.batch, m_c.seqLen, nh, dk, qh.data(), dk, 0);
    b.gatherHeads(lane, kv.data(), { kvDim, 0, z(dn + dv) }, m_c.batch, m_c.seqLen, nh, dn, kh.data(), dk, 0);
    b.gatherHeads(lane, kva.data(), { kvaDim, kvl, 0 }, m_c.batch, m_c.seqLen, nh, dr, kh.data(), dk, dn);
    b.gatherHeads(lane, kv.data(), { kvDim, z(dn), z(dn + dv) }, m_c.batch, m_c.seqLen, nh, dv, vh.data(), dv, 0);
    q.reset();
    kva.reset();
    kv.reset();

    Tensor probs;
    Tensor ctx;
    Tensor y = coreAndOutputForward(b, lane, m_core, qh, kh, vh, p[m_o], x, probs, ctx);

    sv[mX] = std::move(x);
    sv[mXn] = std::move(xn);
    sv[mCq] = std::move(cq);
    sv[mCqn] = std::move(cqn);
    sv[mCkv] = std::move(ckv);
    sv[mCkvn] = std::move(ckvn);
    sv[mQh] = std::move(qh);
    sv[mKh] = std::move(kh);
    sv[mVh] = std::move(vh);
    sv[mP] = std::move(probs);
    sv[mCtx] = std::move(ctx);
    sv.phase = Phase::AfterForward;
    return y;
}

namespace {

/// MLA's projection gradients: of q (q_b_proj's or q_proj's output), of kv (kv_b_proj's) and of [c_kv, k_R]
/// (kv_a's), in category `keep`.
struct MlaProjectionGrads {
    Tensor dq;
    Tensor dkv;
    Tensor dkva;
};

/// Scatters the per-head gradients back into the projections' columns, undoing the rotary embedding of the
/// rope parts (k_R's summed over the heads); frees the per-head gradients.
MlaProjectionGrads mlaProjectionGrads(
    Backend& b, Lane lane, const AttentionConfig& c, HeadGrads& g, MemoryCategory keep)
{
    const std::size_t t = z(c.tokens());
    const int nh = c.heads;
    const std::size_t kvl = z(c.mla.kvLoraRank);
    const int dn = c.mla.qkNopeHeadDim;
    const int dr = c.mla.qkRopeHeadDim;
    const int dv = c.mla.vHeadDim;
    const int dk = dn + dr;
    const std::size_t qDim = z(nh * dk);
    const std::size_t kvDim = z(nh * (dn + dv));
    const std::size_t kvaDim = kvl + z(dr);
    MlaProjectionGrads out { Tensor(b, t, qDim, keep), Tensor(b, t, kvDim, keep), Tensor(b, t, kvaDim, keep) };
    b.scatterHeads(lane, g.dqh.data(), c.batch, c.seqLen, nh, dk, dk, 0, out.dq.data(), { qDim, 0, z(dk) }, false);
    b.ropeApply(lane, out.dq.data(), t, qDim, nh, z(dk), z(dn), dr, c.seqLen, c.ropeBase, true);
    b.scatterHeads(
        lane, g.dkh.data(), c.batch, c.seqLen, nh, dn, dk, 0, out.dkv.data(), { kvDim, 0, z(dn + dv) }, false);
    b.scatterHeads(
        lane, g.dvh.data(), c.batch, c.seqLen, nh, dv, dv, 0, out.dkv.data(), { kvDim, z(dn), z(dn + dv) }, false);
    zero(b, lane, out.dkva);
    b.scatterHeads(lane, g.dkh.data(), c.batch, c.seqLen, nh, dr, dk, dn, out.dkva.data(), { kvaDim, kvl, 0 }, true);
    b.ropeApply(lane, out.dkva.data(), t, kvaDim, 1, 0, kvl, dr, c.seqLen, c.ropeBase, true);
    g.dqh.reset();
    g.dkh.reset();
    g.dvh.reset();
    return out;
}

} // namespace

Tensor MlaAttention::kvBackward(Lane lane, const ParamSet& p, Saved& sv, Tensor& dkv, Tensor& dkva, bool fused) const
{
    const std::size_t t = z(m_c.tokens());
    const std::size_t kvl = z(m_c.mla.kvLoraRank);
    const std::size_t kvaDim = kvl + z(m_c.mla.qkRopeHeadDim);
    Backend& b = m_backend;
    // kv_b_proj, then kv_a_layernorm into the c_kv columns of d[c_kv, k_R].
    {
        Tensor dckvn(b, t, kvl, kWork);
        linearInputGrad(b, lane, dkv.data(), p[m_kvb], dckvn.data(), t);
        if (fused) {
            linearWeightGrad(b, lane, dkv.data(), sv[mCkvn].data(), p[m_kvb], t);
            dkv.reset();
            sv[mCkvn].reset();
        }
        rmsNormBackward(b, lane, sv[mCkv].data(), kvl, p[m_kvaNorm], dckvn.data(), kvl, dkva.data(), kvaDim, t, kvl);
        sv[mCkv].reset();
    }
    Tensor dxn(b, t, z(m_c.hidden), kWork);
    linearInputGrad(b, lane, dkva.data(), p[m_kva], dxn.data(), t);
    if (fused) {
        linearWeightGrad(b, lane, dkva.data(), sv[mXn].data(), p[m_kva], t);
        dkva.reset();
    }
    return dxn;
}

Tensor MlaAttention::queryBackward(
    Lane lane, const ParamSet& p, Saved& sv, Tensor& dq, Tensor& dxn, bool fused, MemoryCategory keep) const
{
    const std::size_t t = z(m_c.tokens());
    Backend& b = m_backend;
    Tensor dcq;
    if (!lowRankQuery()) {
        linearInputGrad(b, lane, dq.data(), p[m_q], dxn.data(), t, 1.0f);
        if (fused) {
            linearWeightGrad(b, lane, dq.data(), sv[mXn].data(), p[m_q], t);
            dq.reset();
        }
        return dcq;
    }
    const std::size_t ql = z(m_c.mla.qLoraRank);
    Tensor dcqn(b, t, ql, kWork);
    linearInputGrad(b, lane, dq.data(), p[m_q], dcqn.data(), t);
    if (fused) {
        linearWeightGrad(b, lane, dq.data(), sv[mCqn].data(), p[m_q], t);
        dq.reset();
        sv[mCqn].reset();
    }
    dcq = Tensor(b, t, ql, keep);
    zero(b, lane, dcq);
    rmsNormBackward(b, lane, sv[mCq].data(), ql, p[m_qaNorm], dcqn.data(), ql, dcq.data(), ql, t, ql);
    dcqn.reset();
    sv[mCq].reset();
    linearInputGrad(b, lane, dcq.data(), p[m_qa], dxn.data(), t, 1.0f);
    if (fused) {
        linearWeightGrad(b, lane, dcq.data(), sv[mXn].data(), p[m_qa], t);
        dcq.reset();
    }
    return dcq;
}

Tensor MlaAttention::backwardImpl(Lane lane, const ParamSet& p, Saved& sv, Tensor dy, bool fused) const
{
    requirePhase(sv, Phase::AfterForward, fused ? "mla attention B" : "mla attention I");
    const std::size_t t = z(m_c.tokens());
    const std::size_t h = z(m_c.hidden);
    requireShape(dy, t, h, "mla attention backward: output gradient");
    Backend& b = m_backend;
    const MemoryCategory keep = fused ? kWork : kAct;
    dy.recategorize(keep);

    HeadGrads heads
        = outputAndCoreBackward(b, lane, m_core, dy, p[m_o], sv[mCtx], sv[mQh], sv[mKh], sv[mVh], sv[mP], fused);
    MlaProjectionGrads g = mlaProjectionGrads(b, lane, m_c, heads, keep);
    Tensor dxn = kvBackward(lane, p, sv, g.dkv, g.dkva, fused);
    Tensor dcq = queryBackward(lane, p, sv, g.dq, dxn, fused, keep);
    if (fused)
        sv[mXn].reset();

    Tensor dx = preNormResidualBackward(b, lane, p[0], sv[mX], dxn, dy, t, h);
    if (fused) {
        dy.reset();
        sv.clear();
        return dx;
    }
    sv[mDcq] = std::move(dcq);
    sv[mDkva] = std::move(g.dkva);
    sv[mDq] = std::move(g.dq);
    sv[mDkv] = std::move(g.dkv);
    sv[mDy] = std::move(dy);
    sv.phase = Phase::AfterInputGrad;
    return dx;
}

void MlaAttention::weightGrad(Lane lane, const ParamSet& p, Saved& sv) const
{
    requirePhase(sv, Phase::AfterInputGrad, "mla attention W");
    const std::size_t t = z(m_c.tokens());
    Backend& b = m_backend;
    linearWeightGrad(b, lane, sv[mDy].data(), sv[mCtx].data(), p[m_o], t);
    linearWeightGrad(b, lane, sv[mDkv].data(), sv[mCkvn].data(), p[m_kvb], t);
    linearWeightGrad(b, lane, sv[mDkva].data(), sv[mXn].data(), p[m_kva], t);
    if (lowRankQuery()) {
        linearWeightGrad(b, lane, sv[mDq].data(), sv[mCqn].data(), p[m_q], t);
        linearWeightGrad(b, lane, sv[mDcq].data(), sv[mXn].data(), p[m_qa], t);
    } else {
        linearWeightGrad(b, lane, sv[mDq].data(), sv[mXn].data(), p[m_q], t);
    }
    sv.clear();
}

} // namespace dps::runtime::layers
