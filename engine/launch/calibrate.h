#pragma once
// `dpstudio calibrate`: fits the cost model to a measured run and writes a cost file (costs.json, the
// format of engine/project's CostsFile) that `simulate`, `compare` and `run` take with --costs.
#include "trace/measured.h"
#include "project/project.h"

#include <array>
#include <string>
#include <vector>

namespace dps::launch {

/// The fit and how much data each number rests on.
struct Calibration {
    CostsFile costs; ///< per-stage F/I/W/B (µs), overlap factor, p2p latency (µs) and bandwidth (bytes/µs)
    std::vector<std::array<int, 4>> samples; ///< samples[stage][kind]: slots measured, kind in OpKind order
    int overlapSamples = 0; ///< overlapped slots used for the overlap factor
    int p2pSamples = 0; ///< messages the consumer waited for
    int p2pSizes = 0; ///< distinct message sizes among them
    std::vector<std::string> notes; ///< what could not be fitted and what was kept instead
};

/// Median of the values (mean of the middle two for an even count); 0 for none.
double median(std::vector<double> values);

/// Fits a measured trace:
/// - F, I, W, B of each stage: the median over every measured step and microbatch of the busy time
///   (end − start − wait) of the single-op slots of that kind; a kind never run alone is left unset.
/// - overlap_factor: median over overlapped slots of busy ÷ (F of the forward stage + B of the backward
///   stage), from the fitted values (B = I + W where B never ran alone), as CostModel::overlapTime uses it.
/// - p2p: for each single-op slot that waited for a message from another rank, the transfer time
///   start + wait − end of the producing slot; the median per message size, then least squares
///   time = latency + bytes ÷ bandwidth over the sizes (one size: latency = its median, bandwidth
///   unlimited, i.e. 0). Negative fits are clamped to 0.
/// Times are rounded to 1 ns, the overlap factor to 1e-4, bandwidth to 1e-3 bytes/µs.
/// `stages` = number of model stages (0: one more than the largest stage in the trace). Never throws.
Calibration calibrate(const MeasuredTrace& trace, int stages = 0);

/// Number of model stages of the run: from `project` when given (the trace's variant, else its active
/// one), else from the project recorded in the trace, else from the actions. Throws FormatError when a
/// recorded project does not parse.
int measuredStageCount(const MeasuredTrace& trace, const Project* project = nullptr);

/// Human summary: one line per stage (F, I, W, B in µs and sample counts), then the overlap factor,
/// latency, bandwidth and the notes.
std::string formatCalibration(const Calibration& calibration);

} // namespace dps::launch
