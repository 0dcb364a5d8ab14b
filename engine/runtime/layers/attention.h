#pragma once
// The attention block of a pre-norm decoder layer, y = x + Attention(RMSNorm(x)) (docs/layers.md):
//  - GqaAttention: causal self-attention with grouped-query heads (Ainslie et al. 2023; MHA when
//    kvHeads = heads): RMSNorm, the Q/K/V projections, rotary embedding of Q and K (Su et al. 2021), the
//    causal core (attentioncore.h), the output projection;
//  - MlaAttention: multi-head latent attention (DeepSeek-AI 2024, "DeepSeek-V2", §2.1.2-2.1.3; the weight
//    names of DeepSeek-V3's modeling_deepseek.py): a low-rank query (q_a_proj, q_a_layernorm, q_b_proj; or
//    q_proj when q_lora_rank is 0), a low-rank joint key-value latent with one shared rotary key
//    (kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj), decoupled rotary dimensions, the output projection.
// Shapes, and the tensors F keeps for I and I keeps for W, are the model library's (engine/model/transformer.h,
// docs/model-library.md): the activation bytes of an attention block equal its ledger with 4-byte elements.
#include "model/transformer.h"
#include "runtime/layers/attentioncore.h"
#include "runtime/layers/common.h"

namespace dps::runtime::layers {

/// Sizes of an attention block for one microbatch.
struct AttentionConfig {
    int hidden = 0; ///< h
    int heads = 0; ///< n_h
    int kvHeads = 0; ///< n_kv (GQA groups); divides heads. Not read for MLA
    int headDim = 0; ///< d (GQA); not read for MLA
    model::Mla mla; ///< MLA's ranks and head sizes; read only by MlaAttention
    int batch = 1; ///< sequences per microbatch
    int seqLen = 1; ///< s
    double ropeBase = 10000.0; ///< θ base (Llama 3: 500000; DeepSeek-V3: 10000)

    int tokens() const { return batch * seqLen; }
    /// The block of `m` (its hidden, heads, kv heads, head size or MLA shapes, sequence length and microbatch
    /// size). Throws FormatError as model::check does for an invalid model.
    static AttentionConfig of(const model::Transformer& m);
};

/// Causal GQA self-attention block. Parameters: input_layernorm (1 × h), q_proj (n_h·d × h), k_proj and
/// v_proj (n_kv·d × h), o_proj (h × n_h·d).
class GqaAttention final : public FusableLayer {
public:
    /// Throws RuntimeError for sizes below 1, kvHeads not dividing heads, an odd head size (rotary pairs) or a
    /// backend that does not compute in fp32.
    GqaAttention(Backend& backend, const AttentionConfig& config);

    std::string kind() const override { return "gqa"; }
    std::vector<ParamShape> parameterShapes() const override;
    Tensor forward(Lane lane, const ParamSet& p, Tensor x, Saved& saved) const override;
    void weightGrad(Lane lane, const ParamSet& p, Saved& saved) const override;

private:
    Tensor backwardImpl(Lane lane, const ParamSet& p, Saved& saved, Tensor dy, bool fused) const override;

    Backend& m_backend;
    AttentionConfig m_c;
    CoreShape m_core;
};

/// MLA block. Parameters: input_layernorm (1 × h); q_a_proj (q_l × h), q_a_layernorm (1 × q_l) and q_b_proj
/// (n_h·(d_n + d_r) × q_l) when q_l > 0, else q_proj (n_h·(d_n + d_r) × h); kv_a_proj_with_mqa
/// ((kv_l + d_r) × h), kv_a_layernorm (1 × kv_l), kv_b_proj (n_h·(d_n + d_v) × kv_l), o_proj (h × n_h·d_v).
class MlaAttention final : public FusableLayer {
public:
    /// Throws RuntimeError for sizes below 1 (q_l may be 0), an odd rotary size or a backend that does not
    /// compute in fp32.
    MlaAttention(Backend& backend, const AttentionConfig& config);

    std::string kind() const override { return "mla"; }
    std::vector<ParamShape> parameterShapes() const override;
    Tensor forward(Lane lane, const ParamSet& p, Tensor x, Saved& saved) const override;
    void weightGrad(Lane lane, const ParamSet& p, Saved& saved) const override;

private:
    Tensor backwardImpl(Lane lane, const ParamSet& p, Saved& saved, Tensor dy, bool fused) const override;
    /// I (or B) through kv_b_proj, kv_a_layernorm and kv_a_proj: returns d(normed x); with B, their weight
    /// gradients too (frees dkv, dkva and the kept c_kv).
    Tensor kvBackward(Lane lane, const ParamSet& p, Saved& saved, Tensor& dkv, Tensor& dkva, bool fused) const;
    /// I (or B) through the query path into `dxn` (accumulated): returns d(c_q) when q_l > 0 (kept for W),
    /// else an empty tensor.
    Tensor queryBackward(
        Lane lane, const ParamSet& p, Saved& saved, Tensor& dq, Tensor& dxn, bool fused, MemoryCategory keep) const;
    bool lowRankQuery() const { return m_c.mla.qLoraRank > 0; }

    Backend& m_backend;
    AttentionConfig m_c;
    CoreShape m_core;
    // Parameter indices (the query's depend on q_lora_rank).
    std::size_t m_q = 0; ///< q_proj, or q_b_proj
    std::size_t m_qa = 0; ///< q_a_proj (q_l > 0)
    std::size_t m_qaNorm = 0; ///< q_a_layernorm (q_l > 0)
    std::size_t m_kva = 0;
    std::size_t m_kvaNorm = 0;
    std::size_t m_kvb = 0;
    std::size_t m_o = 0;
};

} // namespace dps::runtime::layers
