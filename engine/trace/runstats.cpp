// Critical path, stragglers and variance of a measured run (docs/analysis.md).
#include "runstats.h"

#include "base/errors.h"
#include "base/stats.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace dps {

TimedRun measuredTimedRun(const MeasuredTrace& trace, int step)
{
    TimedRun run;
    run.ranks.resize(trace.ranks.size()); // ranks 0 … n − 1, as the overlay draws them
    for (const MeasuredRank& r : trace.ranks) {
        if (r.rank < 0 || static_cast<std::size_t>(r.rank) >= trace.ranks.size())
            continue;
        for (const MeasuredAction& a : r.actions)
            if (a.step == step)
                run.ranks[static_cast<std::size_t>(r.rank)].push_back(
                    TimedSlot { a.action, a.startUs, a.endUs, a.waitUs });
    }
    return run;
}

std::vector<RankAllToAll> measuredAllToAll(const MeasuredTrace& trace, int step)
{
    const auto ranks = static_cast<int>(trace.ranks.size());
    std::vector<RankAllToAll> result(trace.ranks.size());
    for (const MeasuredRank& r : trace.ranks) {
        if (r.rank < 0 || r.rank >= ranks)
            continue;
        for (const MeasuredAction& a : r.actions)
            if (a.step == step) {
                result[static_cast<std::size_t>(r.rank)].commUs += a.a2aUs;
                result[static_cast<std::size_t>(r.rank)].hiddenUs += a.a2aHiddenUs;
            }
    }
    return result;
}

CriticalPath measuredCriticalPath(const MeasuredTrace& trace, int step)
{
    return criticalPath(measuredTimedRun(trace, step));
}

const char* slotKindName(SlotKind kind)
{
    switch (kind) {
    case SlotKind::F:
        return "F";
    case SlotKind::I:
        return "I";
    case SlotKind::W:
        return "W";
    case SlotKind::B:
        return "B";
    case SlotKind::FB:
        return "F&B";
    }
    return "?";
}

SlotKind slotKindOf(const Action& action)
{
    if (action.overlapped)
        return SlotKind::FB;
    switch (action.op.kind) {
    case OpKind::F:
        return SlotKind::F;
    case OpKind::I:
        return SlotKind::I;
    case OpKind::W:
        return SlotKind::W;
    case OpKind::B:
        return SlotKind::B;
    }
    return SlotKind::F;
}

Spread spreadOf(std::vector<double> values)
{
    Spread s;
    if (values.empty())
        return s;
    std::sort(values.begin(), values.end());
    s.count = static_cast<int>(values.size());
    s.medianUs = median(values);
    s.p10Us = quantileOfSorted(values, 0.1);
    s.p90Us = quantileOfSorted(values, 0.9);
    s.minUs = values.front();
    s.maxUs = values.back();
    return s;
}

Spread stepMakespans(const MeasuredTrace& trace)
{
    std::vector<double> makespans;
    for (const MeasuredStep& s : trace.steps)
        makespans.push_back(s.makespanUs);
    return spreadOf(std::move(makespans));
}

std::vector<RankIdle> measuredIdle(const MeasuredTrace& trace)
{
    std::map<int, std::map<int, double>> busyOf; // rank → step → Σ busy
    for (const MeasuredRank& r : trace.ranks) {
        auto& steps = busyOf[r.rank];
        for (const MeasuredStep& s : trace.steps)
            steps[s.step] += 0.0;
        for (const MeasuredAction& a : r.actions)
            steps[a.step] += a.busyUs();
    }
    std::map<int, double> makespanOf;
    for (const MeasuredStep& s : trace.steps)
        makespanOf[s.step] = s.makespanUs;
    std::vector<RankIdle> result;
    for (const auto& [rank, steps] : busyOf) {
        std::vector<double> busy;
        std::vector<double> idle;
        for (const auto& [step, us] : steps) {
            const auto it = makespanOf.find(step);
            if (it == makespanOf.end())
                continue; // actions of a step the trace does not list
            busy.push_back(us);
            idle.push_back(it->second - us);
        }
        result.push_back({ rank, spreadOf(std::move(busy)), spreadOf(std::move(idle)) });
    }
    return result;
}

std::vector<std::string> RunStats::stragglerNames() const
{
    std::vector<std::string> names;
    for (const RankStats& r : ranks)
        if (r.straggler)
            names.push_back("rank " + std::to_string(r.rank));
    return names;
}

RunDiff diffRuns(const MeasuredTrace& a, int stepA, const MeasuredTrace& b, int stepB)
{
    RunDiff diff;
    diff.stepA = stepA;
    diff.stepB = stepB;
    const TimedRun runA = measuredTimedRun(a, stepA);
    const TimedRun runB = measuredTimedRun(b, stepB);
    for (const auto& r : runA.ranks)
        for (const TimedSlot& s : r)
            diff.makespanA = std::max(diff.makespanA, s.endUs);
    for (const auto& r : runB.ranks)
        for (const TimedSlot& s : r)
            diff.makespanB = std::max(diff.makespanB, s.endUs);
    const std::size_t ranks = std::max(runA.ranks.size(), runB.ranks.size());
    for (std::size_t r = 0; r < ranks; ++r) {
        static const std::vector<TimedSlot> none;
        const auto& listA = r < runA.ranks.size() ? runA.ranks[r] : none;
        const auto& listB = r < runB.ranks.size() ? runB.ranks[r] : none;
        std::vector<bool> used(listB.size(), false);
        for (const TimedSlot& x : listA) {
            std::size_t j = 0;
            while (j < listB.size() && (used[j] || !(listB[j].action == x.action)))
                ++j;
            if (j == listB.size()) {
                ++diff.onlyInA;
                continue;
            }
            used[j] = true;
            const TimedSlot& y = listB[j];
            diff.actions.push_back(ActionDiff {
                static_cast<int>(r), x.action, x.startUs, y.startUs, x.endUs - x.startUs, y.endUs - y.startUs });
        }
        diff.onlyInB += static_cast<int>(std::count(used.begin(), used.end(), false));
    }
    std::stable_sort(diff.actions.begin(), diff.actions.end(), [](const ActionDiff& x, const ActionDiff& y) {
        return std::abs(x.startDeltaUs()) > std::abs(y.startDeltaUs());
    });
    return diff;
}

RunStats runStats(const MeasuredTrace& trace, double threshold)
{
    if (!std::isfinite(threshold) || threshold < 0.0)
        throw ConstraintError("runstats.threshold",
            "threshold: must be a finite share of at least 0 (0.1 = 10 %), got " + std::to_string(threshold));
    RunStats stats;
    stats.threshold = threshold;
    int lastStep = -1;
    for (const MeasuredRank& r : trace.ranks)
        for (const MeasuredAction& a : r.actions)
            lastStep = std::max(lastStep, a.step);
    stats.steps = lastStep + 1;

    for (const MeasuredRank& r : trace.ranks) {
        RankStats rs;
        rs.rank = r.rank;
        std::vector<double> byKind[5];
        std::map<int, double> perStep; // step → Σ busy
        for (const MeasuredAction& a : r.actions) {
            byKind[static_cast<int>(slotKindOf(a.action))].push_back(a.busyUs());
            perStep[a.step] += a.busyUs();
        }
        for (int k = 0; k < 5; ++k)
            rs.byKind[k] = spreadOf(std::move(byKind[k]));
        std::vector<double> compute;
        for (const auto& [step, us] : perStep)
            compute.push_back(us);
        rs.stepCompute = spreadOf(std::move(compute));
        stats.ranks.push_back(rs);
    }
    // A rank against the median of the other ranks' median compute per step.
    for (std::size_t i = 0; i < stats.ranks.size(); ++i) {
        std::vector<double> others;
        for (std::size_t j = 0; j < stats.ranks.size(); ++j)
            if (j != i && stats.ranks[j].stepCompute.count > 0)
                others.push_back(stats.ranks[j].stepCompute.medianUs);
        RankStats& rs = stats.ranks[i];
        const double reference = median(others);
        if (others.empty() || reference <= 0.0 || rs.stepCompute.count == 0)
            continue;
        rs.excess = rs.stepCompute.medianUs / reference - 1.0;
        rs.straggler = rs.excess > threshold;
    }
    return stats;
}

} // namespace dps
