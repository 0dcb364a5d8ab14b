#pragma once
// Predicted against measured: the table `dpstudio run` ends with.
#include "trace/measured.h"
#include "project/project.h"
#include "sim/simulator.h"

#include <string>
#include <vector>

namespace dps::launch {

/// What one rank did in the measured trace.
struct MeasuredRankSummary {
    int rank = 0;
    double busyUs = 0.0; ///< Σ (end − start − wait) over the median step's slots
    double idleUs = 0.0; ///< median step's makespan − busy
    std::int64_t peakMemoryBytes = 0; ///< max memory_bytes over all measured steps
    std::int64_t peakActivationBytes = 0; ///< max activation_bytes over all measured steps
};

/// Per-rank summary of a measured trace, ordered by rank.
std::vector<MeasuredRankSummary> summarizeMeasured(const MeasuredTrace& trace);

/// One line of the table. error = (measured − predicted) / predicted; unset when predicted is 0.
struct ComparisonRow {
    std::string label; ///< e.g. "makespan", "rank 1 idle"
    enum class Unit { Microseconds, Bytes } unit = Unit::Microseconds;
    double predicted = 0.0;
    double measured = 0.0;
    std::optional<double> relativeError() const;
};

/// Rows: makespan, then per rank idle, peak memory and peak activation bytes.
std::vector<ComparisonRow> compareRun(const SimResult& predicted, const MeasuredTrace& measured);

/// The prediction (predict(), peaks only) of the variant named `variant` (empty: the active one) as a run
/// executes it: the project's cost model (with its overrides, e.g. from --costs), tensor bytes of fp32 when
/// the backend is "cpu" (a bf16 project runs in fp32 there). Throws FormatError with the prediction's error
/// (the variant's name, then a size rule it breaks, an unknown name, an invalid schedule or a deadlock).
SimResult predictRun(const Project& project, const std::string& variant, const std::string& backend);

/// The table as text: a header line naming the median step, then one line per row with predicted,
/// measured and the signed error in percent; times in µs or ms, memory in KiB/MiB/GiB.
std::string formatComparison(const std::vector<ComparisonRow>& rows, const MeasuredTrace& measured);

} // namespace dps::launch
