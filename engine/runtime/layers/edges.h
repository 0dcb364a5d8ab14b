#pragma once
// The two ends of a decoder-only transformer (docs/layers.md, "Embedding and LM head"):
//  - Embedding (first stage): x[t] = E[id_t], E vocab × h (PyTorch's nn.Embedding, weight "embed_tokens");
//  - LmHead (last stage): the final RMSNorm, logits = RMSNorm(x)·W_headᵀ (W_head vocab × h, "lm_head") and the
//    mean cross-entropy over the microbatch's T tokens, L = −(1/T) Σ_t log softmax(logits_t)[target_t].
// F, I (backward for inputs) and W (backward for weights) are kept apart as for the other layers (common.h), and
// what each keeps is the model library's ledger (engine/model/transformer.cpp, embeddingCost and headCost, with
// 4-byte elements): the embedding keeps nothing from F to I and the output gradient (T × h) from I to W (the
// token ids are the microbatch's data, not counted); the head keeps the final norm's input, the head's input
// (T × h each) and the fp32 logits (T × vocab) from F to I, then the head's input and the logits' gradient
// (T × vocab, in place of the logits) from I to W. The lookup, its scatter-add and the cross-entropy (softmax with
// the row maximum subtracted, sums in double) are the backend's kernels, the GEMMs Backend::gemm; fp32 backends
// only (requireFp32).
#include "runtime/layers/common.h"

#include <vector>

namespace dps::runtime::layers {

/// Token embedding. Parameters: embed_tokens (vocab × h).
class Embedding {
public:
    /// Throws RuntimeError for sizes below 1 or a backend the layers cannot run on.
    Embedding(Backend& backend, int vocab, int hidden);

    std::vector<ParamShape> parameterShapes() const;
    /// F: the rows of E for `ids` (T ids, each in [0, vocab)): T × h, Workspace. Keeps nothing; `saved` must be
    /// Empty and becomes AfterForward. Throws RuntimeError naming the first id out of range.
    Tensor forward(Lane lane, const ParamSet& p, const std::vector<int>& ids, Saved& saved) const;
    /// I: the embedding has no input to pass a gradient to; keeps dy (T × h, consumed) for W.
    void inputGrad(Lane lane, const ParamSet& p, Saved& saved, Tensor dy) const;
    /// W: dE[id_t] += dy[t] for every token (a scatter-add, in token order), then frees dy. `ids` as in F.
    void weightGrad(Lane lane, const ParamSet& p, Saved& saved, const std::vector<int>& ids) const;
    /// B: I then W at once; keeps nothing.
    void backward(Lane lane, const ParamSet& p, Saved& saved, Tensor dy, const std::vector<int>& ids) const;

private:
    Backend& m_backend;
    int m_vocab;
    int m_hidden;
};

/// The final RMSNorm, the LM head and the cross-entropy loss. Parameters: norm (1 × h), lm_head (vocab × h).
class LmHead {
public:
    /// Throws RuntimeError for sizes below 1 or a backend the layers cannot run on.
    LmHead(Backend& backend, int vocab, int hidden);

    std::vector<ParamShape> parameterShapes() const;
    /// F: consumes x (T × h); returns the mean cross-entropy of the T tokens against `targets` (T ids in
    /// [0, vocab)) and keeps x, RMSNorm(x) and the logits. Throws RuntimeError naming the first target out of
    /// range or a shape mismatch.
    double forward(Lane lane, const ParamSet& p, Tensor x, const std::vector<int>& targets, Saved& saved) const;
    /// I: the gradient of the loss by x (T × h, Workspace); the norm's weight gradient is accumulated here.
    /// The logits become their gradient (softmax − one-hot) / T in place; keeps it and RMSNorm(x) for W.
    Tensor inputGrad(Lane lane, const ParamSet& p, Saved& saved, const std::vector<int>& targets) const;
    /// W: dW_head += dlogitsᵀ · RMSNorm(x); frees what I kept.
    void weightGrad(Lane lane, const ParamSet& p, Saved& saved) const;
    /// B: I then W at once; keeps nothing.
    Tensor backward(Lane lane, const ParamSet& p, Saved& saved, const std::vector<int>& targets) const;

private:
    Backend& m_backend;
    int m_vocab;
    int m_hidden;
};

} // namespace dps::runtime::layers
