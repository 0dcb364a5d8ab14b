// dpstudio presets and model-info (the model library: presets.h, modelinfo.h), and the model line of simulate's
// text.
#include "commands.h"

#include "base/errors.h"
#include "base/format.h"
#include "project/modelinfo.h"
#include "project/presets.h"
#include "project/project.h"
#include "project/transformercost.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <optional>

namespace dps::cli {

namespace {

using json = nlohmann::ordered_json;

/// The parameter totals of a transformer preset (model::totals); none for the block model (its size is the
/// project's choice: `dpstudio model-info` gives it).
std::optional<model::Totals> presetTotals(const ModelDesc& m)
{
    if (m.kind != ModelKind::Transformer)
        return std::nullopt;
    return model::totals(transformerOf(m));
}

/// A rate given in bytes/µs as bytes per second in binary units (the one rule of base/format.h), e.g.
/// "372.53 GiB/s"; 0 = "unlimited".
std::string formatRate(double bytesPerUs)
{
    return bytesPerUs > 0 ? formatBytes(bytesPerUs * 1e6) + "/s" : std::string("unlimited");
}

/// A link: "372.53 GiB/s, 2 µs".
std::string formatLink(double bytesPerUs, double latencyUs)
{
    return formatRate(bytesPerUs) + ", " + formatTime(latencyUs);
}

/// Peak FLOP/s in TFLOP/s ("989.4 TFLOP/s"): datasheets quote dense peaks that way.
std::string formatFlops(double flops)
{
    return formatNumber(flops / 1e12, 2) + " TFLOP/s";
}

/// A table of presets (a heading line, then one line per preset, all of one width) with each preset's title
/// after its line: free text last, so its width does not push the figures apart.
std::string withTitles(const std::string& table, const std::vector<PresetInfo>& presets)
{
    std::string out;
    std::size_t begin = 0;
    for (std::size_t line = 0; begin < table.size(); ++line) {
        const std::size_t end = table.find('\n', begin);
        out += table.substr(begin, end - begin) + "  " + (line == 0 ? std::string("title") : presets[line - 1].title)
            + "\n";
        begin = end == std::string::npos ? table.size() : end + 1;
    }
    return out;
}

json sourcesJson(const PresetInfo& p)
{
    json list = json::array();
    for (const auto& s : p.sources)
        list.push_back(s);
    return list;
}

} // namespace

// --------------------------------------------------------------------------------------------- presets

int cmdPresets(const PresetsArgs& args)
{
    const std::vector<PresetInfo> models = modelPresets();
    const std::vector<PresetInfo> devices = devicePresets();
    if (args.json) {
        json modelList = json::array();
        for (const PresetInfo& info : models) {
            const ModelPreset preset = modelPreset(info.id);
            const auto t = presetTotals(preset.model);
            modelList.push_back(
                { { "id", info.id }, { "title", info.title }, { "kind", std::string(modelKindName(preset.model.kind)) },
                    { "parameters_total", t ? json(t->parametersTotal) : json(nullptr) },
                    { "parameters_active", t ? json(t->parametersActive) : json(nullptr) },
                    { "sources", sourcesJson(info) } });
        }
        json deviceList = json::array();
        for (const PresetInfo& info : devices) {
            Project holder; // the cluster's fields exactly as a project file names them
            holder.cluster = devicePreset(info.id);
            holder.cluster.device = info.id; // format 2: every cluster field is written
            json d = { { "id", info.id }, { "title", info.title } };
            const json file = projectToJson(holder);
            for (const auto& [key, value] : file.at("cluster").items())
                if (key != "device") // the preset's own id, already given
                    d[key] = value;
            d["sources"] = sourcesJson(info);
            deviceList.push_back(std::move(d));
        }
        const json out = { { "models", std::move(modelList) }, { "devices", std::move(deviceList) } };
        std::cout << out.dump(2) << "\n";
        return kExitOk;
    }

    std::vector<std::vector<std::string>> modelRows { { "id", "parameters", "active" } };
    for (const PresetInfo& info : models) {
        const auto t = presetTotals(modelPreset(info.id).model);
        modelRows.push_back(
            { info.id, t ? formatCount(t->parametersTotal) : "—", t ? formatCount(t->parametersActive) : "—" });
    }
    std::vector<std::vector<std::string>> deviceRows { { "id", "peak", "efficiency", "memory", "GPUs/node",
        "intra-node link", "inter-node link" } };
    for (const PresetInfo& info : devices) {
        const ClusterDesc c = devicePreset(info.id);
        deviceRows.push_back(
            { info.id, formatFlops(c.deviceFlops), formatPercent(c.efficiency), formatBytes(c.memoryPerDeviceBytes),
                c.gpusPerNode > 0 ? std::to_string(c.gpusPerNode) : "—", formatLink(c.bandwidthBytesPerUs, c.latencyUs),
                formatLink(c.interNodeBandwidthBytesPerUs, c.interNodeLatencyUs) });
    }
    std::cout << "Model presets (dpstudio init --model ID):\n\n"
              << withTitles(formatTable(modelRows), models)
              << "\nDevice presets (dpstudio init --device ID; peak: dense):\n\n"
              << withTitles(formatTable(deviceRows), devices)
              << "\nSources of every figure: dpstudio presets --json, docs/model-library.md\n";
    return kExitOk;
}

// ------------------------------------------------------------------------------------------ model line

std::string modelSummary(const Project& project, const Variant& variant)
{
    if (project.model.kind != ModelKind::Transformer)
        return {};
    const model::Transformer t = transformerOf(project.model, microbatchSizeOf(project, variant));
    const DevicePlacement placement = placementOf(project, variant);
    const ClusterDesc& c = project.cluster;
    std::string line = project.model.preset.empty() ? std::string("transformer") : project.model.preset;
    if (!c.device.empty())
        line += " on " + c.device;
    const long long devices = static_cast<long long>(variant.dp) * variant.ranks * variant.tp * variant.cp;
    line += std::string(": ") + (variant.tp > 1 ? "tp " + std::to_string(variant.tp) + " × " : "")
        + (variant.cp > 1 ? "cp " + std::to_string(variant.cp) + " × " : "") + "dp " + std::to_string(variant.dp)
        + " × pp " + std::to_string(variant.ranks) + " = " + std::to_string(devices) + " devices"
        + (variant.tp > 1 && variant.sequenceParallel ? " (sequence parallel)" : "");
    // The placement rule lays out max(dp, ep) replicas per rank (transformercost.h): the nodes it spans.
    const long long laidOut = static_cast<long long>(placement.replicas) * placement.tp * variant.ranks;
    std::string where = c.gpusPerNode > 0 ? std::to_string(c.gpusPerNode) + " per node" : std::string("one node");
    if (placement.replicas > variant.dp * variant.cp)
        where += "; ep " + std::to_string(t.moe.ep) + " lays out " + std::to_string(placement.replicas)
            + " replicas per rank: " + std::to_string(laidOut) + " devices";
    if (c.gpusPerNode > 0) {
        const long long nodes = (laidOut + c.gpusPerNode - 1) / c.gpusPerNode;
        where += (placement.replicas > variant.dp * variant.cp ? " on " : ", ")
            + formatCountOf(static_cast<std::size_t>(nodes), "node");
    }
    line += " (" + where + ")";
    if (!t.isMoe()) {
        line += "; dense, no expert all-to-all";
    } else if (t.moe.ep <= 1) {
        line += "; no expert all-to-all (ep 1)";
    } else {
        const int peers = t.moe.ep - 1;
        line += "; all-to-all over ep " + std::to_string(t.moe.ep) + ": ";
        if (placement.ep.nodesSpanned <= 1)
            line += "all " + std::to_string(peers) + " peers intra-node";
        else
            line += std::to_string(placement.ep.peersInNode) + " peers intra-node, "
                + std::to_string(peers - placement.ep.peersInNode) + " inter-node ("
                + std::to_string(placement.ep.nodesSpanned) + " nodes)";
    }
    int crossing = 0;
    for (int r = 0; r + 1 < variant.ranks; ++r)
        crossing += static_cast<std::size_t>(r + 1) < placement.rankNode.size()
            && placement.rankNode[static_cast<std::size_t>(r)] != placement.rankNode[static_cast<std::size_t>(r) + 1];
    if (variant.ranks > 1)
        line += "; pipeline hops: " + std::to_string(crossing) + " of " + std::to_string(variant.ranks - 1)
            + " inter-node";
    return line;
}

// ------------------------------------------------------------------------------------------ model-info

namespace {

json modelInfoJson(const ModelInfo& info)
{
    json stages = json::array();
    for (const StageInfo& s : info.stages)
        stages.push_back({ { "stage", s.stage }, { "layers", s.layers }, { "parameters", s.parameters },
            { "f_us", s.fUs }, { "i_us", s.iUs }, { "w_us", s.wUs }, { "b_us", s.bUs }, { "fb_us", s.fbUs },
            { "fb_compute_us", s.fbComputeUs }, { "fb_comm_us", s.fbCommUs }, { "activation_bytes", s.activationBytes },
            { "a2a_bytes", s.a2aBytes } });
    json ranks = json::array();
    for (const RankInfo& r : info.ranks)
        ranks.push_back(
            { { "rank", r.rank }, { "parameters", r.parameters }, { "parameter_bytes", r.parameterBytes } });
    return { { "parameters_total", info.parametersTotal }, { "parameters_active", info.parametersActive },
        { "flops_per_token_training", info.flopsPerTokenTraining }, { "tp", info.tp }, { "cp", info.cp },
        { "sequence_parallel", info.sequenceParallel }, { "zero", info.zero }, { "stages", std::move(stages) },
        { "ranks", std::move(ranks) } };
}

void printModelInfo(const std::string& label, const std::string& summary, const ModelInfo& info)
{
    const char* flopsNote = summary.empty() ? " FLOPs per token (3 × forward)\n\n"
                                            : " FLOPs per token (3 × forward, attention and LM head included, "
                                              "embedding lookup not)\n\n";
    std::cout << label << "\n";
    if (!summary.empty())
        std::cout << "model:       " << summary << "\n";
    std::cout << "job:         tp " << info.tp << ", cp " << info.cp << ", sequence parallel "
              << (info.sequenceParallel ? "on" : "off") << ", ZeRO " << info.zero << "\n";
    std::cout << "parameters:  " << formatCount(info.parametersTotal) << " total, "
              << formatCount(info.parametersActive) << " active per token\n"
              << "training:    " << formatCount(info.flopsPerTokenTraining) << flopsNote;
    std::vector<std::vector<std::string>> stageRows { { "stage", "layers", "parameters", "F", "I", "W", "B", "F&B",
        "activations", "all-to-all" } };
    for (const StageInfo& s : info.stages)
        stageRows.push_back({ std::to_string(s.stage), std::to_string(s.layers), formatCount(s.parameters),
            formatTime(s.fUs), formatTime(s.iUs), formatTime(s.wUs), formatTime(s.bUs), formatTime(s.fbUs),
            formatBytes(s.activationBytes), formatBytes(s.a2aBytes) });
    std::cout << formatTable(stageRows)
              << "per device and microbatch: activations kept from F until I; all-to-all bytes leaving a device "
                 "in one F (dispatch + combine)\n\n";
    std::vector<std::vector<std::string>> rankRows { { "rank", "parameters", "parameter bytes" } };
    for (const RankInfo& r : info.ranks)
        rankRows.push_back({ std::to_string(r.rank), formatCount(r.parameters), formatBytes(r.parameterBytes) });
    std::cout << formatTable(rankRows);
}

} // namespace

int cmdModelInfo(const ModelInfoArgs& args)
{
    const Project project = loadProject(args.project);
    const Variant& variant = variantOf(project, args.variant, args.project);
    ModelInfo info;
    std::string summary;
    try { // the engine's messages name the field; the file goes in front
        info = modelInfo(project, variant);
        summary = modelSummary(project, variant);
    } catch (const ConstraintError& e) {
        throw ConstraintError(e.rule(), args.project + ": " + e.what());
    } catch (const FormatError& e) {
        throw FormatError(args.project + ": " + e.what());
    }
    if (args.json) {
        std::cout << modelInfoJson(info).dump(2) << "\n";
        return kExitOk;
    }
    std::string label = args.project + " [" + variant.name + "]: " + std::string(kindDisplayName(variant.kind)) + ", "
        + std::to_string(variant.ranks) + " ranks, " + std::to_string(info.stages.size()) + " stages";
    printModelInfo(label, summary, info);
    return kExitOk;
}

} // namespace dps::cli
