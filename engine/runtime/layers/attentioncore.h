#pragma once
// The causal attention core on head-major tensors (Vaswani et al. 2017, "Attention Is All You Need", eq. 1,
// with the causal mask of a decoder): per sequence and query head i,
//   S = scale · Q_i K_gᵀ (s × s),  P = softmax over the keys j ≤ query position (0 above the diagonal),
//   O_i = P V_g,
// where g = i / (heads / kvHeads) is the key-value head the query head shares (GQA, Ainslie et al. 2023;
// MHA: kvHeads = heads). Backward (docs/layers.md): dP = dO Vᵀ, dV_g += Pᵀ dO,
// dS = P ⊙ (dP − rowsum(dP ⊙ P)), dQ = scale · dS K, dK_g += scale · dSᵀ Q. P is kept at its full square
// (s² per sequence and head, as the model library counts it without recompute). GEMMs through the backend.
#include "runtime/backend.h"

namespace dps::runtime::layers {

/// Sizes of one attention core.
struct CoreShape {
    int batch = 1; ///< sequences
    int seqLen = 1; ///< s
    int heads = 1; ///< query heads
    int kvHeads = 1; ///< key/value heads; divides heads
    int dk = 1; ///< query/key head size
    int dv = 1; ///< value head size
    float scale = 1.0f; ///< the score scale, 1/√dk
};

/// F: q (batch × heads × s × dk), k (batch × kvHeads × s × dk), v (batch × kvHeads × s × dv) → p
/// (batch × heads × s × s, the kept probabilities) and o (batch × heads × s × dv).
void attentionCoreForward(
    Backend& backend, Lane lane, const CoreShape& c, const void* q, const void* k, const void* v, void* p, void* o);
/// I (the core has no weights): from do_ (as o) writes dq, dk, dv (shaped as q, k, v). `scratch` holds s × s
/// elements.
void attentionCoreBackward(Backend& backend, Lane lane, const CoreShape& c, const void* q, const void* k, const void* v,
    const void* p, const void* dO, void* dq, void* dk, void* dv, void* scratch);

} // namespace dps::runtime::layers
