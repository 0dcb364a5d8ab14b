// Closed forms of the largest per-rank idle time (µs), shown beside simulated values.
//
// Sources: GPipe and 1F1B — (p−1)(F+B), the pipeline fill and drain (Huang et al., GPipe, 2019; Narayanan
// et al., PipeDream-Flush, 2021); Interleaved 1F1B — (p−1)(F+B)/v of the model part a 1F1B rank holds,
// i.e. (p−1)(F+B) of one of its v-times-smaller stages (Narayanan et al., Megatron-LM, 2021); ZB-H1 —
// (p−1)(F+B−2W) with B = I + W (Qi et al., Zero Bubble Pipeline Parallelism, 2024); DualPipe and
// DualPipeV — (PP/2−1)(F&B+B−3W), PP the number of model stages, for B ≤ F&B ≤ F+B (DeepSeek's
// DualPipe README table). All assume uniform stages and free communication.
//
// Ranges, checked against the simulator over a grid of costs (tests/sim/test_closedforms.cpp): the forms
// are exact (not bounds) only where stated. Interleaved: microbatches ≥ ranks (or v = 1). ZB-H1:
// W ≤ F and W ≤ I. DualPipe/DualPipeV: besides B ≤ F&B ≤ F+B, also F = I, W ≤ F and B = I + W — with
// F ≠ I the largest idle moves off the form in either direction. Outside a range: simulated value only.
#include "simulator.h"

#include <algorithm>
#include <functional>
#include <sstream>

namespace dps {

namespace {

/// A kind's form: its text, its validity note, its value from one (uniform) stage's costs, and the
/// kind-specific range check ("" inside the range, else why not).
struct Form {
    std::string formula;
    std::string validity;
    std::function<double(const Schedule&, const CostModel&)> value;
    std::function<std::string(const Schedule&, const CostModel&)> obstacle;
};

std::string num(double x)
{
    std::ostringstream out;
    out << x;
    return out.str();
}

int rankCount(const Schedule& s)
{
    return s.ranks > 0 ? s.ranks : static_cast<int>(s.order.size());
}

const StageCost& stage0(const CostModel& c)
{
    return c.stages.front();
}

double fillDrain(const Schedule& s, const CostModel& c)
{
    return (rankCount(s) - 1) * (stage0(c).forwardUs + stage0(c).backward());
}

double zbh1(const Schedule& s, const CostModel& c)
{
    const StageCost& st = stage0(c);
    const double b = st.inputGradUs + st.weightGradUs; // ZB-H1 runs I and W, never B
    return (rankCount(s) - 1) * (st.forwardUs + b - 2.0 * st.weightGradUs);
}

double dualPipe(const Schedule& s, const CostModel& c)
{
    const double pp = s.stages;
    return (pp / 2.0 - 1.0) * (c.overlapTime(0, 0) + stage0(c).backward() - 3.0 * stage0(c).weightGradUs);
}

std::string noObstacle(const Schedule&, const CostModel&)
{
    return {};
}

std::string interleavedObstacle(const Schedule& s, const CostModel&)
{
    if (s.stagesPerRank > 1 && s.microbatches < rankCount(s))
        return "microbatches (" + std::to_string(s.microbatches) + ") < ranks (" + std::to_string(rankCount(s))
            + "): the warm-up does not fill the pipeline";
    return {};
}

std::string zbh1Obstacle(const Schedule&, const CostModel& c)
{
    const StageCost& st = stage0(c);
    if (st.weightGradUs > st.forwardUs || st.weightGradUs > st.inputGradUs)
        return "W = " + num(st.weightGradUs) + " µs exceeds F or I: the deferred W's no longer fill the bubble";
    return {};
}

std::string dualPipeObstacle(const Schedule&, const CostModel& c)
{
    const StageCost& st = stage0(c);
    const double b = st.backward();
    const double fb = c.overlapTime(0, 0);
    if (fb < b || fb > st.forwardUs + b)
        return "F&B = " + num(fb) + " µs outside [B, F+B] = [" + num(b) + ", " + num(st.forwardUs + b) + "] µs";
    if (st.forwardUs != st.inputGradUs || st.weightGradUs > st.forwardUs || b != st.inputGradUs + st.weightGradUs)
        return "the form is exact only for F = I, W ≤ F and B = I + W (here F = " + num(st.forwardUs)
            + ", I = " + num(st.inputGradUs) + ", W = " + num(st.weightGradUs) + ", B = " + num(b) + " µs)";
    return {};
}

Form formOf(ScheduleKind kind)
{
    const std::string uniform = "uniform stages and free communication (latency 0, unlimited bandwidth)";
    switch (kind) {
    case ScheduleKind::GPipe:
    case ScheduleKind::OneFOneB:
        return { "(p−1)(F+B)", "valid for " + uniform, fillDrain, noObstacle };
    case ScheduleKind::Interleaved1F1B:
        return { "(p−1)(F+B)/v",
            "F, B of a 1F1B stage (v of this schedule's stages); valid for microbatches ≥ ranks, " + uniform, fillDrain,
            interleavedObstacle };
    case ScheduleKind::ZBH1:
        return { "(p−1)(F+B−2W)", "B = I + W; valid for W ≤ F, W ≤ I, " + uniform, zbh1, zbh1Obstacle };
    case ScheduleKind::DualPipe:
    case ScheduleKind::DualPipeV:
        return { "(PP/2−1)(F&B+B−3W)",
            "PP = model stages; valid for B ≤ F&B ≤ F+B (exact for F = I, W ≤ F, B = I + W), " + uniform, dualPipe,
            dualPipeObstacle };
    case ScheduleKind::ZBV:
    case ScheduleKind::Custom:
        break;
    }
    return {};
}

bool sameCost(const StageCost& a, const StageCost& b)
{
    return a.forwardUs == b.forwardUs && a.inputGradUs == b.inputGradUs && a.weightGradUs == b.weightGradUs
        && a.backward() == b.backward() && a.overlapUs == b.overlapUs;
}

/// Why the costs fall outside every form's assumptions, or "" when they do not.
std::string commonObstacle(const Schedule& schedule, const CostModel& costs)
{
    if (costs.stages.empty())
        return "the cost model has no stages";
    if (static_cast<int>(costs.stages.size()) < schedule.stages)
        return "the cost model lists fewer stages than the schedule";
    for (const StageCost& st : costs.stages)
        if (!sameCost(st, costs.stages.front()))
            return "the form assumes uniform stages; these differ";
    for (const StageCost& st : costs.stages)
        if (hasCommunication(st.forwardChain) || hasCommunication(st.backwardChain))
            return "expert all-to-all in the slots";
    // A rank on another node than rank 0: its messages take the inter-node link, which must be free too.
    int otherNode = -1;
    const std::size_t ranks
        = std::min(costs.rankNode.size(), static_cast<std::size_t>(std::max(0, rankCount(schedule))));
    for (std::size_t r = 1; r < ranks && otherNode < 0; ++r)
        if (costs.rankNode[r] != costs.rankNode[0])
            otherNode = static_cast<int>(r);
    bool freeLinks = costs.latencyUs == 0.0 && (otherNode < 0 || costs.interNodeLatencyUs == 0.0);
    for (const StageCost& st : costs.stages)
        freeLinks = freeLinks && costs.transferTime(st.messageBytes) == 0.0
            && (otherNode < 0 || costs.transferTime(st.messageBytes, 0, otherNode) == 0.0);
    if (!freeLinks)
        return "the form assumes free communication; latency or bandwidth adds transfer time";
    return {};
}

} // namespace

ClosedForm closedFormLargestIdle(const Schedule& schedule, const CostModel& costs)
{
    ClosedForm result;
    const Form form = formOf(schedule.kind);
    if (!form.value) {
        result.reason = "no closed form for " + std::string(kindDisplayName(schedule.kind)) + "; simulated value only";
        return result;
    }
    result.available = true;
    result.formula = form.formula;
    std::string obstacle = commonObstacle(schedule, costs);
    if (obstacle.empty())
        obstacle = form.obstacle(schedule, costs);
    if (!obstacle.empty()) {
        result.reason = obstacle + "; simulated value only";
        return result;
    }
    result.applicable = true;
    result.valueUs = form.value(schedule, costs);
    result.reason = form.validity;
    return result;
}

} // namespace dps
