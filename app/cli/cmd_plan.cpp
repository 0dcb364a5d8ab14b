// dpstudio plan: the planner (engine/project/planner.h) over a project's model: the fastest schedules on N devices
// at a global batch under a memory limit, as a table or JSON; --add-variants writes the best into the project.
#include "commands.h"

#include "base/errors.h"
#include "base/format.h"
#include "project/partitioning.h"
#include "project/planner.h"
#include "project/presets.h"
#include "project/project.h"
#include "schedule/schedule.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>

namespace dps::cli {

namespace {

using json = nlohmann::ordered_json;

int planUsage(const std::string& message)
{
    std::cerr << "dpstudio: error: " << message << "\n";
    return kExitUsage;
}

std::string recomputeText(const Project& project, const PlanCandidate& c)
{
    return project.model.kind == ModelKind::Transformer ? std::string(model::recomputeName(c.recompute)) : "—";
}

json candidateJson(const Project& project, const PlanCandidate& c)
{
    json peaks = json::array();
    for (double b : c.peakMemoryPerRank)
        peaks.push_back(b);
    return { { "name", c.variant.name }, { "kind", std::string(kindName(c.kind)) }, { "tp", c.tp }, { "cp", c.cp },
        { "pp", c.pp }, { "dp", c.dp }, { "sequence_parallel", c.sequenceParallel }, { "zero", c.zero },
        { "stages_per_rank", c.stagesPerRank }, { "microbatches", c.microbatches },
        { "microbatch_size", c.microbatchSize }, { "layer_partition", c.layerPartition },
        { "recompute",
            project.model.kind == ModelKind::Transformer ? json(model::recomputeName(c.recompute)) : json(nullptr) },
        { "step_us", c.stepUs }, { "makespan_us", c.makespanUs }, { "exposed_allreduce_us", c.exposedAllReduceUs },
        { "bubble_rate", c.bubbleRate }, { "peak_memory_bytes", c.peakMemoryBytes },
        { "peak_memory_rank", c.peakMemoryRank }, { "peak_memory_per_rank_bytes", std::move(peaks) },
        { "tokens_per_s", c.tokensPerSecond }, { "tokens_per_s_per_device", c.tokensPerSecondPerDevice },
        { "mfu", c.mfu }, { "pareto", c.pareto } };
}

void printPlan(const std::string& file, const Project& project, const PlanArgs& args, const PlanResult& r)
{
    std::cout << file << ": " << args.devices << " devices, global batch " << args.globalBatch << " sequences, limit "
              << formatBytes(r.memoryLimitBytes) << " per device\n\n";
    std::vector<std::vector<std::string>> rows { { "#", "variant", "tp", "cp", "pp", "dp", "zero", "microbatches",
        "partition", "recompute", "step", "bubble", "peak memory", "tokens/s", "tokens/s/device", "MFU", "pareto" } };
    const std::size_t top = std::min(r.candidates.size(), static_cast<std::size_t>(std::max(0, args.top)));
    for (std::size_t i = 0; i < top; ++i) {
        const PlanCandidate& c = r.candidates[i];
        rows.push_back({ std::to_string(i + 1), c.variant.name, std::to_string(c.tp), std::to_string(c.cp),
            std::to_string(c.pp), std::to_string(c.dp), std::to_string(c.zero),
            std::to_string(c.microbatches) + " × " + std::to_string(c.microbatchSize), partitionText(c.layerPartition),
            recomputeText(project, c), formatTime(c.stepUs), formatPercent(c.bubbleRate),
            formatBytes(c.peakMemoryBytes), formatCount(c.tokensPerSecond), formatCount(c.tokensPerSecondPerDevice),
            formatPercent(c.mfu), c.pareto ? "*" : "" });
    }
    if (top > 0)
        std::cout << formatTable(rows, 2) << "\n";
    // The best of each kind, for the question "how much better is DualPipe than DualPipeV here", or why it has none.
    std::vector<std::vector<std::string>> kinds { { "kind", "best variant", "step", "vs best", "searched" } };
    for (const PlanKindSummary& k : r.kinds) {
        const auto it = std::find_if(
            r.candidates.begin(), r.candidates.end(), [&](const PlanCandidate& c) { return c.kind == k.kind; });
        const std::string searched = std::to_string(k.enumerated) + " (" + std::to_string(k.simulated) + " simulated, "
            + std::to_string(k.pruned) + " pruned, " + std::to_string(k.overLimit) + " over the limit)";
        if (it != r.candidates.end())
            kinds.push_back({ std::string(kindDisplayName(k.kind)), it->variant.name, formatTime(it->stepUs),
                formatSignedPercent(it->stepUs / r.candidates.front().stepUs - 1.0), searched });
        else
            kinds.push_back({ std::string(kindDisplayName(k.kind)),
                k.enumerated == 0     ? "no size fits the devices, batch and layers"
                    : k.overLimit > 0 ? "none fits: smallest peak " + formatBytes(k.smallestPeakBytes)
                    : k.pruned > 0    ? "all pruned (dominated, or their memory bound over the limit)"
                                      : "none could be predicted",
                "—", "—", searched });
    }
    if (kinds.size() > 1)
        std::cout << "best of each kind:\n" << formatTable(kinds, 2) << "\n";
    std::cout << r.enumerated << " candidates: " << r.simulated << " simulated (+" << r.refinements
              << " partition refinements), " << r.pruned << " pruned, " << r.overLimit << " over the limit, "
              << r.failed << " failed; " << r.candidates.size() << " fit; search " << formatTime(r.searchMs * 1000.0)
              << "\n"
              << "step = makespan + the data-parallel all-reduce not hidden by the cool-down (docs/planner.md); "
                 "* = on the Pareto front of step time against peak memory; MFU = model FLOPs ÷ (step × devices × "
                 "the GEMM dtype's peak)\n";
}

/// `plan --json`: the top candidates, the Pareto front, the counts, per-kind summaries and the first drops.
void printPlanJson(const std::string& source, const Project& project, const PlanArgs& args, const PlanResult& result)
{
    json list = json::array();
    json front = json::array();
    const std::size_t top = std::min(result.candidates.size(), static_cast<std::size_t>(args.top));
    for (std::size_t i = 0; i < result.candidates.size(); ++i) {
        if (i < top)
            list.push_back(candidateJson(project, result.candidates[i]));
        if (result.candidates[i].pareto)
            front.push_back(result.candidates[i].variant.name);
    }
    json out = { { "source", source }, { "devices", args.devices }, { "global_batch", args.globalBatch },
        { "memory_limit_bytes", result.memoryLimitBytes }, { "candidates", std::move(list) },
        { "pareto_front", std::move(front) }, { "fitting", result.candidates.size() },
        { "enumerated", result.enumerated }, { "simulated", result.simulated }, { "refinements", result.refinements },
        { "pruned", result.pruned }, { "over_limit", result.overLimit }, { "failed", result.failed },
        { "search_ms", result.searchMs } };
    json kinds = json::array();
    for (const PlanKindSummary& k : result.kinds)
        kinds.push_back(
            { { "kind", std::string(kindName(k.kind)) }, { "enumerated", k.enumerated }, { "simulated", k.simulated },
                { "pruned", k.pruned }, { "over_limit", k.overLimit }, { "failed", k.failed }, { "fitting", k.fitting },
                { "smallest_peak_bytes", k.simulated > 0 ? json(k.smallestPeakBytes) : json(nullptr) } });
    out["kinds"] = std::move(kinds);
    json drops = json::array();
    for (std::size_t i = 0; i < result.drops.size() && i < 20; ++i)
        drops.push_back({ { "candidate", result.drops[i].candidate }, { "reason", result.drops[i].reason } });
    out["dropped_first_20"] = std::move(drops);
    if (result.candidates.empty())
        out["smallest_peak"] = { { "bytes", result.smallestPeakBytes }, { "candidate", result.smallestPeakCandidate },
            { "rank", result.smallestPeakRank } };
    std::cout << out.dump(2) << "\n";
}

/// The project `plan --model M --device D` searches: the model and training state of preset M on the cluster of
/// preset D, no variant. Throws FormatError naming the flag for an unknown preset.
Project presetProject(const PlanArgs& args)
{
    const auto check = [](const std::string& flag, const std::string& id, const std::vector<PresetInfo>& presets) {
        std::string ids;
        for (const PresetInfo& p : presets) {
            if (p.id == id)
                return;
            ids += (ids.empty() ? "" : ", ") + p.id;
        }
        throw FormatError(flag + ": unknown preset \"" + id + "\" (presets: " + ids + ")");
    };
    check("--model", args.model, modelPresets());
    check("--device", args.device, devicePresets());
    Project p = defaultProject();
    ModelPreset preset = modelPreset(args.model);
    p.model = std::move(preset.model);
    p.model.preset = args.model;
    p.training = preset.training;
    p.cluster = devicePreset(args.device);
    p.cluster.device = args.device;
    p.costs = CostSettings {};
    p.variants.clear();
    p.activeVariant.clear();
    p.name = args.model + " on " + args.device;
    return p;
}

} // namespace

int cmdPlan(const PlanArgs& args)
{
    if (args.project.empty() == args.model.empty())
        return planUsage("plan needs a project file or --model PRESET --device PRESET (one of the two)");
    if (!args.model.empty() && args.device.empty())
        return planUsage("--model needs --device PRESET (`dpstudio presets` lists the presets)");
    if (!args.device.empty() && args.model.empty())
        return planUsage("--device goes with --model PRESET");
    if (args.addVariants && args.project.empty())
        return planUsage("--add-variants needs a project file to write the variants into");
    PlanRequest request;
    request.devices = args.devices;
    request.globalBatch = args.globalBatch;
    if (args.devices < 1)
        return planUsage("--devices: must be at least 1");
    if (args.globalBatch < 1)
        return planUsage("--global-batch: must be at least 1");
    if (args.top < 1)
        return planUsage("--top: must be at least 1");
    try {
        if (!args.memoryLimit.empty())
            request.memoryLimitBytes = parseMemorySize(args.memoryLimit, "--memory-limit");
    } catch (const ConstraintError& e) {
        return planUsage(e.what());
    }
    for (const std::string& name : args.kinds) {
        const auto kind = parseKind(name);
        if (!kind || *kind == ScheduleKind::Custom)
            return planUsage("--kinds: unknown schedule '" + name + "' (expected " + generatedKindNames() + ")");
        if (std::find(request.kinds.begin(), request.kinds.end(), *kind) == request.kinds.end())
            request.kinds.push_back(*kind); // each kind once: "dualpipe,dualpipe" searches it once
    }
    const Project project = args.project.empty() ? presetProject(args) : loadProject(args.project);
    const std::string source = args.project.empty() ? args.model + " on " + args.device : args.project;
    request.tps = args.tps;
    request.cps = args.cps;
    request.zeros = args.zeros;
    PlanResult result;
    try {
        result = plan(project, request);
    } catch (const ConstraintError& e) {
        if (e.rule().rfind("plan.", 0) == 0)
            return planUsage(e.what()); // a flag the model refuses (--tp 3 on 128 heads): a bad flag
        throw;
    }
    if (args.json)
        printPlanJson(source, project, args, result);
    else
        printPlan(source, project, args, result);
    if (result.candidates.empty()) {
        std::cerr << "dpstudio: " << source << ": nothing fits " << formatBytes(result.memoryLimitBytes)
                  << " per device";
        if (!result.smallestPeakCandidate.empty())
            std::cerr << ": the smallest peak memory found is " << formatBytes(result.smallestPeakBytes) << " ("
                      << result.smallestPeakCandidate
                      << (result.smallestPeakRank >= 0 ? ", rank " + std::to_string(result.smallestPeakRank) : "")
                      << ")";
        std::cerr << "\n";
        return kExitContent;
    }
    if (args.addVariants) {
        const Project updated = withPlanVariants(project, result, args.top);
        saveProject(updated, args.project);
        std::cerr << "dpstudio: added "
                  << formatCountOf(std::min<std::size_t>(result.candidates.size(), args.top), "variant") << " to "
                  << args.project << " (active: " << updated.activeVariant << ")\n";
    }
    return kExitOk;
}

} // namespace dps::cli
