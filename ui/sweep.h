#pragma once
// A sweep of every variant of a project over one parameter (microbatch count, or the F&B slot time as a
// fraction of F + B), simulated without timing or memory curves. Plain C++, run off the GUI thread.
#include "project/project.h"

#include <string>
#include <vector>

namespace dps::ui {

enum class SweepParameter { Microbatches, OverlapRatio };

struct SweepPoint {
    double x = 0.0;
    double makespanUs = 0.0;
    double bubbleRate = 0.0;
};

struct SweepSeries {
    std::string variant;
    std::vector<SweepPoint> points; ///< only the values the variant's kind accepts
};

struct SweepResult {
    SweepParameter parameter = SweepParameter::Microbatches;
    std::vector<SweepSeries> series;
};

/// The x values swept: even microbatch counts from 2 up to max(2 × microbatches, 4 × ranks) over the
/// variants (at most 128), or F&B / (F + B) from 0.5 to 1.0 in steps of 0.05.
std::vector<double> sweepValues(const Project& project, SweepParameter parameter);

/// Simulates every variant at every value; values a kind refuses (sizes) are skipped.
SweepResult runSweep(const Project& project, SweepParameter parameter);

/// Axis title of a parameter, e.g. "microbatches".
std::string sweepParameterName(SweepParameter parameter);

} // namespace dps::ui
