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
    }
    return "none";
}

namespace {

/// The attention block of one layer (input RMSNorm, projections, core) for T tokens; see
/// docs/model-library.md "Attention".
struct AttentionShape {
    double projectionWeights = 0.0; ///< elements of the weight GEMMs
    double normWeights = 0.0; ///< elements of the RMSNorm weights (input norm; MLA: q and kv norms too)
    double coreForwardFlops = 0.0; ///< scores + values, causal half
    double keptBytes = 0.0; ///< F→I without the sequence-squared softmax output
    double softmaxBytes = 0.0; ///< the softmax output, e·n_h·s·T (the full square, as Korthikanti)
    double weightGradKeptBytes = 0.0; ///< I→W
};

AttentionShape attentionShape(const Transformer& m)
{
    const double t = m.tokens();
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
            a.projectionWeights += h * ql + ql * qDim; // W^DQ, W^UQ (with W^QR folded in)
            a.normWeights += ql; // q_a_layernorm
        } else {
            a.projectionWeights += h * qDim; // W^Q
        }
        a.projectionWeights += h * (kvl + rope); // W^DKV with W^KR
        a.projectionWeights += kvl * nh * (nope + v); // W^UK, W^UV
        a.projectionWeights += nh * v * h; // W^O
        a.normWeights += kvl; // kv_a_layernorm
        dk = nope + rope;
        dv = v;
        const double qLowRank = m.mla.qLoraRank > 0 ? 2.0 * ql : 0.0; // c_q (norm input) and its norm output
        // norm input X, norm output, [c_q, norm(c_q)], c_kv, norm(c_kv), Q, K (per head), V, context
        a.keptBytes = t * e * (2.0 * h + qLowRank + 2.0 * kvl + 2.0 * qDim + 2.0 * nh * v);
        // X, [dC_q, norm(c_q)], d[c_kv; k_rope], norm(c_kv), dQ, d[K_nope; V], context, d(output)
        a.weightGradKeptBytes = t * e * (2.0 * h + qLowRank + (kvl + rope) + kvl + qDim + nh * (nope + v) + nh * v);
    } else {
        const double d = m.headDim > 0 ? m.headDim : static_cast<double>(m.hidden / m.heads);
        const double qd = nh * d;
        const double kvd = static_cast<double>(m.kvHeads) * d;
        a.projectionWeights = h * qd + 2.0 * h * kvd + qd * h; // W^Q, W^K, W^V, W^O
        dk = d;
        dv = d;
        // norm input X, norm output (the projections' input), Q, K, V, context (W^O's input)
        a.keptBytes = t * e * (2.0 * h + 2.0 * qd + 2.0 * kvd);
        // norm output, dQ, dK, dV, context, d(output)
        a.weightGradKeptBytes = t * e * (2.0 * h + 2.0 * qd + 2.0 * kvd);
    }
    a.coreForwardFlops = t * s * nh * (dk + dv); // ½ × 2·T·s·n_h·(d_k + d_v): causal half
    a.softmaxBytes = e * nh * s * t;
    return a;
}

/// The MLP block of one layer (post-attention RMSNorm, dense SwiGLU or router + shared + routed experts);
/// see docs/model-library.md "Dense MLP" and "MoE layer".
struct MlpShape {
    double weightsTotal = 0.0; ///< every weight GEMM's elements (every routed expert)
    double weightsHeld = 0.0; ///< on one device of the EP group (experts / ep routed experts)
    double weightsActive = 0.0; ///< used by one token (top_k routed experts)
    double expertWeightsHeld = 0.0; ///< of weightsHeld, the routed experts'
    double normWeights = 0.0;
    double computedWeights = 0.0; ///< GEMM elements one token passes through on this device (balanced)
    double keptBytes = 0.0; ///< F→I
    double weightGradKeptBytes = 0.0; ///< I→W
};

MlpShape mlpShape(const Transformer& m, bool moe)
{
    const double t = m.tokens();
    const double h = m.hidden;
    const double e = m.dtypeBytes;
    MlpShape p;
    p.normWeights = h;
    if (!moe) {
        const double f = (m.isMoe() && m.moe.denseFfn > 0) ? m.moe.denseFfn : m.ffn;
        p.weightsTotal = 3.0 * h * f; // W_gate, W_up: h×f; W_down: f×h
        p.weightsHeld = p.weightsTotal;
        p.weightsActive = p.weightsTotal;
        p.computedWeights = p.weightsTotal;
        // norm input, norm output (W_gate/W_up input), gate and up outputs, W_down's input
        p.keptBytes = t * e * (2.0 * h + 3.0 * f);
        // norm output, d(gate), d(up), W_down's input, d(output)
        p.weightGradKeptBytes = t * e * (2.0 * h + 3.0 * f);
        return p;
    }
    const double experts = m.moe.experts;
    const double k = m.moe.topK;
    const double ef = m.moe.expertFfn;
    const double shared = m.moe.sharedExperts;
    const double expert = 3.0 * h * ef; // one SwiGLU expert
    const double router = h * experts;
    p.weightsTotal = router + shared * expert + experts * expert;
    p.expertWeightsHeld = (experts / m.moe.ep) * expert;
    p.weightsHeld = router + shared * expert + p.expertWeightsHeld;
    p.weightsActive = router + shared * expert + k * expert;
    p.computedWeights = p.weightsActive; // balanced routing: T·top_k token-expert pairs on every device
    const double routerProbs = 4.0 * t * experts; // fp32 gating scores (and, for W, their gradient)
    // norm input, norm output (router and shared experts' input), router scores, shared experts' gate/up
    // outputs and down input, and per routed token-expert pair: its dispatched input, gate/up outputs, down
    // input and its output (the gate weight's gradient needs it)
    p.keptBytes = t * e * (2.0 * h + 3.0 * shared * ef) + routerProbs + t * k * e * (2.0 * h + 3.0 * ef);
    // norm output, d(router logits), [d(output) once + per shared expert d(gate), d(up), down input], per
    // routed pair: input, d(gate), d(up), down input, d(its output)
    p.weightGradKeptBytes = t * e * h + routerProbs + (m.moe.sharedExperts > 0 ? t * e * (h + 3.0 * shared * ef) : 0.0)
        + t * k * e * (2.0 * h + 3.0 * ef);
    return p;
}

Flops weightGemms(double tokens, double weights)
{
    const double f = 2.0 * tokens * weights;
    return { f, f, f };
}

} // namespace

LayerCost layerCost(const Transformer& m, int layer, Recompute recompute, const EpPlacement& placement)
{
    if (layer < 0 || layer >= m.layers)
        throw std::out_of_range(
            "layerCost: layer " + std::to_string(layer) + " outside [0, " + std::to_string(m.layers) + ")");
    const int ep = m.moe.ep;
    const double t = m.tokens();
    const double h = m.hidden;
    const double e = m.dtypeBytes;
    const bool moe = m.isMoeLayer(layer);
    const AttentionShape a = attentionShape(m);
    const MlpShape p = mlpShape(m, moe);

    LayerCost c;
    c.moe = moe;
    const double attentionParameters = a.projectionWeights + a.normWeights;
    c.parameters = attentionParameters + p.weightsHeld + p.normWeights;
    c.parametersTotal = attentionParameters + p.weightsTotal + p.normWeights;
    c.parametersActive = attentionParameters + p.weightsActive + p.normWeights;
    c.expertParameters = p.expertWeightsHeld;

    c.attention = weightGemms(t, a.projectionWeights);
    c.attention.f += a.coreForwardFlops;
    c.attention.i += 2.0 * a.coreForwardFlops;
    c.mlp = weightGemms(t, p.computedWeights);

    switch (recompute) {
    case Recompute::None:
        c.activationBytes = a.keptBytes + a.softmaxBytes + p.keptBytes;
        c.recomputeFlops = 0.0;
        break;
    case Recompute::Selective:
        c.activationBytes = a.keptBytes + p.keptBytes;
        c.recomputeFlops = a.coreForwardFlops;
        break;
    case Recompute::Full:
        c.activationBytes = t * h * e; // the layer's input
        c.recomputeFlops = c.attention.f + c.mlp.f;
        break;
    }
    c.weightGradKeptBytes = a.weightGradKeptBytes + p.weightGradKeptBytes;

    if (moe && ep > 1) {
        if (placement.nodesSpanned < 1)
            throw std::invalid_argument("layerCost: EpPlacement::nodesSpanned must be at least 1, got "
                + std::to_string(placement.nodesSpanned));
        if (placement.nodesSpanned > 1 && (placement.peersInNode < 0 || placement.peersInNode > ep - 1))
            throw std::invalid_argument("layerCost: EpPlacement::peersInNode " + std::to_string(placement.peersInNode)
                + " outside [0, ep − 1 = " + std::to_string(ep - 1) + "]");
        // DeepSeek-V3 report §3.2.2: each of the T·top_k token-expert pairs leaves the device unless its
        // expert is local ((ep − 1)/ep of them under balanced routing).
        const double pairsOut = t * m.moe.topK * (ep - 1.0) / ep;
        c.dispatchBytes = pairsOut * h * m.moe.dispatchBytes;
        c.combineBytes = pairsOut * h * m.moe.combineBytes;
        if (placement.nodesSpanned > 1) {
            // The share of the pairs whose expert sits on a peer off this node...
            const double offNode = (ep - 1.0 - placement.peersInNode) / (ep - 1.0);
            double dispatchInter = c.dispatchBytes * offNode;
            double combineInter = c.combineBytes * offNode;
            // ...capped, with node-limited routing (DeepSeek-V3 §2.1.2, §3.2.2), by one copy per remote node a
            // token reaches: at most min(M, top_k, nodes spanned − 1) nodes besides its own.
            if (m.moe.maxNodesPerToken > 0) {
                const int remoteNodes = std::min({ m.moe.maxNodesPerToken, m.moe.topK, placement.nodesSpanned - 1 });
                dispatchInter = std::min(dispatchInter, t * remoteNodes * h * m.moe.dispatchBytes);
                combineInter = std::min(combineInter, t * remoteNodes * h * m.moe.combineBytes);
            }
            c.dispatchInterNodeBytes = dispatchInter;
            c.combineInterNodeBytes = combineInter;
        }
    }
    return c;
}

EdgeCost embeddingCost(const Transformer& m)
{
    EdgeCost c;
    c.parameters = static_cast<double>(m.vocab) * m.hidden;
    // F: a lookup (0 FLOPs); I: none (the input is token ids); W: a scatter-add of the output gradient into
    // the weight's gradient (T·h additions, not counted). The token ids kept for W (4·T bytes) are not counted.
    c.weightGradKeptBytes = m.tokens() * m.hidden * m.dtypeBytes;
    return c;
}

EdgeCost headCost(const Transformer& m, Recompute /*recompute: the head is never recomputed*/)
{
    const double t = m.tokens();
    const double h = m.hidden;
    const double v = m.vocab;
    const double e = m.dtypeBytes;
    EdgeCost c;
    c.parameters = h + v * h; // final RMSNorm and the output matrix (tied: the embedding's copy)
    c.flops = weightGemms(t, v * h);
    // Korthikanti et al. 2022 §4 (total activations memory): the final norm's input, the head's input, and the
    // logits kept in fp32 for the cross-entropy's backward (4·T·vocab bytes).
    c.activationBytes = 2.0 * t * h * e + 4.0 * t * v;
    // The head's input and the gradient of the logits (in the model's dtype).
    c.weightGradKeptBytes = t * h * e + t * v * e;
    return c;
}

Totals totals(const Transformer& m)
{
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
