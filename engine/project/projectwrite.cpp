// Writing a project file and reading and writing cost files.
#include "base/fileio.h"
#include "project.h"

#include "base/checked.h"
#include "base/errors.h"
#include "filekind.h"
#include "jsonreader.h"
#include "modelcost.h"
#include "partitioning.h"
#include "projectreaders.h"
#include "schedule/generator.h"
#include "transformercost.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <unistd.h>

namespace dps {

using detail::JsonReader;
using detail::readStageOverrides;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// ----------------------------------------------------------------------------------------- writing

namespace {

ojson stageOverridesJson(const std::vector<StageCostOverride>& stages)
{
    ojson list = ojson::array();
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const StageCostOverride& o = stages[s];
        if (!o.forwardUs && !o.inputGradUs && !o.weightGradUs && !o.backwardUs && !o.overlapUs)
            continue;
        ojson e { { "stage", s } };
        const std::pair<const char*, const std::optional<double>*> fields[]
            = { { "f_us", &o.forwardUs }, { "i_us", &o.inputGradUs }, { "w_us", &o.weightGradUs },
                  { "b_us", &o.backwardUs }, { "fb_us", &o.overlapUs } };
        for (const auto& [key, value] : fields)
            if (*value)
                e[key] = **value;
        list.push_back(e);
    }
    return list;
}

/// Whether the project says something only format 2 can: a transformer model, a preset name, recompute,
/// training state, node fields of the cluster, or dp / microbatch_size / recompute on a variant. A project
/// without is written as format 1, byte for byte as before format 2 existed.
bool needsFormat2(const Project& p)
{
    const ModelDesc& m = p.model;
    const ClusterDesc& c = p.cluster;
    const ClusterDesc defaults;
    if (m.kind != ModelKind::Block || !m.preset.empty() || m.recompute != model::Recompute::None || p.training.present
        || !p.costs.slotVariation.empty())
        return true;
    if (!c.device.empty() || c.deviceFlopsFp8 != defaults.deviceFlopsFp8 || c.gpusPerNode != defaults.gpusPerNode
        || c.nodes != defaults.nodes || c.interNodeLatencyUs != defaults.interNodeLatencyUs
        || c.interNodeBandwidthBytesPerUs != defaults.interNodeBandwidthBytesPerUs
        || c.commComputeShare != defaults.commComputeShare || c.kernels)
        return true;
    return std::any_of(p.variants.begin(), p.variants.end(), [](const Variant& v) {
        return v.dp != 1 || v.microbatchSize != 0 || v.recompute.has_value() || v.recomputeLayers.has_value()
            || v.tp != 1 || v.cp != 1 || v.sequenceParallel || v.commOrder.has_value();
    });
}

std::string wireDtypeName(int bytes)
{
    return bytes == 1 ? "fp8" : bytes == 2 ? "bf16" : "fp32";
}

/// model.moe as format 2 writes it: every count, the wire dtypes only when they differ from the model's.
ojson moeJson(const model::Moe& moe, DType dtype)
{
    ojson j { { "experts", moe.experts }, { "top_k", moe.topK }, { "expert_ffn", moe.expertFfn },
        { "shared_experts", moe.sharedExperts }, { "dense_layers", moe.denseLayers }, { "dense_ffn", moe.denseFfn },
        { "ep", moe.ep } };
    if (moe.dispatchBytes != dtypeBytes(dtype))
        j["dispatch_dtype"] = wireDtypeName(moe.dispatchBytes);
    if (moe.combineBytes != dtypeBytes(dtype))
        j["combine_dtype"] = wireDtypeName(moe.combineBytes);
    j["max_nodes_per_token"] = moe.maxNodesPerToken;
    if (moe.imbalance != 1.0)
        j["imbalance"] = moe.imbalance;
    if (moe.probsOnSwiglu)
        j["prob_scaling"] = "swiglu";
    return j;
}

/// Whether `moe` says anything beyond a dense model's defaults (so "moe" is written).
bool hasMoe(const model::Moe& moe, DType dtype)
{
    const model::Moe dense;
    return moe.experts != dense.experts || moe.topK != dense.topK || moe.expertFfn != dense.expertFfn
        || moe.sharedExperts != dense.sharedExperts || moe.denseLayers != dense.denseLayers
        || moe.denseFfn != dense.denseFfn || moe.ep != dense.ep || moe.maxNodesPerToken != dense.maxNodesPerToken
        || moe.dispatchBytes != dtypeBytes(dtype) || moe.combineBytes != dtypeBytes(dtype)
        || moe.imbalance != dense.imbalance || moe.probsOnSwiglu != dense.probsOnSwiglu;
}

ojson modelJson(const ModelDesc& m, bool format2)
{
    if (!format2)
        return { { "layers", m.layers }, { "hidden", m.hidden }, { "ffn", m.ffn }, { "seq_len", m.seqLen },
            { "microbatch_size", m.microbatchSize }, { "dtype", std::string(dtypeName(m.dtype)) } };
    ojson j { { "kind", std::string(modelKindName(m.kind)) } };
    if (!m.preset.empty())
        j["preset"] = m.preset;
    j["layers"] = m.layers;
    j["hidden"] = m.hidden;
    j["ffn"] = m.ffn;
    j["seq_len"] = m.seqLen;
    j["microbatch_size"] = m.microbatchSize;
    j["dtype"] = std::string(dtypeName(m.dtype));
    j["recompute"] = std::string(model::recomputeName(m.recompute));
    if (m.recomputeLayers > 0)
        j["recompute_layers"] = m.recomputeLayers;
    if (m.kind != ModelKind::Transformer)
        return j;
    const model::Transformer& t = m.transformer;
    j["heads"] = t.heads;
    j["kv_heads"] = t.kvHeads;
    if (t.headDim > 0)
        j["head_dim"] = t.headDim;
    j["vocab"] = t.vocab;
    j["tied_embeddings"] = t.tiedEmbeddings;
    j["attention"] = std::string(model::attentionName(t.attention));
    if (t.attention == model::Attention::MLA)
        j["mla"] = { { "q_lora_rank", t.mla.qLoraRank }, { "kv_lora_rank", t.mla.kvLoraRank },
            { "qk_nope_head_dim", t.mla.qkNopeHeadDim }, { "qk_rope_head_dim", t.mla.qkRopeHeadDim },
            { "v_head_dim", t.mla.vHeadDim } };
    if (hasMoe(t.moe, m.dtype))
        j["moe"] = moeJson(t.moe, m.dtype);
    return j;
}

ojson trainingJson(const TrainingDesc& t)
{
    ojson j { { "master_weights", t.masterWeights }, { "moment_dtype", t.momentBytes == 2 ? "bf16" : "fp32" },
        { "gradient_dtype", std::string(dtypeName(t.gradientDtype)) }, { "zero", t.zero } };
    if (t.gemmBytes > 0)
        j["gemm_dtype"] = wireDtypeName(t.gemmBytes);
    if (t.activationCacheBytes > 0)
        j["activation_cache_dtype"] = wireDtypeName(t.activationCacheBytes);
    if (t.emaOnCpu)
        j["ema_on_cpu"] = true;
    return j;
}

ojson clusterJson(const ClusterDesc& c, bool format2)
{
    if (!format2)
        return { { "device_flops", c.deviceFlops }, { "efficiency", c.efficiency },
            { "memory_per_device_bytes", c.memoryPerDeviceBytes }, { "latency_us", c.latencyUs },
            { "bandwidth_bytes_per_us", c.bandwidthBytesPerUs } };
    ojson j;
    if (!c.device.empty())
        j["device"] = c.device;
    j["device_flops"] = c.deviceFlops;
    if (c.deviceFlopsFp8 > 0.0)
        j["device_flops_fp8"] = c.deviceFlopsFp8;
    j["efficiency"] = c.efficiency;
    j["memory_per_device_bytes"] = c.memoryPerDeviceBytes;
    j["latency_us"] = c.latencyUs;
    j["bandwidth_bytes_per_us"] = c.bandwidthBytesPerUs;
    if (c.gpusPerNode > 0)
        j["gpus_per_node"] = c.gpusPerNode;
    if (c.nodes > 0)
        j["nodes"] = c.nodes;
    j["inter_node_latency_us"] = c.interNodeLatencyUs;
    j["inter_node_bandwidth_bytes_per_us"] = c.interNodeBandwidthBytesPerUs;
    j["comm_compute_share"] = c.commComputeShare;
    if (c.kernels) {
        const KernelModel& k = *c.kernels;
        j["kernels"] = ojson { { "sm_count", k.smCount }, { "hbm_bandwidth_bytes_per_us", k.hbmBandwidthBytesPerUs },
            { "gemm_efficiency", k.gemmEfficiency }, { "gemm_efficiency_fp8", k.gemmEfficiencyFp8 },
            { "attention_forward_efficiency", k.attentionForwardEfficiency },
            { "attention_backward_efficiency", k.attentionBackwardEfficiency },
            { "memory_efficiency", k.memoryEfficiency } };
        if (k.wgradEfficiencyFp8 > 0.0)
            j["kernels"]["wgrad_efficiency_fp8"] = k.wgradEfficiencyFp8;
        if (k.dispatchInterNodeBytesPerUs > 0.0)
            j["kernels"]["dispatch_inter_node_bandwidth_bytes_per_us"] = k.dispatchInterNodeBytesPerUs;
        if (k.combineInterNodeBytesPerUs > 0.0)
            j["kernels"]["combine_inter_node_bandwidth_bytes_per_us"] = k.combineInterNodeBytesPerUs;
    }
    return j;
}

ojson variantJson(const Variant& v)
{
    ojson j { { "name", v.name }, { "kind", std::string(kindName(v.kind)) }, { "ranks", v.ranks },
        { "microbatches", v.microbatches } };
    if (v.dp != 1)
        j["dp"] = v.dp;
    if (v.tp != 1)
        j["tp"] = v.tp;
    if (v.cp != 1)
        j["cp"] = v.cp;
    if (v.sequenceParallel)
        j["sequence_parallel"] = true;
    if (v.microbatchSize > 0)
        j["microbatch_size"] = v.microbatchSize;
    if (v.recompute)
        j["recompute"] = std::string(model::recomputeName(*v.recompute));
    if (v.recomputeLayers)
        j["recompute_layers"] = *v.recomputeLayers;
    if (v.stagesPerRank > 0)
        j["stages_per_rank"] = v.stagesPerRank;
    if (!v.layerPartition.empty())
        j["layer_partition"] = v.layerPartition;
    if (v.order) {
        ojson rows = ojson::array();
        for (const auto& row : *v.order) {
            ojson cells = ojson::array();
            for (const auto& action : row)
                cells.push_back(toString(action));
            rows.push_back(cells);
        }
        j["order"] = rows;
    }
    if (v.commOrder) {
        ojson rows = ojson::array();
        for (const auto& row : *v.commOrder) {
            ojson cells = ojson::array();
            for (const auto& step : row)
                cells.push_back(toString(step));
            rows.push_back(cells);
        }
        j["comm_order"] = rows;
    }
    return j;
}

ojson costsJson(const CostSettings& c)
{
    ojson j { { "overlap_factor", c.overlapFactor },
        { "optimizer_bytes_per_parameter", c.optimizerBytesPerParameter } };
    if (c.latencyUs)
        j["latency_us"] = *c.latencyUs;
    if (c.bandwidthBytesPerUs)
        j["bandwidth_bytes_per_us"] = *c.bandwidthBytesPerUs;
    j["stages"] = stageOverridesJson(c.stages);
    if (!c.slotVariation.empty())
        j["slot_variation"] = c.slotVariation;
    return j;
}

} // namespace

ojson projectToJson(const Project& project)
{
    const bool format2 = needsFormat2(project);
    ojson j;
    j["format_version"] = format2 ? 2 : 1;
    j["name"] = project.name;
    j["seed"] = project.seed;
    j["model"] = modelJson(project.model, format2);
    if (project.training.present)
        j["training"] = trainingJson(project.training);
    j["cluster"] = clusterJson(project.cluster, format2);
    ojson variants = ojson::array();
    for (const auto& v : project.variants)
        variants.push_back(variantJson(v));
    j["variants"] = variants;
    j["active_variant"] = project.activeVariant;
    j["costs"] = costsJson(project.costs);
    return j;
}

namespace {

bool isScalar(const ojson& j)
{
    return !j.is_object() && !j.is_array();
}

/// JSON with 2-space indents, lists of scalars on one line (a layer partition, one rank's order).
void writeReadable(const ojson& j, int indent, std::string& out)
{
    const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
    const bool inlineList = j.is_array() && std::all_of(j.begin(), j.end(), isScalar);
    if (isScalar(j) || j.empty() || inlineList) {
        if (!inlineList || j.empty())
            out += j.dump();
        else
            for (std::size_t i = 0; i < j.size(); ++i)
                out += (i ? ", " : "[") + j[i].dump() + (i + 1 == j.size() ? "]" : "");
        return;
    }
    out += j.is_object() ? "{\n" : "[\n";
    std::size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
        out += pad;
        if (j.is_object())
            out += ojson(it.key()).dump() + ": ";
        writeReadable(*it, indent + 2, out);
        out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += std::string(static_cast<std::size_t>(indent), ' ') + (j.is_object() ? "}" : "]");
}

} // namespace

std::string serializeProject(const Project& project)
{
    std::string out;
    writeReadable(projectToJson(project), 0, out);
    return out + "\n";
}

void saveProject(const Project& project, const std::filesystem::path& path)
{
    writeFileAtomic(path, serializeProject(project));
}

// -------------------------------------------------------------------------------------- cost files

CostsFile parseCostsFile(const std::string& text, const std::string& source)
{
    const json j = JsonReader::parse(text, source);
    refuseOtherFileKind(j, FileKind::Costs, "a cost file", source);
    JsonReader::checkVersion(j, source, kCostsFormatVersion);
    const JsonReader root(j, "", source);
    root.allowOnly(kCostsFileFields);
    CostsFile costs;
    if (root.has("stages"))
        costs.stages = readStageOverrides(root);
    costs.overlapFactor = root.optionalNumber("overlap_factor", JsonReader::kPositive);
    costs.latencyUs = root.optionalNumber("latency_us", JsonReader::kNonNegative);
    costs.bandwidthBytesPerUs = root.optionalNumber("bandwidth_bytes_per_us", JsonReader::kNonNegative);
    if (root.has("slot_variation"))
        costs.slotVariation = detail::readSlotVariation(root);
    try {
        checkCostNumbers(costs.stages, costs.overlapFactor, costs.latencyUs, "");
    } catch (const FormatError& e) {
        throw FormatError(source + ": " + e.what());
    }
    return costs;
}

std::string serializeCostsFile(const CostsFile& costs)
{
    ojson j;
    j["format_version"] = kCostsFormatVersion;
    if (costs.overlapFactor)
        j["overlap_factor"] = *costs.overlapFactor;
    if (costs.latencyUs)
        j["latency_us"] = *costs.latencyUs;
    if (costs.bandwidthBytesPerUs)
        j["bandwidth_bytes_per_us"] = *costs.bandwidthBytesPerUs;
    j["stages"] = stageOverridesJson(costs.stages);
    if (!costs.slotVariation.empty())
        j["slot_variation"] = costs.slotVariation;
    std::string out;
    writeReadable(j, 0, out);
    return out + "\n";
}

void applyCostsFile(CostSettings& settings, const CostsFile& costs)
{
    if (settings.stages.size() < costs.stages.size())
        settings.stages.resize(costs.stages.size());
    for (std::size_t s = 0; s < costs.stages.size(); ++s) {
        const StageCostOverride& from = costs.stages[s];
        StageCostOverride& to = settings.stages[s];
        to.forwardUs = from.forwardUs ? from.forwardUs : to.forwardUs;
        to.inputGradUs = from.inputGradUs ? from.inputGradUs : to.inputGradUs;
        to.weightGradUs = from.weightGradUs ? from.weightGradUs : to.weightGradUs;
        to.backwardUs = from.backwardUs ? from.backwardUs : to.backwardUs;
        to.overlapUs = from.overlapUs ? from.overlapUs : to.overlapUs;
    }
    settings.overlapFactor = costs.overlapFactor.value_or(settings.overlapFactor);
    settings.latencyUs = costs.latencyUs ? costs.latencyUs : settings.latencyUs;
    settings.bandwidthBytesPerUs = costs.bandwidthBytesPerUs ? costs.bandwidthBytesPerUs : settings.bandwidthBytesPerUs;
    if (!costs.slotVariation.empty())
        settings.slotVariation = costs.slotVariation;
}

} // namespace dps
