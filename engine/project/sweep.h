#pragma once
// A sweep of every variant of a project over one parameter (microbatch count, or the F&B slot time as a
// fraction of F + B), predicted (predict(), peaks only: no timing or memory curves). Plain C++; the designer
// runs it off the GUI thread.
#include "project.h"

#include <string>
#include <vector>

namespace dps {

enum class SweepParameter { Microbatches, OverlapRatio };

struct SweepPoint {
    double x = 0.0; ///< the swept value (microbatches, or F&B ÷ (F + B))
    double makespanUs = 0.0; ///< µs
    double bubbleRate = 0.0; ///< Σ idle ÷ (ranks × makespan)
};

struct SweepSeries {
    std::string variant;
    std::vector<SweepPoint> points; ///< only the values with figures (the kind accepts the size, valid, no deadlock)
};

struct SweepResult {
    SweepParameter parameter = SweepParameter::Microbatches;
    std::vector<SweepSeries> series;
};

/// The x values swept: even microbatch counts from 2 up to max(2 × microbatches, 4 × ranks) over the
/// variants (at most 128), or F&B / (F + B) from 0.5 to 1.0 in steps of 0.05.
std::vector<double> sweepValues(const Project& project, SweepParameter parameter);

/// Predicts every variant at every value; values without figures (a size the kind refuses, an invalid
/// schedule, a deadlock) are skipped. Never throws for a bad variant.
SweepResult runSweep(const Project& project, SweepParameter parameter);

/// Axis title of a parameter, e.g. "microbatches".
std::string sweepParameterName(SweepParameter parameter);

} // namespace dps
