#pragma once
// The CUDA kernels of the transformer layers (layerkernels.cu): the Backend ops of backend.h's section "kernels
// of the transformer layers", fp32 only, with the CPU backend's loops (cpulayerkernels.cpp) as the reference:
// the same formulas, row sums and angles in double, fp32 elementwise math (expf for the CPU's std::exp of a
// float). Every function launches on the caller's stream and returns at once (launch errors are thrown by the
// caller's DPS_CUDA_CHECK(cudaGetLastError())). Results are deterministic: every sum has a fixed order (block
// reductions of a fixed shape; accumulations into one element in row order, in one thread). Pointers are
// device pointers; index and gate arrays are device copies the backend made of the layer's host arrays.
#include <cuda_runtime_api.h>

#include <cstddef>

namespace dps::runtime::layerkernels {

/// RMSNorm forward (backend.h, Backend::rmsNormForward).
void rmsNormForward(cudaStream_t stream, const float* x, std::size_t xStride, const float* g, float* y,
    std::size_t yStride, std::size_t rows, std::size_t n, float eps);
/// RMSNorm backward (Backend::rmsNormBackward); `inverseRms` holds `rows` doubles of device scratch (each row's r,
/// written by the input gradient's kernel and read by the weights').
void rmsNormBackward(cudaStream_t stream, const float* x, std::size_t xStride, const float* g, const float* dy,
    std::size_t dyStride, float* dx, std::size_t dxStride, float* dg, std::size_t rows, std::size_t n, float eps,
    double* inverseRms);
/// Rotary embedding in place (Backend::ropeApply); ropeDim even, seqLen ≥ 1 (checked by the caller).
void ropeApply(cudaStream_t stream, float* x, std::size_t rows, std::size_t rowStride, int heads,
    std::size_t headStride, std::size_t colOffset, int ropeDim, int seqLen, double base, bool inverse);
/// The causal softmax of `count` seqLen × seqLen matrices in place, and its backward on one.
void causalSoftmaxForward(cudaStream_t stream, float* scores, std::size_t seqLen, std::size_t count);
void causalSoftmaxBackward(cudaStream_t stream, const float* probs, float* grad, std::size_t seqLen);
/// SwiGLU's product and its backward in place (Backend::swigluForward, swigluBackward).
void swigluForward(cudaStream_t stream, const float* gate, const float* up, float* out, std::size_t n);
void swigluBackward(cudaStream_t stream, float* gate, float* up, const float* da, std::size_t n);
/// Where a token-major tensor holds its heads: runtime::HeadLayout (backend.h) without the header, which this
/// file's C++17 CUDA translation unit does not include.
struct Heads {
    std::size_t rowStride = 0;
    std::size_t colOffset = 0;
    std::size_t headStride = 0;
};

/// Token-major ↔ head-major copies (Backend::gatherHeads, scatterHeads).
void gatherHeads(cudaStream_t stream, const float* src, const Heads& layout, int batch, int seqLen, int heads,
    int width, float* dst, int dstWidth, int dstOffset);
void scatterHeads(cudaStream_t stream, const float* src, int batch, int seqLen, int heads, int width, int srcWidth,
    int srcOffset, float* dst, const Heads& layout, bool accumulate);
/// Row gathers and scatter-adds (Backend::gatherRows, scatterAddRows); `scales` may be null.
void gatherRows(cudaStream_t stream, const float* src, std::size_t cols, const int* rows, const float* scales,
    std::size_t n, float* dst);
void scatterAddRows(cudaStream_t stream, const float* src, std::size_t cols, const int* rows, const float* scales,
    std::size_t n, float* dst);
/// dots[r] = ⟨a row aRows[r], b row r⟩ in double (Backend::rowDots), into device memory.
void rowDots(cudaStream_t stream, const float* a, const int* aRows, const float* b, std::size_t n, std::size_t cols,
    double* dots);
/// Cross-entropy per row into device memory, and its gradient in place (Backend::crossEntropyForward, Backward).
void crossEntropyForward(
    cudaStream_t stream, const float* logits, std::size_t rows, std::size_t vocab, const int* targets, double* losses);
void crossEntropyBackward(
    cudaStream_t stream, float* logits, std::size_t rows, std::size_t vocab, const int* targets, double scale);

} // namespace dps::runtime::layerkernels
