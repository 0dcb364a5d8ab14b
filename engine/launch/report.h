#pragma once
// Predicted against measured: the table `dpstudio run` ends with.
#include "machine/costsource.h"
#include "project/predict.h"
#include "project/project.h"
#include "sim/simulator.h"
#include "trace/measured.h"
#include "trace/runstats.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dps::launch {

/// What one rank did in the measured trace (trace/runstats.h's measuredIdle: per step, then over the steps).
struct MeasuredRankSummary {
    int rank = 0;
    double busyUs = 0.0; ///< median over the measured steps of Σ (end − start − wait) of the rank's slots
    double idleUs = 0.0; ///< median over the measured steps of (the step's makespan − the rank's busy time)
    double idleMinUs = 0.0; ///< the least of those idle times (µs)
    double idleMaxUs = 0.0; ///< the greatest
    std::int64_t peakMemoryBytes = 0; ///< max memory_bytes over all measured steps
    std::int64_t peakActivationBytes = 0; ///< max activation_bytes over all measured steps
};

/// Per-rank summary of a measured trace, ordered by rank. Never throws.
std::vector<MeasuredRankSummary> summarizeMeasured(const MeasuredTrace& trace);

/// One line of the table. error = (measured − predicted) / predicted; unset when predicted is 0.
struct ComparisonRow {
    std::string label; ///< e.g. "makespan", "rank 1 idle"
    enum class Unit { Microseconds, Bytes } unit = Unit::Microseconds;
    double predicted = 0.0;
    double measured = 0.0;
    /// The least and greatest value over the measured steps (µs), for the rows that vary by step (makespan,
    /// idle); unset for the peaks, which are over all steps.
    std::optional<std::pair<double, double>> stepRange = std::nullopt;
    std::optional<double> relativeError() const;
};

/// Rows: makespan (the median step's, with the steps' range), then per rank idle (median over the steps, with
/// their range), peak memory and peak activation bytes.
std::vector<ComparisonRow> compareRun(const SimResult& predicted, const MeasuredTrace& measured);

/// Where a predicted makespan lies against the measured steps (µs): "within the measured steps (1.46–1.65 s)",
/// or "8.2 % below the fastest measured step (1.46 s)" / "4 % above the slowest measured step (1.65 s)".
/// "" when the trace lists no step. Never throws.
std::string makespanAgainstSteps(double predictedUs, const MeasuredTrace& measured);

/// The table as text: a header line naming the median step and the steps' makespan range and p10–p90 spread,
/// then (when `prediction` is not empty) a line "prediction: <prediction>" saying what was predicted, then one
/// line per row with predicted, measured, the signed error in percent and the range over the steps; times in
/// µs or ms, memory in KiB/MiB/GiB; then, when the first row is the makespan, a line saying where its
/// prediction lies against the measured steps (makespanAgainstSteps).
std::string formatComparison(
    const std::vector<ComparisonRow>& rows, const MeasuredTrace& measured, const std::string& prediction = {});

/// A run with --costs against those costs: has the machine changed since the run they were calibrated on?
/// The run is fitted itself (calibrate(), sim/calibrate.h) and each time both fits have (F, I, W, B, F&B of
/// each stage) compared as this run's ÷ the costs' − 1.
struct CostsDrift {
    int compared = 0; ///< times both have
    double median = 0.0; ///< median of the shares (0.2 = this run's slots took 20 % longer)
    double least = 0.0; ///< the smallest share
    double greatest = 0.0; ///< the largest share
    double runSpread = 0.0; ///< this run's step makespans, (max − min) ÷ median
    /// Per rank that ran a compared time, in rank order: (rank, median share of the times of its stages; a stage
    /// run on several ranks, as DualPipe's, counts for none). The ranks of a CPU run are bound to cores, and other
    /// work on the machine slows one core more than another.
    std::vector<std::pair<int, double>> byRank;
    /// The machine changed: the slots, or one rank's, moved by more than the run's own steps vary (|median| or
    /// some rank's |share| > runSpread).
    bool changed() const;
};

/// The drift of `measured` against `used` (the costs the run was predicted with), `stages` model stages
/// (measuredStageCount). compared = 0 when they share no time. Never throws.
CostsDrift costsDrift(const CostsFile& used, const MeasuredTrace& measured, int stages);

/// One line: "machine against COSTS: this run's slots took +21.3 % (median of 16 fitted times, +2.1 % … +30 %;
/// rank 0 +1 %, rank 1 +25 %); its steps vary by 4.1 %: the machine changed since the calibration run (other
/// load, another clock), so …: recalibrate on a quiet machine" or "…: the machine is as calibrated". "" when
/// compared is 0. Never throws.
std::string formatCostsDrift(const CostsDrift& drift, const std::string& costsName);

/// A calibration (the fit of a run) tried on the run it came from: the fitted costs predicted against the
/// run's measured steps.
struct FitCheck {
    double predictedUs = 0.0; ///< makespan predicted with the fitted costs
    Spread steps; ///< the run's step makespans
    double residualUs = 0.0; ///< predicted − the median step makespan
    double toleranceUs = 0.0; ///< max(max − min of the steps, 1 % of the median): the run's spread
    Spread slotResiduals; ///< the fit's per-slot residuals (Calibration::residuals), shares of the fitted time
    std::vector<std::pair<double, double>> idleUs; ///< per rank: predicted idle, measured median idle
    bool accepted() const; ///< |residual| ≤ tolerance
};

/// Checks a fit: `refit` is the prediction of the run's variant with the fitted costs laid over the project
/// (`slotResiduals` from Calibration::residuals). Never throws.
FitCheck checkFit(const SimResult& refit, const MeasuredTrace& measured, const std::vector<double>& slotResiduals);

/// The check as text: the fitted makespan against the steps, the slot residuals, each rank's idle, and when it
/// is refused why ("the fit predicts 3.27 s, 12.8 % below the median step 3.75 s, more than the steps vary
/// (…)"). Never throws.
std::string formatFitCheck(const FitCheck& check);

/// Decides what a run of `variant` is predicted with, before it starts: for this machine when the run is a CPU
/// run here (backend "cpu", or "auto" where no GPU is visible; no hostfile; not `nominal`), from `profileFile` or
/// this machine's cached profile, probing (its progress to `log`) when the cache lacks the variant's shape or, for a
/// transformer, its stages (machineProfile), and probing again when the cached profile's GEMMs are off this
/// machine's now by more than kProfileDriftLimit (CpuProbeOptions::checkDrift, about 1 s); else the project's devices
/// with the run's backend. A profile that cannot be had or does not fit the variant (no worker, a failed probe, a file
/// of other shapes) gives the project's devices and a note saying why — except a `profileFile` the user named, whose
/// error is thrown (IoError, FormatError as machineProfile and machineCosts). What the report then predicts is
/// costSourceOfRun(measured, the chosen profile) (machine/costsource.h), the designer's rule for the same run.
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
