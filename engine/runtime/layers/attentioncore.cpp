#include "runtime/layers/attentioncore.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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
    for (int b = 0; b < c.batch; ++b)
        for (int i = 0; i < c.heads; ++i) {
            const auto qi = static_cast<std::size_t>(b * c.heads + i);
            const auto kg = static_cast<std::size_t>(b * c.kvHeads + i / group);
            float* pi = at(p, qi * s * s);
            backend.gemm(lane, kNo, kYes, c.seqLen, c.seqLen, c.dk, c.scale,
                at(q, qi * s * static_cast<std::size_t>(c.dk)), at(k, kg * s * static_cast<std::size_t>(c.dk)), 0.0f,
                pi);
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
            backend.gemm(lane, kNo, kNo, c.seqLen, c.dv, c.seqLen, 1.0f, pi,
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
    float* ds = static_cast<float*>(scratch);
    for (int b = 0; b < c.batch; ++b)
        for (int i = 0; i < c.heads; ++i) {
            const auto qi = static_cast<std::size_t>(b * c.heads + i);
            const auto kg = static_cast<std::size_t>(b * c.kvHeads + i / group);
            const float beta = i % group == 0 ? 0.0f : 1.0f; // the group's first query head starts dK, dV
            const float* pi = at(p, qi * s * s);
            const float* doi = at(dO, qi * s * dvw);
            // dV_g (+)= Pᵀ dO
            backend.gemm(lane, kYes, kNo, c.seqLen, c.dv, c.seqLen, 1.0f, pi, doi, beta, at(dv, kg * s * dvw));
            // dP = dO Vᵀ
            backend.gemm(lane, kNo, kYes, c.seqLen, c.seqLen, c.dv, 1.0f, doi, at(v, kg * s * dvw), 0.0f, ds);
            // dS = P ⊙ (dP − rowsum(dP ⊙ P)); zero above the diagonal since P is
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
            // dQ = scale · dS K;  dK_g (+)= scale · dSᵀ Q
            backend.gemm(
                lane, kNo, kNo, c.seqLen, c.dk, c.seqLen, c.scale, ds, at(k, kg * s * dkw), 0.0f, at(dq, qi * s * dkw));
            backend.gemm(lane, kYes, kNo, c.seqLen, c.dk, c.seqLen, c.scale, ds, at(q, qi * s * dkw), beta,
                at(dk, kg * s * dkw));
        }
}

} // namespace dps::runtime::layers
