#include "report.h"

#include "cpuprobe.h"

#include "base/errors.h"
#include "base/format.h"
#include "base/gpus.h"
#include "base/hostinfo.h"
#include "project/predict.h"
#include "sim/alltoall.h"
#include "sim/calibrate.h"
#include "trace/runstats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace dps::launch {

using namespace dps::machine;

namespace {

std::string formatValue(const ComparisonRow& row, double value)
{
    return row.unit == ComparisonRow::Unit::Bytes ? formatBytes(value) : formatTime(value);
}

} // namespace

std::optional<double> ComparisonRow::relativeError() const
{
    if (predicted == 0.0)
        return std::nullopt;
    return (measured - predicted) / predicted;
}

std::vector<MeasuredRankSummary> summarizeMeasured(const MeasuredTrace& trace)
{
    std::map<int, MeasuredRankSummary> byRank;
    for (const RankIdle& r : measuredIdle(trace)) {
        MeasuredRankSummary& s = byRank[r.rank];
        s.rank = r.rank;
        s.busyUs = r.busy.medianUs;
        s.idleUs = r.idle.medianUs;
        s.idleMinUs = r.idle.minUs;
        s.idleMaxUs = r.idle.maxUs;
    }
    for (const MeasuredRank& r : trace.ranks) {
        MeasuredRankSummary& s = byRank[r.rank];
        s.rank = r.rank;
        for (const MeasuredAction& a : r.actions) {
            s.peakMemoryBytes = std::max(s.peakMemoryBytes, a.memoryBytes);
            s.peakActivationBytes = std::max(s.peakActivationBytes, a.activationBytes);
        }
    }
    std::vector<MeasuredRankSummary> result;
    for (const auto& [rank, summary] : byRank)
        result.push_back(summary);
    return result;
}

std::vector<ComparisonRow> compareRun(const SimResult& predicted, const MeasuredTrace& measured)
{
    using Unit = ComparisonRow::Unit;
    std::vector<ComparisonRow> rows;
    const Spread steps = stepMakespans(measured);
    rows.push_back({ "makespan", Unit::Microseconds, predicted.makespanUs, measured.medianMakespanUs(),
        std::make_pair(steps.minUs, steps.maxUs) });
    for (const MeasuredRankSummary& m : summarizeMeasured(measured)) {
        if (m.rank < 0 || static_cast<std::size_t>(m.rank) >= predicted.ranks.size())
            continue;
        const RankResult& p = predicted.ranks[static_cast<std::size_t>(m.rank)];
        const std::string rank = "rank " + std::to_string(m.rank);
        rows.push_back(
            { rank + " idle", Unit::Microseconds, p.idleUs, m.idleUs, std::make_pair(m.idleMinUs, m.idleMaxUs) });
        rows.push_back({ rank + " peak memory", Unit::Bytes, p.peakMemoryBytes, double(m.peakMemoryBytes) });
        rows.push_back(
            { rank + " peak activations", Unit::Bytes, p.peakActivationBytes, double(m.peakActivationBytes) });
    }
    return rows;
}

std::string makespanAgainstSteps(double predictedUs, const MeasuredTrace& measured)
{
    const Spread steps = stepMakespans(measured);
    if (steps.count == 0)
        return {};
    if (predictedUs < steps.minUs)
        return formatPercent((steps.minUs - predictedUs) / steps.minUs) + " below the fastest measured step ("
            + formatTime(steps.minUs) + ")";
    if (predictedUs > steps.maxUs)
        return formatPercent((predictedUs - steps.maxUs) / steps.maxUs) + " above the slowest measured step ("
            + formatTime(steps.maxUs) + ")";
    return "within the measured steps (" + formatTime(steps.minUs) + "–" + formatTime(steps.maxUs) + ")";
}

bool CostsDrift::changed() const
{
    bool rankMoved = false;
    for (const auto& [rank, share] : byRank)
        rankMoved = rankMoved || std::abs(share) > runSpread;
    return compared > 0 && (std::abs(median) > runSpread || rankMoved);
}

namespace {

/// The rank that ran each stage in `measured`, by stage, `stages` long: −1 when none did, or when several did
/// (DualPipe runs a stage on two ranks, one per direction): its times then count for no rank.
std::vector<int> stageRanks(const MeasuredTrace& measured, int stages)
{
    constexpr int kNone = -2;
    std::vector<int> rankOf(static_cast<std::size_t>(std::max(stages, 0)), kNone);
    for (const MeasuredRank& r : measured.ranks)
        for (const MeasuredAction& a : r.actions)
            for (int i = 0; i < a.action.size(); ++i)
                if (const int s = a.action.at(i).stage; s >= 0 && s < stages) {
                    int& owner = rankOf[static_cast<std::size_t>(s)];
                    owner = owner == kNone || owner == r.rank ? r.rank : -1;
                }
    for (int& owner : rankOf)
        owner = owner == kNone ? -1 : owner;
    return rankOf;
}

} // namespace

CostsDrift costsDrift(const CostsFile& used, const MeasuredTrace& measured, int stages)
{
    const Calibration now = calibrate(measuredSlots(measured), stages);
    const std::vector<int> rankOf = stageRanks(measured, stages);
    std::vector<double> shares;
    std::map<int, std::vector<double>> rankShares;
    for (std::size_t s = 0; s < used.stages.size() && s < now.costs.stages.size(); ++s) {
        const StageCostOverride& a = used.stages[s];
        const StageCostOverride& b = now.costs.stages[s];
        const auto compare = [&](const std::optional<double>& was, const std::optional<double>& is) {
            if (!was || !is || *was <= 0.0)
                return;
            shares.push_back(*is / *was - 1.0);
            if (s < rankOf.size() && rankOf[s] >= 0)
                rankShares[rankOf[s]].push_back(shares.back());
        };
        compare(a.forwardUs, b.forwardUs);
        compare(a.inputGradUs, b.inputGradUs);
        compare(a.weightGradUs, b.weightGradUs);
        compare(a.backwardUs, b.backwardUs);
        compare(a.overlapUs, b.overlapUs); // keyed by the forward stage, whose rank runs the slot
    }
    CostsDrift drift;
    drift.compared = static_cast<int>(shares.size());
    const Spread steps = stepMakespans(measured);
    drift.runSpread = steps.medianUs > 0.0 ? steps.rangeUs() / steps.medianUs : 0.0;
    if (shares.empty())
        return drift;
    const Spread spread = spreadOf(shares);
    drift.median = spread.medianUs;
    drift.least = spread.minUs;
    drift.greatest = spread.maxUs;
    for (auto& [rank, values] : rankShares)
        drift.byRank.emplace_back(rank, spreadOf(std::move(values)).medianUs);
    return drift;
}

std::string formatCostsDrift(const CostsDrift& drift, const std::string& costsName)
{
    if (drift.compared == 0)
        return {};
    std::string ranks;
    for (const auto& [rank, share] : drift.byRank)
        ranks += "; rank " + std::to_string(rank) + " " + formatSignedPercent(share);
    return "machine against " + costsName + ": this run's slots took " + formatSignedPercent(drift.median)
        + " (median of " + formatCountOf(static_cast<std::size_t>(drift.compared), "fitted time") + ", "
        + formatSignedPercent(drift.least) + " … " + formatSignedPercent(drift.greatest) + ranks
        + "); its steps vary by " + formatPercent(drift.runSpread)
        + (drift.changed() ? ": the machine changed since the calibration run (other load, another clock), so "
                             "the calibrated prediction no longer holds: recalibrate on a quiet machine"
                           : ": the machine is as calibrated")
        + "\n";
}

bool FitCheck::accepted() const
{
    return std::abs(residualUs) <= toleranceUs;
}

FitCheck checkFit(const SimResult& refit, const MeasuredTrace& measured, const std::vector<double>& slotResiduals)
{
    FitCheck check;
    check.predictedUs = refit.makespanUs;
    check.steps = stepMakespans(measured);
    check.residualUs = check.predictedUs - check.steps.medianUs;
    check.toleranceUs = std::max(check.steps.rangeUs(), 0.01 * check.steps.medianUs);
    check.slotResiduals = spreadOf(slotResiduals);
    for (const MeasuredRankSummary& m : summarizeMeasured(measured))
        if (m.rank >= 0 && static_cast<std::size_t>(m.rank) < refit.ranks.size())
            check.idleUs.emplace_back(refit.ranks[static_cast<std::size_t>(m.rank)].idleUs, m.idleUs);
    return check;
}

std::string formatFitCheck(const FitCheck& c)
{
    const double median = c.steps.medianUs;
    const double share = median > 0.0 ? c.residualUs / median : 0.0;
    std::string text = "fit against the run: predicts " + formatTime(c.predictedUs) + ", " + formatSignedPercent(share)
        + " against the median step " + formatTime(median) + " (steps " + formatTime(c.steps.minUs) + "–"
        + formatTime(c.steps.maxUs) + ", " + formatCountOf(std::size_t(c.steps.count), "step") + ")\n";
    if (c.slotResiduals.count > 0)
        text += "slot residuals (measured ÷ fitted − 1): p10 " + formatSignedPercent(c.slotResiduals.p10Us)
            + ", median " + formatSignedPercent(c.slotResiduals.medianUs) + ", p90 "
            + formatSignedPercent(c.slotResiduals.p90Us) + " ("
            + formatCountOf(std::size_t(c.slotResiduals.count), "slot") + ")\n";
    for (std::size_t r = 0; r < c.idleUs.size(); ++r)
        text += "rank " + std::to_string(r) + " idle: predicted " + formatTime(c.idleUs[r].first)
            + ", measured (median of the steps) " + formatTime(c.idleUs[r].second) + "\n";
    if (!c.accepted())
        text += "refused: the fit's makespan is " + formatTime(std::abs(c.residualUs))
            + " from the median step, more than " + "the run's steps vary (" + formatTime(c.toleranceUs)
            + ": max − min, at least 1 % of the median): the "
            + "per-stage medians do not reproduce this run (slots slowed unevenly, e.g. by other processes on the "
            + "machine); rerun on a quiet machine\n";
    return text;
}

std::string formatComparison(
    const std::vector<ComparisonRow>& rows, const MeasuredTrace& measured, const std::string& prediction)
{
    std::vector<std::vector<std::string>> cells { { "", "predicted", "measured", "error", "steps (min–max)" } };
    for (const ComparisonRow& row : rows) {
        const auto error = row.relativeError();
        cells.push_back({ row.label, formatValue(row, row.predicted), formatValue(row, row.measured),
            error ? formatSignedPercent(*error) : std::string("n/a"),
            row.stepRange ? formatValue(row, row.stepRange->first) + "–" + formatValue(row, row.stepRange->second)
                          : std::string() });
    }
    const Spread steps = stepMakespans(measured);
    std::string header = "predicted vs measured (median of " + formatCountOf(measured.steps.size(), "measured step")
        + ": step " + std::to_string(measured.medianStep);
    if (steps.count > 1)
        header += "; makespan " + formatTime(steps.minUs) + "–" + formatTime(steps.maxUs) + ", p10–p90 "
            + formatPercent(steps.medianUs > 0.0 ? steps.spreadUs() / steps.medianUs : 0.0) + " of the median";
    header += "; idle: median over the steps)\n";
    std::string text
        = header + (prediction.empty() ? std::string() : "prediction: " + prediction + "\n") + formatTable(cells);
    if (!rows.empty() && rows.front().label == "makespan" && steps.count > 0)
        text += "predicted makespan: " + makespanAgainstSteps(rows.front().predicted, measured) + "\n";
    return text;
}

CostSource chooseRunCostSource(const Project& project, const std::string& variantName, const std::string& backend,
    bool hostfile, bool nominal, const std::string& profileFile, int threads, std::ostream& log)
{
    CostSource projectDevices = CostSource::projectRun(backend);
    const auto keepNominal = [&](const std::string& why) {
        projectDevices.notes.push_back(why + ": the prediction is for " + projectDevices.label(project));
        return projectDevices;
    };
    if (nominal || backend == "cuda")
        return projectDevices;
    if (hostfile)
        return keepNominal("a run over a hostfile spans other machines than the one probed");
    if (backend == "auto" && profileFile.empty()) {
        std::string why;
        if (!listGpus(&why).empty())
            return projectDevices; // auto picks the GPUs
    }
    const Variant& variant = findVariant(project, variantName);
    try {
        // A transformer's stages are timed whole (probe.h): the profile must hold the variant's, probed if missing.
        // The check runs as many GEMM processes at once as ranks will compute at once.
        const int together = std::max(1, std::min(variant.ranks, cpuCoreCount() / std::max(1, threads)));
        CostSource chosen = CostSource::thisMachine(machineProfile({ variantShape(project, variant) }, threads,
            profileFile, 10.0, log, &project, { variant.name }, true, together));
        chosen.notes = machineCostsOf(chosen, project, variant)->notes; // throws when it does not fit the variant
        return chosen;
    } catch (const Error& e) {
        if (!profileFile.empty())
            throw;
        return keepNominal(std::string("no CPU profile of this machine (") + e.what() + ")");
    }
}

Prediction predictMeasuredRun(const Project& project, const std::string& variant, const MeasuredTrace& measured,
    const CostSource& chosen, std::string* label)
{
    const RunPredictionSetup setup
        = runPredictionSetup(costSourceOfRun(measured, chosen.profile), project, variant, false);
    Prediction prediction = predict(project, variant, setup.options);
    if (!prediction.valid())
        throw FormatError("variant '" + prediction.variantName + "': " + prediction.error);
    if (label)
        *label = setup.label;
    return prediction;
}

std::string formatAllToAll(const Prediction& predicted, const MeasuredTrace& measured)
{
    const std::vector<RankAllToAll> measuredRanks = measuredAllToAll(measured, measured.medianStep);
    const std::vector<RankAllToAll> predictedRanks
        = predicted.schedule ? allToAllPerRank(*predicted.schedule, predicted.costs) : std::vector<RankAllToAll> {};
    bool any = false;
    for (const RankAllToAll& m : measuredRanks)
        any = any || m.commUs > 0.0;
    for (const RankAllToAll& p : predictedRanks)
        any = any || p.commUs > 0.0;
    if (!any)
        return {};
    std::string text;
    for (std::size_t rank = 0; rank < measuredRanks.size(); ++rank) {
        const RankAllToAll& m = measuredRanks[rank];
        text += "rank " + std::to_string(rank) + " a2a hidden: " + formatPercent(m.hiddenShare()) + " of "
            + formatTime(m.commUs);
        if (rank < predictedRanks.size()) {
            const RankAllToAll& p = predictedRanks[rank];
            text += " (predicted " + formatPercent(p.hiddenShare()) + " of " + formatTime(p.commUs) + ")";
        }
        text += "\n";
    }
    return text;
}

} // namespace dps::launch
