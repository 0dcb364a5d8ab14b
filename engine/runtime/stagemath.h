#pragma once
// Forward and backward of one stage of the block model on a backend, split the way the schedules need:
// F, I (input gradients, keeping what W needs), W (weight gradients) and B (I and W at once). The tensors
// kept between actions are exactly the activation ledger of engine/project/modelcost.h, allocated in
// MemoryCategory::Activation; everything else is Workspace or Communication.
//
// Per layer, T = tokens: X (T×h) → H = X·W1ᵀ (T×f) → A = GELU(H) (T×f) → Y = A·W2ᵀ (T×h).
// Backward from dY (T×h): dW2 += dYᵀ·A, dA = dY·W2, dH = dA ⊙ GELU'(H), dW1 += dHᵀ·X, dX = dH·W1.
#include "layers/common.h"
#include "model.h"

namespace dps::runtime {

/// What one layer keeps between actions.
struct LayerSaved {
    Tensor x; ///< the layer input, T×h: from F until W (or B)
    Tensor h; ///< pre-GELU, T×f: from F until I (or B)
    Tensor a; ///< GELU(H), T×f: from I until W
    Tensor dh; ///< T×f: from I until W
    Tensor dy; ///< gradient of the layer output, T×h: from I until W
};

/// What one (stage, microbatch) keeps between its actions.
struct SavedActivations {
    std::vector<LayerSaved> layers;
    Tensor lossGrad; ///< last stage: dL/dY of the final output (T×h), from F until I or B
    std::vector<layers::Saved> blocks; ///< a transformer stage: what each of its blocks keeps (transformerstage.h)
    bool inputGradDone = false; ///< I ran; W still due
    /// Bytes of everything kept.
    std::size_t bytes() const;
};

/// The stage computations; stateless apart from the sizes.
class StageMath {
public:
    StageMath(Backend& backend, const ModelSpec& spec);

    /// F of a stage for one microbatch. `input` (T×h) is consumed: it becomes the first layer's X. On the
    /// last stage `target` (T×h) must be given: the loss is written to *loss (valid after synchronize())
    /// and nothing is returned; otherwise returns the output (T×h, Communication).
    Tensor forward(Lane lane, const StageParams& params, Tensor input, SavedActivations& saved, bool lastStage,
        const Tensor* target, double* loss) const;
    /// I: from the output gradient (`gradOutput`, T×h, ignored and empty on the last stage, where the loss
    /// gradient is used), computes the input gradient and keeps X, A, dH, dY per layer for W. Returns the
    /// input gradient (T×h, Communication), or nothing when `wantInputGrad` is false (the first stage).
    Tensor inputGrad(
        Lane lane, const StageParams& params, SavedActivations& saved, Tensor gradOutput, bool wantInputGrad) const;
    /// W: accumulates the weight gradients from what I kept and frees it.
    void weightGrad(Lane lane, const StageParams& params, SavedActivations& saved) const;
    /// B: I and W at once; frees everything F kept. Returns the input gradient as inputGrad does.
    Tensor backward(
        Lane lane, const StageParams& params, SavedActivations& saved, Tensor gradOutput, bool wantInputGrad) const;

private:
    Tensor matrix(std::size_t cols, MemoryCategory category) const;
    Tensor outputGradient(SavedActivations& saved, Tensor gradOutput, MemoryCategory category) const;

    Backend& m_backend;
    int m_t;
    int m_h;
    int m_f;
};

} // namespace dps::runtime
