#include "report.h"

#include "base/format.h"

#include "base/errors.h"
#include "project/predict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace dps::launch {

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

SimResult predictRun(const Project& project, const std::string& variantName, const std::string& backend)
{
    PredictOptions options = PredictOptions::peaksOnly();
    options.fp32Tensors = backend == "cpu";
    Prediction prediction = predict(project, variantName, options);
    if (!prediction.valid())
        throw FormatError("variant '" + prediction.variantName + "': " + prediction.error);
    return std::move(prediction.sim);
}

std::string formatComparison(const std::vector<ComparisonRow>& rows, const MeasuredTrace& measured)
{
    std::vector<std::vector<std::string>> cells { { "", "predicted", "measured", "error" } };
    for (const ComparisonRow& row : rows) {
        const auto error = row.relativeError();
        cells.push_back({ row.label, formatValue(row, row.predicted), formatValue(row, row.measured),
            error ? formatSignedPercent(*error) : std::string("n/a") });
    }
    return "predicted vs measured (median of " + std::to_string(measured.steps.size())
        + " measured steps: step " + std::to_string(measured.medianStep) + ")\n" + formatTable(cells);
}

} // namespace dps::launch
