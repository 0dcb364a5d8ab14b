#include "report.h"

#include "cpuprobe.h"

#include "base/errors.h"
#include "base/format.h"
#include "base/gpus.h"
#include "project/predict.h"
#include "sim/alltoall.h"
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
    const double makespan = trace.medianMakespanUs();
    for (const MeasuredRank& r : trace.ranks) {
        MeasuredRankSummary& s = byRank[r.rank];
        s.rank = r.rank;
        for (const MeasuredAction& a : r.actions) {
            if (a.step == trace.medianStep)
                s.busyUs += a.busyUs();
            s.peakMemoryBytes = std::max(s.peakMemoryBytes, a.memoryBytes);
            s.peakActivationBytes = std::max(s.peakActivationBytes, a.activationBytes);
        }
        s.idleUs = makespan - s.busyUs;
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
    rows.push_back({ "makespan", Unit::Microseconds, predicted.makespanUs, measured.medianMakespanUs() });
    for (const MeasuredRankSummary& m : summarizeMeasured(measured)) {
        if (m.rank < 0 || static_cast<std::size_t>(m.rank) >= predicted.ranks.size())
            continue;
        const RankResult& p = predicted.ranks[static_cast<std::size_t>(m.rank)];
        const std::string rank = "rank " + std::to_string(m.rank);
        rows.push_back({ rank + " idle", Unit::Microseconds, p.idleUs, m.idleUs });
        rows.push_back({ rank + " peak memory", Unit::Bytes, p.peakMemoryBytes, double(m.peakMemoryBytes) });
        rows.push_back(
            { rank + " peak activations", Unit::Bytes, p.peakActivationBytes, double(m.peakActivationBytes) });
    }
    return rows;
}

std::string formatComparison(
    const std::vector<ComparisonRow>& rows, const MeasuredTrace& measured, const std::string& prediction)
{
    std::vector<std::vector<std::string>> cells { { "", "predicted", "measured", "error" } };
    for (const ComparisonRow& row : rows) {
        const auto error = row.relativeError();
        cells.push_back({ row.label, formatValue(row, row.predicted), formatValue(row, row.measured),
            error ? formatSignedPercent(*error) : std::string("n/a") });
    }
    return "predicted vs measured (median of " + formatCountOf(measured.steps.size(), "measured step") + ": step "
        + std::to_string(measured.medianStep) + ")\n"
        + (prediction.empty() ? std::string() : "prediction: " + prediction + "\n") + formatTable(cells);
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
        CostSource chosen = CostSource::thisMachine(machineProfile(
            { variantShape(project, variant) }, threads, profileFile, 10.0, log, &project, { variant.name }));
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
