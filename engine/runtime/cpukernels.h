#pragma once
// The CPU backend's elementwise kernels: the exact GELU and its derivative, vectorised.
//
// GELU(x) = x·Φ(x) with Φ the normal CDF (the erf form, Φ(x) = ½(1 + erf(x/√2))). Φ is computed from
// the upper tail, Φ(−|x|) = ½·erfc(|x|/√2) = ½·e^(−x²/2)·t·h(t) with t = 1/(1 + |x|/(2√2)) and h a
// Chebyshev fit of erfc(z)·e^(z²)/t on the range where e^(−x²/2) is a normal float, so both tails keep
// their relative accuracy (≤ 4.1e-7 relative over all floats, where ½(1 + erff(x/√2)) in float loses it
// for x ≪ 0). e^(−x²/2) comes from a range-reduced polynomial, shared by Φ and by the density in the
// derivative. Branch-free loops that the compiler vectorises; on x86-64 compiled for AVX-512, AVX2 and the
// baseline, chosen at load time.
#include <cstddef>

namespace dps::runtime::cpu {

/// out[i] = GELU(in[i]); out may equal in.
void geluForward(const float* in, float* out, std::size_t n);
/// gradIn[i] = gradOut[i]·GELU'(in[i]) with GELU'(x) = Φ(x) + x·φ(x); gradIn may equal gradOut.
void geluBackward(const float* in, const float* gradOut, float* gradIn, std::size_t n);

} // namespace dps::runtime::cpu
