#pragma once
// RMSNorm (Zhang & Sennrich 2019, "Root Mean Square Layer Normalization", eq. 4), per row of n columns:
//   y = g ⊙ x · r,   r = 1 / √(mean(x²) + ε)
// and its backward (docs/layers.md):
//   dx = r · (g ⊙ dy − x · r² · mean(g ⊙ dy ⊙ x)),   dg = Σ_rows dy ⊙ x · r.
// r is recomputed from x in the backward (one pass over the row), so only x is kept. Host kernels (the CPU
// backend's, cpulayerkernels.cpp; the cuda backend has its own, layerkernels.cu), fp32 with
// the row sums in double. Rows may be strided (a column block of a wider tensor).
#include <cstddef>

namespace dps::runtime::layers {

/// ε of the norms: 1e-6 (Llama 3's and DeepSeek-V3's rms_norm_eps).
inline constexpr float kRmsNormEps = 1e-6f;

/// y = RMSNorm(x) with weights g (n); x and y rows of n columns at strides xStride and yStride (elements).
void rmsNormForward(const float* x, std::size_t xStride, const float* g, float* y, std::size_t yStride,
    std::size_t rows, std::size_t n, float eps = kRmsNormEps);
/// dx += the input gradient from dy (so dx may hold a residual's gradient already) and dg += the weights'
/// gradient (dg may be null: not wanted). dx must not alias x or dy.
void rmsNormBackward(const float* x, std::size_t xStride, const float* g, const float* dy, std::size_t dyStride,
    float* dx, std::size_t dxStride, float* dg, std::size_t rows, std::size_t n, float eps = kRmsNormEps);

} // namespace dps::runtime::layers
