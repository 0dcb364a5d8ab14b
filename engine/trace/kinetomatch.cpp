#include "trace/kinetofile.h"

#include "base/format.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

// Matching one rank's spans to the schedule: compute spans timed by their GPU-side spans and grouped by step,
// overlapped halves merged into one slot, checked against the rank's slots, and the transfers' waits added.
namespace dps::kineto {

namespace {

/// A compute slot of one rank in one step, on the file's clock.
struct Slot {
    Action action;
    double computeStart = 0.0;
    double computeEnd = 0.0;
    double computeUs = 0.0;
    bool gpu = false;
};

/// One rank's slots and transfers of one step.
struct StepSpans {
    std::vector<Slot> slots;
    std::vector<Span> comms;
};

/// Length of the union of two intervals (µs).
double unionLength(double a0, double a1, double b0, double b1)
{
    if (b0 > a1 || a0 > b1)
        return (a1 - a0) + (b1 - b0);
    return std::max(a1, b1) - std::min(a0, b0);
}

bool consumes(const Action& action, Comm comm, int stage, int microbatch)
{
    for (int i = 0; i < action.size(); ++i) {
        const Op& op = action.at(i);
        if (op.stage != stage || op.microbatch != microbatch)
            continue;
        const bool forward = op.kind == OpKind::F;
        const bool backward = op.kind == OpKind::B || op.kind == OpKind::I;
        if ((comm == Comm::RecvF || comm == Comm::SendF) ? forward : backward)
            return true;
    }
    return false;
}

std::int64_t memoryDuring(const std::vector<MemoryPoint>& memory, double start, double end)
{
    std::int64_t value = 0;
    auto it = std::upper_bound(
        memory.begin(), memory.end(), start, [](double t, const MemoryPoint& p) { return t < p.ts; });
    if (it != memory.begin())
        value = std::prev(it)->totalAllocated;
    for (; it != memory.end() && it->ts <= end; ++it)
        value = std::max(value, it->totalAllocated);
    return value;
}

/// A rank's GPU-side spans by External id, else by name and occurrence. (An annotation whose work ran on
/// several streams has one GPU-side span per stream, same External id.)
struct GpuSpans {
    std::map<std::int64_t, std::vector<const Span*>> byId;
    std::map<std::string, std::vector<const Span*>> byName;

    explicit GpuSpans(const RankFile& file)
    {
        for (const Span& g : file.gpuSpans) {
            if (g.externalId >= 0)
                byId[g.externalId].push_back(&g);
            byName[g.name].push_back(&g);
        }
    }

    /// The GPU-side spans of CPU-side span `s`, the `occurrence`-th of its name: [start, end) µs each.
    std::vector<std::pair<double, double>> of(const Span& s, std::size_t occurrence) const
    {
        std::vector<std::pair<double, double>> gpu;
        if (s.externalId >= 0)
            if (const auto it = byId.find(s.externalId); it != byId.end())
                for (const Span* g : it->second)
                    if (g->name == s.name)
                        gpu.emplace_back(g->start, g->end);
        if (gpu.empty())
            if (const auto it = byName.find(s.name); it != byName.end() && occurrence < it->second.size()
                && (s.externalId < 0 || it->second[occurrence]->externalId < 0))
                gpu.emplace_back(it->second[occurrence]->start, it->second[occurrence]->end);
        return gpu;
    }
};

/// Per step: the rank's slots and transfers, timed by the GPU span where there is one (from the first start
/// to the last end; a slot's busy time is the union of the spans).
std::vector<StepSpans> timedSpans(const RankFile& file, const RankClock& clock, MatchCounts& counts)
{
    const auto stepOf = [&clock](double t) -> int {
        for (std::size_t k = 0; k < clock.ranges.size(); ++k)
            if (t >= clock.ranges[k].first && t < clock.ranges[k].second)
                return static_cast<int>(k);
        return -1;
    };
    const GpuSpans gpuSpans(file);
    std::map<std::string, std::size_t> seenName;
    std::vector<StepSpans> steps(clock.origin->size());
    for (const Span& s : file.spans) {
        const int step = stepOf(s.start);
        const std::size_t occurrence = seenName[s.name]++;
        if (step < 0) {
            ++counts.outside;
            continue;
        }
        std::vector<std::pair<double, double>> gpu = gpuSpans.of(s, occurrence);
        Span timed = s;
        double busy = s.end - s.start;
        if (!gpu.empty()) {
            std::sort(gpu.begin(), gpu.end());
            timed.start = gpu.front().first;
            timed.end = timed.start;
            busy = 0.0;
            for (const auto& [a, b] : gpu) {
                busy += std::max(0.0, b - std::max(a, timed.end));
                timed.end = std::max(timed.end, b);
            }
        }
        StepSpans& at = steps[static_cast<std::size_t>(step)];
        if (s.compute) {
            at.slots.push_back({ s.action, timed.start, timed.end, busy, !gpu.empty() });
            (gpu.empty() ? counts.cpuTimed : counts.gpuTimed) += 1;
        } else {
            at.comms.push_back(timed);
        }
    }
    return steps;
}

/// Reports each compute action found twice in a step (with its starts on the common clock); true if any.
bool reportDuplicates(const std::vector<Slot>& list, const std::string& where, double base,
    std::map<std::string, std::vector<double>>& seen, std::vector<std::string>& problems)
{
    for (const Slot& s : list)
        seen[toString(s.action)].push_back(s.computeStart);
    bool duplicated = false;
    for (const auto& [text, starts] : seen)
        if (starts.size() > 1) {
            duplicated = true;
            std::string at;
            for (double t : starts)
                at += (at.empty() ? "" : ", ") + formatTime(t + base);
            problems.push_back(where + ": compute action " + text + " appears " + std::to_string(starts.size())
                + " times (at " + at + ")");
        }
    return duplicated;
}

/// An overlapped slot of the schedule that the trace shows as its two halves becomes one slot.
void mergeOverlappedHalves(
    std::vector<Slot>& list, const std::vector<Action>& row, const std::map<std::string, std::vector<double>>& seen)
{
    for (const Action& a : row) {
        if (!a.overlapped || seen.count(toString(a)))
            continue;
        const std::string f0 = toString(Action::single(a.op)), b0 = toString(Action::single(a.backward));
        const auto fi = std::find_if(list.begin(), list.end(), [&](const Slot& s) { return toString(s.action) == f0; });
        const auto bi = std::find_if(list.begin(), list.end(), [&](const Slot& s) { return toString(s.action) == b0; });
        if (fi == list.end() || bi == list.end())
            continue;
        Slot merged { a, std::min(fi->computeStart, bi->computeStart), std::max(fi->computeEnd, bi->computeEnd),
            unionLength(fi->computeStart, fi->computeEnd, bi->computeStart, bi->computeEnd), fi->gpu || bi->gpu };
        list.erase(std::max(fi, bi));
        list.erase(std::min(fi, bi));
        list.insert(std::upper_bound(list.begin(), list.end(), merged,
                        [](const Slot& x, const Slot& y) { return x.computeStart < y.computeStart; }),
            merged);
    }
}

/// A schedule mismatch is reported once per rank, at its first step, naming the other steps it repeats in.
class OncePerRank {
public:
    explicit OncePerRank(std::vector<std::string>& problems)
        : problems_(problems)
    {
    }

    void report(const std::string& where, std::size_t step, const std::string& what)
    {
        if (const auto it = reported_.find(what); it != reported_.end()) {
            it->second.second.push_back(step);
            return;
        }
        reported_[what] = { problems_.size(), {} };
        problems_.push_back(where + ": " + what);
    }

    /// Appends "(the same in steps …)" to each problem that repeated.
    void finish()
    {
        for (const auto& [what, at] : reported_) {
            if (at.second.empty())
                continue;
            std::string steps;
            for (std::size_t step : at.second)
                steps += (steps.empty() ? "" : ", ") + std::to_string(step);
            problems_[at.first]
                += " (the same in " + std::string(at.second.size() == 1 ? "step " : "steps ") + steps + ")";
        }
    }

private:
    std::vector<std::string>& problems_;
    std::map<std::string, std::pair<std::size_t, std::vector<std::size_t>>> reported_;
};

/// Reports the step's actions the rank's schedule does not have and the schedule's it misses; true if any.
bool reportScheduleMismatch(const std::vector<Slot>& list, const ScheduleRow& schedule, int rank,
    const std::string& where, std::size_t step, OncePerRank& once)
{
    std::set<std::string> expected, found;
    for (const Action& a : schedule.row)
        expected.insert(toString(a));
    std::vector<std::string> strangers, missing;
    for (const Slot& s : list) {
        found.insert(toString(s.action));
        if (!expected.count(toString(s.action)))
            strangers.push_back(toString(s.action));
    }
    for (const Action& a : schedule.row)
        if (!found.count(toString(a)))
            missing.push_back(toString(a));
    if (!strangers.empty())
        once.report(where, step,
            joinNames(strangers, 8) + (strangers.size() == 1 ? " is" : " are") + " not in the schedule of rank "
                + std::to_string(rank) + " (variant '" + schedule.variant + "')");
    if (!missing.empty())
        once.report(where, step,
            joinNames(missing, 8) + " of the schedule " + (missing.size() == 1 ? "is" : "are")
                + " missing from the trace");
    return !strangers.empty() || !missing.empty();
}

/// A step's slots with their transfers: start, end (µs on the file's clock) and wait (µs) of each slot.
struct Attributed {
    std::vector<double> starts, ends, waits;
};

/// Transfers: a receive belongs to the slot that consumes it, a send to the slot that made the data; each
/// counts only inside the gap before (receive) or after (send) its slot's compute. A slot's wait is the union
/// of its receives (they may run side by side).
Attributed attributeTransfers(const std::vector<Slot>& list, const std::vector<Span>& comms, MatchCounts& counts)
{
    Attributed out { std::vector<double>(list.size()), std::vector<double>(list.size()),
        std::vector<double>(list.size(), 0.0) };
    std::vector<std::vector<std::pair<double, double>>> received(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
        out.starts[i] = list[i].computeStart;
        out.ends[i] = list[i].computeEnd;
    }
    for (const Span& c : comms) {
        std::size_t owner = list.size();
        for (std::size_t i = 0; i < list.size() && owner == list.size(); ++i)
            if (consumes(list[i].action, c.comm, c.stage, c.microbatch))
                owner = i;
        if (owner == list.size()) {
            ++counts.unattributed;
            continue;
        }
        if (c.comm == Comm::RecvF || c.comm == Comm::RecvB) {
            const double lo = owner == 0 ? -std::numeric_limits<double>::infinity() : list[owner - 1].computeEnd;
            const double a = std::max(c.start, lo), b = std::min(c.end, list[owner].computeStart);
            if (b > a) {
                received[owner].emplace_back(a, b);
                out.starts[owner] = std::min(out.starts[owner], a);
            } else {
                ++counts.unattributed;
            }
        } else {
            const double hi
                = owner + 1 == list.size() ? std::numeric_limits<double>::infinity() : list[owner + 1].computeStart;
            const double a = std::max(c.start, list[owner].computeEnd), b = std::min(c.end, hi);
            if (b >= a && c.end > list[owner].computeEnd - 1e-9)
                out.ends[owner] = std::max(out.ends[owner], b);
            else
                ++counts.unattributed;
        }
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
        std::sort(received[i].begin(), received[i].end());
        double reach = -std::numeric_limits<double>::infinity();
        for (const auto& [a, b] : received[i]) {
            out.waits[i] += std::max(0.0, b - std::max(a, reach));
            reach = std::max(reach, b);
        }
    }
    return out;
}

} // namespace

MeasuredRank matchRank(int rank, const RankFile& file, const RankClock& clock, const ScheduleRow& schedule,
    MatchCounts& counts, std::vector<std::string>& problems)
{
    std::vector<StepSpans> steps = timedSpans(file, clock, counts);
    MeasuredRank measured;
    measured.rank = rank;
    OncePerRank once(problems);
    for (std::size_t k = 0; k < steps.size(); ++k) {
        auto& list = steps[k].slots;
        std::stable_sort(
            list.begin(), list.end(), [](const Slot& a, const Slot& b) { return a.computeStart < b.computeStart; });
        const std::string where
            = file.path.string() + " (rank " + std::to_string(rank) + "), step " + std::to_string(k);
        const double base = clock.shift - (*clock.origin)[k];
        std::map<std::string, std::vector<double>> seen;
        if (reportDuplicates(list, where, base, seen, problems))
            continue;
        if (schedule.checked) {
            mergeOverlappedHalves(list, schedule.row, seen);
            if (reportScheduleMismatch(list, schedule, rank, where, k, once))
                continue;
        }
        const Attributed timed = attributeTransfers(list, steps[k].comms, counts);
        for (std::size_t i = 0; i < list.size(); ++i) {
            MeasuredAction a;
            a.action = list[i].action;
            a.step = static_cast<int>(k);
            a.startUs = timed.starts[i] + base;
            a.endUs = timed.ends[i] + base;
            a.waitUs = timed.waits[i];
            a.computeUs = list[i].computeUs;
            a.memoryBytes = memoryDuring(file.memory, timed.starts[i], timed.ends[i]);
            measured.actions.push_back(a);
        }
    }
    once.finish();
    return measured;
}

} // namespace dps::kineto
