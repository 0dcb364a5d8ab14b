#include "runtime/layers/rope.h"

#include "runtime/backend.h"

#include <cmath>
#include <string>
#include <vector>

namespace dps::runtime::layers {

void ropeApply(float* x, std::size_t rows, std::size_t rowStride, int heads, std::size_t headStride,
    std::size_t colOffset, int ropeDim, int seqLen, double base, bool inverse)
{
    if (ropeDim % 2 != 0 || ropeDim < 0)
        throw RuntimeError("rotary embedding: the rotary dimension " + std::to_string(ropeDim) + " is not even");
    if (seqLen < 1)
        throw RuntimeError("rotary embedding: sequence length " + std::to_string(seqLen) + " is below 1");
    const auto half = static_cast<std::size_t>(ropeDim / 2);
    // cos and sin of p·θ_j for every position and pair.
    std::vector<double> cosines(static_cast<std::size_t>(seqLen) * half);
    std::vector<double> sines(cosines.size());
    for (int p = 0; p < seqLen; ++p)
        for (std::size_t j = 0; j < half; ++j) {
            const double theta = std::pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(ropeDim));
            const double angle = static_cast<double>(p) * theta;
            cosines[static_cast<std::size_t>(p) * half + j] = std::cos(angle);
            sines[static_cast<std::size_t>(p) * half + j] = inverse ? -std::sin(angle) : std::sin(angle);
        }
    for (std::size_t t = 0; t < rows; ++t) {
        const std::size_t p = t % static_cast<std::size_t>(seqLen);
        for (int h = 0; h < heads; ++h) {
            float* v = x + t * rowStride + colOffset + static_cast<std::size_t>(h) * headStride;
            for (std::size_t j = 0; j < half; ++j) {
                const double c = cosines[p * half + j];
                const double s = sines[p * half + j];
                const double a = v[j];
                const double b = v[j + half];
                v[j] = static_cast<float>(a * c - b * s);
                v[j + half] = static_cast<float>(b * c + a * s);
            }
        }
    }
}

} // namespace dps::runtime::layers
