#pragma once
// Rotary position embedding (Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position Embedding",
// eq. 34) in the rotate-half pairing of GPT-NeoX and Hugging Face's Llama and DeepSeek-V3 code: the d rotary
// columns of a head form d/2 pairs (j, j + d/2), and at position p pair j turns by the angle p·θ_j,
// θ_j = base^(−2j/d):
//   x'_j = x_j cos − x_{j+d/2} sin,   x'_{j+d/2} = x_{j+d/2} cos + x_j sin.
// The rotation is orthogonal, so its backward is the rotation by −p·θ_j applied to the gradient, and it keeps
// no tensor. Host kernel (the CPU backend's, cpulayerkernels.cpp; cuda: layerkernels.cu), angles in double.
#include <cstddef>

namespace dps::runtime::layers {

/// Rotates in place, in every row of x (rows of rowStride elements; row t is position t mod seqLen), the
/// `ropeDim` (even) columns starting at colOffset + j·headStride of each head j < heads; inverse turns by
/// −p·θ (the backward). Throws RuntimeError for an odd ropeDim or seqLen < 1.
void ropeApply(float* x, std::size_t rows, std::size_t rowStride, int heads, std::size_t headStride,
    std::size_t colOffset, int ropeDim, int seqLen, double base, bool inverse);

} // namespace dps::runtime::layers
