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

/// Chebyshev coefficients (c0 halved) of h(t) = erfc(z)·e^(z²)/t, t = 1/(1 + z/2), on [kT0, 1]: fitted
/// here by interpolation at 64 Chebyshev nodes in long double (z up to 9.4, where e^(−z²) leaves the
/// normal floats).
constexpr float kT0 = 0.1754385965f;
constexpr float kCheb[] = { 6.234300181e-01f, 3.287173112e-01f, 4.730999272e-02f, 1.210600841e-03f, -6.482820510e-04f,
    -3.366204195e-05f, 1.414773171e-05f, 2.189975591e-07f, -3.778673914e-07f, 2.565839533e-08f, 8.531686942e-09f,
    -1.809496828e-09f };
constexpr int kChebCount = sizeof(kCheb) / sizeof(kCheb[0]);

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
    const float s = (2.0f * t - (1.0f + kT0)) / (1.0f - kT0);
    float b1 = 0.0f;
    float b2 = 0.0f;
    for (int j = kChebCount - 1; j >= 1; --j) {
        const float b0 = 2.0f * s * b1 - b2 + kCheb[j];
        b2 = b1;
        b1 = b0;
    }
    return 0.5f * t * (s * b1 - b2 + kCheb[0]);
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
