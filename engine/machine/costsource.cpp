#include "costsource.h"

#include "base/errors.h"
#include "base/format.h"
#include "base/hostinfo.h"
#include "schedule/csvio.h"

#include <algorithm>
#include <map>
#include <utility>

namespace dps::machine {

namespace {

/// A cost adjuster putting the ranks on `rankNode`'s nodes, with the project's inter-node link; empty when
/// there is no placement.
CostAdjuster placeOnNodes(const Project& project, const std::vector<int>& rankNode)
{
    if (rankNode.empty())
        return {};
    return [rankNode, cluster = project.cluster](CostModel& costs) {
        costs.rankNode = rankNode;
        costs.interNodeLatencyUs = cluster.interNodeLatencyUs;
        costs.interNodeBandwidthBytesPerUs = cluster.interNodeBandwidthBytesPerUs;
    };
}

/// `first`, then `second`; either may be empty.
CostAdjuster chain(CostAdjuster first, CostAdjuster second)
{
    if (!first)
        return second;
    if (!second)
        return first;
    return [first = std::move(first), second = std::move(second)](CostModel& model) {
        first(model);
        second(model);
    };
}

/// The source's own adjusters after the machine's: the placement on nodes, then the costs typed for every stage.
CostAdjuster ownAdjuster(const CostSource& source, const Project& project)
{
    CostAdjuster everyStage;
    if (source.everyStage.any())
        everyStage = [costs = source.everyStage](CostModel& model) { costs.applyTo(model); };
    return chain(placeOnNodes(project, source.rankNode), std::move(everyStage));
}

/// "the project's devices (H100, latency 2 µs, bandwidth 50 GB/s)".
std::string projectDevicesLabel(const Project& project)
{
    const ClusterDesc& c = project.cluster;
    const std::string device = c.device.empty()
        ? formatCount(c.deviceFlops) + "FLOP/s × efficiency " + formatNumber(c.efficiency)
        : c.device;
    return "the project's devices (" + device + ", latency " + formatTime(c.latencyUs) + ", bandwidth "
        + (c.bandwidthBytesPerUs > 0 ? formatBytes(c.bandwidthBytesPerUs * 1e6) + "/s" : std::string("unlimited"))
        + ")";
}

/// A prediction that could not be made, with `error` saying why.
Prediction failedPrediction(const Project& project, const std::string& variant, const std::string& error)
{
    Prediction failed;
    failed.variantName = variant.empty() ? project.activeVariant : variant;
    failed.error = error;
    return failed;
}

/// "0–1, 2" for ranks 0, 1 and 2.
std::string rankRanges(const std::vector<int>& ranks)
{
    std::string list;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        const bool runEnd = i + 1 == ranks.size() || ranks[i + 1] != ranks[i] + 1;
        const bool runStart = i == 0 || ranks[i - 1] != ranks[i] - 1;
        if (runStart)
            list += (list.empty() ? "" : ", ") + std::to_string(ranks[i]);
        else if (runEnd)
            list += "–" + std::to_string(ranks[i]);
    }
    return list;
}

} // namespace

bool EveryStageCosts::any() const
{
    const StageCostOverride& s = stage;
    return s.forwardUs || s.inputGradUs || s.weightGradUs || s.backwardUs || s.overlapUs || latencyUs
        || bandwidthBytesPerUs || overlapFactor;
}

void EveryStageCosts::applyTo(CostModel& model) const
{
    for (StageCost& s : model.stages)
        applyOverride(s, stage);
    model.latencyUs = latencyUs.value_or(model.latencyUs);
    model.bandwidthBytesPerUs = bandwidthBytesPerUs.value_or(model.bandwidthBytesPerUs);
    model.overlapFactor = overlapFactor.value_or(model.overlapFactor);
}

CostSource CostSource::thisMachine(MachineProfile profile)
{
    CostSource source;
    source.profile = std::move(profile);
    source.engineRun = true;
    source.backend = "cpu";
    return source;
}

CostSource CostSource::projectRun(const std::string& backend)
{
    CostSource source;
    source.engineRun = true;
    source.backend = backend;
    return source;
}

std::string CostSource::label(const Project& project) const
{
    std::string text;
    if (profile) {
        const int cores = profile->profile.machine.cores;
        text = "this machine (" + profile->description() + "; "
            + formatCountOf(static_cast<std::size_t>(std::max(cores, 0)), "core") + " shared by the ranks)";
    } else {
        text = projectDevicesLabel(project);
    }
    const std::string placement = placementLabel(project, rankNode);
    return placement.empty() ? text : text + "; " + placement;
}

std::string CostSource::costsNote(const std::string& base) const
{
    std::string note = base;
    if (costsFile)
        note += ", then " + costsFileName;
    if (everyStage.any())
        note += ", then the --cost flags";
    return note;
}

Project costedProject(const CostSource& source, Project project)
{
    if (source.costsFile)
        applyCostsFile(project.costs, *source.costsFile);
    return project;
}

std::optional<MachineCosts> machineCostsOf(const CostSource& source, const Project& project, const Variant& variant)
{
    if (!source.profile)
        return std::nullopt;
    return machineCosts(source.profile->profile, project, variant, source.profile->description());
}

PredictOptions predictOptions(const CostSource& source, const Project& project, const Variant& variant, bool timeline)
{
    if (const std::optional<MachineCosts> costs = machineCostsOf(source, project, variant))
        return machinePredictOptions(*costs, project.costs, timeline, ownAdjuster(source, project));
    PredictOptions options = timeline ? PredictOptions {} : PredictOptions::peaksOnly();
    options.adjustCosts = ownAdjuster(source, project);
    options.engineRun = source.engineRun;
    options.fp32Tensors = source.backend == "cpu";
    return options;
}

Prediction predictWith(const CostSource& source, const Project& project, const std::string& variant, bool timeline)
{
    const Project costed = costedProject(source, project);
    try {
        const Variant& v = findVariant(costed, variant);
        Prediction p = predict(costed, v, predictOptions(source, costed, v, timeline));
        if (source.profile)
            p.mfu = 0.0; // the cluster's peak FLOP/s are the project's devices', not this machine's CPU
        return p;
    } catch (const Error& e) {
        return failedPrediction(costed, variant, e.what());
    }
}

namespace {

/// Unit costs with `stages` stages and the costs file's costs; the options with the costs typed for every stage.
std::pair<CostModel, PredictOptions> flagCosts(const CostSource& source, int stages, bool timeline)
{
    CostModel costs = uniformCostModel(stages);
    if (source.costsFile) {
        CostSettings settings;
        applyCostsFile(settings, *source.costsFile);
        applyCostSettings(costs, settings);
    }
    PredictOptions options = timeline ? PredictOptions {} : PredictOptions::peaksOnly();
    if (source.everyStage.any())
        options.adjustCosts = [costs = source.everyStage](CostModel& model) { costs.applyTo(model); };
    return { std::move(costs), std::move(options) };
}

} // namespace

Prediction predictScheduleWith(const CostSource& source, Schedule schedule, bool timeline)
{
    auto [costs, options] = flagCosts(source, schedule.stages, timeline);
    return predictSchedule(std::move(schedule), std::move(costs), options);
}

Prediction predictProgramWith(const CostSource& source, TorchSchedule program, bool timeline)
{
    int stages = 0;
    try {
        stages = computeSchedule(program).stages;
    } catch (const Error&) { // predictProgram reports it
    }
    auto [costs, options] = flagCosts(source, stages, timeline);
    return predictProgram(std::move(program), std::move(costs), options);
}

RunPredictionSetup runPredictionSetup(
    const CostSource& source, const Project& project, const std::string& variant, bool timeline)
{
    const Variant& v = findVariant(project, variant);
    try {
        return { predictOptions(source, project, v, timeline), source.label(project), {} };
    } catch (const Error& e) {
        CostSource projectDevices = source;
        projectDevices.profile.reset();
        return { predictOptions(projectDevices, project, v, timeline), projectDevices.label(project),
            std::string("the CPU profile does not fit the variant (") + e.what() + ")" };
    }
}

bool measuredHere(const MeasuredTrace& trace)
{
    return trace.host == hostName() && trace.cpu == cpuModelName();
}

CostSource costSourceOfRun(const MeasuredTrace& trace, std::optional<MachineProfile> profile)
{
    const std::vector<int> nodes = measuredRankNodes(trace);
    CostSource source;
    if (profile && trace.backend == "cpu" && nodes.empty() && measuredHere(trace))
        source = CostSource::thisMachine(std::move(*profile));
    else
        source = CostSource::projectRun(trace.backend);
    source.rankNode = nodes;
    return source;
}

std::vector<int> measuredRankNodes(const MeasuredTrace& measured)
{
    std::map<int, const std::string*> hostOfRank;
    for (const MeasuredRank& r : measured.ranks) {
        if (r.host.empty())
            return {};
        hostOfRank[r.rank] = &r.host;
    }
    if (hostOfRank.empty() || hostOfRank.begin()->first != 0
        || hostOfRank.rbegin()->first + 1 != int(hostOfRank.size()))
        return {};
    std::vector<std::string> hosts;
    std::vector<int> nodes;
    for (const auto& [rank, host] : hostOfRank) {
        auto it = std::find(hosts.begin(), hosts.end(), *host);
        if (it == hosts.end())
            it = hosts.insert(hosts.end(), *host);
        nodes.push_back(int(it - hosts.begin()));
    }
    if (hosts.size() < 2)
        return {};
    return nodes;
}

std::string placementLabel(const Project& project, const std::vector<int>& rankNode)
{
    if (rankNode.empty())
        return {};
    const int hosts = *std::max_element(rankNode.begin(), rankNode.end()) + 1;
    std::string ranks;
    for (int node = 0; node < hosts; ++node) {
        std::vector<int> on;
        for (std::size_t r = 0; r < rankNode.size(); ++r)
            if (rankNode[r] == node)
                on.push_back(int(r));
        ranks += (node ? "; " : "") + rankRanges(on);
    }
    const ClusterDesc& c = project.cluster;
    return "ranks on " + std::to_string(hosts) + " hosts (" + ranks + "): transfers between hosts take the "
        + "inter-node link (latency " + formatTime(c.interNodeLatencyUs) + ", bandwidth "
        + (c.interNodeBandwidthBytesPerUs > 0 ? formatBytes(c.interNodeBandwidthBytesPerUs * 1e6) + "/s"
                                              : std::string("unlimited"))
        + ")";
}

} // namespace dps::machine
