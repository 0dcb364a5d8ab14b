#include "runtime/layers/attentioncore.h"

#include <cstddef>

namespace dps::runtime::layers {

namespace {
constexpr auto kNo = Transpose::No;
constexpr auto kYes = Transpose::Yes;

float* at(const void* base, std::size_t offsetElements)
{
    return static_cast<float*>(const_cast<void*>(base)) + offsetElements;
}
} // namespace

void attentionCoreForward(
    Backend& backend, Lane lane, const CoreShape& c, const void* q, const void* k, const void* v, void* p, void* o)
{
    const auto s = static_cast<std::size_t>(c.seqLen);
    const int group = c.heads / c.kvHeads;
    // S = scale · Q_i K_gᵀ for every head, the causal softmax of all of them at once, then O_i = P V_g.
    for (int b = 0; b < c.batch; ++b)
        for (int i = 0; i < c.heads; ++i) {
            const auto qi = static_cast<std::size_t>(b * c.heads + i);
            const auto kg = static_cast<std::size_t>(b * c.kvHeads + i / group);
            backend.gemm(lane, kNo, kYes, c.seqLen, c.seqLen, c.dk, c.scale,
                at(q, qi * s * static_cast<std::size_t>(c.dk)), at(k, kg * s * static_cast<std::size_t>(c.dk)), 0.0f,
                at(p, qi * s * s));
        }
    backend.causalSoftmaxForward(lane, p, s, static_cast<std::size_t>(c.batch * c.heads));
    for (int b = 0; b < c.batch; ++b)
        for (int i = 0; i < c.heads; ++i) {
            const auto qi = static_cast<std::size_t>(b * c.heads + i);
            const auto kg = static_cast<std::size_t>(b * c.kvHeads + i / group);
            backend.gemm(lane, kNo, kNo, c.seqLen, c.dv, c.seqLen, 1.0f, at(p, qi * s * s),
                at(v, kg * s * static_cast<std::size_t>(c.dv)), 0.0f, at(o, qi * s * static_cast<std::size_t>(c.dv)));
        }
}

void attentionCoreBackward(Backend& backend, Lane lane, const CoreShape& c, const void* q, const void* k, const void* v,
    const void* p, const void* dO, void* dq, void* dk, void* dv, void* scratch)
{
    const auto s = static_cast<std::size_t>(c.seqLen);
    const auto dkw = static_cast<std::size_t>(c.dk);
    const auto dvw = static_cast<std::size_t>(c.dv);
    const int group = c.heads / c.kvHeads;
    void* ds = scratch;
    for (int b = 0; b < c.batch; ++b)
        for (int i = 0; i < c.heads; ++i) {
            const auto qi = static_cast<std::size_t>(b * c.heads + i);
            const auto kg = static_cast<std::size_t>(b * c.kvHeads + i / group);
            const float beta = i % group == 0 ? 0.0f : 1.0f; // the group's first query head starts dK, dV
            const void* pi = at(p, qi * s * s);
            const void* doi = at(dO, qi * s * dvw);
            // dV_g (+)= Pᵀ dO
            backend.gemm(lane, kYes, kNo, c.seqLen, c.dv, c.seqLen, 1.0f, pi, doi, beta, at(dv, kg * s * dvw));
            // dP = dO Vᵀ
            backend.gemm(lane, kNo, kYes, c.seqLen, c.seqLen, c.dv, 1.0f, doi, at(v, kg * s * dvw), 0.0f, ds);
            // dS = P ⊙ (dP − rowsum(dP ⊙ P)); zero above the diagonal since P is
            backend.causalSoftmaxBackward(lane, pi, ds, s);
            // dQ = scale · dS K;  dK_g (+)= scale · dSᵀ Q
            backend.gemm(
                lane, kNo, kNo, c.seqLen, c.dk, c.seqLen, c.scale, ds, at(k, kg * s * dkw), 0.0f, at(dq, qi * s * dkw));
            backend.gemm(lane, kYes, kNo, c.seqLen, c.dk, c.seqLen, c.scale, ds, at(q, qi * s * dkw), beta,
                at(dk, kg * s * dkw));
        }
}

} // namespace dps::runtime::layers
