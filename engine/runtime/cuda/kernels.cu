// Our kernels; see kernels.h. Grid-stride loops with a fixed grid so results do not depend on timing.
#include "kernels.h"
#include "launchgrid.cuh"

#include <cuda_bf16.h>

namespace dps::runtime::kernels {

namespace {

using launchgrid::blocksFor;
using launchgrid::kThreads;

template <typename T> __device__ float load(const T* p, std::size_t i);
template <> __device__ float load<float>(const float* p, std::size_t i)
{
    return p[i];
}
template <> __device__ float load<__nv_bfloat16>(const __nv_bfloat16* p, std::size_t i)
{
    return __bfloat162float(p[i]);
}

template <typename T> __device__ void store(T* p, std::size_t i, float v);
template <> __device__ void store<float>(float* p, std::size_t i, float v)
{
    p[i] = v;
}
template <> __device__ void store<__nv_bfloat16>(__nv_bfloat16* p, std::size_t i, float v)
{
    p[i] = __float2bfloat16(v);
}

__device__ float geluCdf(float x)
{
    return 0.5f * (1.0f + erff(x * 0.70710678118654752f));
}

template <typename T> __global__ void geluForwardKernel(const T* in, T* out, std::size_t n)
{
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(blockDim.x) * gridDim.x) {
        const float x = load(in, i);
        store(out, i, x * geluCdf(x));
    }
}

template <typename T> __global__ void geluBackwardKernel(const T* in, const T* gradOut, T* gradIn, std::size_t n)
{
    constexpr float kInvSqrt2Pi = 0.39894228040143268f;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(blockDim.x) * gridDim.x) {
        const float x = load(in, i);
        const float pdf = expf(-0.5f * x * x) * kInvSqrt2Pi;
        store(gradIn, i, load(gradOut, i) * (geluCdf(x) + x * pdf));
    }
}

/// Per-block partial sums of (y − t)² in double (fixed tree order) and the gradient.
template <typename T>
__global__ void msePartialKernel(const T* y, const T* target, std::size_t n, T* grad, double* partials)
{
    __shared__ double sums[kThreads];
    const float scale = 2.0f / static_cast<float>(n);
    double sum = 0.0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(blockDim.x) * gridDim.x) {
        const float d = load(y, i) - load(target, i);
        sum += static_cast<double>(d) * static_cast<double>(d);
        store(grad, i, scale * d);
    }
    sums[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
        if (static_cast<int>(threadIdx.x) < stride)
            sums[threadIdx.x] += sums[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partials[blockIdx.x] = sums[0];
}

__global__ void mseFinalKernel(const double* partials, std::size_t n, double* loss)
{
    __shared__ double sums[kReductionBlocks];
    sums[threadIdx.x] = partials[threadIdx.x];
    __syncthreads();
    for (int stride = kReductionBlocks / 2; stride > 0; stride /= 2) {
        if (static_cast<int>(threadIdx.x) < stride)
            sums[threadIdx.x] += sums[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *loss = sums[0] / static_cast<double>(n);
}

template <typename T> __global__ void axpyKernel(std::size_t n, float alpha, const T* x, T* y)
{
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(blockDim.x) * gridDim.x)
        store(y, i, load(y, i) + alpha * load(x, i));
}

template <typename From, typename To> __global__ void convertKernel(const From* in, To* out, std::size_t n)
{
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(blockDim.x) * gridDim.x)
        store(out, i, load(in, i));
}

using Bf16 = __nv_bfloat16;

} // namespace

void geluForward(cudaStream_t stream, Element type, const void* in, void* out, std::size_t n)
{
    if (type == Element::F32)
        geluForwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(
            static_cast<const float*>(in), static_cast<float*>(out), n);
    else
        geluForwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(
            static_cast<const Bf16*>(in), static_cast<Bf16*>(out), n);
}

void geluBackward(cudaStream_t stream, Element type, const void* in, const void* gradOut, void* gradIn, std::size_t n)
{
    if (type == Element::F32)
        geluBackwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(
            static_cast<const float*>(in), static_cast<const float*>(gradOut), static_cast<float*>(gradIn), n);
    else
        geluBackwardKernel<<<blocksFor(n), kThreads, 0, stream>>>(
            static_cast<const Bf16*>(in), static_cast<const Bf16*>(gradOut), static_cast<Bf16*>(gradIn), n);
}

void mseLoss(cudaStream_t stream, Element type, const void* y, const void* target, std::size_t n, void* grad,
    double* partials, double* lossDevice)
{
    if (type == Element::F32)
        msePartialKernel<<<kReductionBlocks, kThreads, 0, stream>>>(
            static_cast<const float*>(y), static_cast<const float*>(target), n, static_cast<float*>(grad), partials);
    else
        msePartialKernel<<<kReductionBlocks, kThreads, 0, stream>>>(
            static_cast<const Bf16*>(y), static_cast<const Bf16*>(target), n, static_cast<Bf16*>(grad), partials);
    mseFinalKernel<<<1, kReductionBlocks, 0, stream>>>(partials, n, lossDevice);
}

void axpy(cudaStream_t stream, Element type, std::size_t n, float alpha, const void* x, void* y)
{
    if (type == Element::F32)
        axpyKernel<<<blocksFor(n), kThreads, 0, stream>>>(
            n, alpha, static_cast<const float*>(x), static_cast<float*>(y));
    else
        axpyKernel<<<blocksFor(n), kThreads, 0, stream>>>(n, alpha, static_cast<const Bf16*>(x), static_cast<Bf16*>(y));
}

void floatToBf16(cudaStream_t stream, const float* in, void* out, std::size_t n)
{
    convertKernel<<<blocksFor(n), kThreads, 0, stream>>>(in, static_cast<Bf16*>(out), n);
}

void bf16ToFloat(cudaStream_t stream, const void* in, float* out, std::size_t n)
{
    convertKernel<<<blocksFor(n), kThreads, 0, stream>>>(static_cast<const Bf16*>(in), out, n);
}

} // namespace dps::runtime::kernels
