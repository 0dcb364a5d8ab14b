// The CPU backend's kernels of the transformer layers (backend.h, "kernels of the transformer layers";
// docs/layers.md, "Backends"): the host loops the layers ran themselves before the kernels moved behind the
// backend, unchanged, so the CPU results stay bit-identical. RMSNorm and the rotary embedding are the host
// functions of layers/rmsnorm.h and layers/rope.h (their formulas and sources are there); the other loops'
// formulas are documented where the layers use them (attentioncore.h, swiglu.h, moe.h, edges.h).
#include "runtime/cpubackend.h"
#include "runtime/layers/rmsnorm.h"
#include "runtime/layers/rope.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dps::runtime {

namespace {

float* f(void* p)
{
    return static_cast<float*>(p);
}

const float* f(const void* p)
{
    return static_cast<const float*>(p);
}

std::size_t z(int v)
{
    return static_cast<std::size_t>(v);
}

/// σ(z) in fp32 (std::exp of a float: within an ulp or two; SiLU's relative error stays ~1e-7).
float sigmoid(float v)
{
    return 1.0f / (1.0f + std::exp(-v));
}

/// The index of head-major row (b, j, s) of `heads` heads of seqLen rows.
std::size_t headRow(int b, int j, int s, int heads, int seqLen)
{
    return (z(b) * z(heads) + z(j)) * z(seqLen) + z(s);
}

} // namespace

void CpuBackend::rmsNormForward(Lane, const void* x, std::size_t xStride, const void* g, void* y, std::size_t yStride,
    std::size_t rows, std::size_t n, float eps)
{
    layers::rmsNormForward(f(x), xStride, f(g), f(y), yStride, rows, n, eps);
}

void CpuBackend::rmsNormBackward(Lane, const void* x, std::size_t xStride, const void* g, const void* dy,
    std::size_t dyStride, void* dx, std::size_t dxStride, void* dg, std::size_t rows, std::size_t n, float eps)
{
    layers::rmsNormBackward(f(x), xStride, f(g), f(dy), dyStride, f(dx), dxStride, dg ? f(dg) : nullptr, rows, n, eps);
}

void CpuBackend::ropeApply(Lane, void* x, std::size_t rows, std::size_t rowStride, int heads, std::size_t headStride,
    std::size_t colOffset, int ropeDim, int seqLen, double base, bool inverse)
{
    layers::ropeApply(f(x), rows, rowStride, heads, headStride, colOffset, ropeDim, seqLen, base, inverse);
}

void CpuBackend::causalSoftmaxForward(Lane, void* scores, std::size_t seqLen, std::size_t count)
{
    const std::size_t s = seqLen;
    for (std::size_t m = 0; m < count; ++m) {
        float* pi = f(scores) + m * s * s;
        for (std::size_t r = 0; r < s; ++r) {
            float* row = pi + r * s;
            float top = row[0];
            for (std::size_t j = 1; j <= r; ++j)
                top = std::max(top, row[j]);
            double sum = 0.0;
            for (std::size_t j = 0; j <= r; ++j) {
                row[j] = std::exp(row[j] - top);
                sum += row[j];
            }
            const auto inv = static_cast<float>(1.0 / sum);
            for (std::size_t j = 0; j <= r; ++j)
                row[j] *= inv;
            for (std::size_t j = r + 1; j < s; ++j)
                row[j] = 0.0f;
        }
    }
}

void CpuBackend::causalSoftmaxBackward(Lane, const void* probs, void* grad, std::size_t seqLen)
{
    const std::size_t s = seqLen;
    const float* pi = f(probs);
    float* ds = f(grad);
    for (std::size_t r = 0; r < s; ++r) {
        const float* pr = pi + r * s;
        float* dr = ds + r * s;
        double dot = 0.0;
        for (std::size_t j = 0; j <= r; ++j)
            dot += static_cast<double>(pr[j]) * static_cast<double>(dr[j]);
        for (std::size_t j = 0; j <= r; ++j)
            dr[j] = static_cast<float>(static_cast<double>(pr[j]) * (static_cast<double>(dr[j]) - dot));
        for (std::size_t j = r + 1; j < s; ++j)
            dr[j] = 0.0f;
    }
}

void CpuBackend::swigluForward(Lane, const void* gate, const void* up, void* out, std::size_t n)
{
    const float* gp = f(gate);
    const float* upp = f(up);
    float* ap = f(out);
    for (std::size_t i = 0; i < n; ++i) {
        const float v = gp[i];
        ap[i] = v * sigmoid(v) * upp[i];
    }
}

void CpuBackend::swigluBackward(Lane, void* gate, void* up, const void* da, std::size_t n)
{
    float* gp = f(gate);
    float* upp = f(up);
    const float* dap = f(da);
    for (std::size_t i = 0; i < n; ++i) {
        const float v = gp[i];
        const float s = sigmoid(v);
        const float u = upp[i];
        const float d = dap[i];
        gp[i] = d * u * s * (1.0f + v * (1.0f - s));
        upp[i] = d * v * s;
    }
}

void CpuBackend::gatherHeads(Lane, const void* src, const HeadLayout& layout, int batch, int seqLen, int heads,
    int width, void* dst, int dstWidth, int dstOffset)
{
    for (int b = 0; b < batch; ++b)
        for (int j = 0; j < heads; ++j)
            for (int s = 0; s < seqLen; ++s) {
                const std::size_t t = z(b) * z(seqLen) + z(s);
                const float* from = f(src) + t * layout.rowStride + layout.colOffset + z(j) * layout.headStride;
                float* to = f(dst) + headRow(b, j, s, heads, seqLen) * z(dstWidth) + z(dstOffset);
                std::memcpy(to, from, z(width) * sizeof(float));
            }
}

void CpuBackend::scatterHeads(Lane, const void* src, int batch, int seqLen, int heads, int width, int srcWidth,
    int srcOffset, void* dst, const HeadLayout& layout, bool accumulate)
{
    for (int b = 0; b < batch; ++b)
        for (int j = 0; j < heads; ++j)
            for (int s = 0; s < seqLen; ++s) {
                const std::size_t t = z(b) * z(seqLen) + z(s);
                const float* from = f(src) + headRow(b, j, s, heads, seqLen) * z(srcWidth) + z(srcOffset);
                float* to = f(dst) + t * layout.rowStride + layout.colOffset + z(j) * layout.headStride;
                if (accumulate)
                    for (int c = 0; c < width; ++c)
                        to[c] += from[c];
                else
                    std::memcpy(to, from, z(width) * sizeof(float));
            }
}

void CpuBackend::gatherRows(
    Lane, const void* src, std::size_t cols, const int* rowsHost, const float* scalesHost, std::size_t n, void* dst)
{
    for (std::size_t r = 0; r < n; ++r) {
        const float* from = f(src) + static_cast<std::size_t>(rowsHost[r]) * cols;
        float* to = f(dst) + r * cols;
        if (!scalesHost) {
            std::memcpy(to, from, cols * sizeof(float));
            continue;
        }
        const float scale = scalesHost[r];
        for (std::size_t c = 0; c < cols; ++c)
            to[c] = scale * from[c];
    }
}

void CpuBackend::scatterAddRows(
    Lane, const void* src, std::size_t cols, const int* rowsHost, const float* scalesHost, std::size_t n, void* dst)
{
    for (std::size_t r = 0; r < n; ++r) {
        float* to = f(dst) + static_cast<std::size_t>(rowsHost[r]) * cols;
        const float* from = f(src) + r * cols;
        if (!scalesHost) {
            for (std::size_t c = 0; c < cols; ++c)
                to[c] += from[c];
            continue;
        }
        const float scale = scalesHost[r];
        for (std::size_t c = 0; c < cols; ++c)
            to[c] += scale * from[c];
    }
}

void CpuBackend::rowDots(
    Lane, const void* a, const int* aRowsHost, const void* b, std::size_t n, std::size_t cols, double* dotsHost)
{
    for (std::size_t r = 0; r < n; ++r) {
        const float* d = f(a) + static_cast<std::size_t>(aRowsHost[r]) * cols;
        const float* out = f(b) + r * cols;
        double dot = 0.0;
        for (std::size_t c = 0; c < cols; ++c)
            dot += static_cast<double>(d[c]) * static_cast<double>(out[c]);
        dotsHost[r] = dot;
    }
}

void CpuBackend::crossEntropyForward(
    Lane, const void* logits, std::size_t rows, std::size_t vocab, const int* targetsHost, double* lossesHost)
{
    for (std::size_t row = 0; row < rows; ++row) {
        const float* zr = f(logits) + row * vocab;
        const float top = *std::max_element(zr, zr + vocab);
        double partition = 0.0;
        for (std::size_t j = 0; j < vocab; ++j)
            partition += std::exp(static_cast<double>(zr[j]) - top);
        lossesHost[row] = std::log(partition) + top - zr[static_cast<std::size_t>(targetsHost[row])];
    }
}

void CpuBackend::crossEntropyBackward(
    Lane, void* logits, std::size_t rows, std::size_t vocab, const int* targetsHost, double scale)
{
    for (std::size_t row = 0; row < rows; ++row) {
        float* zr = f(logits) + row * vocab;
        const float top = *std::max_element(zr, zr + vocab);
        double partition = 0.0;
        for (std::size_t j = 0; j < vocab; ++j)
            partition += std::exp(static_cast<double>(zr[j]) - top);
        for (std::size_t j = 0; j < vocab; ++j)
            zr[j] = static_cast<float>(std::exp(static_cast<double>(zr[j]) - top) / partition * scale);
        zr[static_cast<std::size_t>(targetsHost[row])] -= static_cast<float>(scale);
    }
}

} // namespace dps::runtime
