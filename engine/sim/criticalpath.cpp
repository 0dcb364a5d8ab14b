// The critical path of a step (docs/analysis.md, "Critical path").
#include "criticalpath.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace dps {

namespace {

/// A slot of the run: rank and index in its list.
struct SlotRef {
    int rank = -1;
    int slot = -1;
    bool valid() const { return rank >= 0; }
};

/// Where each (stage, microbatch)'s forward, gradient (I or B) and input gradient (I) ran.
class ProducerIndex {
public:
    explicit ProducerIndex(const TimedRun& run)
    {
        for (std::size_t r = 0; r < run.ranks.size(); ++r) {
            const std::vector<TimedSlot>& row = run.ranks[r];
            for (std::size_t i = 0; i < row.size(); ++i) {
                const SlotRef ref { static_cast<int>(r), static_cast<int>(i) };
                const Action& a = row[i].action;
                for (int h = 0; h < a.size(); ++h) {
                    const Op& op = a.at(h);
                    m_stages = std::max(m_stages, op.stage + 1);
                    switch (op.kind) {
                    case OpKind::F:
                        m_forward.try_emplace(key(op), ref);
                        break;
                    case OpKind::I:
                        m_inputGrad.try_emplace(key(op), ref);
                        m_gradient.try_emplace(key(op), ref);
                        break;
                    case OpKind::B:
                        m_gradient.try_emplace(key(op), ref);
                        break;
                    case OpKind::W:
                        break;
                    }
                }
            }
        }
    }

    /// Model stages: the highest stage of any op + 1.
    int stages() const { return m_stages; }
    SlotRef forward(int stage, int microbatch) const { return find(m_forward, stage, microbatch); }
    SlotRef gradient(int stage, int microbatch) const { return find(m_gradient, stage, microbatch); }
    SlotRef inputGrad(int stage, int microbatch) const { return find(m_inputGrad, stage, microbatch); }

private:
    using Map = std::unordered_map<std::uint64_t, SlotRef>;

    static std::uint64_t key(int stage, int microbatch)
    {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(stage)) << 32)
            | static_cast<std::uint32_t>(microbatch);
    }
    static std::uint64_t key(const Op& op) { return key(op.stage, op.microbatch); }
    static SlotRef find(const Map& map, int stage, int microbatch)
    {
        const auto it = map.find(key(stage, microbatch));
        return it == map.end() ? SlotRef {} : it->second;
    }

    Map m_forward;
    Map m_gradient;
    Map m_inputGrad;
    int m_stages = 0;
};

/// A predecessor of a slot and when its output reached the slot.
struct Candidate {
    SlotRef from;
    bool data = false; ///< a data dependency (else the rank's previous slot)
    double arrivalUs = 0.0;
};

/// Whether candidate a beats b: the later arrival; on a tie a data dependency, then the lower rank.
bool beats(const Candidate& a, const Candidate& b)
{
    if (a.arrivalUs != b.arrivalUs)
        return a.arrivalUs > b.arrivalUs;
    if (a.data != b.data)
        return a.data;
    return a.from.rank < b.from.rank;
}

/// The data inputs of op: (producer, boundary stage of the message, −1 for none).
void addInputs(const ProducerIndex& index, const Op& op, std::vector<std::pair<SlotRef, int>>& out)
{
    switch (op.kind) {
    case OpKind::F:
        if (op.stage > 0)
            out.emplace_back(index.forward(op.stage - 1, op.microbatch), op.stage - 1);
        break;
    case OpKind::I:
    case OpKind::B:
        out.emplace_back(index.forward(op.stage, op.microbatch), -1);
        if (op.stage < index.stages() - 1)
            out.emplace_back(index.gradient(op.stage + 1, op.microbatch), op.stage);
        break;
    case OpKind::W:
        out.emplace_back(index.inputGrad(op.stage, op.microbatch), -1);
        break;
    }
}

/// The last-ending slot: the latest end, ties to the lower rank (and, in a rank, the later slot).
SlotRef lastEndingSlot(const TimedRun& run)
{
    SlotRef cur;
    double lastEnd = 0.0;
    for (std::size_t r = 0; r < run.ranks.size(); ++r) {
        const std::vector<TimedSlot>& row = run.ranks[r];
        for (std::size_t i = 0; i < row.size(); ++i) {
            const bool sameRank = cur.rank == static_cast<int>(r);
            if (!cur.valid() || row[i].endUs > lastEnd || (sameRank && row[i].endUs == lastEnd)) {
                cur = SlotRef { static_cast<int>(r), static_cast<int>(i) };
                lastEnd = row[i].endUs;
            }
        }
    }
    return cur;
}

const TimedSlot& slotAt(const TimedRun& run, SlotRef ref)
{
    return run.ranks[static_cast<std::size_t>(ref.rank)][static_cast<std::size_t>(ref.slot)];
}

/// What decided when slot `cur` could start: the rank's previous slot or one of its inputs, whichever
/// arrived last (beats); nullopt for a slot with neither. `inputs` is scratch space.
std::optional<Candidate> decidingInput(
    const TimedRun& run, const ProducerIndex& index, SlotRef cur, std::vector<std::pair<SlotRef, int>>& inputs)
{
    const TimedSlot& s = slotAt(run, cur);
    const bool measured = !run.transferUs;
    inputs.clear();
    for (int h = 0; h < s.action.size(); ++h)
        addInputs(index, s.action.at(h), inputs);
    std::optional<Candidate> best;
    const auto consider = [](std::optional<Candidate>& into, const Candidate& c) {
        if (!into || beats(c, *into))
            into = c;
    };
    if (cur.slot > 0)
        consider(best,
            Candidate { SlotRef { cur.rank, cur.slot - 1 }, false, slotAt(run, { cur.rank, cur.slot - 1 }).endUs });
    // Measured without transfer records: the latest-ending producer on another rank decides when the slot
    // waited for data or has no previous slot; it arrived when the wait ended.
    std::optional<Candidate> crossBest;
    for (const auto& [from, boundary] : inputs) {
        if (!from.valid())
            continue;
        const TimedSlot& p = slotAt(run, from);
        const bool cross = from.rank != cur.rank;
        if (measured && cross) {
            consider(crossBest, Candidate { from, true, p.endUs });
            continue;
        }
        const double transfer = cross && boundary >= 0 ? run.transferUs(boundary, from.rank, cur.rank) : 0.0;
        consider(best, Candidate { from, true, p.endUs + transfer });
    }
    if (crossBest && (s.waitUs > 0.0 || cur.slot == 0)) {
        crossBest->arrivalUs = std::max(crossBest->arrivalUs, s.startUs + s.waitUs);
        best = crossBest;
    }
    return best;
}

/// The path's start, end, length and each rank's and the transfers' shares.
void sumPath(CriticalPath& path)
{
    path.startUs = path.elements.front().startUs;
    path.endUs = path.elements.back().endUs;
    path.lengthUs = path.endUs - path.startUs;
    for (const PathElement& e : path.elements) {
        if (e.kind == PathElementKind::Transfer)
            path.transferUs += e.durationUs();
        else
            path.rankUs[static_cast<std::size_t>(e.rank)] += e.durationUs();
    }
}

} // namespace

double CriticalPath::rankShare(int rank) const
{
    if (lengthUs <= 0.0 || rank < 0 || static_cast<std::size_t>(rank) >= rankUs.size())
        return 0.0;
    return rankUs[static_cast<std::size_t>(rank)] / lengthUs;
}

double CriticalPath::transferShare() const
{
    return lengthUs > 0.0 ? transferUs / lengthUs : 0.0;
}

bool CriticalPath::containsSlot(int rank, int slot) const
{
    return std::any_of(elements.begin(), elements.end(),
        [&](const PathElement& e) { return e.kind == PathElementKind::Action && e.rank == rank && e.slot == slot; });
}

CriticalPath criticalPath(const TimedRun& run)
{
    CriticalPath path;
    path.rankUs.assign(run.ranks.size(), 0.0);
    SlotRef cur = lastEndingSlot(run);
    if (!cur.valid())
        return path;

    const ProducerIndex index(run);
    std::unordered_set<std::uint64_t> visited;
    std::vector<std::pair<SlotRef, int>> inputs;
    std::vector<PathElement> reversed;
    while (cur.valid()) {
        const std::uint64_t id = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(cur.rank)) << 32)
            | static_cast<std::uint32_t>(cur.slot);
        if (!visited.insert(id).second)
            break; // a cycle in a malformed run: stop where it closes
        const TimedSlot& s = slotAt(run, cur);
        const std::optional<Candidate> best = decidingInput(run, index, cur, inputs);

        // The slot's part of the path begins when its deciding input arrived (never before its start).
        const double beginUs = best ? std::clamp(best->arrivalUs, s.startUs, std::max(s.startUs, s.endUs)) : s.startUs;
        reversed.push_back(
            PathElement { PathElementKind::Action, cur.rank, cur.rank, cur.slot, s.action, beginUs, s.endUs });
        if (!best)
            break;
        const TimedSlot& p = slotAt(run, best->from);
        const double arrivalUs = std::min(best->arrivalUs, beginUs);
        if (arrivalUs < beginUs)
            reversed.push_back(
                PathElement { PathElementKind::Gap, cur.rank, cur.rank, cur.slot, s.action, arrivalUs, beginUs });
        if (best->from.rank != cur.rank)
            reversed.push_back(PathElement { PathElementKind::Transfer, cur.rank, best->from.rank, cur.slot, s.action,
                p.endUs, std::max(p.endUs, arrivalUs) });
        cur = best->from;
    }
    path.elements.assign(reversed.rbegin(), reversed.rend());
    sumPath(path);
    return path;
}

TimedRun timedRunOf(const Schedule& schedule, const SimResult& sim, const CostModel& costs)
{
    TimedRun run;
    run.ranks.resize(schedule.order.size());
    for (std::size_t r = 0; r < schedule.order.size() && r < sim.timing.size(); ++r) {
        const std::vector<Action>& row = schedule.order[r];
        const std::vector<SlotTiming>& timing = sim.timing[r];
        for (std::size_t i = 0; i < row.size() && i < timing.size(); ++i)
            run.ranks[r].push_back(TimedSlot { row[i], timing[i].startUs, timing[i].endUs, 0.0 });
    }
    // The simulator's transfer across boundary s: its messageBytes between the two ranks (StageCost's
    // defaults for a stage the model does not list), as Kernel::transferUs computes it.
    run.transferUs = [costs](int boundary, int from, int to) {
        static const StageCost defaults {};
        const StageCost& c = boundary >= 0 && static_cast<std::size_t>(boundary) < costs.stages.size()
            ? costs.stages[static_cast<std::size_t>(boundary)]
            : defaults;
        return costs.transferTime(c.messageBytes, from, to);
    };
    return run;
}

CriticalPath criticalPath(const Schedule& schedule, const SimResult& sim, const CostModel& costs)
{
    return criticalPath(timedRunOf(schedule, sim, costs));
}

} // namespace dps
