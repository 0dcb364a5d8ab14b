// The transformer layers' kernels; see layerkernels.h. The formulas and their sources are the CPU reference's
// (cpulayerkernels.cpp, layers/rmsnorm.h, rope.h, attentioncore.h, swiglu.h, moe.h, edges.h). Row kernels run
// one block of kThreads threads per row and reduce in shared memory in a fixed tree order; elementwise kernels
// are grid-stride loops over a fixed grid.
#include "launchgrid.cuh"
#include "layerkernels.h"

#include <cfloat>

namespace dps::runtime::layerkernels {

namespace {

using launchgrid::blocksFor;
using launchgrid::kThreads;

int rowBlocks(std::size_t rows)
{
    return static_cast<int>(rows); // callers pass rows ≥ 1 and below 2³¹ (tokens, or heads × tokens)
}

__device__ std::size_t firstIndex()
{
    return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
}

__device__ std::size_t gridStride()
{
    return static_cast<std::size_t>(blockDim.x) * gridDim.x;
}

/// The block's sum of `v` (every thread passes its partial; every thread gets the sum). `shared` holds kThreads.
__device__ double blockSum(double v, double* shared)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
        if (static_cast<int>(threadIdx.x) < stride)
            shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    const double sum = shared[0];
    __syncthreads(); // shared is free again
    return sum;
}

/// The block's maximum of `v`, as blockSum.
__device__ float blockMax(float v, float* shared)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
        if (static_cast<int>(threadIdx.x) < stride)
            shared[threadIdx.x] = fmaxf(shared[threadIdx.x], shared[threadIdx.x + stride]);
        __syncthreads();
    }
    const float top = shared[0];
    __syncthreads();
    return top;
}

__device__ float sigmoidOf(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

// ------------------------------------------------------------------------------------------------ RMSNorm

__global__ void rmsNormForwardKernel(
    const float* x, std::size_t xStride, const float* g, float* y, std::size_t yStride, std::size_t n, float eps)
{
    __shared__ double shared[kThreads];
    const float* xr = x + blockIdx.x * xStride;
    float* yr = y + blockIdx.x * yStride;
    double sum = 0.0;
    for (std::size_t c = threadIdx.x; c < n; c += kThreads)
        sum += static_cast<double>(xr[c]) * static_cast<double>(xr[c]);
    sum = blockSum(sum, shared);
    const double r = 1.0 / sqrt(sum / static_cast<double>(n) + static_cast<double>(eps));
    for (std::size_t c = threadIdx.x; c < n; c += kThreads)
        yr[c] = static_cast<float>(static_cast<double>(g[c]) * static_cast<double>(xr[c]) * r);
}

__global__ void rmsNormInputGradKernel(const float* x, std::size_t xStride, const float* g, const float* dy,
    std::size_t dyStride, float* dx, std::size_t dxStride, std::size_t n, float eps, double* inverseRms)
{
    __shared__ double shared[kThreads];
    const float* xr = x + blockIdx.x * xStride;
    const float* dyr = dy + blockIdx.x * dyStride;
    float* dxr = dx + blockIdx.x * dxStride;
    double squares = 0.0;
    double dot = 0.0; // Σ g ⊙ dy ⊙ x
    for (std::size_t c = threadIdx.x; c < n; c += kThreads) {
        squares += static_cast<double>(xr[c]) * static_cast<double>(xr[c]);
        dot += static_cast<double>(g[c]) * static_cast<double>(dyr[c]) * static_cast<double>(xr[c]);
    }
    squares = blockSum(squares, shared);
    dot = blockSum(dot, shared);
    const double r = 1.0 / sqrt(squares / static_cast<double>(n) + static_cast<double>(eps));
    const double k = r * r * dot / static_cast<double>(n);
    for (std::size_t c = threadIdx.x; c < n; c += kThreads) {
        const double gdy = static_cast<double>(g[c]) * static_cast<double>(dyr[c]);
        dxr[c] += static_cast<float>(r * (gdy - static_cast<double>(xr[c]) * k));
    }
    if (threadIdx.x == 0)
        inverseRms[blockIdx.x] = r;
}

/// dg[c] += dy ⊙ x · r over the rows in row order: one thread per column.
__global__ void rmsNormWeightGradKernel(const float* x, std::size_t xStride, const float* dy, std::size_t dyStride,
    float* dg, std::size_t rows, std::size_t n, const double* inverseRms)
{
    for (std::size_t c = firstIndex(); c < n; c += gridStride()) {
        float acc = dg[c];
        for (std::size_t row = 0; row < rows; ++row)
            acc += static_cast<float>(static_cast<double>(dy[row * dyStride + c])
                * static_cast<double>(x[row * xStride + c]) * inverseRms[row]);
        dg[c] = acc;
    }
}

// ------------------------------------------------------------------------------------------------ rotary

__global__ void ropeKernel(float* x, std::size_t rows, std::size_t rowStride, int heads, std::size_t headStride,
    std::size_t colOffset, int ropeDim, int seqLen, double base, bool inverse)
{
    const auto half = static_cast<std::size_t>(ropeDim / 2);
    const std::size_t total = rows * static_cast<std::size_t>(heads) * half;
    for (std::size_t i = firstIndex(); i < total; i += gridStride()) {
        const std::size_t j = i % half;
        const std::size_t h = (i / half) % static_cast<std::size_t>(heads);
        const std::size_t t = i / half / static_cast<std::size_t>(heads);
        const std::size_t p = t % static_cast<std::size_t>(seqLen);
        const double theta = pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(ropeDim));
        const double angle = static_cast<double>(p) * theta;
        const double c = cos(angle);
        const double s = inverse ? -sin(angle) : sin(angle);
        float* v = x + t * rowStride + colOffset + h * headStride;
        const double a = v[j];
        const double b = v[j + half];
        v[j] = static_cast<float>(a * c - b * s);
        v[j + half] = static_cast<float>(b * c + a * s);
    }
}

// ------------------------------------------------------------------------------------------------ attention

/// One block per row of the count · seqLen rows.
__global__ void causalSoftmaxForwardKernel(float* scores, std::size_t seqLen)
{
    __shared__ double sums[kThreads];
    __shared__ float tops[kThreads];
    const std::size_t r = blockIdx.x % seqLen;
    float* row = scores + static_cast<std::size_t>(blockIdx.x) * seqLen;
    float top = -FLT_MAX;
    for (std::size_t j = threadIdx.x; j <= r; j += kThreads)
        top = fmaxf(top, row[j]);
    top = blockMax(top, tops);
    double sum = 0.0;
    for (std::size_t j = threadIdx.x; j <= r; j += kThreads) {
        row[j] = expf(row[j] - top);
        sum += row[j];
    }
    sum = blockSum(sum, sums);
    const auto inv = static_cast<float>(1.0 / sum);
    for (std::size_t j = threadIdx.x; j < seqLen; j += kThreads)
        row[j] = j <= r ? row[j] * inv : 0.0f;
}

__global__ void causalSoftmaxBackwardKernel(const float* probs, float* grad, std::size_t seqLen)
{
    __shared__ double sums[kThreads];
    const std::size_t r = blockIdx.x;
    const float* pr = probs + r * seqLen;
    float* dr = grad + r * seqLen;
    double dot = 0.0;
    for (std::size_t j = threadIdx.x; j <= r; j += kThreads)
        dot += static_cast<double>(pr[j]) * static_cast<double>(dr[j]);
    dot = blockSum(dot, sums);
    for (std::size_t j = threadIdx.x; j < seqLen; j += kThreads)
        dr[j] = j <= r ? static_cast<float>(static_cast<double>(pr[j]) * (static_cast<double>(dr[j]) - dot)) : 0.0f;
}

// ------------------------------------------------------------------------------------------------ SwiGLU

__global__ void swigluForwardKernel(const float* gate, const float* up, float* out, std::size_t n)
{
    for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
        const float v = gate[i];
        out[i] = v * sigmoidOf(v) * up[i];
    }
}

__global__ void swigluBackwardKernel(float* gate, float* up, const float* da, std::size_t n)
{
    for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
        const float v = gate[i];
        const float s = sigmoidOf(v);
        const float u = up[i];
        const float d = da[i];
        gate[i] = d * u * s * (1.0f + v * (1.0f - s));
        up[i] = d * v * s;
    }
}

// ------------------------------------------------------------------------------------------------ heads

__global__ void gatherHeadsKernel(const float* src, Heads layout, int batch, int seqLen, int heads, int width,
    float* dst, int dstWidth, int dstOffset)
{
    const auto w = static_cast<std::size_t>(width);
    const auto sl = static_cast<std::size_t>(seqLen);
    const auto nh = static_cast<std::size_t>(heads);
    const std::size_t total = static_cast<std::size_t>(batch) * nh * sl * w;
    for (std::size_t i = firstIndex(); i < total; i += gridStride()) {
        const std::size_t c = i % w;
        const std::size_t headRow = i / w; // (b · heads + j) · seqLen + s
        const std::size_t s = headRow % sl;
        const std::size_t j = (headRow / sl) % nh;
        const std::size_t b = headRow / sl / nh;
        const std::size_t t = b * sl + s;
        dst[headRow * static_cast<std::size_t>(dstWidth) + static_cast<std::size_t>(dstOffset) + c]
            = src[t * layout.rowStride + layout.colOffset + j * layout.headStride + c];
    }
}

/// One thread per (token, column), the heads in order (a shared head, headStride 0, sums them in order).
__global__ void scatterHeadsKernel(const float* src, int batch, int seqLen, int heads, int width, int srcWidth,
    int srcOffset, float* dst, Heads layout, bool accumulate)
{
    const auto w = static_cast<std::size_t>(width);
    const auto sl = static_cast<std::size_t>(seqLen);
    const std::size_t total = static_cast<std::size_t>(batch) * sl * w;
    for (std::size_t i = firstIndex(); i < total; i += gridStride()) {
        const std::size_t c = i % w;
        const std::size_t t = i / w; // b · seqLen + s
        const std::size_t s = t % sl;
        const std::size_t b = t / sl;
        for (int jj = 0; jj < heads; ++jj) {
            const auto j = static_cast<std::size_t>(jj);
            const std::size_t headRow = (b * static_cast<std::size_t>(heads) + j) * sl + s;
            const float v = src[headRow * static_cast<std::size_t>(srcWidth) + static_cast<std::size_t>(srcOffset) + c];
            float* to = dst + t * layout.rowStride + layout.colOffset + j * layout.headStride + c;
            *to = accumulate ? *to + v : v;
        }
    }
}

// ------------------------------------------------------------------------------------------------ rows

__global__ void gatherRowsKernel(
    const float* src, std::size_t cols, const int* rows, const float* scales, std::size_t n, float* dst)
{
    const std::size_t total = n * cols;
    for (std::size_t i = firstIndex(); i < total; i += gridStride()) {
        const std::size_t r = i / cols;
        const std::size_t c = i % cols;
        const float v = src[static_cast<std::size_t>(rows[r]) * cols + c];
        dst[i] = scales ? scales[r] * v : v;
    }
}

/// One thread per column, the rows in order (rows may repeat).
__global__ void scatterAddRowsKernel(
    const float* src, std::size_t cols, const int* rows, const float* scales, std::size_t n, float* dst)
{
    for (std::size_t c = firstIndex(); c < cols; c += gridStride())
        for (std::size_t r = 0; r < n; ++r) {
            float* to = dst + static_cast<std::size_t>(rows[r]) * cols + c;
            const float v = src[r * cols + c];
            *to += scales ? scales[r] * v : v;
        }
}

__global__ void rowDotsKernel(const float* a, const int* aRows, const float* b, std::size_t cols, double* dots)
{
    __shared__ double sums[kThreads];
    const float* ar = a + static_cast<std::size_t>(aRows[blockIdx.x]) * cols;
    const float* br = b + static_cast<std::size_t>(blockIdx.x) * cols;
    double dot = 0.0;
    for (std::size_t c = threadIdx.x; c < cols; c += kThreads)
        dot += static_cast<double>(ar[c]) * static_cast<double>(br[c]);
    dot = blockSum(dot, sums);
    if (threadIdx.x == 0)
        dots[blockIdx.x] = dot;
}

// ------------------------------------------------------------------------------------------------ cross-entropy

/// The row's maximum and Σ exp(z − max) in double, for every thread of the block.
__device__ void rowPartition(
    const float* zr, std::size_t vocab, float* tops, double* sums, float& top, double& partition)
{
    float t = -FLT_MAX;
    for (std::size_t j = threadIdx.x; j < vocab; j += kThreads)
        t = fmaxf(t, zr[j]);
    top = blockMax(t, tops);
    double p = 0.0;
    for (std::size_t j = threadIdx.x; j < vocab; j += kThreads)
        p += exp(static_cast<double>(zr[j]) - top);
    partition = blockSum(p, sums);
}

__global__ void crossEntropyForwardKernel(const float* logits, std::size_t vocab, const int* targets, double* losses)
{
    __shared__ double sums[kThreads];
    __shared__ float tops[kThreads];
    const float* zr = logits + static_cast<std::size_t>(blockIdx.x) * vocab;
    float top = 0.0f;
    double partition = 0.0;
    rowPartition(zr, vocab, tops, sums, top, partition);
    if (threadIdx.x == 0)
        losses[blockIdx.x] = log(partition) + top - zr[static_cast<std::size_t>(targets[blockIdx.x])];
}

__global__ void crossEntropyBackwardKernel(float* logits, std::size_t vocab, const int* targets, double scale)
{
    __shared__ double sums[kThreads];
    __shared__ float tops[kThreads];
    float* zr = logits + static_cast<std::size_t>(blockIdx.x) * vocab;
    float top = 0.0f;
    double partition = 0.0;
    rowPartition(zr, vocab, tops, sums, top, partition); // ends with a barrier: every read is done
    for (std::size_t j = threadIdx.x; j < vocab; j += kThreads)
        zr[j] = static_cast<float>(exp(static_cast<double>(zr[j]) - top) / partition * scale);
    __syncthreads();
    if (threadIdx.x == 0)
        zr[static_cast<std::size_t>(targets[blockIdx.x])] -= static_cast<float>(scale);
}

} // namespace

void rmsNormForward(cudaStream_t stream, const float* x, std::size_t xStride, const float* g, float* y,
    std::size_t yStride, std::size_t rows, std::size_t n, float eps)
{
    rmsNormForwardKernel<<<rowBlocks(rows), kThreads, 0, stream>>>(x, xStride, g, y, yStride, n, eps);
}

void rmsNormBackward(cudaStream_t stream, const float* x, std::size_t xStride, const float* g, const float* dy,
    std::size_t dyStride, float* dx, std::size_t dxStride, float* dg, std::size_t rows, std::size_t n, float eps,
    double* inverseRms)
{
    rmsNormInputGradKernel<<<rowBlocks(rows), kThreads, 0, stream>>>(
        x, xStride, g, dy, dyStride, dx, dxStride, n, eps, inverseRms);
    if (dg)
        rmsNormWeightGradKernel<<<blocksFor(n), kThreads, 0, stream>>>(
            x, xStride, dy, dyStride, dg, rows, n, inverseRms);
}

void ropeApply(cudaStream_t stream, float* x, std::size_t rows, std::size_t rowStride, int heads,
    std::size_t headStride, std::size_t colOffset, int ropeDim, int seqLen, double base, bool inverse)
{
    const std::size_t total = rows * static_cast<std::size_t>(heads) * static_cast<std::size_t>(ropeDim / 2);
    ropeKernel<<<blocksFor(total), kThreads, 0, stream>>>(
        x, rows, rowStride, heads, headStride, colOffset, ropeDim, seqLen, base, inverse);
}

void causalSoftmaxForward(cudaStream_t stream, float* scores, std::size_t seqLen, std::size_t count)
{
    causalSoftmaxForwardKernel<<<rowBlocks(count * seqLen), kThreads, 0, stream>>>(scores, seqLen);
}

void causalSoftmaxBackward(cudaStream_t stream, const float* probs, float* grad, std::size_t seqLen)
{
    causalSoftmaxBackwardKernel<<<rowBlocks(seqLen), kThreads, 0, stream>>>(probs, grad, seqLen);
}

void swigluForward(cudaStream_t stream, const float* gate, const float* up, float* out, std::size_t n)
{
    swigluForwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(gate, up, out, n);
}

void swigluBackward(cudaStream_t stream, float* gate, float* up, const float* da, std::size_t n)
{
    swigluBackwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(gate, up, da, n);
}

void gatherHeads(cudaStream_t stream, const float* src, const Heads& layout, int batch, int seqLen, int heads,
    int width, float* dst, int dstWidth, int dstOffset)
{
    const std::size_t total = static_cast<std::size_t>(batch) * static_cast<std::size_t>(heads)
        * static_cast<std::size_t>(seqLen) * static_cast<std::size_t>(width);
    gatherHeadsKernel<<<blocksFor(total), kThreads, 0, stream>>>(
        src, layout, batch, seqLen, heads, width, dst, dstWidth, dstOffset);
}

void scatterHeads(cudaStream_t stream, const float* src, int batch, int seqLen, int heads, int width, int srcWidth,
    int srcOffset, float* dst, const Heads& layout, bool accumulate)
{
    const std::size_t total
        = static_cast<std::size_t>(batch) * static_cast<std::size_t>(seqLen) * static_cast<std::size_t>(width);
    scatterHeadsKernel<<<blocksFor(total), kThreads, 0, stream>>>(
        src, batch, seqLen, heads, width, srcWidth, srcOffset, dst, layout, accumulate);
}

void gatherRows(cudaStream_t stream, const float* src, std::size_t cols, const int* rows, const float* scales,
    std::size_t n, float* dst)
{
    gatherRowsKernel<<<blocksFor(n * cols), kThreads, 0, stream>>>(src, cols, rows, scales, n, dst);
}

void scatterAddRows(cudaStream_t stream, const float* src, std::size_t cols, const int* rows, const float* scales,
    std::size_t n, float* dst)
{
    scatterAddRowsKernel<<<blocksFor(cols), kThreads, 0, stream>>>(src, cols, rows, scales, n, dst);
}

void rowDots(cudaStream_t stream, const float* a, const int* aRows, const float* b, std::size_t n, std::size_t cols,
    double* dots)
{
    rowDotsKernel<<<rowBlocks(n), kThreads, 0, stream>>>(a, aRows, b, cols, dots);
}

void crossEntropyForward(
    cudaStream_t stream, const float* logits, std::size_t rows, std::size_t vocab, const int* targets, double* losses)
{
    crossEntropyForwardKernel<<<rowBlocks(rows), kThreads, 0, stream>>>(logits, vocab, targets, losses);
}

void crossEntropyBackward(
    cudaStream_t stream, float* logits, std::size_t rows, std::size_t vocab, const int* targets, double scale)
{
    crossEntropyBackwardKernel<<<rowBlocks(rows), kThreads, 0, stream>>>(logits, vocab, targets, scale);
}

} // namespace dps::runtime::layerkernels
