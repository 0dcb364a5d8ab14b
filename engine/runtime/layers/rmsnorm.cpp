#include "runtime/layers/rmsnorm.h"

#include <cmath>

namespace dps::runtime::layers {

namespace {
/// r = 1 / √(mean(x²) + ε) of one row.
double inverseRms(const float* x, std::size_t n, float eps)
{
    double sum = 0.0;
    for (std::size_t c = 0; c < n; ++c)
        sum += static_cast<double>(x[c]) * static_cast<double>(x[c]);
    return 1.0 / std::sqrt(sum / static_cast<double>(n) + static_cast<double>(eps));
}
} // namespace

void rmsNormForward(const float* x, std::size_t xStride, const float* g, float* y, std::size_t yStride,
    std::size_t rows, std::size_t n, float eps)
{
    for (std::size_t row = 0; row < rows; ++row) {
        const float* xr = x + row * xStride;
        float* yr = y + row * yStride;
        const double r = inverseRms(xr, n, eps);
        for (std::size_t c = 0; c < n; ++c)
            yr[c] = static_cast<float>(static_cast<double>(g[c]) * static_cast<double>(xr[c]) * r);
    }
}

void rmsNormBackward(const float* x, std::size_t xStride, const float* g, const float* dy, std::size_t dyStride,
    float* dx, std::size_t dxStride, float* dg, std::size_t rows, std::size_t n, float eps)
{
    for (std::size_t row = 0; row < rows; ++row) {
        const float* xr = x + row * xStride;
        const float* dyr = dy + row * dyStride;
        float* dxr = dx + row * dxStride;
        const double r = inverseRms(xr, n, eps);
        double dot = 0.0; // Σ g ⊙ dy ⊙ x
        for (std::size_t c = 0; c < n; ++c)
            dot += static_cast<double>(g[c]) * static_cast<double>(dyr[c]) * static_cast<double>(xr[c]);
        const double k = r * r * dot / static_cast<double>(n);
        for (std::size_t c = 0; c < n; ++c) {
            const double gdy = static_cast<double>(g[c]) * static_cast<double>(dyr[c]);
            dxr[c] += static_cast<float>(r * (gdy - static_cast<double>(xr[c]) * k));
            if (dg)
                dg[c] += static_cast<float>(static_cast<double>(dyr[c]) * static_cast<double>(xr[c]) * r);
        }
    }
}

} // namespace dps::runtime::layers
