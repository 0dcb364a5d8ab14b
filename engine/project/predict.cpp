#include "predict.h"

#include "base/errors.h"
#include "base/format.h"
#include "base/stats.h"
#include "dataparallel.h"
#include "modelinfo.h"
#include "schedule/csvio.h"
#include "schedule/lowering.h"
#include "sim/commsim.h"
#include "transformercost.h"

#include <algorithm>

namespace dps {

PredictOptions PredictOptions::peaksOnly(CostAdjuster adjust)
{
    PredictOptions options;
    options.adjustCosts = std::move(adjust);
    options.recordTiming = false;
    options.recordMemory = false;
    return options;
}

std::vector<StaticMemory> staticMemoryPerRank(const Schedule& schedule, const CostModel& costs)
{
    const std::size_t ranks = static_cast<std::size_t>(std::max(0, schedule.ranks));
    const std::size_t stages = std::min(static_cast<std::size_t>(std::max(0, schedule.stages)), costs.stages.size());
    // held[r * stages + s]: rank r runs some microbatch of stage s. A flat mark per (rank, stage), not a set
    // per rank: this runs for every (stage, microbatch) pair of every prediction.
    std::vector<char> held(ranks * stages, 0);
    for (std::size_t s = 0; s < stages; ++s)
        for (int m = 0; m < schedule.microbatches; ++m) {
            const int r = schedule.placement.rankOf(static_cast<int>(s), m);
            if (r >= 0 && static_cast<std::size_t>(r) < ranks)
                held[static_cast<std::size_t>(r) * stages + s] = 1;
        }
    std::vector<StaticMemory> result(ranks);
    for (std::size_t r = 0; r < ranks; ++r)
        for (std::size_t s = 0; s < stages; ++s) {
            if (!held[r * stages + s])
                continue;
            const StageCost& c = costs.stages[s];
            result[r].parameters += c.parameterBytes;
            result[r].gradients += c.gradientBytes;
            result[r].optimizer += c.optimizerBytes.value_or(c.parameterCount * costs.optimizerBytesPerParameter);
            result[r].parameterCount += c.parameterCount;
        }
    return result;
}

namespace {

std::string invalidReason(const ValidationReport& report)
{
    for (const auto& d : report.diagnostics)
        if (d.severity == Severity::Error) {
            const std::size_t more = report.errorCount() - 1;
            return "invalid schedule: " + format(d) + (more ? " (+" + std::to_string(more) + " more)" : "");
        }
    return "invalid schedule";
}

/// The summary figures of a finished simulation.
void summarize(Prediction& p)
{
    const SimResult& sim = p.sim;
    p.makespanUs = sim.makespanUs;
    p.bubbleRate = sim.bubbleRate;
    p.p2pBytes = sim.totalP2pBytes;
    for (int r = 0; r < static_cast<int>(sim.ranks.size()); ++r) {
        const RankResult& rank = sim.ranks[static_cast<std::size_t>(r)];
        if (p.largestIdleRank < 0 || rank.idleUs > p.largestIdleUs) {
            p.largestIdleUs = rank.idleUs;
            p.largestIdleRank = r;
        }
        if (p.peakMemoryRank < 0 || rank.peakMemoryBytes > p.peakMemoryBytes) {
            p.peakMemoryBytes = rank.peakMemoryBytes;
            p.peakMemoryRank = r;
        }
        p.peakActivationBytes = std::max(p.peakActivationBytes, rank.peakActivationBytes);
    }
}

} // namespace

namespace {

/// One step of p's schedule (or program) under p.costs: with its sends and receives where the program has them,
/// on shared cores where options.cores asks for them, else simulate().
SimResult simulateStep(const Prediction& p, const PredictOptions& options, const SimOptions& simOptions)
{
    const Schedule& s = *p.schedule;
    if (p.program && p.program->hasComms())
        return simulateWithComms(*p.program, s, p.costs, simOptions);
    if (options.cores > 0 && options.cores < peakComputeThreads(s))
        return simulateSharedCores(s, p.costs, SharedCoresOptions { options.cores, WaitingRanks::Auto }, simOptions);
    return simulate(s, p.costs, simOptions);
}

/// Draws options.variationDraws steps under p.costs.slotVariation (draws 1 … n, SimOptions::variationDraw), then makes
/// p.sim the draw of the median makespan, recorded as options ask; p.drawn keeps the spread. The draws share the
/// schedule's dependencies, so none deadlocks where p.sim did not.
void drawStep(Prediction& p, const PredictOptions& options)
{
    std::vector<std::pair<double, std::uint64_t>> makespans; // (makespan µs, draw)
    for (int k = 1; k <= options.variationDraws; ++k) {
        SimOptions quick { false, false };
        quick.variationDraw = static_cast<std::uint64_t>(k);
        makespans.emplace_back(simulateStep(p, options, quick).makespanUs, quick.variationDraw);
    }
    std::sort(makespans.begin(), makespans.end());
    std::vector<double> sorted;
    for (const auto& m : makespans)
        sorted.push_back(m.first);
    p.drawn = Prediction::Drawn { options.variationDraws, p.sim.makespanUs, quantileOfSorted(sorted, 0.1),
        quantileOfSorted(sorted, 0.9) };
    SimOptions median { options.recordTiming, options.recordMemory };
    median.variationDraw = makespans[medianIndex(makespans.size())].second;
    p.sim = simulateStep(p, options, median);
}

/// predictSchedule and predictProgram: validate, simulate (the program's sends and receives timed where they sit
/// when it has them), summarize.
Prediction timedPrediction(
    Schedule schedule, CostModel costs, const PredictOptions& options, std::optional<TorchSchedule> program)
{
    Prediction p;
    p.program = std::move(program);
    if (options.adjustCosts)
        options.adjustCosts(costs);
    p.costs = std::move(costs);
    p.schedule = std::move(schedule);
    const Schedule& s = *p.schedule;
    p.staticMemory = staticMemoryPerRank(s, p.costs);
    for (const StaticMemory& m : p.staticMemory)
        p.parametersPerDevice = std::max(p.parametersPerDevice, m.parameterCount);
    if (p.program)
        p.report = validate(*p.program);
    else
        p.report = options.validationMemo ? options.validationMemo->validate(s) : validate(s);
    if (!p.report.valid()) {
        p.error = invalidReason(p.report);
        return p;
    }
    p.sim = simulateStep(p, options, SimOptions { options.recordTiming, options.recordMemory });
    if (!p.sim.deadlocked && p.costs.slotVariation.size() >= 2 && options.variationDraws > 0)
        drawStep(p, options);
    if (p.sim.deadlocked) {
        p.error = p.sim.deadlockMessage; // "deadlock: N rank(s) cannot progress; …"
        return p;
    }
    p.timed = true;
    p.closedForm = closedFormLargestIdle(s, p.costs);
    summarize(p);
    p.devices = s.ranks;
    p.stepUs = p.makespanUs;
    return p;
}

} // namespace

Prediction predictSchedule(Schedule schedule, CostModel costs, const PredictOptions& options)
{
    return timedPrediction(std::move(schedule), std::move(costs), options, std::nullopt);
}

Prediction predictProgram(TorchSchedule program, CostModel costs, const PredictOptions& options)
{
    Schedule schedule;
    try {
        schedule = computeSchedule(program);
    } catch (const Error& e) {
        Prediction failed;
        failed.error = e.what();
        return failed;
    }
    return timedPrediction(std::move(schedule), std::move(costs), options, std::move(program));
}

namespace {

/// PredictOptions::lowerComms: the schedule lowered to PyTorch's sends and receives and predicted with them, or as it
/// is when it cannot be lowered (an order that deadlocks: the validator reports it).
Prediction predictLowered(Schedule schedule, CostModel costs, const PredictOptions& options)
{
    std::optional<TorchSchedule> program;
    try {
        program = lowerToComms(schedule);
    } catch (const Error&) {
        return predictSchedule(std::move(schedule), std::move(costs), options);
    }
    return timedPrediction(std::move(schedule), std::move(costs), options, std::move(program));
}

} // namespace

Prediction predict(const Project& project, const Variant& variant, const PredictOptions& options)
{
    std::optional<Schedule> schedule;
    std::optional<TorchSchedule> program;
    CostModel costs;
    const bool handEdited = variant.order.has_value() || variant.commOrder.has_value();
    try {
        schedule = buildSchedule(project, variant);
        program = commProgramOf(project, variant, *schedule);
        // Our engine scales a routed expert's output in the combine (engine/runtime's MoE), whatever the model says.
        std::optional<Project> engineProject;
        if (options.engineRun && project.model.transformer.moe.probsOnSwiglu) {
            engineProject = project;
            engineProject->model.transformer.moe.probsOnSwiglu = false;
        }
        const Project& costed = engineProject ? *engineProject : project;
        costs = options.fp32Tensors ? buildCostModel(costed, variant, 4) : buildCostModel(costed, variant);
        if (options.engineRun && project.model.kind == ModelKind::Transformer) {
            costs.gradientReplicas = std::max(1, variant.dp);
            costs.expertParallel
                = project.model.transformer.isMoe() ? std::max(1, project.model.transformer.moe.ep) : 1;
            costs.engineReplicaSum = true;
        }
    } catch (const Error& e) {
        Prediction failed;
        failed.variantName = variant.name;
        failed.handEdited = handEdited;
        failed.error = e.what();
        return failed;
    }
    // A hand-placed program is the variant's, predicted wherever it is; else PyTorch's lowering when asked for.
    Prediction p = program   ? timedPrediction(std::move(*schedule), std::move(costs), options, std::move(program))
        : options.lowerComms ? predictLowered(std::move(*schedule), std::move(costs), options)
                             : predictSchedule(std::move(*schedule), std::move(costs), options);
    p.variantName = variant.name;
    p.handEdited = handEdited;
    if (p.timed) {
        // The step: the dp gradient all-reduce after each rank's last slot (docs/planner.md "The step time").
        try {
            const DataParallelAllReduce allReduce = dataParallelAllReduce(project, variant, *p.schedule, p.costs);
            p.dp = allReduce.dp;
            const DevicePlacement placement = placementOf(project, variant);
            p.devices = p.schedule->ranks * placement.replicas * placement.tp;
            p.allReduceUsPerRank = allReduce.us;
            for (double us : allReduce.us)
                p.allReduceUs = std::max(p.allReduceUs, us);
            p.stepUs = stepTimeUs(p.sim, allReduce.us);
            p.exposedAllReduceUs = p.stepUs - p.makespanUs;
            p.tokensPerStep = static_cast<double>(p.schedule->microbatches) * microbatchSizeOf(project, variant)
                * project.model.seqLen * p.dp;
            p.tp = std::max(1, variant.tp);
            p.cp = std::max(1, variant.cp);
            p.zero = project.training.present ? project.training.zero : 0;
            p.modelFlopsPerStep = trainingFlopsPerToken(project) * p.tokensPerStep;
            const double peak = gemmPeakFlops(project);
            if (p.stepUs > 0.0 && p.devices > 0 && peak > 0.0)
                p.mfu = p.modelFlopsPerStep / (p.stepUs * 1e-6 * p.devices * peak);
        } catch (const Error& e) { // buildCostModel placed the variant already: not expected
            p.error = e.what();
            p.timed = false;
        }
    }
    return p;
}

std::string describeDrawn(const Prediction::Drawn& drawn)
{
    return "the median of " + std::to_string(drawn.draws) + " steps drawn from the slot variation (p10 "
        + formatTime(drawn.p10Us) + ", p90 " + formatTime(drawn.p90Us) + "; " + formatTime(drawn.exactUs)
        + " with every slot at its time)";
}

const Variant& findVariant(const Project& project, const std::string& name)
{
    if (name.empty())
        return project.active();
    if (const Variant* v = project.find(name))
        return *v;
    std::string names;
    for (const auto& v : project.variants)
        names += (names.empty() ? "" : ", ") + v.name;
    throw FormatError("no variant named '" + name + "' (variants: " + (names.empty() ? "none" : names) + ")");
}

Prediction predict(const Project& project, const std::string& variantName, const PredictOptions& options)
{
    try {
        return predict(project, findVariant(project, variantName), options);
    } catch (const Error& e) { // only findVariant throws: predict(project, variant) does not
        Prediction failed;
        failed.variantName = variantName;
        failed.error = e.what();
        return failed;
    }
}

} // namespace dps
