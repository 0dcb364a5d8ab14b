#include "runtime/layers/common.h"

#include "runtime/layers/rmsnorm.h"

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

void requireFp32(const Backend& backend, const std::string& what)
{
    if (backend.elementBytes() != 4)
        throw RuntimeError(what + ": the " + backend.name() + " backend computes in "
            + (backend.elementBytes() == 2 ? std::string("bf16") : std::to_string(backend.elementBytes()) + "-byte")
            + " elements; the transformer layers run in fp32 only");
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

Tensor copyOf(Backend& backend, Lane lane, const Tensor& t, MemoryCategory category)
{
    Tensor out(backend, t.rows(), t.cols(), category);
    if (!out.empty())
        backend.copyDeviceToDevice(lane, out.data(), t.data(), t.bytes());
    return out;
}

std::vector<float> download(Backend& backend, Lane lane, const void* src, std::size_t n)
{
    std::vector<float> out(n);
    if (n > 0)
        backend.downloadFloats(lane, out.data(), src, n);
    return out;
}

HostMirror::HostMirror(Backend& backend, Lane lane, void* device, std::size_t n, bool read)
    : m_backend(backend)
    , m_lane(lane)
    , m_device(device)
    , m_n(n)
    , m_data(static_cast<float*>(device))
{
    if (backend.hostAccessible())
        return;
    m_copy.assign(n, 0.0f);
    if (read && n > 0)
        backend.downloadFloats(lane, m_copy.data(), device, n);
    m_data = m_copy.data();
}

void HostMirror::commit()
{
    if (!m_backend.hostAccessible() && m_n > 0)
        m_backend.uploadFloats(m_lane, m_device, m_copy.data(), m_n);
}

void rmsNormForward(Backend& backend, Lane lane, const void* x, std::size_t xStride, const ParamView& norm, void* y,
    std::size_t yStride, std::size_t rows, std::size_t n)
{
    if (rows > 0)
        backend.rmsNormForward(lane, x, xStride, norm.weight, y, yStride, rows, n, kRmsNormEps);
}

void rmsNormBackward(Backend& backend, Lane lane, const void* x, std::size_t xStride, const ParamView& norm,
    const void* dy, std::size_t dyStride, void* dx, std::size_t dxStride, std::size_t rows, std::size_t n)
{
    if (rows > 0)
        backend.rmsNormBackward(
            lane, x, xStride, norm.weight, dy, dyStride, dx, dxStride, norm.grad, rows, n, kRmsNormEps);
}

Tensor preNormResidualBackward(Backend& backend, Lane lane, const ParamView& norm, Tensor& x, Tensor& dxn,
    const Tensor& dy, std::size_t t, std::size_t h)
{
    Tensor dx = copyOf(backend, lane, dy, MemoryCategory::Workspace);
    rmsNormBackward(backend, lane, x.data(), h, norm, dxn.data(), h, dx.data(), h, t, h);
    dxn.reset();
    x.reset();
    return dx;
}

} // namespace dps::runtime::layers
