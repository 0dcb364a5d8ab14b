#include "base/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dps {

std::size_t medianIndex(std::size_t count)
{
    return count == 0 ? 0 : (count - 1) / 2;
}

double median(std::vector<double> values)
{
    if (values.empty())
        return 0.0;
    const auto mid = values.begin() + static_cast<std::ptrdiff_t>(medianIndex(values.size()));
    std::nth_element(values.begin(), mid, values.end());
    return *mid;
}

double trimmedMean(std::vector<double> values, double share)
{
    if (values.empty())
        return 0.0;
    std::sort(values.begin(), values.end());
    const auto cut = static_cast<std::ptrdiff_t>(std::floor(share * static_cast<double>(values.size())));
    const auto first = values.begin() + cut;
    const auto last = values.end() - cut;
    return std::accumulate(first, last, 0.0) / static_cast<double>(last - first);
}

double quantileOfSorted(const std::vector<double>& sorted, double q)
{
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

} // namespace dps
