#include "runtime/layers/common.h"

#include "runtime/layers/rmsnorm.h"

#include <cstring>

namespace dps::runtime::layers {

std::size_t parameterElements(const std::vector<ParamShape>& shapes)
{
    std::size_t total = 0;
    for (const auto& s : shapes)
        total += s.elements();
    return total;
}

ParamSet::ParamSet(const std::vector<ParamShape>& shapes, void* weights, void* grads, int elementBytes)
{
    std::size_t offset = 0;
    const auto e = static_cast<std::size_t>(elementBytes);
    for (const auto& s : shapes) {
        ParamView v;
        v.weight = static_cast<char*>(weights) + offset * e;
        v.grad = grads ? static_cast<char*>(grads) + offset * e : nullptr;
        v.rows = s.rows;
        v.cols = s.cols;
        m_views.push_back(v);
        offset += s.elements();
    }
}

const ParamView& ParamSet::operator[](std::size_t i) const
{
    if (i >= m_views.size())
        throw RuntimeError("layer parameters: index " + std::to_string(i) + " out of range (the layer has "
            + std::to_string(m_views.size()) + ")");
    return m_views[i];
}

ParamStorage::ParamStorage(Backend& backend, std::vector<ParamShape> shapes)
    : m_backend(backend)
    , m_shapes(std::move(shapes))
    , m_weights(backend, 1, parameterElements(m_shapes), MemoryCategory::Parameter)
    , m_grads(backend, 1, parameterElements(m_shapes), MemoryCategory::Gradient)
    , m_set(m_shapes, m_weights.data(), m_grads.data(), backend.elementBytes())
{
    if (!m_weights.empty()) {
        backend.setZero(0, m_weights.data(), m_weights.bytes());
        backend.setZero(0, m_grads.data(), m_grads.bytes());
    }
}

void ParamStorage::setWeight(std::size_t i, const std::vector<float>& values)
{
    const ParamView& v = m_set[i];
    if (values.size() != v.rows * v.cols)
        throw RuntimeError("layer parameter " + m_shapes[i].name + ": " + std::to_string(values.size()) + " values for "
            + std::to_string(v.rows) + " × " + std::to_string(v.cols));
    m_backend.uploadFloats(0, v.weight, values.data(), values.size());
}

std::vector<float> ParamStorage::weight(std::size_t i) const
{
    const ParamView& v = m_set[i];
    std::vector<float> out(v.rows * v.cols);
    m_backend.downloadFloats(0, out.data(), v.weight, out.size());
    return out;
}

std::vector<float> ParamStorage::grad(std::size_t i) const
{
    const ParamView& v = m_set[i];
    std::vector<float> out(v.rows * v.cols);
    m_backend.downloadFloats(0, out.data(), v.grad, out.size());
    return out;
}

void ParamStorage::zeroGrads()
{
    if (!m_grads.empty())
        m_backend.setZero(0, m_grads.data(), m_grads.bytes());
}

Tensor& Saved::operator[](std::size_t slot)
{
    if (slot >= m_slots.size())
        m_slots.resize(slot + 1);
    return m_slots[slot];
}

const Tensor& Saved::at(std::size_t slot) const
{
    if (slot >= m_slots.size())
        throw RuntimeError("layer state: slot " + std::to_string(slot) + " was never kept");
    return m_slots[slot];
}

std::size_t Saved::bytes() const
{
    std::size_t total = 0;
    for (const auto& t : m_slots)
        total += t.bytes();
    return total;
}

void Saved::clear()
{
    m_slots.clear();
    routes.clear();
    expertRows.clear();
    received.clear();
    phase = Phase::Empty;
}

void requireHostFp32(const Backend& backend, const std::string& what)
{
    if (!backend.hostAccessible() || backend.elementBytes() != 4)
        throw RuntimeError(what + ": the " + backend.name()
            + " backend has no kernels for this layer yet (it needs host-accessible fp32 memory)");
}

void requirePhase(const Saved& saved, Phase phase, const std::string& what)
{
    if (saved.phase == phase)
        return;
    static const char* const names[] = { "nothing kept", "after F", "after I" };
    throw RuntimeError(what + ": expects the layer's saved state " + names[static_cast<int>(phase)] + ", found "
        + names[static_cast<int>(saved.phase)]);
}

void requireShape(const Tensor& t, std::size_t rows, std::size_t cols, const std::string& what)
{
    if (t.rows() != rows || t.cols() != cols)
        throw RuntimeError(what + ": expects " + std::to_string(rows) + " × " + std::to_string(cols) + ", got "
            + std::to_string(t.rows()) + " × " + std::to_string(t.cols()));
}

void linearForward(
    Backend& backend, Lane lane, const void* x, const ParamView& w, void* y, std::size_t rows, float beta)
{
    if (rows == 0 || w.rows == 0 || w.cols == 0)
        return;
    backend.gemm(lane, Transpose::No, Transpose::Yes, static_cast<int>(rows), static_cast<int>(w.rows),
        static_cast<int>(w.cols), 1.0f, x, w.weight, beta, y);
}

void linearInputGrad(
    Backend& backend, Lane lane, const void* dy, const ParamView& w, void* dx, std::size_t rows, float beta)
{
    if (rows == 0 || w.rows == 0 || w.cols == 0)
        return;
    backend.gemm(lane, Transpose::No, Transpose::No, static_cast<int>(rows), static_cast<int>(w.cols),
        static_cast<int>(w.rows), 1.0f, dy, w.weight, beta, dx);
}

void linearWeightGrad(Backend& backend, Lane lane, const void* dy, const void* x, const ParamView& w, std::size_t rows)
{
    if (rows == 0 || w.rows == 0 || w.cols == 0)
        return;
    backend.gemm(lane, Transpose::Yes, Transpose::No, static_cast<int>(w.rows), static_cast<int>(w.cols),
        static_cast<int>(rows), 1.0f, dy, x, 1.0f, w.grad);
}

Tensor copyOf(Backend& backend, const Tensor& t, MemoryCategory category)
{
    Tensor out(backend, t.rows(), t.cols(), category);
    if (!out.empty())
        std::memcpy(out.data(), t.data(), t.bytes());
    return out;
}

Tensor preNormResidualBackward(
    Backend& backend, const ParamView& norm, Tensor& x, Tensor& dxn, const Tensor& dy, std::size_t t, std::size_t h)
{
    Tensor dx = copyOf(backend, dy, MemoryCategory::Workspace);
    rmsNormBackward(floats(x), h, floats(norm.weight), floats(dxn), h, floats(dx), h, floats(norm.grad), t, h);
    dxn.reset();
    x.reset();
    return dx;
}

void gatherHeads(const float* src, const HeadLayout& layout, int batch, int seqLen, int heads, int width, float* dst,
    int dstWidth, int dstOffset)
{
    const auto w = static_cast<std::size_t>(width);
    for (int b = 0; b < batch; ++b)
        for (int j = 0; j < heads; ++j)
            for (int s = 0; s < seqLen; ++s) {
                const auto t
                    = static_cast<std::size_t>(b) * static_cast<std::size_t>(seqLen) + static_cast<std::size_t>(s);
                const float* from
                    = src + t * layout.rowStride + layout.colOffset + static_cast<std::size_t>(j) * layout.headStride;
                float* to = dst
                    + ((static_cast<std::size_t>(b) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(j))
                              * static_cast<std::size_t>(seqLen)
                          + static_cast<std::size_t>(s))
                        * static_cast<std::size_t>(dstWidth)
                    + static_cast<std::size_t>(dstOffset);
                std::memcpy(to, from, w * sizeof(float));
            }
}

void scatterHeads(const float* src, int batch, int seqLen, int heads, int width, int srcWidth, int srcOffset,
    float* dst, const HeadLayout& layout, bool accumulate)
{
    for (int b = 0; b < batch; ++b)
        for (int j = 0; j < heads; ++j)
            for (int s = 0; s < seqLen; ++s) {
                const auto t
                    = static_cast<std::size_t>(b) * static_cast<std::size_t>(seqLen) + static_cast<std::size_t>(s);
                const float* from = src
                    + ((static_cast<std::size_t>(b) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(j))
                              * static_cast<std::size_t>(seqLen)
                          + static_cast<std::size_t>(s))
                        * static_cast<std::size_t>(srcWidth)
                    + static_cast<std::size_t>(srcOffset);
                float* to
                    = dst + t * layout.rowStride + layout.colOffset + static_cast<std::size_t>(j) * layout.headStride;
                if (accumulate)
                    for (int c = 0; c < width; ++c)
                        to[c] += from[c];
                else
                    std::memcpy(to, from, static_cast<std::size_t>(width) * sizeof(float));
            }
}

} // namespace dps::runtime::layers
