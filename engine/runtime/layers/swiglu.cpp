#include "runtime/layers/swiglu.h"

#include "runtime/layers/rmsnorm.h"

namespace dps::runtime::layers {

namespace {
constexpr auto kAct = MemoryCategory::Activation;
constexpr auto kWork = MemoryCategory::Workspace;

enum DenseSlot : std::size_t { dX, dXn, dFfn, dDy = dFfn + 3 };
} // namespace

void swigluForward(Backend& backend, Lane lane, const ParamView& gate, const ParamView& up, const ParamView& down,
    const void* x, std::size_t rows, Saved& sv, std::size_t slot, void* out, float outBeta)
{
    const std::size_t f = gate.rows;
    Tensor g(backend, rows, f, kAct);
    Tensor u(backend, rows, f, kAct);
    Tensor a(backend, rows, f, kAct);
    linearForward(backend, lane, x, gate, g.data(), rows);
    linearForward(backend, lane, x, up, u.data(), rows);
    if (rows * f > 0)
        backend.swigluForward(lane, g.data(), u.data(), a.data(), rows * f); // a = SiLU(gate) ⊙ up
    linearForward(backend, lane, a.data(), down, out, rows, outBeta);
    sv[slot] = std::move(g);
    sv[slot + 1] = std::move(u);
    sv[slot + 2] = std::move(a);
}

void swigluInputGrad(Backend& backend, Lane lane, const ParamView& gate, const ParamView& up, const ParamView& down,
    const void* x, const void* dout, std::size_t rows, Saved& sv, std::size_t slot, void* dx, float dxBeta,
    void* scratch, bool fused)
{
    const std::size_t f = gate.rows;
    if (fused)
        linearWeightGrad(backend, lane, dout, sv[slot + 2].data(), down, rows);
    {
        linearInputGrad(backend, lane, dout, down, scratch, rows);
        // gate becomes dgate, up becomes dup (swiglu.h)
        if (rows * f > 0)
            backend.swigluBackward(lane, sv[slot].data(), sv[slot + 1].data(), scratch, rows * f);
    }
    if (rows > 0) {
        linearInputGrad(backend, lane, sv[slot].data(), gate, dx, rows, dxBeta);
        linearInputGrad(backend, lane, sv[slot + 1].data(), up, dx, rows, 1.0f);
    }
    if (fused) {
        linearWeightGrad(backend, lane, sv[slot].data(), x, gate, rows);
        linearWeightGrad(backend, lane, sv[slot + 1].data(), x, up, rows);
        for (std::size_t i = 0; i < 3; ++i)
            sv[slot + i].reset();
    }
}

void swigluWeightGrad(Backend& backend, Lane lane, const ParamView& gate, const ParamView& up, const ParamView& down,
    const void* x, const void* dout, std::size_t rows, Saved& sv, std::size_t slot)
{
    linearWeightGrad(backend, lane, dout, sv[slot + 2].data(), down, rows);
    linearWeightGrad(backend, lane, sv[slot].data(), x, gate, rows);
    linearWeightGrad(backend, lane, sv[slot + 1].data(), x, up, rows);
    for (std::size_t i = 0; i < 3; ++i)
        sv[slot + i].reset();
}

MlpConfig MlpConfig::of(const model::Transformer& m, int layer)
{
    model::check(m);
    MlpConfig c;
    c.hidden = m.hidden;
    c.ffn = (m.isMoe() && m.moe.denseFfn > 0) ? m.moe.denseFfn : m.ffn;
    c.tokens = m.microbatchSize * m.seqLen;
    if (m.isMoeLayer(layer))
        throw RuntimeError("dense mlp: layer " + std::to_string(layer) + " of the model is an MoE layer");
    return c;
}

DenseMlp::DenseMlp(Backend& backend, const MlpConfig& config)
    : m_backend(backend)
    , m_c(config)
{
    requireFp32(backend, "dense mlp");
    if (m_c.hidden < 1 || m_c.ffn < 1 || m_c.tokens < 1)
        throw RuntimeError("dense mlp: hidden " + std::to_string(m_c.hidden) + ", ffn " + std::to_string(m_c.ffn)
            + " and tokens " + std::to_string(m_c.tokens) + " must be at least 1");
}

std::vector<ParamShape> DenseMlp::parameterShapes() const
{
    const auto h = static_cast<std::size_t>(m_c.hidden);
    const auto f = static_cast<std::size_t>(m_c.ffn);
    return { { "post_attention_layernorm", 1, h }, { "gate_proj", f, h }, { "up_proj", f, h }, { "down_proj", h, f } };
}

Tensor DenseMlp::forward(Lane lane, const ParamSet& p, Tensor x, Saved& sv) const
{
    requirePhase(sv, Phase::Empty, "dense mlp F");
    const auto t = static_cast<std::size_t>(m_c.tokens);
    const auto h = static_cast<std::size_t>(m_c.hidden);
    requireShape(x, t, h, "dense mlp F: input");
    x.recategorize(kAct);
    Tensor xn(m_backend, t, h, kAct);
    rmsNormForward(m_backend, lane, x.data(), h, p[0], xn.data(), h, t, h);
    Tensor y = copyOf(m_backend, lane, x, kWork);
    swigluForward(m_backend, lane, p[1], p[2], p[3], xn.data(), t, sv, dFfn, y.data(), 1.0f);
    sv[dX] = std::move(x);
    sv[dXn] = std::move(xn);
    sv.phase = Phase::AfterForward;
    return y;
}

Tensor DenseMlp::backwardImpl(Lane lane, const ParamSet& p, Saved& sv, Tensor dy, bool fused) const
{
    requirePhase(sv, Phase::AfterForward, fused ? "dense mlp B" : "dense mlp I");
    const auto t = static_cast<std::size_t>(m_c.tokens);
    const auto h = static_cast<std::size_t>(m_c.hidden);
    requireShape(dy, t, h, "dense mlp backward: output gradient");
    dy.recategorize(fused ? kWork : kAct);
    Tensor dxn(m_backend, t, h, kWork);
    {
        Tensor da(m_backend, t, static_cast<std::size_t>(m_c.ffn), kWork);
        swigluInputGrad(m_backend, lane, p[1], p[2], p[3], sv[dXn].data(), dy.data(), t, sv, dFfn, dxn.data(), 0.0f,
            da.data(), fused);
    }
    if (fused)
        sv[dXn].reset();
    Tensor dx = preNormResidualBackward(m_backend, lane, p[0], sv[dX], dxn, dy, t, h);
    if (fused) {
        dy.reset();
        sv.clear();
        return dx;
    }
    sv[dDy] = std::move(dy);
    sv.phase = Phase::AfterInputGrad;
    return dx;
}

void DenseMlp::weightGrad(Lane lane, const ParamSet& p, Saved& sv) const
{
    requirePhase(sv, Phase::AfterInputGrad, "dense mlp W");
    const auto t = static_cast<std::size_t>(m_c.tokens);
    swigluWeightGrad(m_backend, lane, p[1], p[2], p[3], sv[dXn].data(), sv[dDy].data(), t, sv, dFfn);
    sv.clear();
}

} // namespace dps::runtime::layers
