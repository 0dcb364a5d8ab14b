#pragma once
// The SwiGLU MLP (Shazeer 2020, "GLU Variants Improve Transformer", eq. 6 without biases; Llama 3, Mixtral and
// DeepSeek-V3's experts): out = (SiLU(x·W_gateᵀ) ⊙ x·W_upᵀ)·W_downᵀ, SiLU(z) = z·σ(z) (Elfwing et al. 2018).
// Backward, with a = SiLU(gate) ⊙ up the down projection's input and da = dout·W_down:
//   dgate = da ⊙ up ⊙ σ(gate)·(1 + gate·(1 − σ(gate))),   dup = da ⊙ SiLU(gate),
//   dx = dgate·W_gate + dup·W_up;  W: dW_gate += dgateᵀx, dW_up += dupᵀx, dW_down += doutᵀa.
// The FFN functions work on any number of rows (the dense MLP: all T tokens; an expert: the tokens routed to
// it) and keep their tensors in three slots of a Saved: gate, up, a after F; dgate, dup, a after I (the
// gradients overwrite gate and up in place). DenseMlp is the dense MLP block y = x + SwiGLU(RMSNorm(x)).
#include "model/transformer.h"
#include "runtime/layers/common.h"

namespace dps::runtime::layers {

/// F of a SwiGLU FFN on `rows` rows of x (rows × h): keeps gate, up, a (rows × f, Activation) in slots
/// [slot, slot + 3) and writes out (rows × h) = a·W_downᵀ + outBeta·out. w: gate_proj (f × h), up_proj (f × h),
/// down_proj (h × f).
void swigluForward(Backend& backend, Lane lane, const ParamView& gate, const ParamView& up, const ParamView& down,
    const void* x, std::size_t rows, Saved& saved, std::size_t slot, void* out, float outBeta);
/// I of a SwiGLU FFN from dout (rows × h): dx (rows × h) = dgate·W_gate + dup·W_up + dxBeta·dx; the slots then
/// hold dgate, dup, a (what W needs with x and dout). `scratch` holds rows × f elements (the down projection's
/// input gradient; the caller allocates it, so an MoE block's peak does not depend on its routing). With
/// `fused` the weight gradients are accumulated at once from x and dout and the slots freed (B).
void swigluInputGrad(Backend& backend, Lane lane, const ParamView& gate, const ParamView& up, const ParamView& down,
    const void* x, const void* dout, std::size_t rows, Saved& saved, std::size_t slot, void* dx, float dxBeta,
    void* scratch, bool fused);
/// W of a SwiGLU FFN: accumulates the three weight gradients from the slots, x and dout, and frees the slots.
void swigluWeightGrad(Backend& backend, Lane lane, const ParamView& gate, const ParamView& up, const ParamView& down,
    const void* x, const void* dout, std::size_t rows, Saved& saved, std::size_t slot);

/// Sizes of a dense MLP block for one microbatch.
struct MlpConfig {
    int hidden = 0; ///< h
    int ffn = 0; ///< f
    int tokens = 0; ///< T
    /// The dense MLP of global layer `layer` of `m` (f = moe.dense_ffn for the dense layers of an MoE model when
    /// given). Throws FormatError as model::check does.
    static MlpConfig of(const model::Transformer& m, int layer);
};

/// y = x + SwiGLU(RMSNorm(x)). Parameters: post_attention_layernorm (1 × h), gate_proj (f × h), up_proj (f × h),
/// down_proj (h × f).
class DenseMlp final : public FusableLayer {
public:
    /// Throws RuntimeError for sizes below 1 or a backend that does not compute in fp32.
    DenseMlp(Backend& backend, const MlpConfig& config);

    std::string kind() const override { return "swiglu"; }
    std::vector<ParamShape> parameterShapes() const override;
    Tensor forward(Lane lane, const ParamSet& p, Tensor x, Saved& saved) const override;
    void weightGrad(Lane lane, const ParamSet& p, Saved& saved) const override;

private:
    Tensor backwardImpl(Lane lane, const ParamSet& p, Saved& saved, Tensor dy, bool fused) const override;

    Backend& m_backend;
    MlpConfig m_c;
};

} // namespace dps::runtime::layers
