// dpstudio analyze: a measured run's critical path, its share per rank, and stragglers and variance across
// its steps (trace/runstats.h; definitions in docs/analysis.md). Thin glue: the engine computes, this formats.
#include "commands.h"

#include "base/errors.h"
#include "base/format.h"
#include "project/predict.h"
#include "sim/criticalpath.h"
#include "trace/measured.h"
#include "trace/runstats.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <optional>
#include <sstream>

namespace dps::cli {

namespace {

using json = nlohmann::ordered_json;

/// "F&B" or the kind letter, for the element list.
std::string elementText(const PathElement& e)
{
    switch (e.kind) {
    case PathElementKind::Action:
        return toString(e.action);
    case PathElementKind::Transfer:
        return "transfer rank " + std::to_string(e.fromRank) + " → " + std::to_string(e.rank);
    case PathElementKind::Gap:
        return "gap before " + toString(e.action);
    }
    return "";
}

const char* elementKindName(PathElementKind kind)
{
    switch (kind) {
    case PathElementKind::Action:
        return "action";
    case PathElementKind::Transfer:
        return "transfer";
    case PathElementKind::Gap:
        return "gap";
    }
    return "";
}

json pathJson(const CriticalPath& p, bool withElements)
{
    json o;
    o["length_us"] = p.lengthUs;
    o["start_us"] = p.startUs;
    o["end_us"] = p.endUs;
    o["transfer_us"] = p.transferUs;
    o["transfer_share"] = p.transferShare();
    json ranks = json::array();
    for (std::size_t r = 0; r < p.rankUs.size(); ++r)
        ranks.push_back(json { { "rank", r }, { "us", p.rankUs[r] }, { "share", p.rankShare(static_cast<int>(r)) } });
    o["ranks"] = ranks;
    if (withElements) {
        json elements = json::array();
        for (const PathElement& e : p.elements) {
            json x { { "kind", elementKindName(e.kind) }, { "rank", e.rank } };
            if (e.kind == PathElementKind::Transfer)
                x["from_rank"] = e.fromRank;
            x["action"] = toString(e.action);
            x["start_us"] = e.startUs;
            x["end_us"] = e.endUs;
            elements.push_back(x);
        }
        o["elements"] = elements;
    }
    return o;
}

json spreadJson(const Spread& s)
{
    return json { { "count", s.count }, { "median_us", s.medianUs }, { "p10_us", s.p10Us }, { "p90_us", s.p90Us } };
}

/// Actions and transfers on the path (gaps are not counted).
std::pair<int, int> pathCounts(const CriticalPath& p)
{
    int actions = 0;
    int transfers = 0;
    for (const PathElement& e : p.elements) {
        actions += e.kind == PathElementKind::Action ? 1 : 0;
        transfers += e.kind == PathElementKind::Transfer ? 1 : 0;
    }
    return { actions, transfers };
}

std::string pathText(const std::string& title, const CriticalPath& p, bool list)
{
    std::ostringstream out;
    const auto [actions, transfers] = pathCounts(p);
    out << title << ": " << formatTime(p.lengthUs) << " (" << formatCount(actions) << " actions, "
        << formatCount(transfers) << " transfers)\n";
    std::vector<std::vector<std::string>> rows { { "rank", "on path", "share" } };
    for (std::size_t r = 0; r < p.rankUs.size(); ++r)
        rows.push_back({ std::to_string(r), formatTime(p.rankUs[r]), formatPercent(p.rankShare(static_cast<int>(r))) });
    rows.push_back({ "transfers", formatTime(p.transferUs), formatPercent(p.transferShare()) });
    out << formatTable(rows);
    if (list) {
        std::vector<std::vector<std::string>> items { { "start", "end", "rank", "element" } };
        for (const PathElement& e : p.elements)
            items.push_back({ formatTime(e.startUs), formatTime(e.endUs), std::to_string(e.rank), elementText(e) });
        out << formatTable(items, 0);
    }
    return out.str();
}

std::string spreadText(const Spread& s)
{
    if (s.count == 0)
        return "-";
    return formatTime(s.medianUs) + " (" + formatTime(s.p10Us) + "–" + formatTime(s.p90Us) + ")";
}

std::string statsText(const RunStats& stats)
{
    std::ostringstream out;
    out << "Busy time per slot kind, per rank: median (p10–p90) over " << formatCount(stats.steps)
        << " measured steps\n";
    bool used[5] = { false, false, false, false, false };
    for (const RankStats& r : stats.ranks)
        for (int k = 0; k < 5; ++k)
            used[k] = used[k] || r.byKind[k].count > 0;
    std::vector<std::string> header { "rank" };
    for (int k = 0; k < 5; ++k)
        if (used[k])
            header.push_back(slotKindName(static_cast<SlotKind>(k)));
    header.push_back("compute/step");
    header.push_back("vs others");
    std::vector<std::vector<std::string>> rows { header };
    for (const RankStats& r : stats.ranks) {
        std::vector<std::string> row { std::to_string(r.rank) + (r.straggler ? " *" : "") };
        for (int k = 0; k < 5; ++k)
            if (used[k])
                row.push_back(spreadText(r.byKind[k]));
        row.push_back(spreadText(r.stepCompute));
        row.push_back(stats.ranks.size() > 1 ? formatSignedPercent(r.excess) : "-");
        rows.push_back(row);
    }
    out << formatTable(rows);
    const std::vector<std::string> names = stats.stragglerNames();
    out << "Stragglers (median compute per step more than " << formatPercent(stats.threshold)
        << " above the median of the other ranks): ";
    if (names.empty())
        out << "none\n";
    for (std::size_t i = 0; i < names.size(); ++i)
        out << (i ? ", " : "") << names[i] << (i + 1 == names.size() ? "\n" : "");
    return out.str();
}

json diffJson(const RunDiff& d, const std::string& other)
{
    json o { { "other", other }, { "step", d.stepA }, { "other_step", d.stepB }, { "makespan_us", d.makespanA },
        { "other_makespan_us", d.makespanB }, { "only_in_this", d.onlyInA }, { "only_in_other", d.onlyInB } };
    json actions = json::array();
    for (const ActionDiff& x : d.actions)
        actions.push_back(json { { "rank", x.rank }, { "action", toString(x.action) }, { "start_us", x.startA },
            { "other_start_us", x.startB }, { "duration_us", x.durationA }, { "other_duration_us", x.durationB } });
    o["actions"] = actions;
    return o;
}

std::string diffText(const RunDiff& d, const std::string& other, bool all)
{
    constexpr std::size_t kRows = 20;
    std::ostringstream out;
    out << "Against " << other << " step " << d.stepB << ": makespan " << formatTime(d.makespanB) << " against "
        << formatTime(d.makespanA) << " (" << formatSignedTime(d.makespanB - d.makespanA) << ")";
    if (d.onlyInA + d.onlyInB > 0)
        out << "; " << d.onlyInA << " actions only in this run, " << d.onlyInB << " only in the other";
    out << "\n";
    const std::size_t n = all ? d.actions.size() : std::min(d.actions.size(), kRows);
    out << "Per action, the other run minus this one, largest start difference first (" << formatCount(double(n))
        << " of " << formatCount(double(d.actions.size())) << "; --list for all):\n";
    std::vector<std::vector<std::string>> rows { { "action", "rank", "start", "Δ start", "Δ duration" } };
    for (std::size_t i = 0; i < n; ++i) {
        const ActionDiff& x = d.actions[i];
        rows.push_back({ toString(x.action), std::to_string(x.rank), formatTime(x.startA),
            formatSignedTime(x.startDeltaUs()), formatSignedTime(x.durationDeltaUs()) });
    }
    out << formatTable(rows);
    return out.str();
}

/// Actions per rank in `step` of a measured run (an overlapped slot counts once).
std::vector<std::size_t> actionsPerRank(const MeasuredTrace& trace, int step)
{
    std::vector<std::size_t> counts;
    for (const MeasuredRank& r : trace.ranks) {
        if (r.rank < 0)
            continue;
        if (static_cast<std::size_t>(r.rank) >= counts.size())
            counts.resize(static_cast<std::size_t>(r.rank) + 1, 0);
        for (const MeasuredAction& a : r.actions)
            counts[static_cast<std::size_t>(r.rank)] += a.step == step ? 1 : 0;
    }
    return counts;
}

/// "" when the run's step has the schedule's ranks and each rank's action count, else what differs.
std::string scheduleMismatch(const MeasuredTrace& trace, int step, const Schedule& schedule)
{
    const std::vector<std::size_t> counts = actionsPerRank(trace, step);
    if (counts.size() != static_cast<std::size_t>(schedule.ranks))
        return "the run has " + std::to_string(counts.size()) + " ranks, the variant " + std::to_string(schedule.ranks);
    for (std::size_t r = 0; r < counts.size(); ++r)
        if (counts[r] != schedule.order[r].size())
            return "rank " + std::to_string(r) + " ran " + std::to_string(counts[r]) + " actions, the variant has "
                + std::to_string(schedule.order[r].size());
    return {};
}

/// Throws FormatError when the run has no action in `step`.
void requireStep(const MeasuredTrace& trace, int step, const std::string& file)
{
    for (const MeasuredRank& r : trace.ranks)
        for (const MeasuredAction& a : r.actions)
            if (a.step == step)
                return;
    throw FormatError(file + ": --step: the run has no measured step " + std::to_string(step));
}

/// --compare: the per-action diff against the other run's median step (a warning when it ran another schedule).
std::optional<RunDiff> compareRuns(const AnalyzeArgs& args, const MeasuredTrace& trace, int step)
{
    if (args.compare.empty())
        return std::nullopt;
    const MeasuredTrace other = loadMeasured(args.compare);
    if (actionsPerRank(other, other.medianStep) != actionsPerRank(trace, step))
        std::cerr << "warning: " << args.compare << " ran another schedule (" << other.ranks.size()
                  << " ranks, variant " << (other.variant.empty() ? "?" : other.variant) << ") than " << args.measured
                  << " (" << trace.ranks.size() << " ranks, variant " << (trace.variant.empty() ? "?" : trace.variant)
                  << "): the per-action diff pairs only the actions both have\n";
    return diffRuns(trace, step, other, other.medianStep);
}

/// The prediction's critical path, or why there is none, and which project and variant it is of.
struct PredictedPath {
    std::optional<CriticalPath> path;
    std::string note; ///< why there is no path (the prediction's error)
    std::string projectLabel;
    std::string variant;
};

/// The prediction's critical path: the project given, else the one the run recorded (none without either);
/// a warning when the run is not of that variant's schedule.
PredictedPath predictedPath(const AnalyzeArgs& args, const MeasuredTrace& trace, int step)
{
    PredictedPath out;
    std::optional<Project> project;
    if (!args.project.empty()) {
        project = loadProject(args.project);
        out.projectLabel = args.project;
    } else if (!trace.projectJson.empty()) {
        project = parseProject(trace.projectJson, args.measured + ": project");
        out.projectLabel = "the project recorded in " + args.measured;
    }
    if (!project)
        return out;
    const std::string& name = args.variant.empty() ? trace.variant : args.variant;
    out.variant = variantOf(*project, name, args.project.empty() ? args.measured : args.project).name;
    const Prediction prediction = predict(*project, out.variant);
    if (prediction.schedule)
        if (const std::string mismatch = scheduleMismatch(trace, step, *prediction.schedule); !mismatch.empty())
            std::cerr << "warning: " << args.measured << " is not a run of variant " << out.variant << " of "
                      << out.projectLabel << ": " << mismatch << "\n";
    if (prediction.valid() && prediction.schedule)
        out.path = criticalPath(*prediction.schedule, prediction.sim, prediction.costs);
    else
        out.note = prediction.error;
    return out;
}

json statsJson(const RunStats& stats)
{
    json st;
    st["steps"] = stats.steps;
    st["threshold"] = stats.threshold;
    st["spread"] = "p10-p90";
    json ranks = json::array();
    for (const RankStats& r : stats.ranks) {
        json x { { "rank", r.rank } };
        json kinds;
        for (int k = 0; k < 5; ++k)
            if (r.byKind[k].count > 0)
                kinds[slotKindName(static_cast<SlotKind>(k))] = spreadJson(r.byKind[k]);
        x["busy_by_kind"] = kinds;
        x["compute_per_step"] = spreadJson(r.stepCompute);
        x["excess"] = r.excess;
        x["straggler"] = r.straggler;
        ranks.push_back(x);
    }
    st["ranks"] = ranks;
    st["stragglers"] = stats.stragglerNames();
    return st;
}

} // namespace

int cmdAnalyze(const AnalyzeArgs& args)
{
    const MeasuredTrace trace = loadMeasured(args.measured);
    const int step = args.step.value_or(trace.medianStep);
    requireStep(trace, step, args.measured);
    const CriticalPath measuredPath = measuredCriticalPath(trace, step);
    const RunStats stats = runStats(trace, args.threshold);
    const std::optional<RunDiff> diff = compareRuns(args, trace, step);
    const PredictedPath predicted = predictedPath(args, trace, step);

    if (args.json) {
        json o;
        o["measured"] = args.measured;
        o["step"] = step;
        o["critical_path"] = pathJson(measuredPath, true);
        if (predicted.path) {
            json p = pathJson(*predicted.path, args.list);
            p["variant"] = predicted.variant;
            o["predicted_critical_path"] = p;
        }
        o["stragglers"] = statsJson(stats);
        if (diff)
            o["diff"] = diffJson(*diff, args.compare);
        std::cout << o.dump(2) << "\n";
        return kExitOk;
    }

    std::cout << pathText(
        "Critical path of measured step " + std::to_string(step) + (step == trace.medianStep ? " (the median)" : ""),
        measuredPath, args.list);
    if (predicted.path)
        std::cout << "\n"
                  << pathText("Predicted critical path (" + predicted.projectLabel + ", variant " + predicted.variant
                             + ", the project's devices)",
                         *predicted.path, false);
    else if (!predicted.note.empty())
        std::cout << "\nNo predicted critical path: " << predicted.note << "\n";
    std::cout << "\n" << statsText(stats);
    if (diff)
        std::cout << "\n" << diffText(*diff, args.compare, args.list);
    return kExitOk;
}

} // namespace dps::cli
