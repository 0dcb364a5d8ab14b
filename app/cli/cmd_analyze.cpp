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

std::string signedTime(double us)
{
    return (us < 0 ? "-" : "+") + formatTime(us < 0 ? -us : us);
}

std::string diffText(const RunDiff& d, const std::string& other, bool all)
{
    constexpr std::size_t kRows = 20;
    std::ostringstream out;
    out << "Against " << other << " step " << d.stepB << ": makespan " << formatTime(d.makespanB) << " against "
        << formatTime(d.makespanA) << " (" << signedTime(d.makespanB - d.makespanA) << ")";
    if (d.onlyInA + d.onlyInB > 0)
        out << "; " << d.onlyInA << " actions only in this run, " << d.onlyInB << " only in the other";
    out << "\n";
    const std::size_t n = all ? d.actions.size() : std::min(d.actions.size(), kRows);
    out << "Per action, the other run minus this one, largest start difference first (" << formatCount(double(n))
        << " of " << formatCount(double(d.actions.size())) << "; --list for all):\n";
    std::vector<std::vector<std::string>> rows { { "action", "rank", "start", "Δ start", "Δ duration" } };
    for (std::size_t i = 0; i < n; ++i) {
        const ActionDiff& x = d.actions[i];
        rows.push_back({ toString(x.action), std::to_string(x.rank), formatTime(x.startA), signedTime(x.startDeltaUs()),
            signedTime(x.durationDeltaUs()) });
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

} // namespace

int cmdAnalyze(const AnalyzeArgs& args)
{
    const MeasuredTrace trace = loadMeasured(args.measured);
    const int step = args.step.value_or(trace.medianStep);
    bool found = false;
    for (const MeasuredRank& r : trace.ranks)
        for (const MeasuredAction& a : r.actions)
            found = found || a.step == step;
    if (!found)
        throw FormatError(args.measured + ": --step: the run has no measured step " + std::to_string(step));
    const CriticalPath measuredPath = measuredCriticalPath(trace, step);
    const RunStats stats = runStats(trace, args.threshold);
    std::optional<RunDiff> diff;
    if (!args.compare.empty()) {
        const MeasuredTrace other = loadMeasured(args.compare);
        if (actionsPerRank(other, other.medianStep) != actionsPerRank(trace, step))
            std::cerr << "warning: " << args.compare << " ran another schedule (" << other.ranks.size()
                      << " ranks, variant " << (other.variant.empty() ? "?" : other.variant) << ") than "
                      << args.measured << " (" << trace.ranks.size() << " ranks, variant "
                      << (trace.variant.empty() ? "?" : trace.variant)
                      << "): the per-action diff pairs only the actions both have\n";
        diff = diffRuns(trace, step, other, other.medianStep);
    }

    // The prediction's critical path: the project given, else the one the run recorded.
    std::optional<Project> project;
    std::string projectLabel;
    if (!args.project.empty()) {
        project = loadProject(args.project);
        projectLabel = args.project;
    } else if (!trace.projectJson.empty()) {
        project = parseProject(trace.projectJson, args.measured + ": project");
        projectLabel = "the project recorded in " + args.measured;
    }
    std::optional<CriticalPath> predictedPath;
    std::string predictedNote;
    std::string variantName;
    if (project) {
        const std::string& name = args.variant.empty() ? trace.variant : args.variant;
        variantName = variantOf(*project, name, args.project.empty() ? args.measured : args.project).name;
        const Prediction prediction = predict(*project, variantName);
        if (prediction.schedule)
            if (const std::string mismatch = scheduleMismatch(trace, step, *prediction.schedule); !mismatch.empty())
                std::cerr << "warning: " << args.measured << " is not a run of variant " << variantName << " of "
                          << projectLabel << ": " << mismatch << "\n";
        if (prediction.valid() && prediction.schedule)
            predictedPath = criticalPath(*prediction.schedule, prediction.sim, prediction.costs);
        else
            predictedNote = prediction.error;
    }

    if (args.json) {
        json o;
        o["measured"] = args.measured;
        o["step"] = step;
        o["critical_path"] = pathJson(measuredPath, true);
        if (predictedPath) {
            json p = pathJson(*predictedPath, args.list);
            p["variant"] = variantName;
            o["predicted_critical_path"] = p;
        }
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
        o["stragglers"] = st;
        if (diff)
            o["diff"] = diffJson(*diff, args.compare);
        std::cout << o.dump(2) << "\n";
        return kExitOk;
    }

    std::cout << pathText(
        "Critical path of measured step " + std::to_string(step) + (step == trace.medianStep ? " (the median)" : ""),
        measuredPath, args.list);
    if (predictedPath)
        std::cout << "\n"
                  << pathText("Predicted critical path (" + projectLabel + ", variant " + variantName
                             + ", the project's devices)",
                         *predictedPath, false);
    else if (!predictedNote.empty())
        std::cout << "\nNo predicted critical path: " << predictedNote << "\n";
    std::cout << "\n" << statsText(stats);
    if (diff)
        std::cout << "\n" << diffText(*diff, args.compare, args.list);
    return kExitOk;
}

} // namespace dps::cli
