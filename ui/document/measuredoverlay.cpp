#include "document/measuredoverlay.h"

#include <algorithm>
#include <cmath>

namespace dps::ui {

namespace {

constexpr std::size_t kMaxSlips = 50;

/// The predicted block of `rank` with `action` not taken yet, preferring `hint`; -1 when none.
int matchPosition(const std::vector<TimelineBlock>& predicted, const Action& action, int hint, std::vector<bool>& used)
{
    const int n = static_cast<int>(predicted.size());
    if (hint < n && !used[hint] && predicted[hint].action == action)
        return hint;
    for (int i = 0; i < n; ++i)
        if (!used[i] && predicted[i].action == action)
            return i;
    return -1;
}

void addRank(MeasuredOverlay& o, const SimulationSnapshot& predicted, BlockIndex& blocks, int rank)
{
    const auto actions = o.trace->actionsOf(rank, o.step);
    const bool hasPrediction = rank < predicted.blocks.rankCount();
    const std::vector<TimelineBlock> none;
    const auto& list = hasPrediction ? predicted.blocks.blocks(rank) : none;
    std::vector<bool> used(list.size(), false);
    double busy = 0.0;
    double peak = 0.0;
    double lastEnd = 0.0;
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
        const MeasuredAction& a = *actions[i];
        const int position = matchPosition(list, a.action, i, used);
        TimelineBlock block = measuredBlock(a.action, rank, position, a.startUs, a.endUs, a.waitUs, lastEnd);
        block.a2aUs = a.a2aUs;
        block.a2aHiddenUs = a.a2aHiddenUs;
        blocks.add(block);
        busy += a.busyUs();
        peak = std::max(peak, static_cast<double>(a.memoryBytes));
        o.memory[rank].push_back({ a.endUs, static_cast<double>(a.memoryBytes) });
        if (position < 0) {
            ++o.unmatched;
            continue;
        }
        used[position] = true;
        ++o.matched;
        o.slips.push_back({ rank, position, toString(a.action), list[position].startUs, a.startUs });
    }
    o.idleUs[rank] = std::max(0.0, o.makespanUs - busy);
    o.peakMemoryBytes[rank] = peak;
}

void addRows(MeasuredOverlay& o, const SimulationSnapshot& predicted)
{
    const SimResult& sim = predicted.sim;
    const int ranks = static_cast<int>(o.idleUs.size());
    double idleSum = 0.0;
    for (double idle : o.idleUs)
        idleSum += idle;
    using Unit = OverlayRow::Unit;
    o.rows.push_back({ "makespan", "makespan", Unit::Microseconds, sim.makespanUs, o.makespanUs });
    const double bubble = ranks > 0 && o.makespanUs > 0 ? idleSum / (ranks * o.makespanUs) : 0.0;
    o.rows.push_back({ "bubble", "bubble rate", Unit::Ratio, sim.bubbleRate, bubble });
    double predictedPeak = 0.0;
    for (const auto& r : sim.ranks)
        predictedPeak = std::max(predictedPeak, r.peakMemoryBytes);
    const double measuredPeak
        = o.peakMemoryBytes.empty() ? 0.0 : *std::max_element(o.peakMemoryBytes.begin(), o.peakMemoryBytes.end());
    // A run without memory figures (an imported profile without [memory] events) has no memory rows, not "0 B".
    if (measuredPeak > 0.0)
        o.rows.push_back({ "peak-memory", "peak memory", Unit::Bytes, predictedPeak, measuredPeak });
    for (int r = 0; r < ranks; ++r) {
        const bool known = r < static_cast<int>(sim.ranks.size());
        const std::string n = std::to_string(r);
        o.rows.push_back(
            { "idle-" + n, "rank " + n + " idle", Unit::Microseconds, known ? sim.ranks[r].idleUs : 0.0, o.idleUs[r] });
        if (o.peakMemoryBytes[r] > 0.0)
            o.rows.push_back({ "peak-memory-" + n, "rank " + n + " peak memory", Unit::Bytes,
                known ? sim.ranks[r].peakMemoryBytes : 0.0, o.peakMemoryBytes[r] });
    }
    // Expert parallelism: the share of each rank's all-to-all hidden behind the other half of an F&B slot.
    const std::vector<RankAllToAll> measured = measuredAllToAll(*o.trace, o.step);
    const std::vector<RankAllToAll> expected
        = predicted.schedule ? allToAllPerRank(*predicted.schedule, predicted.costs) : std::vector<RankAllToAll> {};
    for (int r = 0; r < ranks && r < static_cast<int>(measured.size()); ++r) {
        if (measured[static_cast<std::size_t>(r)].commUs <= 0.0)
            continue;
        const std::string n = std::to_string(r);
        const bool known = r < static_cast<int>(expected.size());
        o.rows.push_back({ "a2a-hidden-" + n, "rank " + n + " a2a hidden", Unit::Ratio,
            known ? expected[static_cast<std::size_t>(r)].hiddenShare() : 0.0,
            measured[static_cast<std::size_t>(r)].hiddenShare() });
    }
}

} // namespace

std::optional<double> OverlayRow::error() const
{
    if (predicted == 0.0)
        return std::nullopt;
    return (measured - predicted) / predicted;
}

const OverlayRow* MeasuredOverlay::row(const std::string& key) const
{
    for (const auto& r : rows)
        if (r.key == key)
            return &r;
    return nullptr;
}

TimelineBlock measuredBlock(
    const Action& action, int rank, int position, double startUs, double endUs, double waitUs, double& lastEndUs)
{
    TimelineBlock b;
    b.action = action;
    b.rank = rank;
    b.position = position;
    b.startUs = std::max(startUs, lastEndUs);
    b.endUs = std::max(endUs, b.startUs);
    b.waitUs = std::clamp(waitUs, 0.0, b.endUs - b.startUs);
    b.waitedForInput = waitUs > 0.0;
    lastEndUs = b.endUs;
    return b;
}

std::vector<int> measuredSteps(const MeasuredTrace& trace)
{
    std::vector<int> steps;
    for (const auto& s : trace.steps)
        steps.push_back(s.step);
    return steps;
}

MeasuredOverlay buildOverlay(
    std::shared_ptr<const MeasuredTrace> trace, const std::string& path, int step, const SimulationSnapshot& predicted)
{
    MeasuredOverlay o;
    o.trace = std::move(trace);
    o.path = path;
    o.step = step >= 0 ? step : o.trace->medianStep;
    const int ranks = static_cast<int>(o.trace->ranks.size());
    for (const auto& s : o.trace->steps)
        if (s.step == o.step)
            o.makespanUs = s.makespanUs;
    o.idleUs.assign(ranks, 0.0);
    o.peakMemoryBytes.assign(ranks, 0.0);
    o.memory.assign(ranks, {});
    auto blocks = std::make_shared<BlockIndex>(ranks);
    for (int r = 0; r < ranks; ++r)
        addRank(o, predicted, *blocks, r);
    if (o.makespanUs <= 0.0)
        o.makespanUs = blocks->endUs();
    if (step < 0) // the median view: each rank's idle is its median over the steps, as `dpstudio run` reports it
        for (const RankIdle& r : measuredIdle(*o.trace))
            if (r.rank >= 0 && r.rank < ranks && r.idle.count > 0)
                o.idleUs[static_cast<std::size_t>(r.rank)] = std::max(0.0, r.idle.medianUs);
    o.blocks = std::move(blocks);
    std::stable_sort(o.slips.begin(), o.slips.end(),
        [](const StartSlip& a, const StartSlip& b) { return std::abs(a.slipUs()) > std::abs(b.slipUs()); });
    if (o.slips.size() > kMaxSlips)
        o.slips.resize(kMaxSlips);
    addRows(o, predicted);
    // addRank adds each rank's actions of the step in file order, as measuredTimedRun lists them, so the path's
    // slots are indices into the blocks of each rank.
    o.criticalPath = std::make_shared<const CriticalPath>(measuredCriticalPath(*o.trace, o.step));
    o.stats = runStats(*o.trace, kStragglerThreshold);
    return o;
}

} // namespace dps::ui
