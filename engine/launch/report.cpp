#include "report.h"

#include "base/errors.h"
#include "project/predict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace dps::launch {

namespace {

std::string formatTime(double us)
{
    char buffer[64];
    if (std::fabs(us) >= 10000.0)
        std::snprintf(buffer, sizeof buffer, "%.3f ms", us / 1000.0);
    else
        std::snprintf(buffer, sizeof buffer, "%.1f µs", us);
    return buffer;
}

std::string formatBytes(double bytes)
{
    static const char* units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int unit = 0;
    double value = bytes;
    while (std::fabs(value) >= 1024.0 && unit < 4) {
        value /= 1024.0;
        ++unit;
    }
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
    return buffer;
}

std::string formatValue(const ComparisonRow& row, double value)
{
    return row.unit == ComparisonRow::Unit::Bytes ? formatBytes(value) : formatTime(value);
}

/// Pads to `width` display columns (µ counts as one column although it is two bytes).
std::string pad(const std::string& text, std::size_t width, bool right)
{
    std::size_t columns = 0;
    for (unsigned char c : text)
        columns += (c & 0xC0) != 0x80 ? 1 : 0;
    const std::string fill(columns < width ? width - columns : 0, ' ');
    return right ? fill + text : text + fill;
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
    std::string text = "predicted vs measured (median of " + std::to_string(measured.steps.size())
        + " measured steps: step " + std::to_string(measured.medianStep) + ")\n";
    text += pad("", 26, false) + pad("predicted", 14, true) + pad("measured", 14, true) + pad("error", 10, true) + "\n";
    for (const ComparisonRow& row : rows) {
        char error[32] = "n/a";
        if (const auto e = row.relativeError())
            std::snprintf(error, sizeof error, "%+.1f%%", *e * 100.0);
        text += pad(row.label, 26, false) + pad(formatValue(row, row.predicted), 14, true)
            + pad(formatValue(row, row.measured), 14, true) + pad(error, 10, true) + "\n";
    }
    return text;
}

} // namespace dps::launch
