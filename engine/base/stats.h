#pragma once
// The one median rule of the project (run report, analyze, calibrate, the probes, the GUI's memory chart):
// the low median, so a median is always one of the values (the median step is a step that ran, and its
// makespan is the median makespan, in `dpstudio run`, `dpstudio analyze` and the designer alike).
#include <cstddef>
#include <vector>

namespace dps {

/// Position of the median in `count` sorted values: the middle one, the lower of the middle two for an even
/// count ((count − 1) / 2; 0 for none).
std::size_t medianIndex(std::size_t count);

/// Median of the values (the lower of the middle two for an even count: {4, 1, 3, 2} → 2); 0 for none.
double median(std::vector<double> values);

/// The mean of `values` without the lowest and the highest `share` of them each (0 ≤ share < 0.5; the count cut
/// from each end is floor(share × n)): e.g. share 0.1 of 20 values is the mean of the middle 16. 0 when empty.
double trimmedMean(std::vector<double> values, double share);

/// The q-quantile (0 ≤ q ≤ 1) of sorted, non-empty values, linear between the closest ranks (numpy's default
/// method), e.g. the 10th and 90th percentiles of a spread.
double quantileOfSorted(const std::vector<double>& sorted, double q);

} // namespace dps
