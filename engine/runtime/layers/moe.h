#pragma once
// The MoE block of DeepSeekMoE (DeepSeek-V3 report §2.1.2) and Mixtral (Jiang et al. 2024, §2.1):
// y = x + Σ_shared FFN_s(xn) + Σ_{i ∈ top-k} g_i · FFN_i(xn), xn = RMSNorm(x), every FFN a SwiGLU expert
// (swiglu.h), the router a linear map h → E (no bias) whose affinities s are
//  - Sigmoid (DeepSeek-V3 eq. 15): s_i = σ(u·e_i), gates g_i = s_i / Σ_{j ∈ top-k} s_j (eq. 13), times the
//    routed scaling factor (2.5 in DeepSeek-V3's config.json);
//  - Softmax (Mixtral eq. 1-2; DeepSeek-V2 eq. 22): s = softmax over all E, and g_i = s_i renormalised over
//    the top-k (Mixtral, = softmax of the top-k logits) or not (DeepSeek-V2: norm_topk_prob false).
// Top-k picks the k largest affinities; ties go to the lower expert index, so routing is deterministic and
// the same in every process (the expert-parallel members must agree on it). DeepSeek-V3's bias for load balancing (e_score_correction_bias) and its
// node-limited routing are left out: the top-k is over s itself (docs/layers.md). The routing (expert per
// token-slot) is host bookkeeping in Saved; the router's affinities are kept in fp32 (T × E), as the model
// library counts. With ep > 1 the routed experts are split over an expert-parallel group and the routed rows
// are exchanged with its members (moe_ep.cpp, expertcomm.h).
#include "model/transformer.h"
#include "runtime/layers/common.h"
#include "runtime/layers/expertcomm.h"

namespace dps::runtime::layers {

/// The router's affinity function.
enum class Gating { Softmax, Sigmoid };

/// How the router turns logits into gates.
struct MoeGating {
    Gating kind = Gating::Sigmoid;
    bool normalizeTopK = true; ///< divide the k selected affinities by their sum
    double scale = 1.0; ///< the routed scaling factor, times every gate

    /// DeepSeek-V3 (config.json: scoring_func sigmoid, norm_topk_prob true, routed_scaling_factor 2.5).
    static MoeGating deepSeekV3() { return { Gating::Sigmoid, true, 2.5 }; }
    /// Mixtral (softmax, then the top-k renormalised).
    static MoeGating mixtral() { return { Gating::Softmax, true, 1.0 }; }
};

/// Sizes of an MoE block for one microbatch.
struct MoeConfig {
    int hidden = 0; ///< h
    int experts = 0; ///< E routed experts
    int topK = 0; ///< k
    int expertFfn = 0; ///< f_e
    int sharedExperts = 0; ///< S
    int tokens = 0; ///< T
    MoeGating gating;
    /// Expert parallelism: the routed experts are split over `ep` members of an ExpertGroup, this block holding
    /// member `member`'s, [member·E/ep, (member+1)·E/ep); 1 = all here. ep must divide E.
    int ep = 1;
    int member = 0;
    /// The MoE block of `m` (its experts, top_k, expert_ffn, shared experts) with `gating` (the model library
    /// does not carry the gating function). Throws FormatError as model::check does.
    static MoeConfig of(const model::Transformer& m, const MoeGating& gating);
};

/// The top-k of `scores` (n values): the k indices of the largest, the lower index first among equals, in
/// that order (largest first). Throws RuntimeError when k is outside [1, n].
std::vector<int> topK(const float* scores, int n, int k);

/// The MoE block. Parameters: post_attention_layernorm (1 × h), gate (the router, E × h), then per shared expert
/// s: shared_experts.s.{gate_proj, up_proj, down_proj}, then per routed expert e: experts.e.{gate_proj (f_e × h),
/// up_proj (f_e × h), down_proj (h × f_e)}.
class MoeBlock final : public Layer {
public:
    /// Throws RuntimeError for sizes below 1 (shared experts may be 0), top_k above the experts, or a backend
    /// that does not compute in fp32.
    MoeBlock(Backend& backend, const MoeConfig& config);

    std::string kind() const override { return "moe"; }
    std::vector<ParamShape> parameterShapes() const override;
    Tensor forward(Lane lane, const ParamSet& p, Tensor x, Saved& saved) const override;
    Tensor inputGrad(Lane lane, const ParamSet& p, Saved& saved, Tensor dy) const override;
    void weightGrad(Lane lane, const ParamSet& p, Saved& saved) const override;
    Tensor backward(Lane lane, const ParamSet& p, Saved& saved, Tensor dy) const override;

    /// The gate of token-slot pair t·k + j, from the kept affinities and routes (after F, before I). Waits for
    /// the backend (synchronize) and downloads the affinities.
    std::vector<double> gates(const Saved& saved) const;

    /// With ep > 1: the group the routed experts are exchanged in (it must outlive the block's use), and where
    /// each call's exchanges are numbered: Saved::tag (set by the caller, unique per block and microbatch among
    /// those in flight) × 8. Without a group an ep > 1 block refuses to run.
    void setExpertGroup(const ExpertGroup* group) { m_group = group; }
    int firstLocalExpert() const { return m_c.member * localExperts(); }
    int localExperts() const { return m_c.experts / m_c.ep; }

private:
    Tensor backwardImpl(Lane lane, const ParamSet& p, Saved& saved, Tensor dy, bool fused) const;
    /// The router: affinities (kept), routes and each expert's pairs.
    void route(Lane lane, const ParamSet& p, const Tensor& xn, Saved& sv) const;
    /// gates() with the affinities downloaded on `lane` (where they were written).
    std::vector<double> gatesOn(Lane lane, const Saved& sv) const;
    /// The router logits' gradient from dy and the routed outputs kept at each expert's output slot.
    Tensor logitGradient(Lane lane, const Saved& sv, const Tensor& dy, MemoryCategory category) const;
    /// What the start of F gives: the normed input (T × h), the gate of each token-slot pair, and the output so
    /// far (the residual plus the shared experts).
    struct ForwardStart {
        Tensor xn;
        std::vector<double> gates;
        Tensor y;
    };
    /// The start of F both paths share: the input's shape checked, the norm, the router and the shared experts.
    ForwardStart beginForward(Lane lane, const ParamSet& p, Tensor& x, Saved& sv) const;
    /// The start of I/B both paths share: checks, the router logits' gradient (returned; its W done when fused)
    /// and its input gradient into dxn (T × h, made here).
    Tensor beginBackward(Lane lane, const ParamSet& p, Saved& sv, Tensor& dy, Tensor& dxn, bool fused) const;
    // Expert parallelism (moe_ep.cpp): the same block with its routed experts on the group's members.
    Tensor forwardEp(Lane lane, const ParamSet& p, Tensor x, Saved& saved) const;
    Tensor backwardEp(Lane lane, const ParamSet& p, Saved& saved, Tensor dy, bool fused) const;
    void weightGradEp(Lane lane, const ParamSet& p, Saved& saved) const;
    std::size_t ownerSlot(int localExpert) const;
    /// The end of I/B both paths share: the shared experts' input gradients into dxn (workspace `da`, T × f_e at
    /// least), then the norm and residual; keeps what W needs (the logits' gradient, dy with shared experts).
    Tensor finishBackward(
        Lane lane, const ParamSet& p, Saved& sv, Tensor& dxn, Tensor dy, Tensor dlogits, void* da, bool fused) const;
    /// W of the router and the shared experts (both paths).
    void routerAndSharedWeightGrad(Lane lane, const ParamSet& p, Saved& sv) const;
    std::size_t sharedSlot(int s) const;
    std::size_t expertSlot(int e) const;
    std::size_t sharedParam(int s) const { return 2 + 3 * static_cast<std::size_t>(s); }
    std::size_t expertParam(int e) const;

    Backend& m_backend;
    MoeConfig m_c;
    const ExpertGroup* m_group = nullptr;
};

} // namespace dps::runtime::layers
