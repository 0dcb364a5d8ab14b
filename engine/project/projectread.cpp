// Reading a project file (docs/project-format.md): every object and field, then validateProject.
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
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <unistd.h>

namespace dps::detail {
extern const char* const kDefaultProjectJson;
} // namespace dps::detail

namespace dps {

using detail::JsonReader;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// ------------------------------------------------------------------------------------------- parsing

namespace {

/// A boolean member, `fallback` when absent.
bool readBool(const JsonReader& r, const char* key, bool fallback)
{
    if (!r.has(key))
        return fallback;
    const json& v = r.get(key);
    if (!v.is_boolean())
        r.fail(key, "must be true or false, got " + JsonReader::shown(v));
    return v.get<bool>();
}

/// A string member that must be one of `names`: its index there, `fallback` when absent. The message lists
/// them: `must be "none", "selective" or "full", got "x"`.
int readChoice(const JsonReader& r, const char* key, std::initializer_list<std::string_view> names, int fallback)
{
    if (!r.has(key))
        return fallback;
    const std::string value = r.string(key);
    int index = 0;
    std::string list;
    for (const std::string_view name : names) {
        if (value == name)
            return index;
        list += (index == 0 ? "" : index + 1 == static_cast<int>(names.size()) ? " or " : ", ");
        list += "\"" + std::string(name) + "\"";
        ++index;
    }
    r.fail(key, "must be " + list + ", got " + JsonReader::shown(r.get(key)));
}

/// An element type of parameters, activations, moments or gradients: "fp32" or "bf16".
DType readDtype(const JsonReader& r, const char* key, DType fallback)
{
    return readChoice(r, key, { "fp32", "bf16" }, fallback == DType::BF16 ? 1 : 0) == 1 ? DType::BF16 : DType::FP32;
}

/// Bytes per element of an all-to-all: "fp8" (1), "bf16" (2) or "fp32" (4).
int readWireBytes(const JsonReader& r, const char* key, int fallback)
{
    constexpr int kBytes[] = { 1, 2, 4 };
    const int index = readChoice(r, key, { "fp8", "bf16", "fp32" }, -1);
    return index < 0 ? fallback : kBytes[index];
}

model::Recompute readRecompute(const JsonReader& r, const char* key, model::Recompute fallback)
{
    return static_cast<model::Recompute>(
        readChoice(r, key, { "none", "selective", "full", "norm-up-projection" }, static_cast<int>(fallback)));
}

/// A GEMM or cache precision: "fp8" (1 byte), "bf16" (2) or "fp32" (4); 0 when absent (the model's dtype).
int readPrecisionBytes(const JsonReader& r, const char* key)
{
    return readWireBytes(r, key, 0);
}

/// An integer member ≥ minimum, `fallback` when absent.
int integerOr(const JsonReader& r, const char* key, int minimum, int fallback)
{
    return r.has(key) ? r.integer(key, minimum) : fallback;
}

/// The fields of model.kind "transformer" that model.kind "block" refuses.
constexpr const char* kTransformerOnlyFields[]
    = { "heads", "kv_heads", "head_dim", "vocab", "tied_embeddings", "attention", "mla", "moe" };

/// model.mla (only with attention "mla"); every field optional, defaults model::Mla's.
model::Mla readMla(const JsonReader& r)
{
    r.allowOnly({ "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim" });
    model::Mla mla;
    mla.qLoraRank = integerOr(r, "q_lora_rank", 0, mla.qLoraRank);
    mla.kvLoraRank = integerOr(r, "kv_lora_rank", 1, mla.kvLoraRank);
    mla.qkNopeHeadDim = integerOr(r, "qk_nope_head_dim", 1, mla.qkNopeHeadDim);
    mla.qkRopeHeadDim = integerOr(r, "qk_rope_head_dim", 1, mla.qkRopeHeadDim);
    mla.vHeadDim = integerOr(r, "v_head_dim", 1, mla.vHeadDim);
    return mla;
}

/// model.moe; the relations between its fields (top_k ≤ experts, ep divides experts, ...) are model::check's.
model::Moe readMoe(const JsonReader& r, DType dtype)
{
    r.allowOnly({ "experts", "top_k", "expert_ffn", "shared_experts", "dense_layers", "dense_ffn", "ep",
        "dispatch_dtype", "combine_dtype", "max_nodes_per_token", "imbalance", "prob_scaling" });
    model::Moe moe;
    moe.experts = integerOr(r, "experts", 0, 0);
    moe.topK = integerOr(r, "top_k", 0, 0);
    moe.expertFfn = integerOr(r, "expert_ffn", 0, 0);
    moe.sharedExperts = integerOr(r, "shared_experts", 0, 0);
    moe.denseLayers = integerOr(r, "dense_layers", 0, 0);
    moe.denseFfn = integerOr(r, "dense_ffn", 0, 0);
    moe.ep = integerOr(r, "ep", 1, 1);
    moe.dispatchBytes = readWireBytes(r, "dispatch_dtype", dtypeBytes(dtype));
    moe.combineBytes = readWireBytes(r, "combine_dtype", dtypeBytes(dtype));
    moe.maxNodesPerToken = integerOr(r, "max_nodes_per_token", 0, 0);
    moe.imbalance = r.numberOr("imbalance", JsonReader::kPositive, 1.0);
    if (moe.imbalance < 1.0)
        r.fail("imbalance", "must be at least 1 (1 = balanced routing), got " + JsonReader::shown(r.get("imbalance")));
    moe.probsOnSwiglu = readChoice(r, "prob_scaling", { "combine", "swiglu" }, 0) == 1;
    return moe;
}

/// The transformer-only fields of model.kind "transformer" (the shared ones are already in `m`).
model::Transformer readTransformer(const JsonReader& r, const ModelDesc& m)
{
    model::Transformer t;
    t.heads = r.integer("heads", 1);
    t.kvHeads = integerOr(r, "kv_heads", 1, t.heads);
    // Absent: hidden / heads; when heads does not divide hidden it stays 0 and model::check names the fields.
    t.headDim = integerOr(r, "head_dim", 1, m.hidden % t.heads == 0 ? m.hidden / t.heads : 0);
    t.vocab = r.integer("vocab", 1);
    t.tiedEmbeddings = readBool(r, "tied_embeddings", false);
    const model::Attention fallback = t.kvHeads == t.heads ? model::Attention::MHA : model::Attention::GQA;
    t.attention = static_cast<model::Attention>(
        readChoice(r, "attention", { "mha", "gqa", "mla" }, static_cast<int>(fallback)));
    if (r.has("mla")) {
        if (t.attention != model::Attention::MLA)
            r.fail("mla", "only with model.attention \"mla\"");
        t.mla = readMla(r.object("mla"));
    }
    t.moe.dispatchBytes = dtypeBytes(m.dtype);
    t.moe.combineBytes = dtypeBytes(m.dtype);
    if (r.has("moe"))
        t.moe = readMoe(r.object("moe"), m.dtype);
    return t;
}

} // namespace

ModelDesc detail::readModel(const JsonReader& r, const std::string& source)
{
    ModelDesc m;
    m.kind = readChoice(r, "kind", { "block", "transformer" }, 0) == 1 ? ModelKind::Transformer : ModelKind::Block;
    if (m.kind == ModelKind::Block) {
        for (const char* key : kTransformerOnlyFields)
            if (r.has(key))
                r.fail(key, "only for model.kind \"transformer\"");
        r.allowOnly(
            { "kind", "preset", "layers", "hidden", "ffn", "seq_len", "microbatch_size", "dtype", "recompute" });
    } else {
        r.allowOnly({ "kind", "preset", "layers", "hidden", "ffn", "seq_len", "microbatch_size", "dtype", "recompute",
            "recompute_layers", "heads", "kv_heads", "head_dim", "vocab", "tied_embeddings", "attention", "mla",
            "moe" });
    }
    m.preset = r.has("preset") ? r.string("preset") : "";
    m.layers = r.integer("layers", 1);
    m.hidden = r.integer("hidden", 1);
    if (r.has("ffn")) {
        m.ffn = r.integer("ffn", 1);
    } else {
        try {
            m.ffn = defaultFfn(m.hidden);
        } catch (const FormatError& e) {
            throw FormatError(source + ": " + e.what());
        }
    }
    m.seqLen = r.integer("seq_len", 1);
    m.microbatchSize = r.integer("microbatch_size", 1);
    m.dtype = readDtype(r, "dtype", DType::FP32);
    m.recompute = readRecompute(r, "recompute", model::Recompute::None);
    m.recomputeLayers = integerOr(r, "recompute_layers", 0, 0);
    if (m.kind == ModelKind::Transformer) {
        m.transformer = readTransformer(r, m);
        try {
            model::check(transformerOf(m));
        } catch (const FormatError& e) {
            throw FormatError(source + ": " + e.what());
        }
    }
    return m;
}

namespace {

/// cluster.kernels: sm_count and hbm_bandwidth_bytes_per_us required, the efficiencies in (0, 1].
KernelModel readKernels(const JsonReader& r)
{
    r.allowOnly({ "sm_count", "hbm_bandwidth_bytes_per_us", "gemm_efficiency", "gemm_efficiency_fp8",
        "wgrad_efficiency_fp8", "attention_forward_efficiency", "attention_backward_efficiency", "memory_efficiency",
        "dispatch_inter_node_bandwidth_bytes_per_us", "combine_inter_node_bandwidth_bytes_per_us" });
    KernelModel k;
    k.smCount = r.integer("sm_count", 1);
    if (!r.has("hbm_bandwidth_bytes_per_us"))
        r.get("hbm_bandwidth_bytes_per_us"); // throws "missing (required)"
    k.hbmBandwidthBytesPerUs = r.numberOr("hbm_bandwidth_bytes_per_us", JsonReader::kPositive, 0.0);
    const auto fraction = [&r](const char* key, double fallback) {
        const double v = r.numberOr(key, JsonReader::kPositive, fallback);
        if (v > 1.0)
            r.fail(key, "must be in (0, 1], got " + JsonReader::shown(r.get(key)));
        return v;
    };
    k.gemmEfficiency = fraction("gemm_efficiency", k.gemmEfficiency);
    k.gemmEfficiencyFp8 = fraction("gemm_efficiency_fp8", k.gemmEfficiencyFp8);
    if (r.has("wgrad_efficiency_fp8"))
        k.wgradEfficiencyFp8 = fraction("wgrad_efficiency_fp8", 0.0);
    k.attentionForwardEfficiency = fraction("attention_forward_efficiency", k.attentionForwardEfficiency);
    k.attentionBackwardEfficiency = fraction("attention_backward_efficiency", k.attentionBackwardEfficiency);
    k.memoryEfficiency = fraction("memory_efficiency", k.memoryEfficiency);
    k.dispatchInterNodeBytesPerUs
        = r.numberOr("dispatch_inter_node_bandwidth_bytes_per_us", JsonReader::kNonNegative, 0.0);
    k.combineInterNodeBytesPerUs
        = r.numberOr("combine_inter_node_bandwidth_bytes_per_us", JsonReader::kNonNegative, 0.0);
    return k;
}

} // namespace

ClusterDesc detail::readCluster(const JsonReader& r)
{
    r.allowOnly({ "device", "device_flops", "device_flops_fp8", "efficiency", "memory_per_device_bytes", "latency_us",
        "bandwidth_bytes_per_us", "gpus_per_node", "nodes", "inter_node_latency_us",
        "inter_node_bandwidth_bytes_per_us", "comm_compute_share", "kernels" });
    ClusterDesc c;
    c.device = r.has("device") ? r.string("device") : "";
    c.deviceFlops = r.numberOr("device_flops", JsonReader::kPositive, c.deviceFlops);
    c.deviceFlopsFp8 = r.numberOr("device_flops_fp8", JsonReader::kPositive, c.deviceFlopsFp8);
    c.efficiency = r.numberOr("efficiency", JsonReader::kPositive, c.efficiency);
    if (c.efficiency > 1.0)
        r.fail("efficiency", "must be in (0, 1], got " + JsonReader::shown(r.get("efficiency")));
    c.memoryPerDeviceBytes = r.numberOr("memory_per_device_bytes", JsonReader::kNonNegative, c.memoryPerDeviceBytes);
    c.latencyUs = r.numberOr("latency_us", JsonReader::kNonNegative, c.latencyUs);
    c.bandwidthBytesPerUs = r.numberOr("bandwidth_bytes_per_us", JsonReader::kNonNegative, c.bandwidthBytesPerUs);
    c.gpusPerNode = integerOr(r, "gpus_per_node", 1, c.gpusPerNode);
    c.nodes = integerOr(r, "nodes", 1, c.nodes);
    c.interNodeLatencyUs = r.numberOr("inter_node_latency_us", JsonReader::kNonNegative, c.interNodeLatencyUs);
    c.interNodeBandwidthBytesPerUs
        = r.numberOr("inter_node_bandwidth_bytes_per_us", JsonReader::kNonNegative, c.interNodeBandwidthBytesPerUs);
    c.commComputeShare = r.numberOr("comm_compute_share", JsonReader::kNonNegative, c.commComputeShare);
    if (c.commComputeShare >= 1.0)
        r.fail("comm_compute_share", "must be in [0, 1), got " + JsonReader::shown(r.get("comm_compute_share")));
    if (r.has("kernels"))
        c.kernels = readKernels(r.object("kernels"));
    return c;
}

TrainingDesc detail::readTraining(const JsonReader& r)
{
    r.allowOnly({ "master_weights", "moment_dtype", "gradient_dtype", "zero", "gemm_dtype", "activation_cache_dtype",
        "ema_on_cpu" });
    TrainingDesc t;
    t.present = true;
    t.masterWeights = readBool(r, "master_weights", t.masterWeights);
    t.momentBytes = dtypeBytes(readDtype(r, "moment_dtype", DType::FP32));
    t.gradientDtype = readDtype(r, "gradient_dtype", t.gradientDtype);
    t.zero = integerOr(r, "zero", 0, t.zero);
    if (t.zero > 3)
        r.fail("zero", "must be 0, 1, 2 or 3, got " + std::to_string(t.zero));
    t.gemmBytes = readPrecisionBytes(r, "gemm_dtype");
    t.activationCacheBytes = readPrecisionBytes(r, "activation_cache_dtype");
    t.emaOnCpu = readBool(r, "ema_on_cpu", t.emaOnCpu);
    return t;
}

namespace {

using detail::readCluster;
using detail::readModel;
using detail::readTraining;

ScheduleKind readKind(const JsonReader& r)
{
    const std::string name = r.string("kind");
    const auto kind = parseKind(name);
    if (!kind)
        r.fail("kind", "unknown schedule kind \"" + name + "\" (expected " + generatedKindNames(", ") + " or custom)");
    return *kind;
}

std::vector<int> readPartition(const JsonReader& r)
{
    std::vector<int> partition;
    const json& list = r.array("layer_partition");
    for (std::size_t s = 0; s < list.size(); ++s)
        partition.push_back(r.element(list, s, "layer_partition").asInteger(0));
    return partition;
}

std::vector<std::vector<Action>> readOrder(const JsonReader& r)
{
    std::vector<std::vector<Action>> order;
    const json& rows = r.array("order");
    for (std::size_t rank = 0; rank < rows.size(); ++rank) {
        const JsonReader row = r.element(rows, rank, "order");
        const json& cells = row.asArray();
        order.emplace_back();
        for (std::size_t p = 0; p < cells.size(); ++p)
            order.back().push_back(row.element(cells, p, "").asAction());
    }
    return order;
}

std::vector<std::vector<Step>> readCommOrder(const JsonReader& r)
{
    std::vector<std::vector<Step>> program;
    const json& rows = r.array("comm_order");
    for (std::size_t rank = 0; rank < rows.size(); ++rank) {
        const JsonReader row = r.element(rows, rank, "comm_order");
        const json& cells = row.asArray();
        program.emplace_back();
        for (std::size_t p = 0; p < cells.size(); ++p)
            program.back().push_back(row.element(cells, p, "").asStep());
    }
    return program;
}

Variant readVariant(const JsonReader& r)
{
    r.allowOnly({ "name", "kind", "ranks", "microbatches", "dp", "tp", "cp", "sequence_parallel", "microbatch_size",
        "recompute", "recompute_layers", "stages_per_rank", "layer_partition", "order", "comm_order" });
    Variant v;
    v.name = r.string("name");
    if (v.name.empty())
        r.fail("name", "must not be empty");
    v.kind = readKind(r);
    v.ranks = r.integer("ranks", 1);
    v.microbatches = r.integer("microbatches", 1);
    v.dp = integerOr(r, "dp", 1, 1);
    v.tp = integerOr(r, "tp", 1, 1);
    v.cp = integerOr(r, "cp", 1, 1);
    v.sequenceParallel = readBool(r, "sequence_parallel", false);
    v.microbatchSize = integerOr(r, "microbatch_size", 1, 0);
    if (r.has("recompute"))
        v.recompute = readRecompute(r, "recompute", model::Recompute::None);
    if (r.has("recompute_layers"))
        v.recomputeLayers = r.integer("recompute_layers", 0);
    v.stagesPerRank = r.has("stages_per_rank") ? r.integer("stages_per_rank", 1) : 0;
    if (r.has("layer_partition"))
        v.layerPartition = readPartition(r);
    if (r.has("order"))
        v.order = readOrder(r);
    else if (v.kind == ScheduleKind::Custom)
        r.fail("order", "missing (required when kind is \"custom\")");
    if (r.has("comm_order"))
        v.commOrder = readCommOrder(r);
    return v;
}

std::vector<Variant> readVariants(const JsonReader& root)
{
    const json& list = root.array("variants");
    if (list.empty())
        root.fail("variants", "must hold at least one variant");
    std::vector<Variant> variants;
    std::map<std::string, std::size_t> seen;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const JsonReader r = root.element(list, i, "variants");
        variants.push_back(readVariant(r.asObject()));
        const auto [it, fresh] = seen.emplace(variants.back().name, i);
        if (!fresh)
            r.fail("name",
                "\"" + variants.back().name + "\" is also the name of variants[" + std::to_string(it->second) + "]");
    }
    return variants;
}

std::string readActive(const JsonReader& root, const std::vector<Variant>& variants)
{
    if (!root.has("active_variant"))
        return variants.front().name;
    const std::string name = root.string("active_variant");
    for (const auto& v : variants)
        if (v.name == name)
            return name;
    std::string names;
    for (const auto& v : variants)
        names += (names.empty() ? "" : ", ") + v.name;
    root.fail("active_variant", "no variant named \"" + name + "\" (variants: " + names + ")");
}

} // namespace

std::vector<StageCostOverride> detail::readStageOverrides(const JsonReader& parent)
{
    constexpr int kMaxStage = 1 << 20;
    std::vector<StageCostOverride> stages;
    std::vector<bool> seen;
    const json& list = parent.array("stages");
    for (std::size_t i = 0; i < list.size(); ++i) {
        const JsonReader r = parent.element(list, i, "stages").asObject();
        r.allowOnly({ "stage", "f_us", "i_us", "w_us", "b_us", "fb_us" });
        const int stage = r.integer("stage", 0);
        if (stage >= kMaxStage)
            r.fail("stage", "must be below " + std::to_string(kMaxStage) + ", got " + std::to_string(stage));
        const auto s = static_cast<std::size_t>(stage);
        if (s >= stages.size()) {
            stages.resize(s + 1);
            seen.resize(s + 1, false);
        }
        if (seen[s])
            r.fail("stage", "stage " + std::to_string(stage) + " is listed twice");
        seen[s] = true;
        StageCostOverride& o = stages[s];
        o.forwardUs = r.optionalNumber("f_us", JsonReader::kNonNegative);
        o.inputGradUs = r.optionalNumber("i_us", JsonReader::kNonNegative);
        o.weightGradUs = r.optionalNumber("w_us", JsonReader::kNonNegative);
        o.backwardUs = r.optionalNumber("b_us", JsonReader::kNonNegative);
        o.overlapUs = r.optionalNumber("fb_us", JsonReader::kNonNegative);
    }
    return stages;
}

std::vector<double> detail::readSlotVariation(const JsonReader& parent)
{
    constexpr std::size_t kMaxVariationQuantiles = 1001;
    const json& list = parent.array("slot_variation");
    if (list.size() < 2 || list.size() > kMaxVariationQuantiles)
        parent.fail("slot_variation",
            "needs 2 to " + std::to_string(kMaxVariationQuantiles) + " quantiles (p0 … p100), got "
                + std::to_string(list.size()));
    std::vector<double> quantiles;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const JsonReader element = parent.element(list, i, "slot_variation");
        if (!list[i].is_number() || !(list[i].get<double>() > -1.0) || !std::isfinite(list[i].get<double>()))
            element.failHere("must be a number above -1 (measured ÷ fitted − 1), got " + JsonReader::shown(list[i]));
        const double q = list[i].get<double>();
        if (i > 0 && q < quantiles.back())
            element.failHere("must be at least slot_variation[" + std::to_string(i - 1) + "] ("
                + JsonReader::shown(list[i - 1]) + "): quantiles rise, got " + JsonReader::shown(list[i]));
        quantiles.push_back(q);
    }
    return quantiles;
}

namespace {

using detail::readSlotVariation;
using detail::readStageOverrides;

CostSettings readCosts(const JsonReader& r)
{
    r.allowOnly({ "overlap_factor", "optimizer_bytes_per_parameter", "latency_us", "bandwidth_bytes_per_us", "stages",
        "slot_variation" });
    CostSettings c;
    c.overlapFactor = r.numberOr("overlap_factor", JsonReader::kPositive, 1.0);
    c.optimizerBytesPerParameter = r.numberOr("optimizer_bytes_per_parameter", JsonReader::kNonNegative, 0.0);
    c.latencyUs = r.optionalNumber("latency_us", JsonReader::kNonNegative);
    c.bandwidthBytesPerUs = r.optionalNumber("bandwidth_bytes_per_us", JsonReader::kNonNegative);
    if (r.has("stages"))
        c.stages = readStageOverrides(r);
    if (r.has("slot_variation"))
        c.slotVariation = readSlotVariation(r);
    return c;
}

} // namespace

Project parseProject(const std::string& text, const std::string& source)
{
    const json j = JsonReader::parse(text, source);
    refuseOtherFileKind(j, FileKind::Project, "a project", source);
    JsonReader::checkVersion(j, source, kProjectFormatVersion);
    const JsonReader root(j, "", source);
    root.allowOnly(
        { "format_version", "name", "seed", "model", "training", "cluster", "variants", "active_variant", "costs" });
    Project p;
    p.name = root.has("name") ? root.string("name") : "";
    p.seed = root.has("seed") ? root.unsignedInteger("seed") : 233;
    p.model = readModel(root.object("model"), source);
    if (root.has("training"))
        p.training = readTraining(root.object("training"));
    if (root.has("cluster"))
        p.cluster = readCluster(root.object("cluster"));
    p.variants = readVariants(root);
    p.activeVariant = readActive(root, p.variants);
    if (root.has("costs"))
        p.costs = readCosts(root.object("costs"));
    try {
        validateProject(p);
    } catch (const FormatError& e) {
        throw FormatError(source + ": " + e.what());
    }
    return p;
}

Project defaultProject()
{
    return parseProject(detail::kDefaultProjectJson, "default project");
}

bool looksLikeProject(const std::string& text)
{
    const json j = json::parse(text, nullptr, false);
    return j.is_object() && j.contains("format_version") && j.contains("variants");
}

Project loadProject(const std::filesystem::path& path)
{
    return parseProject(readTextFile(path), path.string());
}

} // namespace dps
