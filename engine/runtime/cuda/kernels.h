#pragma once
// Our CUDA kernels (kernels.cu): exact GELU forward/backward, MSE loss with its gradient, y += αx, and
// fp32↔bf16 conversion. Every kernel computes in fp32 and reads/writes the element type given; all are
// launched on the caller's stream and return at once (launch errors are thrown by the caller's
// DPS_CUDA_CHECK(cudaGetLastError())). Results are deterministic: reductions use a fixed grid and order.
#include <cuda_runtime_api.h>

#include <cstddef>

namespace dps::runtime::kernels {

/// Element type of device tensors.
enum class Element { F32, BF16 };

/// Doubles of scratch mseLoss needs for its per-block partial sums.
inline constexpr int kReductionBlocks = 256;

/// out[i] = in[i]·Φ(in[i]) (exact erf form); out may equal in.
void geluForward(cudaStream_t stream, Element type, const void* in, void* out, std::size_t n);
/// gradIn[i] = gradOut[i]·(Φ(x) + x·φ(x)), x = in[i]; gradIn may equal gradOut.
void geluBackward(cudaStream_t stream, Element type, const void* in, const void* gradOut, void* gradIn, std::size_t n);
/// grad[i] = (2/n)·(y[i] − target[i]); *lossDevice = Σ(y − target)² / n in double. `partials` holds
/// kReductionBlocks doubles of device scratch.
void mseLoss(cudaStream_t stream, Element type, const void* y, const void* target, std::size_t n, void* grad,
    double* partials, double* lossDevice);
/// y[i] += alpha·x[i].
void axpy(cudaStream_t stream, Element type, std::size_t n, float alpha, const void* x, void* y);
/// bf16 (round to nearest even) from fp32, and back.
void floatToBf16(cudaStream_t stream, const float* in, void* out, std::size_t n);
void bf16ToFloat(cudaStream_t stream, const void* in, float* out, std::size_t n);

} // namespace dps::runtime::kernels
