#include "cpukernels.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DPS_KERNEL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DPS_KERNEL_CLONES
#endif

namespace dps::runtime::cpu {

namespace {

/// h(t) = erfc(z)·e^(z²)/t, t = 1/(1 + z/2), on [kT0, 1] (z up to 9.4, where e^(−z²) leaves the normal
/// floats) as a polynomial in s = (2t − 1 − kT0)/(1 − kT0) ∈ [−1, 1]. Its Chebyshev series (12 terms, first
/// term halved: 6.234300181e-01, 3.287173112e-01, 4.730999272e-02, 1.210600841e-03, -6.482820510e-04,
/// -3.366204195e-05, 1.414773171e-05, 2.189975591e-07, -3.778673914e-07, 2.565839533e-08, 8.531686942e-09,
/// -1.809496828e-09) was fitted here by interpolation at 64 Chebyshev nodes in long double; kPoly is the same
/// polynomial in powers of s (Σ cₖ·Tₖ(s) expanded in exact rational arithmetic, then rounded to float), so it
/// is evaluated by Horner's rule: 11 FMAs instead of Clenshaw's 22 operations. Float Horner stays within
/// 1.6e-7 of the series on [−1, 1] (Clenshaw: 1.1e-7); GELU as a whole within 3.4e-7 relative
/// (docs/performance.md).
constexpr float kT0 = 0.1754385965f;
constexpr float kInvSpan = 1.0f / (1.0f - kT0); // a product, not a division, per element
constexpr float kPoly[] = { 5.7545720649e-01f, 3.2491592628e-01f, 1.0007341595e-01f, 5.5244309769e-03f,
    -5.9292190879e-03f, -5.4980669229e-04f, 5.5901697141e-04f, -5.8589345713e-06f, -5.9287586282e-05f,
    1.1664091915e-05f, 4.3682239266e-06f, -1.8529246972e-06f };
constexpr int kPolyCount = sizeof(kPoly) / sizeof(kPoly[0]);

constexpr float kSqrtHalf = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693145751953125f; // few mantissa bits: k·kLn2Hi is exact
constexpr float kLn2Lo = 1.428606765330187e-06f;

/// e^(−x²/2), with x² split so that its rounding does not spoil the tail: x = xh + xl with xh holding
/// 12 significant bits, so xh² (hence u_hi = xh²/2) is exact and u_lo = xh·xl + xl²/2 is small. Then
/// u = k·ln2 − r with |r| ≤ ln2/2 (the reduction is exact), e^(−u) = 2^(−k)·e^r, e^r by its degree-7
/// Taylor polynomial (error < 6e-9). |x| is clamped to 13, where the result is still a normal float.
inline float gaussian(float x)
{
    x = std::min(std::abs(x), 13.0f);
    const float xh = std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) & 0xFFFFF000u);
    const float xl = x - xh;
    const float uHi = 0.5f * xh * xh;
    const float uLo = xh * xl + 0.5f * xl * xl;
    const auto k = static_cast<std::int32_t>(uHi * kLog2e + 0.5f);
    const float kf = static_cast<float>(k);
    const float r = (kf * kLn2Hi - uHi) + (kf * kLn2Lo - uLo);
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return p * std::bit_cast<float>((127 - k) << 23);
}

/// ½·erfc(|x|/√2)·e^(x²/2) = ½·t·h(t): the lower tail Φ(−|x|) without its Gaussian factor.
inline float tailFactor(float x)
{
    const float z = std::abs(x) * kSqrtHalf;
    const float t = 1.0f / (1.0f + 0.5f * z);
    const float s = (2.0f * t - (1.0f + kT0)) * kInvSpan;
    float p = kPoly[kPolyCount - 1];
    for (int j = kPolyCount - 2; j >= 0; --j)
        p = p * s + kPoly[j];
    return 0.5f * t * p;
}

/// Φ(x) given e^(−x²/2); Φ(−|x|) is below the normal floats for |x| > 13 and taken as 0 there.
inline float normalCdf(float x, float gauss)
{
    const float tail = gauss * tailFactor(x);
    const float lower = tail * static_cast<float>(std::abs(x) <= 13.0f); // a select the compiler vectorises
    return x < 0.0f ? lower : 1.0f - lower;
}

} // namespace

DPS_KERNEL_CLONES void geluForward(const float* in, float* out, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i) {
        const float x = in[i];
        out[i] = x * normalCdf(x, gaussian(x));
    }
}

DPS_KERNEL_CLONES void geluBackward(const float* in, const float* gradOut, float* gradIn, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i) {
        const float x = in[i];
        const float gauss = gaussian(x);
        gradIn[i] = gradOut[i] * (normalCdf(x, gauss) + x * gauss * kInvSqrt2Pi);
    }
}

} // namespace dps::runtime::cpu
