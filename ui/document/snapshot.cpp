#include "document/snapshot.h"

#include "base/format.h"

#include <algorithm>
#include <map>
#include <set>

namespace dps::ui {

namespace {

/// Key of an action for finding it again in another snapshot.
std::string actionKey(const Action& action)
{
    return toString(action);
}

/// Error diagnostics by (rank, position in the rank's compute order). A program's diagnostics name cells of its rows
/// (PyTorch's whole action language): a send's or receive's marks the compute step after it (or the rank's last).
std::set<std::pair<int, int>> offending(const ValidationReport& report, const std::optional<TorchSchedule>& program)
{
    std::set<std::pair<int, int>> result;
    for (const auto& d : report.diagnostics) {
        if (d.severity != Severity::Error || d.rank < 0 || d.position < 0)
            continue;
        int position = d.position;
        if (program && static_cast<std::size_t>(d.rank) < program->rows.size()) {
            const auto& row = program->rows[static_cast<std::size_t>(d.rank)];
            const auto end
                = row.begin() + std::min<std::ptrdiff_t>(d.position, static_cast<std::ptrdiff_t>(row.size()));
            const auto computeIn = [](auto from, auto to) {
                return static_cast<int>(std::count_if(from, to, [](const Step& s) { return s.isCompute(); }));
            };
            position = std::min(computeIn(row.begin(), end), std::max(0, computeIn(row.begin(), row.end()) - 1));
        }
        result.insert({ d.rank, position });
    }
    return result;
}

double slotDuration(const Action& action, const CostModel& costs)
{
    const auto stageCost = [&](int stage) -> const StageCost* {
        return stage >= 0 && stage < static_cast<int>(costs.stages.size()) ? &costs.stages[stage] : nullptr;
    };
    if (action.overlapped)
        return costs.overlapTime(action.op.stage, action.backward.stage);
    const StageCost* c = stageCost(action.op.stage);
    if (!c)
        return 1.0;
    switch (action.op.kind) {
    case OpKind::F:
        return c->forwardUs;
    case OpKind::I:
        return c->inputGradUs;
    case OpKind::W:
        return c->weightGradUs;
    case OpKind::B:
        return c->backward();
    }
    return 1.0;
}

void layoutTimed(SimulationSnapshot& s, const std::set<std::pair<int, int>>& bad)
{
    const Schedule& schedule = *s.schedule;
    s.blocks.reset(schedule.ranks);
    for (int r = 0; r < schedule.ranks; ++r) {
        double free = 0.0;
        for (int i = 0; i < static_cast<int>(schedule.order[r].size()); ++i) {
            const SlotTiming& t = s.sim.timing[r][i];
            const bool waited = t.startUs > free + 1e-9 && t.readyUs > free + 1e-9;
            s.blocks.add({ t.startUs, t.endUs, schedule.order[r][i], r, i, bad.count({ r, i }) > 0, waited });
            free = t.endUs;
        }
    }
}

/// Invalid order: list order per rank, each block at its duration, no earlier than the same action's
/// start in the previous timed layout.
void layoutInListOrder(
    SimulationSnapshot& s, const std::set<std::pair<int, int>>& bad, const SimulationSnapshot* previous)
{
    std::map<std::string, double> previousStart;
    if (previous)
        for (int r = 0; r < previous->blocks.rankCount(); ++r)
            for (const auto& b : previous->blocks.blocks(r))
                previousStart[actionKey(b.action)] = b.startUs;
    const Schedule& schedule = *s.schedule;
    s.blocks.reset(schedule.ranks);
    for (int r = 0; r < schedule.ranks; ++r) {
        double free = 0.0;
        for (int i = 0; i < static_cast<int>(schedule.order[r].size()); ++i) {
            const Action& a = schedule.order[r][i];
            const auto it = previousStart.find(actionKey(a));
            const double start = std::max(free, it == previousStart.end() ? free : it->second);
            const double end = start + slotDuration(a, s.costs);
            s.blocks.add({ start, end, a, r, i, bad.count({ r, i }) > 0, false });
            free = end;
        }
    }
}

bool timingComplete(const SimulationSnapshot& s)
{
    if (!s.timed || s.sim.timing.size() != s.schedule->order.size())
        return false;
    for (std::size_t r = 0; r < s.sim.timing.size(); ++r)
        if (s.sim.timing[r].size() != s.schedule->order[r].size())
            return false;
    return true;
}

} // namespace

SnapshotPtr computeSnapshot(const Project& project, const std::string& variantName, std::uint64_t generation,
    const SimulationSnapshot* previous, const PredictionSetup* setup)
{
    auto s = std::make_shared<SimulationSnapshot>();
    try {
        static_cast<Prediction&>(*s)
            = setup ? predict(project, variantName, setup->options) : predict(project, variantName);
        if (setup)
            s->predictionFor = setup->label;
    } catch (const std::exception& e) { // e.g. out of memory for a huge size: the designer keeps running
        static_cast<Prediction&>(*s) = Prediction {};
        s->variantName = variantName;
        s->error = e.what();
    }
    s->generation = generation;
    s->deviceMemoryBytes = project.cluster.memoryPerDeviceBytes;
    if (!s->schedule)
        return s;
    const auto bad = offending(s->report, s->program);
    if (timingComplete(*s))
        layoutTimed(*s, bad);
    else
        layoutInListOrder(*s, bad, previous && previous->timed ? previous : nullptr);
    return s;
}

namespace {

/// What the first op of a slot needs from another rank, in words.
std::string inputName(const Op& op, int lastStage)
{
    const int mb = op.microbatch;
    switch (op.kind) {
    case OpKind::F:
        return "the activation of stage " + std::to_string(op.stage - 1) + ", microbatch " + std::to_string(mb);
    case OpKind::I:
    case OpKind::B:
        return op.stage == lastStage
            ? "its forward"
            : "the gradient of stage " + std::to_string(op.stage + 1) + ", microbatch " + std::to_string(mb);
    case OpKind::W:
        return "its input-gradient step";
    }
    return "its inputs";
}

} // namespace

std::string describeWait(const SimulationSnapshot& snapshot, int rank, int position)
{
    const TimelineBlock* b = snapshot.blocks.block(rank, position);
    if (!b || !snapshot.timed || static_cast<std::size_t>(rank) >= snapshot.sim.timing.size()
        || static_cast<std::size_t>(position) >= snapshot.sim.timing[rank].size())
        return "not simulated: the order is invalid";
    const SlotTiming& t = snapshot.sim.timing[rank][position];
    const double free = position > 0 ? snapshot.sim.timing[rank][position - 1].endUs : 0.0;
    if (t.startUs <= free + 1e-9)
        return "nothing: started as soon as rank " + std::to_string(rank) + " was free";
    const int lastStage = snapshot.schedule ? snapshot.schedule->stages - 1 : 0;
    std::string what = b->action.overlapped ? "the inputs of both halves" : inputName(b->action.op, lastStage);
    if (t.waitedOnRank >= 0)
        what += " from rank " + std::to_string(t.waitedOnRank);
    return what + ", ready at " + formatTime(t.readyUs) + " (idle " + formatTime(t.startUs - free) + " before it)";
}

} // namespace dps::ui
