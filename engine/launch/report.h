#pragma once
// Predicted against measured: the table `dpstudio run` ends with.
#include "machine/costsource.h"
#include "project/predict.h"
#include "project/project.h"
#include "sim/simulator.h"
#include "trace/measured.h"

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

/// The table as text: a header line naming the median step, then (when `prediction` is not empty) a line
/// "prediction: <prediction>" saying what was predicted, then one line per row with predicted, measured and
/// the signed error in percent; times in µs or ms, memory in KiB/MiB/GiB.
std::string formatComparison(
    const std::vector<ComparisonRow>& rows, const MeasuredTrace& measured, const std::string& prediction = {});

/// Decides what a run of `variant` is predicted with, before it starts: for this machine when the run is a CPU
/// run here (backend "cpu", or "auto" where no GPU is visible; no hostfile; not `nominal`), from `profileFile` or
/// this machine's cached profile, probing (its progress to `log`) when the cache lacks the variant's shape or, for a
/// transformer, its stages (machineProfile); else the project's devices with the run's backend. A profile that cannot
/// be had or does not fit the variant (no worker, a failed probe, a file of other shapes) gives the project's
/// devices and a note saying why — except a `profileFile` the user named, whose error is thrown (IoError,
/// FormatError as machineProfile and machineCosts). What the report then predicts is costSourceOfRun(measured,
/// the chosen profile) (machine/costsource.h), the designer's rule for the same run.
machine::CostSource chooseRunCostSource(const Project& project, const std::string& variant, const std::string& backend,
    bool hostfile, bool nominal, const std::string& profileFile, int threads, std::ostream& log);

/// The prediction (peaks only) a measured run is compared with: runPredictionSetup of costSourceOfRun(measured,
/// `chosen`'s profile) for `variant` (empty: the active one), what the designer predicts for the same run. `label`
/// (when not null) gets what it is for. Throws FormatError "variant 'x': <error>" when it has no figures.
Prediction predictMeasuredRun(const Project& project, const std::string& variant, const MeasuredTrace& measured,
    const machine::CostSource& chosen, std::string* label = nullptr);

/// The expert all-to-all of a run with expert parallelism, per rank: the share of it the other half of an
/// overlapped F&B slot hid (measured: the median step's Σ a2a_hidden_us ÷ Σ a2a_us) beside the prediction's
/// (sim/alltoall.h, allToAllPerRank of `predicted`'s schedule and costs), one line a rank:
/// "rank 0 a2a hidden: 41.2 % of 12.3 ms (predicted 58.1 % of 3.1 ms)". "" when neither has any all-to-all.
/// Throws nothing.
std::string formatAllToAll(const Prediction& predicted, const MeasuredTrace& measured);

} // namespace dps::launch
