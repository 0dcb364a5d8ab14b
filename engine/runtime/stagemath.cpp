#include "stagemath.h"

namespace dps::runtime {

namespace {
constexpr auto kNo = Transpose::No;
constexpr auto kYes = Transpose::Yes;
} // namespace

std::size_t SavedActivations::bytes() const
{
    std::size_t total = lossGrad.bytes();
    for (const auto& b : blocks)
        total += b.bytes();
    for (const auto& l : layers)
        total += l.x.bytes() + l.h.bytes() + l.a.bytes() + l.dh.bytes() + l.dy.bytes();
    return total;
}

StageMath::StageMath(Backend& backend, const ModelSpec& spec)
    : m_backend(backend)
    , m_t(spec.tokens)
    , m_h(spec.hidden)
    , m_f(spec.ffn)
{
}

Tensor StageMath::matrix(std::size_t cols, MemoryCategory category) const
{
    return Tensor(m_backend, static_cast<std::size_t>(m_t), cols, category);
}

Tensor StageMath::forward(Lane lane, const StageParams& params, Tensor input, SavedActivations& saved, bool lastStage,
    const Tensor* target, double* loss) const
{
    const auto f = static_cast<std::size_t>(m_f);
    const auto h = static_cast<std::size_t>(m_h);
    Tensor x = std::move(input);
    saved.layers.resize(static_cast<std::size_t>(params.layerCount()));
    for (int l = 0; l < params.layerCount(); ++l) {
        const LayerParams& p = params.layer(l);
        LayerSaved& s = saved.layers[static_cast<std::size_t>(l)];
        x.recategorize(MemoryCategory::Activation);
        Tensor pre = matrix(f, MemoryCategory::Activation);
        m_backend.gemm(lane, kNo, kYes, m_t, m_f, m_h, 1.0f, x.data(), p.w1, 0.0f, pre.data());
        Tensor act = matrix(f, MemoryCategory::Workspace);
        m_backend.geluForward(lane, pre.data(), act.data(), act.elements());
        Tensor y = matrix(h, MemoryCategory::Workspace);
        m_backend.gemm(lane, kNo, kYes, m_t, m_h, m_f, 1.0f, act.data(), p.w2, 0.0f, y.data());
        s.x = std::move(x);
        s.h = std::move(pre);
        x = std::move(y);
    }
    if (!lastStage) {
        x.recategorize(MemoryCategory::Communication);
        return x;
    }
    if (!target)
        throw RuntimeError("stage " + std::to_string(params.stage()) + ": the last stage needs a target");
    saved.lossGrad = matrix(h, MemoryCategory::Activation);
    m_backend.mseLoss(lane, x.data(), target->data(), x.elements(), saved.lossGrad.data(), loss);
    return {};
}

Tensor StageMath::outputGradient(SavedActivations& saved, Tensor gradOutput, MemoryCategory category) const
{
    Tensor dy = saved.lossGrad.empty() ? std::move(gradOutput) : std::move(saved.lossGrad);
    if (dy.empty())
        throw RuntimeError("backward without an output gradient");
    dy.recategorize(category);
    return dy;
}

Tensor StageMath::inputGrad(
    Lane lane, const StageParams& params, SavedActivations& saved, Tensor gradOutput, bool wantInputGrad) const
{
    const auto f = static_cast<std::size_t>(m_f);
    const auto h = static_cast<std::size_t>(m_h);
    const auto layers = params.layerCount();
    Tensor dy = outputGradient(
        saved, std::move(gradOutput), layers > 0 ? MemoryCategory::Activation : MemoryCategory::Communication);
    for (int l = layers - 1; l >= 0; --l) {
        const LayerParams& p = params.layer(l);
        LayerSaved& s = saved.layers[static_cast<std::size_t>(l)];
        Tensor dh = matrix(f, MemoryCategory::Activation);
        m_backend.gemm(lane, kNo, kNo, m_t, m_f, m_h, 1.0f, dy.data(), p.w2, 0.0f, dh.data());
        m_backend.geluBackward(lane, s.h.data(), dh.data(), dh.data(), dh.elements());
        s.a = matrix(f, MemoryCategory::Activation);
        m_backend.geluForward(lane, s.h.data(), s.a.data(), s.a.elements());
        s.h.reset();
        Tensor dx;
        if (l > 0 || wantInputGrad) {
            dx = matrix(h, l > 0 ? MemoryCategory::Activation : MemoryCategory::Communication);
            m_backend.gemm(lane, kNo, kNo, m_t, m_h, m_f, 1.0f, dh.data(), p.w1, 0.0f, dx.data());
        }
        s.dh = std::move(dh);
        s.dy = std::move(dy);
        dy = std::move(dx);
    }
    saved.inputGradDone = true;
    if (!wantInputGrad)
        dy.reset();
    return dy;
}

void StageMath::weightGrad(Lane lane, const StageParams& params, SavedActivations& saved) const
{
    if (!saved.inputGradDone)
        throw RuntimeError("stage " + std::to_string(params.stage()) + ": W before its I");
    for (int l = 0; l < params.layerCount(); ++l) {
        const LayerParams& p = params.layer(l);
        LayerSaved& s = saved.layers[static_cast<std::size_t>(l)];
        m_backend.gemm(lane, kYes, kNo, m_h, m_f, m_t, 1.0f, s.dy.data(), s.a.data(), 1.0f, p.dw2);
        m_backend.gemm(lane, kYes, kNo, m_f, m_h, m_t, 1.0f, s.dh.data(), s.x.data(), 1.0f, p.dw1);
    }
    saved = SavedActivations {};
}

Tensor StageMath::backward(
    Lane lane, const StageParams& params, SavedActivations& saved, Tensor gradOutput, bool wantInputGrad) const
{
    const auto f = static_cast<std::size_t>(m_f);
    const auto h = static_cast<std::size_t>(m_h);
    const auto layers = params.layerCount();
    Tensor dy = outputGradient(
        saved, std::move(gradOutput), layers > 0 ? MemoryCategory::Workspace : MemoryCategory::Communication);
    for (int l = layers - 1; l >= 0; --l) {
        const LayerParams& p = params.layer(l);
        LayerSaved& s = saved.layers[static_cast<std::size_t>(l)];
        Tensor act = matrix(f, MemoryCategory::Workspace);
        m_backend.geluForward(lane, s.h.data(), act.data(), act.elements());
        m_backend.gemm(lane, kYes, kNo, m_h, m_f, m_t, 1.0f, dy.data(), act.data(), 1.0f, p.dw2);
        Tensor dh = std::move(act); // reuse the buffer: dA, then dH in place
        m_backend.gemm(lane, kNo, kNo, m_t, m_f, m_h, 1.0f, dy.data(), p.w2, 0.0f, dh.data());
        m_backend.geluBackward(lane, s.h.data(), dh.data(), dh.data(), dh.elements());
        m_backend.gemm(lane, kYes, kNo, m_f, m_h, m_t, 1.0f, dh.data(), s.x.data(), 1.0f, p.dw1);
        Tensor dx;
        if (l > 0 || wantInputGrad) {
            dx = matrix(h, l > 0 ? MemoryCategory::Workspace : MemoryCategory::Communication);
            m_backend.gemm(lane, kNo, kNo, m_t, m_h, m_f, 1.0f, dh.data(), p.w1, 0.0f, dx.data());
        }
        s = LayerSaved {};
        dy = std::move(dx);
    }
    saved = SavedActivations {};
    if (!wantInputGrad)
        dy.reset();
    return dy;
}

} // namespace dps::runtime
