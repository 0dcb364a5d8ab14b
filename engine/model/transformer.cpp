// The transformer and MoE arithmetic. Every formula is derived, with its source, in docs/model-library.md;
// the comments here name the section. Counting rules in one place:
//  - a GEMM of an m×k input by a k×n weight is 2·m·n·k FLOPs in F, and again 2·m·n·k in I (the input's
//    gradient) and in W (the weight's gradient) (Narayanan et al. 2021, §5.1; Qi et al. 2023, §2);
//  - the attention core (scores QKᵀ and the weighted sum AV) has no weights: its backward is all I, twice its
//    forward; causal masking is counted at half the full square (s²/2, not s(s+1)/2);
//  - RMSNorm, rotary, softmax, SwiGLU's elementwise product, the router's top-k and the residual adds are not
//    counted (O(T·h) against the GEMMs' O(T·h²));
//  - activation bytes follow Korthikanti et al. 2022, §4.1, without dropout, for RMSNorm and SwiGLU.
#include "model/transformer.h"

#include "base/errors.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace dps::model {

std::string_view attentionName(Attention a)
{
    switch (a) {
    case Attention::MHA:
        return "mha";
    case Attention::GQA:
        return "gqa";
    case Attention::MLA:
        return "mla";
    }
    return "mha";
}

std::string_view recomputeName(Recompute r)
{
    switch (r) {
    case Recompute::None:
        return "none";
    case Recompute::Selective:
        return "selective";
    case Recompute::Full:
        return "full";
    case Recompute::NormUpProjection:
        return "norm-up-projection";
    }
    return "none";
}

namespace {

/// Bytes of one device, split by how tensor parallelism divides them (Korthikanti et al. 2022 §4.2): the
/// residual stream (a norm's input and output, an output gradient: T×h) is whole on every tensor rank unless
/// sequence parallelism splits it; latent vectors (MLA's compressed q and kv, routed tokens' h-wide copies) are
/// whole on every tensor rank; the rest (per-head and per-column tensors) is split tp ways.
struct KeptBytes {
    double residual = 0.0;
    double whole = 0.0;
    double split = 0.0;

    double on(const Transformer& m) const
    {
        return (m.sequenceParallel ? residual / m.tp : residual) + whole + split / m.tp;
    }
};

/// Per-head size of q, k and v of MHA/GQA: model.head_dim, else hidden ÷ heads.
double headDimOf(const Transformer& m)
{
    return m.headDim > 0 ? m.headDim : static_cast<double>(m.hidden / m.heads);
}

/// SwiGLU size of a dense layer: model.moe.dense_ffn for the dense first layers of an MoE model, else model.ffn.
double denseFfnOf(const Transformer& m)
{
    return (m.isMoe() && m.moe.denseFfn > 0) ? m.moe.denseFfn : m.ffn;
}

/// Tokens one device computes: T ÷ cp (context parallelism splits the sequence).
double deviceTokens(const Transformer& m)
{
    return m.tokens() / m.cp;
}

/// The attention block of one layer (input RMSNorm, projections, core) for one device's T ÷ cp tokens; see
/// docs/model-library.md "Attention" and "Tensor and context parallelism".
struct AttentionShape {
    double splitWeights = 0.0; ///< elements of the weight GEMMs split tp ways (q, k, v, up-projections, output)
    double wholeWeights = 0.0; ///< elements of the GEMMs every tensor rank holds whole (MLA's down-projections)
    double upProjectionWeights = 0.0; ///< of splitWeights, MLA's up-projections (W^UQ, W^UK, W^UV)
    double normWeights = 0.0; ///< elements of the RMSNorm weights (input norm; MLA: q and kv norms too)
    double coreForwardFlops = 0.0; ///< scores + values, causal half, of the whole layer's heads
    KeptBytes kept; ///< F→I without the sequence-squared softmax output
    KeptBytes normUpKept; ///< of `kept`, what recompute "norm-up-projection" recomputes instead
    KeptBytes normOutputs; ///< of `normUpKept`, the norms' outputs (GEMM inputs: cached at the cache dtype)
    KeptBytes contextKept; ///< of `kept`, the context (W^O's input: cached at the cache dtype)
    double softmaxBytes = 0.0; ///< the softmax output, e·n_h·s·T/cp (the full square, as Korthikanti)
    KeptBytes weightGradKept; ///< I→W
    double kvBytesPerToken = 0.0; ///< bytes of one token's keys and values (what ring attention passes on)
    double coreBackwardBytes = 0.0; ///< flash-attention backward's pre- and postprocessing, the whole layer's heads
};

/// Bytes flash-attention's backward moves for `t` tokens of `heads` heads of query/key size dk and value size dv
/// besides its FLOP-bound kernel. Preprocessing (FlashAttention-2, Dao 2023, Algorithm 2: D = rowsum(dO ∘ O);
/// flash-attention's hopper/flash_bwd_preprocess_kernel.h, FlashAttnBwdPreprocess): reads dO and O (e bytes
/// each per element of t × heads × dv), reads the log-sum-exp and writes D and the log-sum-exp in base 2
/// (4 bytes each per row), and clears the FP32 dQ accumulator (4·dk per row). Postprocessing
/// (flash_bwd_postprocess_kernel.h, FlashAttnBwdPostprocessConvertdQ): reads that accumulator (4·dk) and writes
/// dQ (e·dk). The dQ the backward kernel adds into the accumulator is its own traffic, not counted here.
double coreBackwardBytes(double t, double heads, double dk, double dv, double e)
{
    return t * heads * (2.0 * e * dv + 3.0 * 4.0 + (4.0 + 4.0 + e) * dk);
}

AttentionShape attentionShape(const Transformer& m)
{
    const double t = deviceTokens(m);
    const double h = m.hidden;
    const double s = m.seqLen;
    const double e = m.dtypeBytes;
    const double nh = m.heads;
    AttentionShape a;
    a.normWeights = h;
    double dk = 0.0;
    double dv = 0.0;
    if (m.attention == Attention::MLA) {
        // DeepSeek-V2 §2.1.2-2.1.3, DeepSeek-V3 config.json.
        const double ql = m.mla.qLoraRank;
        const double kvl = m.mla.kvLoraRank;
        const double nope = m.mla.qkNopeHeadDim;
        const double rope = m.mla.qkRopeHeadDim;
        const double v = m.mla.vHeadDim;
        const double qDim = nh * (nope + rope);
        if (m.mla.qLoraRank > 0) {
            a.wholeWeights += h * ql; // W^DQ
            a.upProjectionWeights += ql * qDim; // W^UQ (with W^QR folded in)
            a.normWeights += ql; // q_a_layernorm
        } else {
            a.splitWeights += h * qDim; // W^Q
        }
        a.wholeWeights += h * (kvl + rope); // W^DKV with W^KR
        a.upProjectionWeights += kvl * nh * (nope + v); // W^UK, W^UV
        a.splitWeights += a.upProjectionWeights + nh * v * h; // W^O
        a.normWeights += kvl; // kv_a_layernorm
        dk = nope + rope;
        dv = v;
        const double qLowRank = m.mla.qLoraRank > 0 ? 2.0 * ql : 0.0; // c_q (norm input) and its norm output
        // norm input X, norm output, [c_q, norm(c_q)], c_kv, norm(c_kv), Q, K (per head), V, context
        a.kept = { t * e * 2.0 * h, t * e * (qLowRank + 2.0 * kvl), t * e * (2.0 * qDim + 2.0 * nh * v) };
        // the norm outputs and the up-projections' outputs Q, K and V (the context is the core's)
        a.normUpKept = { t * e * h, t * e * ((m.mla.qLoraRank > 0 ? ql : 0.0) + kvl), t * e * (2.0 * qDim + nh * v) };
        a.normOutputs = { t * e * h, t * e * ((m.mla.qLoraRank > 0 ? ql : 0.0) + kvl), 0.0 };
        a.contextKept = { 0.0, 0.0, t * e * nh * v };
        // X, [dC_q, norm(c_q)], d[c_kv; k_rope], norm(c_kv), dQ, d[K_nope; V], context, d(output)
        a.weightGradKept
            = { t * e * 2.0 * h, t * e * (qLowRank + (kvl + rope) + kvl), t * e * (qDim + nh * (nope + v) + nh * v) };
        a.kvBytesPerToken = e * nh * (dk + dv);
    } else {
        const double d = headDimOf(m);
        const double qd = nh * d;
        const double kvd = static_cast<double>(m.kvHeads) * d;
        a.splitWeights = h * qd + 2.0 * h * kvd + qd * h; // W^Q, W^K, W^V, W^O
        dk = d;
        dv = d;
        // norm input X, norm output (the projections' input), Q, K, V, context (W^O's input)
        a.kept = { t * e * 2.0 * h, 0.0, t * e * (2.0 * qd + 2.0 * kvd) };
        a.normUpKept = { t * e * h, 0.0, 0.0 }; // the norm output (no up-projection)
        a.normOutputs = a.normUpKept;
        a.contextKept = { 0.0, 0.0, t * e * qd };
        // norm output, dQ, dK, dV, context, d(output)
        a.weightGradKept = { t * e * 2.0 * h, 0.0, t * e * (2.0 * qd + 2.0 * kvd) };
        a.kvBytesPerToken = e * 2.0 * kvd;
    }
    a.coreForwardFlops = t * s * nh * (dk + dv); // ½ × 2·(T/cp)·s·n_h·(d_k + d_v): causal half
    a.coreBackwardBytes = coreBackwardBytes(t, nh, dk, dv, e);
    a.softmaxBytes = e * nh * s * t;
    return a;
}

/// The MLP block of one layer (post-attention RMSNorm, dense SwiGLU or router + shared + routed experts) on one
/// device; see docs/model-library.md "Dense MLP", "MoE layer" and "Tensor and context parallelism".
struct MlpShape {
    double weightsTotal = 0.0; ///< every weight GEMM's elements (every routed expert)
    double weightsHeld = 0.0; ///< on one device (experts / ep routed experts, split tp ways but the router)
    double weightsActive = 0.0; ///< used by one token (top_k routed experts)
    double expertWeightsHeld = 0.0; ///< of weightsHeld, the routed experts'
    double normWeights = 0.0;
    double computedWeights = 0.0; ///< GEMM elements one token passes through on this device (× imbalance for
                                  ///< the routed experts)
    double keptBytes = 0.0; ///< F→I
    double normKeptBytes = 0.0; ///< of keptBytes, the norm's output (recompute "norm-up-projection")
    double gemmInputKeptBytes = 0.0; ///< of keptBytes, the other GEMM inputs (cached at the cache dtype)
    double weightGradKeptBytes = 0.0; ///< I→W
    double weightGradFp32Bytes = 0.0; ///< of weightGradKeptBytes, the router's fp32 logit gradients
    /// of gemmInputKeptBytes, the SwiGLUs' outputs (W_down's inputs) of an MoE layer: recompute
    /// "norm-up-projection" reruns the SwiGLU from its kept input instead (DeepSeek-V3 report §3.3.2)
    double swigluOutputKeptBytes = 0.0;
};

MlpShape mlpShape(const Transformer& m, bool moe)
{
    const double t = deviceTokens(m);
    const double h = m.hidden;
    const double e = m.dtypeBytes;
    const double tp = m.tp;
    const auto residual = [&](double bytes) { return m.sequenceParallel ? bytes / tp : bytes; };
    MlpShape p;
    p.normWeights = h;
    p.normKeptBytes = residual(t * e * h);
    if (!moe) {
        const double f = denseFfnOf(m);
        p.weightsTotal = 3.0 * h * f; // W_gate, W_up: h×f; W_down: f×h
        p.weightsHeld = p.weightsTotal / tp;
        p.weightsActive = p.weightsTotal;
        p.computedWeights = p.weightsHeld;
        // norm input, norm output (W_gate/W_up input), gate and up outputs, W_down's input
        p.keptBytes = residual(t * e * 2.0 * h) + t * e * 3.0 * f / tp;
        p.gemmInputKeptBytes = t * e * 3.0 * f / tp; // the SwiGLU's inputs and W_down's input
        // norm output, d(gate), d(up), W_down's input, d(output)
        p.weightGradKeptBytes = residual(t * e * 2.0 * h) + t * e * 3.0 * f / tp;
        return p;
    }
    const double experts = m.moe.experts;
    const double k = m.moe.topK;
    const double ef = m.moe.expertFfn;
    const double shared = m.moe.sharedExperts;
    const double busy = m.moe.imbalance; // the busiest device's routed tokens over the balanced share
    const double expert = 3.0 * h * ef; // one SwiGLU expert
    const double router = h * experts;
    p.weightsTotal = router + shared * expert + experts * expert;
    p.expertWeightsHeld = (experts / m.moe.ep) * expert / tp;
    p.weightsHeld = router + shared * expert / tp + p.expertWeightsHeld;
    p.weightsActive = router + shared * expert + k * expert;
    // Balanced routing: T·top_k token-expert pairs on every device, × imbalance on the busiest.
    p.computedWeights = router + shared * expert / tp + busy * k * expert / tp;
    const double routerProbs = 4.0 * t * experts; // fp32 gating scores (and, for W, their gradient)
    // norm input, norm output (router and shared experts' input), router scores, shared experts' gate/up
    // outputs and down input, and per routed token-expert pair: its dispatched input, gate/up outputs, down
    // input, and for the routing probability's gradient: the expert's output where the combine scales it, or
    // only the fp32 probability where it scales the SwiGLU's output before W_down (Megatron-Core
    // moe/experts.py, weighted_bias_swiglu_impl: its gradient needs the SwiGLU's input, kept anyway).
    const double perPair = m.moe.probsOnSwiglu ? e * (h + 3.0 * ef / tp) + 4.0 : e * (2.0 * h + 3.0 * ef / tp);
    p.keptBytes = residual(t * e * 2.0 * h) + t * e * 3.0 * shared * ef / tp + routerProbs + busy * t * k * perPair;
    // the shared experts' SwiGLU and W_down inputs, each routed pair's input and SwiGLU and W_down inputs
    p.gemmInputKeptBytes = t * e * 3.0 * shared * ef / tp + busy * t * k * e * (h + 3.0 * ef / tp);
    p.swigluOutputKeptBytes = t * e * shared * ef / tp + busy * t * k * e * ef / tp;
    // norm output, d(router logits), [d(output) once + per shared expert d(gate), d(up), down input], per
    // routed pair: input, d(gate), d(up), down input, d(its output)
    p.weightGradFp32Bytes = routerProbs;
    p.weightGradKeptBytes = residual(t * e * h) + routerProbs
        + (m.moe.sharedExperts > 0 ? residual(t * e * h) + t * e * 3.0 * shared * ef / tp : 0.0)
        + busy * t * k * e * (2.0 * h + 3.0 * ef / tp);
    return p;
}

/// The attention block's forward weight GEMMs on one device (docs/model-library.md "Attention"): the columns of
/// the q/k/v and up-projections and the rows of W^O split tp ways, MLA's down-projections whole.
std::vector<Gemm> attentionGemms(const Transformer& m)
{
    const double t = deviceTokens(m);
    const double h = m.hidden;
    const double nh = m.heads;
    const double tp = m.tp;
    std::vector<Gemm> g;
    if (m.attention == Attention::MLA) {
        const double ql = m.mla.qLoraRank;
        const double kvl = m.mla.kvLoraRank;
        const double rope = m.mla.qkRopeHeadDim;
        const double qDim = nh * (m.mla.qkNopeHeadDim + rope);
        if (m.mla.qLoraRank > 0) {
            g.push_back({ t, h, ql });
            g.push_back({ t, ql, qDim / tp, 1.0, true, true, true });
        } else {
            g.push_back({ t, h, qDim / tp });
        }
        g.push_back({ t, h, kvl + rope });
        g.back().quantizedInputRows = 0.0; // reads the FP8 copy of x the query's projection made
        g.push_back({ t, kvl, nh * (m.mla.qkNopeHeadDim + m.mla.vHeadDim) / tp, 1.0, true, true, true });
        g.push_back({ t, nh * m.mla.vHeadDim / tp, h });
        return g;
    }
    const double d = headDimOf(m);
    g.push_back({ t, h, (nh + 2.0 * m.kvHeads) * d / tp });
    g.push_back({ t, nh * d / tp, h });
    return g;
}

/// The MLP block's forward weight GEMMs on one device: a dense SwiGLU (gate and up fused, then down), or the
/// router (BF16), the shared experts and the routed experts as one grouped GEMM over the experts it holds.
std::vector<Gemm> mlpGemms(const Transformer& m, bool moe)
{
    const double t = deviceTokens(m);
    const double h = m.hidden;
    const double tp = m.tp;
    // In FP8 the SwiGLU writes the down-projection's input and its backward the up-projection's output
    // gradient already quantized (one kernel each in DeepSeek's profile, deepseek-ai/profile-data train.json).
    const auto upProjection = [](Gemm gemm, double inputRows) {
        gemm.quantizedInputRows = inputRows;
        gemm.quantizedGradRows = 0.0;
        return gemm;
    };
    const auto downProjection = [](Gemm gemm, double gradRows) {
        gemm.quantizedInputRows = 0.0;
        gemm.quantizedGradRows = gradRows;
        return gemm;
    };
    if (!moe) {
        const double f = denseFfnOf(m);
        return { upProjection({ t, h, 2.0 * f / tp, 1.0, true, false }, t),
            downProjection({ t, f / tp, h, 1.0, true, false }, t) };
    }
    const double ef = m.moe.expertFfn;
    const double shared = m.moe.sharedExperts;
    const double pairs = m.moe.imbalance * t * m.moe.topK;
    const double local = static_cast<double>(m.moe.experts) / std::max(1, m.moe.ep);
    std::vector<Gemm> g { { t, h, static_cast<double>(m.moe.experts), 1.0, false, false } };
    if (shared > 0) {
        g.push_back(upProjection({ t, h, 2.0 * shared * ef / tp, 1.0, true, false }, t));
        g.push_back(downProjection({ t, shared * ef / tp, h, 1.0, true, false }, t));
    }
    // The routed experts' input is quantized once per token before the dispatch, and the gradient of their
    // output once per token before the combine's backward (DeepSeek-V3 report §3.3.3): the same T×h tensors the
    // shared experts quantize, so counted there when there are shared experts.
    const double perToken = shared > 0 ? 0.0 : t;
    g.push_back(upProjection({ pairs, h, 2.0 * ef / tp, local, true, false }, perToken));
    g.push_back(downProjection({ pairs, ef / tp, h, local, true, false }, perToken));
    return g;
}

/// Forward bytes of the memory-bound operations (each reads its inputs and writes its outputs once): the
/// attention block's RMSNorm (2·T·h), residual add (3·T·h), rotary (q and k's rotary parts, read and written)
/// and MLA's latent norms; the MLP's RMSNorm, residual add, SwiGLU (2 in, 1 out per column), and of an MoE
/// layer the router's fp32 softmax (2·4·T·E), the routed tokens' permute (T·h in, T·k·h out) and unpermute
/// (T·k·h in, T·h out).
std::pair<double, double> memoryBytes(const Transformer& m, bool moe)
{
    const double t = deviceTokens(m);
    const double h = m.hidden;
    const double e = m.dtypeBytes;
    const double tp = m.tp;
    const double stream = (m.sequenceParallel ? t * h * e / tp : t * h * e);
    double attention = 5.0 * stream;
    if (m.attention == Attention::MLA) {
        const double rope = m.mla.qkRopeHeadDim;
        attention += 2.0 * t * e * (m.heads * rope / tp + rope) + 2.0 * t * e * (m.mla.qLoraRank + m.mla.kvLoraRank);
    } else {
        const double d = headDimOf(m);
        attention += 2.0 * t * e * (m.heads + m.kvHeads) * d / tp;
    }
    double mlp = 5.0 * stream;
    if (!moe) {
        const double f = denseFfnOf(m);
        return { attention, mlp + 3.0 * t * e * f / tp };
    }
    const double pairs = m.moe.imbalance * t * m.moe.topK;
    mlp += 8.0 * t * m.moe.experts + 2.0 * (t * h * e / tp + pairs * h * e / tp)
        + 3.0 * e * m.moe.expertFfn / tp * (pairs + t * m.moe.sharedExperts);
    return { attention, mlp };
}

Flops weightGemms(double tokens, double weights)
{
    const double f = 2.0 * tokens * weights;
    return { f, f, f };
}

/// The expert all-to-all bytes of an MoE layer with ep > 1 on one device (dispatch, combine and the parts of each
/// that cross nodes given `placement`), for `t` tokens on the device. Throws std::invalid_argument for a
/// placement outside the rule of EpPlacement.
void addExpertExchange(const Transformer& m, const EpPlacement& placement, double t, LayerCost& c)
{
    const int ep = m.moe.ep;
    const double h = m.hidden;
    const double tp = m.tp;
    if (placement.nodesSpanned < 1)
        throw std::invalid_argument(
            "layerCost: EpPlacement::nodesSpanned must be at least 1, got " + std::to_string(placement.nodesSpanned));
    if (placement.nodesSpanned > 1 && (placement.peersInNode < 0 || placement.peersInNode > ep - 1))
        throw std::invalid_argument("layerCost: EpPlacement::peersInNode " + std::to_string(placement.peersInNode)
            + " outside [0, ep − 1 = " + std::to_string(ep - 1) + "]");
    // DeepSeek-V3 report §3.2.2: each of the T·top_k token-expert pairs leaves the device unless its
    // expert is local ((ep − 1)/ep of them under balanced routing).
    // The busiest device sends imbalance × its share; with tensor parallelism each tensor rank dispatches a
    // tp-th of the tokens (Megatron-LM's all-to-all dispatcher).
    const double pairsOut = t * m.moe.topK * (ep - 1.0) / ep * m.moe.imbalance / tp;
    const double dispatchWire = wireBytesPerElement(m.moe.dispatchBytes);
    const double combineWire = wireBytesPerElement(m.moe.combineBytes);
    c.dispatchBytes = pairsOut * h * dispatchWire;
    c.combineBytes = pairsOut * h * combineWire;
    if (placement.nodesSpanned > 1) {
        // The share of the pairs whose expert sits on a peer off this node...
        const double offNode = (ep - 1.0 - placement.peersInNode) / (ep - 1.0);
        double dispatchInter = c.dispatchBytes * offNode;
        double combineInter = c.combineBytes * offNode;
        // ...capped, with node-limited routing (DeepSeek-V3 §2.1.2, §3.2.2), by one copy per remote node a
        // token reaches: at most min(M, top_k, nodes spanned − 1) nodes besides its own.
        if (m.moe.maxNodesPerToken > 0) {
            const int remoteNodes = std::min({ m.moe.maxNodesPerToken, m.moe.topK, placement.nodesSpanned - 1 });
            const double copies = t * remoteNodes * m.moe.imbalance / tp;
            dispatchInter = std::min(dispatchInter, copies * h * dispatchWire);
            combineInter = std::min(combineInter, copies * h * combineWire);
        }
        c.dispatchInterNodeBytes = dispatchInter;
        c.combineInterNodeBytes = combineInter;
    }
}

} // namespace

LayerCost layerCost(const Transformer& m, int layer, Recompute recompute, const EpPlacement& placement)
{
    if (layer < 0 || layer >= m.layers)
        throw std::out_of_range(
            "layerCost: layer " + std::to_string(layer) + " outside [0, " + std::to_string(m.layers) + ")");
    const int ep = m.moe.ep;
    const double t = deviceTokens(m);
    const double h = m.hidden;
    const double e = m.dtypeBytes;
    const double tp = m.tp;
    const bool moe = m.isMoeLayer(layer);
    const AttentionShape a = attentionShape(m);
    const MlpShape p = mlpShape(m, moe);

    LayerCost c;
    c.moe = moe;
    const double attentionWeights = a.splitWeights + a.wholeWeights;
    c.parameters = a.splitWeights / tp + a.wholeWeights + a.normWeights + p.weightsHeld + p.normWeights;
    c.parametersTotal = attentionWeights + a.normWeights + p.weightsTotal + p.normWeights;
    c.parametersActive = attentionWeights + a.normWeights + p.weightsActive + p.normWeights;
    c.expertParameters = p.expertWeightsHeld;

    c.attention = weightGemms(t, a.splitWeights / tp + a.wholeWeights);
    c.attentionCoreFlops = a.coreForwardFlops / tp;
    c.attentionBackwardMemoryBytes = a.coreBackwardBytes / tp;
    c.attention.f += c.attentionCoreFlops;
    c.attention.i += 2.0 * c.attentionCoreFlops;
    c.mlp = weightGemms(t, p.computedWeights);
    c.gemms = attentionGemms(m);
    for (const Gemm& g : mlpGemms(m, moe))
        c.gemms.push_back(g);
    std::tie(c.attentionMemoryBytes, c.mlpMemoryBytes) = memoryBytes(m, moe);

    const double attentionKept = a.kept.on(m);
    const double softmax = a.softmaxBytes / tp;
    // GEMM inputs cached at activationCacheBytes (DeepSeek-V3 report §3.3.1: FP8) save this share of their bytes.
    const double cacheSaving = m.activationCacheBytes > 0 && m.activationCacheBytes < m.dtypeBytes
        ? 1.0 - static_cast<double>(m.activationCacheBytes) / m.dtypeBytes
        : 0.0;
    const double otherInputsSaved = cacheSaving * (a.contextKept.on(m) + p.gemmInputKeptBytes);
    const double inputsSaved = otherInputsSaved + cacheSaving * (a.normOutputs.on(m) + p.normKeptBytes);
    switch (recompute) {
    case Recompute::None:
        c.activationBytes = attentionKept + softmax + p.keptBytes - inputsSaved;
        c.recomputeFlops = 0.0;
        break;
    case Recompute::Selective:
        c.activationBytes = attentionKept + p.keptBytes - inputsSaved;
        c.recomputeFlops = c.attentionCoreFlops;
        break;
    case Recompute::Full:
        c.activationBytes = (m.sequenceParallel ? t * h * e / tp : t * h * e); // the layer's input
        c.recomputeFlops = c.attention.f + c.mlp.f;
        c.recomputeMemoryBytes = c.attentionMemoryBytes + c.mlpMemoryBytes;
        break;
    case Recompute::NormUpProjection:
        // DeepSeek-V3 §3.2.3: the norms' outputs and MLA's up-projections are rerun in the backward; the
        // attention core's output is kept (its flash-attention backward needs only Q, K, V and the context).
        // The MoE SwiGLUs' outputs are rerun from their kept inputs too (report §3.3.2), at their cached size.
        c.activationBytes = attentionKept - a.normUpKept.on(m) + p.keptBytes - p.normKeptBytes - otherInputsSaved
            - (1.0 - cacheSaving) * p.swigluOutputKeptBytes;
        c.recomputeFlops = 2.0 * t * a.upProjectionWeights / tp;
        // the norms (each reads its input, writes its output) and the MoE SwiGLUs (2 in, 1 out)
        c.recomputeMemoryBytes = 2.0 * (a.normOutputs.on(m) + p.normKeptBytes) + 3.0 * p.swigluOutputKeptBytes;
        break;
    }
    // W's GEMM operands at the GEMM dtype; the router's fp32 logit gradients stay fp32.
    const double gemmOperandScale
        = m.gemmBytes > 0 && m.gemmBytes < m.dtypeBytes ? static_cast<double>(m.gemmBytes) / m.dtypeBytes : 1.0;
    c.weightGradKeptBytes = (a.weightGradKept.on(m) + p.weightGradKeptBytes - p.weightGradFp32Bytes) * gemmOperandScale
        + p.weightGradFp32Bytes;
    // Megatron-LM's tensor parallelism (Narayanan et al. 2021 §2.3): the row-parallel output of attention and
    // of the MLP are summed over the tensor ranks in F, the column-parallel inputs' gradients in B: one T×h
    // all-reduce (or reduce-scatter + all-gather with sequence parallelism, the same bytes) each.
    c.tensorAllReduceBytes = m.tp > 1 ? t * h * e : 0.0;
    // Ring attention (Liu et al. 2023): each step passes one device's keys and values to the next context rank.
    c.contextKvBytes = m.cp > 1 ? t * a.kvBytesPerToken / tp : 0.0;

    if (moe && ep > 1)
        addExpertExchange(m, placement, t, c);
    return c;
}

double wireBytesPerElement(int bytes)
{
    constexpr double kFp8TileScaleBytes = 4.0 / 128.0; // one FP32 scale per 1×128 tile
    return bytes == 1 ? 1.0 + kFp8TileScaleBytes : static_cast<double>(bytes);
}

EdgeCost embeddingCost(const Transformer& m)
{
    EdgeCost c;
    c.parameters = static_cast<double>(m.vocab) * m.hidden / m.tp; // vocabulary-parallel (Megatron-LM)
    // F: a lookup (0 FLOPs); I: none (the input is token ids); W: a scatter-add of the output gradient into
    // the weight's gradient (T·h additions, not counted). The token ids kept for W (4·T bytes) are not counted.
    c.weightGradKeptBytes = deviceTokens(m) * m.hidden * m.dtypeBytes;
    c.memoryBytes = 2.0 * deviceTokens(m) * m.hidden * m.dtypeBytes; // the gathered rows, read and written
    return c;
}

EdgeCost headCost(const Transformer& m, Recompute /*recompute: the head is never recomputed*/)
{
    const double t = deviceTokens(m);
    const double h = m.hidden;
    const double v = static_cast<double>(m.vocab) / m.tp; // vocabulary-parallel head and loss (Megatron-LM)
    const double e = m.dtypeBytes;
    EdgeCost c;
    c.parameters = h + v * h; // final RMSNorm and the output matrix (tied: the embedding's copy)
    c.flops = weightGemms(t, v * h);
    c.gemms = { { t, h, v, 1.0, false, false } };
    // the final norm (2·T·h) and the loss's softmax over the fp32 logits (read, written)
    c.memoryBytes = 2.0 * t * h * e + 8.0 * t * v;
    // Korthikanti et al. 2022 §4 (total activations memory): the final norm's input, the head's input, and the
    // logits kept in fp32 for the cross-entropy's backward (4·T·vocab bytes).
    c.activationBytes = 2.0 * t * h * e + 4.0 * t * v;
    // The head's input and the gradient of the logits (in the model's dtype).
    c.weightGradKeptBytes = t * h * e + t * v * e;
    return c;
}

Totals totals(const Transformer& whole)
{
    Transformer m = whole; // the whole model, on one device
    m.tp = 1;
    m.cp = 1;
    m.sequenceParallel = false;
    Totals result;
    double forwardFlops = 0.0;
    for (int layer = 0; layer < m.layers; ++layer) {
        const LayerCost c = layerCost(m, layer, Recompute::None);
        result.parametersTotal += c.parametersTotal;
        result.parametersActive += c.parametersActive;
        forwardFlops += c.attention.f + c.mlp.f;
    }
    const EdgeCost embedding = embeddingCost(m);
    const EdgeCost head = headCost(m, Recompute::None);
    const double edges = embedding.parameters + head.parameters - (m.tiedEmbeddings ? embedding.parameters : 0.0);
    result.parametersTotal += edges;
    result.parametersActive += edges;
    forwardFlops += head.flops.f;
    result.flopsPerTokenTraining = 3.0 * forwardFlops / m.tokens();
    return result;
}

namespace {

[[noreturn]] void refuse(const std::string& message)
{
    throw FormatError(message);
}

void requirePositive(int value, const char* field)
{
    if (value < 1)
        refuse(std::string(field) + ": must be at least 1, got " + std::to_string(value));
}

void requireNonNegative(int value, const char* field)
{
    if (value < 0)
        refuse(std::string(field) + ": must not be negative, got " + std::to_string(value));
}

} // namespace

void check(const Transformer& m)
{
    requirePositive(m.layers, "model.layers");
    requirePositive(m.hidden, "model.hidden");
    requirePositive(m.ffn, "model.ffn");
    requirePositive(m.seqLen, "model.seq_len");
    requirePositive(m.microbatchSize, "model.microbatch_size");
    requirePositive(m.vocab, "model.vocab");
    requirePositive(m.heads, "model.heads");
    if (m.dtypeBytes != 1 && m.dtypeBytes != 2 && m.dtypeBytes != 4)
        refuse("model.dtype: " + std::to_string(m.dtypeBytes) + " bytes per element is not 1, 2 or 4");

    if (m.attention == Attention::MLA) {
        requireNonNegative(m.mla.qLoraRank, "model.mla.q_lora_rank");
        requirePositive(m.mla.kvLoraRank, "model.mla.kv_lora_rank");
        requirePositive(m.mla.qkNopeHeadDim, "model.mla.qk_nope_head_dim");
        requirePositive(m.mla.qkRopeHeadDim, "model.mla.qk_rope_head_dim");
        requirePositive(m.mla.vHeadDim, "model.mla.v_head_dim");
    } else {
        requirePositive(m.kvHeads, "model.kv_heads");
        if (m.heads % m.kvHeads != 0)
            refuse("model.kv_heads: " + std::to_string(m.kvHeads) + " does not divide model.heads "
                + std::to_string(m.heads));
        if (m.attention == Attention::MHA && m.kvHeads != m.heads)
            refuse("model.kv_heads: " + std::to_string(m.kvHeads) + " differs from model.heads "
                + std::to_string(m.heads) + " with model.attention \"mha\" (use \"gqa\")");
        requireNonNegative(m.headDim, "model.head_dim");
        if (m.headDim == 0 && m.hidden % m.heads != 0)
            refuse("model.heads: " + std::to_string(m.heads) + " does not divide model.hidden "
                + std::to_string(m.hidden) + " (give model.head_dim)");
    }

    const Moe& moe = m.moe;
    requireNonNegative(moe.experts, "model.moe.experts");
    requireNonNegative(moe.topK, "model.moe.top_k");
    requireNonNegative(moe.expertFfn, "model.moe.expert_ffn");
    requireNonNegative(moe.sharedExperts, "model.moe.shared_experts");
    requireNonNegative(moe.denseLayers, "model.moe.dense_layers");
    requireNonNegative(moe.denseFfn, "model.moe.dense_ffn");
    requireNonNegative(moe.maxNodesPerToken, "model.moe.max_nodes_per_token");
    requirePositive(moe.ep, "model.moe.ep");
    for (const auto& [bytes, field] : { std::pair { moe.dispatchBytes, "model.moe.dispatch_dtype" },
             std::pair { moe.combineBytes, "model.moe.combine_dtype" } })
        if (bytes != 1 && bytes != 2 && bytes != 4)
            refuse(std::string(field) + ": " + std::to_string(bytes) + " bytes per element is not 1, 2 or 4");
    if (moe.experts == 0) {
        if (moe.ep > 1)
            refuse("model.moe.ep: " + std::to_string(moe.ep) + " needs routed experts (model.moe.experts is 0)");
        return;
    }
    const std::string experts = std::to_string(moe.experts);
    if (moe.topK < 1)
        refuse("model.moe.top_k: must be at least 1 when model.moe.experts is " + experts + ", got "
            + std::to_string(moe.topK));
    if (moe.topK > moe.experts)
        refuse("model.moe.top_k: " + std::to_string(moe.topK) + " exceeds model.moe.experts " + experts);
    if (moe.expertFfn < 1)
        refuse("model.moe.expert_ffn: must be at least 1 when model.moe.experts is " + experts + ", got "
            + std::to_string(moe.expertFfn));
    if (moe.denseLayers > m.layers)
        refuse("model.moe.dense_layers: " + std::to_string(moe.denseLayers) + " exceeds model.layers "
            + std::to_string(m.layers));
    if (moe.ep > moe.experts)
        refuse("model.moe.ep: " + std::to_string(moe.ep) + " exceeds model.moe.experts " + experts);
    if (moe.experts % moe.ep != 0)
        refuse("model.moe.ep: " + std::to_string(moe.ep) + " does not divide model.moe.experts " + experts);
}

} // namespace dps::model
