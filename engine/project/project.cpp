#include "project.h"
#include "base/fileio.h"

#include "base/checked.h"
#include "base/errors.h"
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

namespace dps::detail {
extern const char* const kDefaultProjectJson;
} // namespace dps::detail

namespace dps {

using detail::JsonReader;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------- basics

std::string_view dtypeName(DType dtype)
{
    return dtype == DType::BF16 ? "bf16" : "fp32";
}

int dtypeBytes(DType dtype)
{
    return dtype == DType::BF16 ? 2 : 4;
}

std::string_view modelKindName(ModelKind kind)
{
    return kind == ModelKind::Transformer ? "transformer" : "block";
}

model::Transformer transformerOf(const ModelDesc& model, int microbatchSize)
{
    model::Transformer t = model.transformer;
    t.layers = model.layers;
    t.hidden = model.hidden;
    t.ffn = model.ffn;
    t.seqLen = model.seqLen;
    t.microbatchSize = microbatchSize > 0 ? microbatchSize : model.microbatchSize;
    t.dtypeBytes = dtypeBytes(model.dtype);
    return t;
}

const Variant* Project::find(const std::string& variantName) const
{
    for (const auto& v : variants)
        if (v.name == variantName)
            return &v;
    return nullptr;
}

const Variant& Project::active() const
{
    if (const Variant* v = find(activeVariant))
        return *v;
    throw FormatError("active_variant: no variant named \"" + activeVariant + "\"");
}

namespace {

/// "variants[i]" for a variant of the project, else "variant \"name\"".
std::string variantPath(const Project& project, const Variant& variant)
{
    for (std::size_t i = 0; i < project.variants.size(); ++i)
        if (&project.variants[i] == &variant || project.variants[i].name == variant.name)
            return "variants[" + std::to_string(i) + "]";
    return "variant \"" + variant.name + "\"";
}

int resolvedStagesPerRank(const Variant& variant)
{
    return variant.stagesPerRank > 0 ? variant.stagesPerRank : defaultStagesPerRank(variant.kind);
}

/// "<where>.<field>" for a variant of a file ("variants[1].ranks"), else "<where>, <field>".
std::string fieldOf(const std::string& where, const char* field)
{
    return where + (where.rfind("variants[", 0) == 0 ? "." : ", ") + field;
}

/// Highest stage index in a hand-edited order, plus one (0 for an empty order).
int stagesInOrder(const std::vector<std::vector<Action>>& order)
{
    int stages = 0;
    for (const auto& row : order)
        for (const auto& action : row)
            for (int k = 0; k < action.size(); ++k)
                stages = std::max(stages, action.at(k).stage + 1);
    return stages;
}

/// The variant's stage count; ranks × the kind's stages per rank must fit an int (FormatError naming the
/// variant's ranks at `where`, and its stages_per_rank when typed).
int checkedStageCount(const Variant& variant, const std::string& where)
{
    if (variant.kind == ScheduleKind::Custom)
        return variant.order ? stagesInOrder(*variant.order) : 0;
    const int perRank = stageCountFor(variant.kind, 1, resolvedStagesPerRank(variant));
    const std::string ranks = fieldOf(where, "ranks");
    const std::string note = "stages per rank of " + std::string(kindName(variant.kind));
    const bool typed = variant.stagesPerRank > 0 && perRank == variant.stagesPerRank;
    const std::string perRankField = typed ? fieldOf(where, "stages_per_rank") : std::string();
    checkedProduct({ { ranks, variant.ranks }, { perRankField, perRank, typed ? std::string_view() : note } }, "stages",
        kIntRange);
    return stageCountFor(variant.kind, variant.ranks, resolvedStagesPerRank(variant));
}

} // namespace

int stageCount(const Variant& variant)
{
    return checkedStageCount(variant, "variant \"" + variant.name + "\"");
}

// ----------------------------------------------------------------------------------- partition & sizes

namespace {

void checkPartition(const Project& project, const Variant& variant, const std::string& where)
{
    const auto& partition = variant.layerPartition;
    const int stages = stageCount(variant);
    if (static_cast<int>(partition.size()) != stages)
        throw FormatError(where + ".layer_partition: has " + std::to_string(partition.size())
            + " entries, the variant has " + std::to_string(stages) + " stages");
    long long sum = 0;
    for (std::size_t s = 0; s < partition.size(); ++s) {
        if (partition[s] < 0)
            throw FormatError(where + ".layer_partition[" + std::to_string(s)
                + "]: must be a non-negative integer, got " + std::to_string(partition[s]));
        sum += partition[s];
    }
    if (sum != project.model.layers)
        throw FormatError(where + ".layer_partition: covers " + std::to_string(sum) + " layers, the model has "
            + std::to_string(project.model.layers));
}

void checkOp(const Op& op, const Variant& variant, int stages, const std::string& cell)
{
    if (op.stage < 0 || op.stage >= stages)
        throw FormatError(cell + ": stage " + std::to_string(op.stage) + " of " + toString(op)
            + " is outside the variant's " + std::to_string(stages) + " stages");
    if (op.microbatch < 0 || op.microbatch >= variant.microbatches)
        throw FormatError(cell + ": microbatch " + std::to_string(op.microbatch) + " of " + toString(op)
            + " is outside the variant's " + std::to_string(variant.microbatches) + " microbatches");
}

void checkOrderSizes(const Variant& variant, const std::string& where)
{
    if (!variant.order)
        return;
    const auto& order = *variant.order;
    if (static_cast<int>(order.size()) != variant.ranks)
        throw FormatError(where + ".order: has " + std::to_string(order.size()) + " rows, the variant has "
            + std::to_string(variant.ranks) + " ranks");
    const int stages = stageCount(variant);
    // The placement and the validator hold one entry per (stage, microbatch): refuse a count far beyond any
    // order one could write (the generators' limit, 2^26 pairs) before allocating gigabytes for it.
    constexpr long long kMaxPairs = 1LL << 26;
    if (static_cast<long long>(stages) * variant.microbatches > kMaxPairs)
        throw FormatError(where + ".microbatches: " + std::to_string(variant.microbatches) + " microbatches × "
            + std::to_string(stages) + " stages is too large for a hand-edited order (at most 2^26 = "
            + std::to_string(kMaxPairs) + " stage-microbatch pairs)");
    for (std::size_t r = 0; r < order.size(); ++r)
        for (std::size_t p = 0; p < order[r].size(); ++p)
            for (int k = 0; k < order[r][p].size(); ++k)
                checkOp(order[r][p].at(k), variant, stages,
                    where + ".order[" + std::to_string(r) + "][" + std::to_string(p) + "]");
}

/// How messages name the layer count of `stage`: its layer_partition entry, or the stage of the even split.
std::string stageLayersField(const std::string& where, const Variant& variant, std::size_t stage)
{
    if (!variant.layerPartition.empty())
        return fieldOf(where, "layer_partition") + "[" + std::to_string(stage) + "]";
    return where + " stage " + std::to_string(stage) + " (even split of model.layers)";
}

} // namespace

std::vector<int> effectivePartition(const Project& project, const Variant& variant)
{
    if (!variant.layerPartition.empty()) {
        checkPartition(project, variant, variantPath(project, variant));
        return variant.layerPartition;
    }
    const int stages = stageCount(variant);
    if (stages <= 0)
        throw FormatError(variantPath(project, variant) + ": has no stages");
    return evenPartition(project.model.layers, stages);
}

// ------------------------------------------------------------------------------------ schedule & costs

namespace {

/// Placement of a hand-edited custom order: per stage when every stage sits on one rank, else per
/// (stage, microbatch).
Placement inferPlacement(const std::vector<std::vector<Action>>& order, int stages, int microbatches)
{
    std::vector<int> table(static_cast<std::size_t>(stages) * static_cast<std::size_t>(microbatches), -1);
    std::vector<int> ofStage(static_cast<std::size_t>(stages), -1);
    bool perStage = true;
    for (std::size_t r = 0; r < order.size(); ++r)
        for (const auto& action : order[r])
            for (int k = 0; k < action.size(); ++k) {
                const Op& op = action.at(k);
                table[static_cast<std::size_t>(op.stage * microbatches + op.microbatch)] = static_cast<int>(r);
                int& owner = ofStage[static_cast<std::size_t>(op.stage)];
                perStage = perStage && (owner < 0 || owner == static_cast<int>(r));
                owner = static_cast<int>(r);
            }
    if (perStage && std::find(ofStage.begin(), ofStage.end(), -1) == ofStage.end())
        return Placement::perStage(ofStage);
    return Placement::table(stages, microbatches, std::move(table));
}

Schedule customSchedule(const Variant& variant)
{
    Schedule schedule;
    schedule.kind = ScheduleKind::Custom;
    schedule.ranks = variant.ranks;
    schedule.microbatches = variant.microbatches;
    schedule.stages = stageCount(variant);
    schedule.stagesPerRank = std::max(1, variant.stagesPerRank);
    schedule.order = *variant.order;
    schedule.placement = inferPlacement(schedule.order, schedule.stages, schedule.microbatches);
    return schedule;
}

} // namespace

Schedule buildSchedule(const Project& project, const Variant& variant)
{
    const std::string where = variantPath(project, variant);
    if (variant.kind == ScheduleKind::Custom) {
        if (!variant.order)
            throw FormatError(where + ".order: required when kind is \"custom\"");
        checkOrderSizes(variant, where);
        return customSchedule(variant);
    }
    checkOrderSizes(variant, where);
    Schedule schedule;
    try {
        schedule = generate({ variant.kind, variant.ranks, variant.microbatches, variant.stagesPerRank });
    } catch (const ConstraintError& e) {
        // Name the variant's field that breaks the rule, as every other project error does.
        const std::string& rule = e.rule();
        const char* field = rule.find("stages-per-rank") != std::string::npos            ? "stages_per_rank"
            : rule.find("microbatches") != std::string::npos || rule == "size.too-large" ? "microbatches"
                                                                                         : "ranks";
        const bool inFile = where.rfind("variants[", 0) == 0; // "variants[1].ranks", else 'variant "x", ranks'
        throw ConstraintError(rule, where + (inFile ? "." : ", ") + field + ": " + e.what());
    }
    if (variant.order)
        schedule.order = *variant.order;
    return schedule;
}

void applyCostSettings(CostModel& model, const CostSettings& settings)
{
    const std::size_t n = std::min(model.stages.size(), settings.stages.size());
    for (std::size_t s = 0; s < n; ++s) {
        applyOverride(model.stages[s], settings.stages[s]);
    }
    model.overlapFactor = settings.overlapFactor;
    model.optimizerBytesPerParameter = settings.optimizerBytesPerParameter;
    model.latencyUs = settings.latencyUs.value_or(model.latencyUs);
    model.bandwidthBytesPerUs = settings.bandwidthBytesPerUs.value_or(model.bandwidthBytesPerUs);
}

std::string detail::variantField(const Project& project, const Variant& variant, const char* field)
{
    return fieldOf(variantPath(project, variant), field);
}

CostModel buildCostModel(const Project& project, const Variant& variant, int bytesPerElement)
{
    const std::vector<int> partition = effectivePartition(project, variant);
    const std::string where = variantPath(project, variant);
    // Where the devices sit (transformercost.h); with gpus_per_node 0 (every format-1 project) rankNode stays
    // empty and every message takes the one link, as before.
    const DevicePlacement placement = placementOf(project, variant);
    const bool transformer = project.model.kind == ModelKind::Transformer;
    ModelDesc blockModel = project.model; // the block model at the variant's microbatch size
    blockModel.microbatchSize = microbatchSizeOf(project, variant);
    CostModel model;
    int firstLayer = 0;
    for (std::size_t s = 0; s < partition.size(); ++s) {
        const std::string field = stageLayersField(where, variant, s);
        const bool last = s + 1 == partition.size();
        if (transformer)
            model.stages.push_back(
                transformerStageCost(project, variant, placement, firstLayer, partition[s], s == 0, last, field));
        else
            model.stages.push_back(
                blockStageCost(blockModel, project.cluster, partition[s], last, bytesPerElement, field));
        checkStageSettings(model.stages.back(), project, field);
        firstLayer += partition[s];
    }
    checkClusterAndCosts(project);
    model.latencyUs = project.cluster.latencyUs;
    model.bandwidthBytesPerUs = project.cluster.bandwidthBytesPerUs;
    model.rankNode = placement.rankNode;
    model.gradientReplicas = transformer ? 1 : placement.replicas; // the engine's dp replicas (block model)
    if (!model.rankNode.empty()) {
        model.interNodeLatencyUs = project.cluster.interNodeLatencyUs;
        model.interNodeBandwidthBytesPerUs = project.cluster.interNodeBandwidthBytesPerUs;
    }
    const bool communicates = std::any_of(
        model.stages.begin(), model.stages.end(), [](const StageCost& c) { return !c.forwardChain.empty(); });
    model.commComputeShare = communicates ? project.cluster.commComputeShare : 0.0;
    applyCostSettings(model, project.costs);
    return model;
}

CostModel buildCostModel(const Project& project, const Variant& variant)
{
    return buildCostModel(project, variant, dtypeBytes(project.model.dtype));
}

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
        "dispatch_dtype", "combine_dtype", "max_nodes_per_token", "imbalance" });
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

ClusterDesc detail::readCluster(const JsonReader& r)
{
    r.allowOnly({ "device", "device_flops", "device_flops_fp8", "efficiency", "memory_per_device_bytes", "latency_us",
        "bandwidth_bytes_per_us", "gpus_per_node", "nodes", "inter_node_latency_us",
        "inter_node_bandwidth_bytes_per_us", "comm_compute_share" });
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

Variant readVariant(const JsonReader& r)
{
    r.allowOnly({ "name", "kind", "ranks", "microbatches", "dp", "tp", "cp", "sequence_parallel", "microbatch_size",
        "recompute", "recompute_layers", "stages_per_rank", "layer_partition", "order" });
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

/// costs.stages / cost file stages: [{stage, f_us?, i_us?, w_us?, b_us?, fb_us?}], indexed by stage.
std::vector<StageCostOverride> readStageOverrides(const JsonReader& parent)
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

CostSettings readCosts(const JsonReader& r)
{
    r.allowOnly(
        { "overlap_factor", "optimizer_bytes_per_parameter", "latency_us", "bandwidth_bytes_per_us", "stages" });
    CostSettings c;
    c.overlapFactor = r.numberOr("overlap_factor", JsonReader::kPositive, 1.0);
    c.optimizerBytesPerParameter = r.numberOr("optimizer_bytes_per_parameter", JsonReader::kNonNegative, 0.0);
    c.latencyUs = r.optionalNumber("latency_us", JsonReader::kNonNegative);
    c.bandwidthBytesPerUs = r.optionalNumber("bandwidth_bytes_per_us", JsonReader::kNonNegative);
    if (r.has("stages"))
        c.stages = readStageOverrides(r);
    return c;
}

/// The model's own rules (model::check of a transformer) and the training state's, for a project built in code
/// as for a file: training and costs.optimizer_bytes_per_parameter are two ways to say the optimizer state, so
/// at most one of them is given.
void checkModelAndTraining(const Project& project)
{
    if (project.model.kind == ModelKind::Transformer)
        model::check(transformerOf(project.model));
    if (project.model.recomputeLayers < 0)
        throw FormatError(
            "model.recompute_layers: must not be negative, got " + std::to_string(project.model.recomputeLayers));
    if (project.model.recomputeLayers > 0 && project.model.recompute != model::Recompute::Full)
        throw FormatError("model.recompute_layers: " + std::to_string(project.model.recomputeLayers)
            + " layers recomputed needs model.recompute \"full\", got \""
            + std::string(model::recomputeName(project.model.recompute)) + "\"");
    const TrainingDesc& t = project.training;
    if (!t.present)
        return;
    if (t.momentBytes != 2 && t.momentBytes != 4)
        throw FormatError("training.moment_dtype: must be \"fp32\" or \"bf16\", got " + std::to_string(t.momentBytes)
            + " bytes per element");
    if (t.zero < 0 || t.zero > 3)
        throw FormatError("training.zero: must be 0, 1, 2 or 3, got " + std::to_string(t.zero));
    for (const auto& [bytes, field] : { std::pair { t.gemmBytes, "training.gemm_dtype" },
             std::pair { t.activationCacheBytes, "training.activation_cache_dtype" } })
        if (bytes != 0 && bytes != 1 && bytes != 2 && bytes != 4)
            throw FormatError(
                std::string(field) + ": " + std::to_string(bytes) + " bytes per element is not 1, 2 or 4");

    if (project.costs.optimizerBytesPerParameter > 0.0)
        throw FormatError("training: given together with costs.optimizer_bytes_per_parameter "
            + shown(project.costs.optimizerBytesPerParameter)
            + "; the optimizer state is set by one or the other (remove one)");
}

/// A variant's tp, cp and sequence_parallel: positive; tp divides model.heads (and model.kv_heads: Megatron-LM
/// splits attention by heads, each tensor rank whole query groups), cp divides model.seq_len (each context
/// rank a contiguous share of the sequence); a block model refuses all three.
void checkTensorAndContext(const Project& project, const Variant& v, const std::string& where)
{
    for (const auto& [value, field] : { std::pair { v.tp, ".tp" }, std::pair { v.cp, ".cp" } }) {
        if (value < 1)
            throw FormatError(where + field + ": must be a positive integer, got " + std::to_string(value));
        if (value > 1 && project.model.kind != ModelKind::Transformer)
            throw FormatError(where + field + ": only for model.kind \"transformer\" (the block model runs whole "
                + "layers on one device), got " + std::to_string(value));
    }
    if (v.sequenceParallel && project.model.kind != ModelKind::Transformer)
        throw FormatError(where + ".sequence_parallel: only for model.kind \"transformer\"");
    if (project.model.kind != ModelKind::Transformer)
        return;
    const model::Transformer& t = project.model.transformer;
    if (t.heads % v.tp != 0)
        throw FormatError(where + ".tp: " + std::to_string(v.tp) + " does not divide model.heads "
            + std::to_string(t.heads) + " (tensor parallelism splits attention by heads)");
    if (t.attention != model::Attention::MLA && t.kvHeads % v.tp != 0)
        throw FormatError(where + ".tp: " + std::to_string(v.tp) + " does not divide model.kv_heads "
            + std::to_string(t.kvHeads) + " (each tensor rank holds whole key-value groups)");
    if (project.model.seqLen % v.cp != 0)
        throw FormatError(where + ".cp: " + std::to_string(v.cp) + " does not divide model.seq_len "
            + std::to_string(project.model.seqLen) + " (context parallelism splits the sequence)");
}

/// A variant's recompute_layers: not negative, and only with the variant's recompute "full".
void checkVariantRecompute(const Project& project, const Variant& v, const std::string& where)
{
    if (!v.recomputeLayers)
        return;
    if (*v.recomputeLayers < 0)
        throw FormatError(where + ".recompute_layers: must not be negative, got " + std::to_string(*v.recomputeLayers));
    if (project.model.kind != ModelKind::Transformer)
        throw FormatError(where + ".recompute_layers: only for model.kind \"transformer\"");
    const model::Recompute r = v.recompute.value_or(project.model.recompute);
    if (*v.recomputeLayers > 0 && r != model::Recompute::Full)
        throw FormatError(where + ".recompute_layers: " + std::to_string(*v.recomputeLayers)
            + " layers recomputed needs recompute \"full\", got \"" + std::string(model::recomputeName(r)) + "\"");
}

/// Structural checks that need the whole project: stage counts fit an int, partitions and hand-edited orders
/// fit their sizes; dp and microbatch_size are positive, ep divides dp, and the ranks × replicas device count
/// fits an int.
void checkVariants(const Project& project)
{
    const bool transformer = project.model.kind == ModelKind::Transformer;
    const int ep = transformer ? project.model.transformer.moe.ep : 1;
    for (std::size_t i = 0; i < project.variants.size(); ++i) {
        const Variant& v = project.variants[i];
        const std::string where = "variants[" + std::to_string(i) + "]";
        checkedStageCount(v, where);
        if (!v.layerPartition.empty())
            checkPartition(project, v, where);
        checkOrderSizes(v, where);
        if (v.dp < 1)
            throw FormatError(where + ".dp: must be a positive integer, got " + std::to_string(v.dp));
        if (v.microbatchSize < 0)
            throw FormatError(
                where + ".microbatch_size: must be a positive integer, got " + std::to_string(v.microbatchSize));
        // The block model's costs use model.microbatch_size: an override would be ignored silently.
        if (v.microbatchSize > 0 && !transformer)
            throw FormatError(where + ".microbatch_size: only for model.kind \"transformer\" (a block model uses "
                + "model.microbatch_size " + std::to_string(project.model.microbatchSize) + ")");
        checkTensorAndContext(project, v, where);
        checkVariantRecompute(project, v, where);
        const std::int64_t shards = static_cast<std::int64_t>(v.dp) * v.cp; // the replicas EP is formed across
        if (ep > 1 && shards > 1 && shards % ep != 0)
            throw FormatError(where + ".dp: " + std::to_string(v.dp) + (v.cp > 1 ? " × cp " + std::to_string(v.cp) : "")
                + " is not a multiple of model.moe.ep " + std::to_string(ep) + " (an expert-parallel group is formed "
                + "across the dp " + (v.cp > 1 ? "× cp " : "") + "replicas of a stage)");
        // Devices are numbered ((rank × max(dp × cp, ep) + replica) × tp + tensor rank) (transformercost.h), an int.
        const bool dpWins = shards >= ep;
        const std::string replicas = dpWins ? where + ".dp × cp" : std::string("model.moe.ep");
        const std::int64_t devices = checkedProduct(
            { { where + ".ranks", v.ranks }, { where + ".tp", v.tp }, { replicas, dpWins ? shards : ep } }, "devices",
            kIntRange);
        // A cluster that says how many nodes it has must hold the job.
        const ClusterDesc& c = project.cluster;
        if (c.nodes > 0 && c.gpusPerNode > 0 && devices > static_cast<std::int64_t>(c.nodes) * c.gpusPerNode)
            throw FormatError(where + ": " + std::to_string(v.ranks) + " ranks × "
                + (v.tp > 1 ? "tp " + std::to_string(v.tp) + " × " : "")
                + (dpWins ? "dp " + std::to_string(v.dp) + (v.cp > 1 ? " × cp " + std::to_string(v.cp) : "")
                          : "model.moe.ep " + std::to_string(ep))
                + " = " + std::to_string(devices) + " devices do not fit cluster.nodes " + std::to_string(c.nodes)
                + " × " + "cluster.gpus_per_node " + std::to_string(c.gpusPerNode));
    }
}

/// The sizes of every variant's stages (blockStageCost and checkStageSettings, as buildCostModel runs them)
/// without building a cost model: every stage of a typed partition; of an even split only stage 0 (the most
/// layers) and the last stage, since every check grows with the layer count. Time and memory do not grow
/// with the stage count.
void checkStageSizes(const Project& project)
{
    const int bytes = dtypeBytes(project.model.dtype);
    for (std::size_t i = 0; i < project.variants.size(); ++i) {
        const Variant& v = project.variants[i];
        const std::string where = "variants[" + std::to_string(i) + "]";
        const int stages = stageCount(v);
        if (stages <= 0)
            continue;
        const auto check = [&](int stage, int layers) {
            const std::string field = stageLayersField(where, v, static_cast<std::size_t>(stage));
            const StageCost cost
                = blockStageCost(project.model, project.cluster, layers, stage + 1 == stages, bytes, field);
            checkStageSettings(cost, project, field);
        };
        if (!v.layerPartition.empty()) {
            for (std::size_t s = 0; s < v.layerPartition.size(); ++s)
                check(static_cast<int>(s), v.layerPartition[s]);
        } else {
            check(0, evenShare(project.model.layers, stages, 0));
            if (stages > 1)
                check(stages - 1, evenShare(project.model.layers, stages, stages - 1));
        }
    }
}

/// The sizes of a transformer model for every variant's microbatch size (docs/project-format.md, "Limits"):
/// one T×h activation (a layer's input, the message between stages) and the T×vocab fp32 logits within 2^53
/// bytes, T within an int. The stages' own sizes and times are checked when their costs are built
/// (transformercost.h).
void checkTransformerSizes(const Project& project)
{
    const ModelDesc& m = project.model;
    const std::int64_t e = dtypeBytes(m.dtype);
    const std::string_view note = e == 2 ? "bytes per bf16 element" : "bytes per fp32 element";
    for (std::size_t i = 0; i < project.variants.size(); ++i) {
        const Variant& v = project.variants[i];
        const bool own = v.microbatchSize > 0;
        const std::string mbField
            = own ? "variants[" + std::to_string(i) + "].microbatch_size" : std::string("model.microbatch_size");
        const std::int64_t mb = own ? v.microbatchSize : m.microbatchSize;
        checkedProduct(
            { { "model.hidden", m.hidden }, { "model.seq_len", m.seqLen }, { mbField, mb }, { "", e, note } },
            "activation bytes (one T×h tensor: a layer's input, the message between stages)", kExactCount);
        checkedProduct({ { "model.seq_len", m.seqLen }, { mbField, mb } }, "tokens per microbatch", kIntRange);
        checkedProduct({ { "model.vocab", m.transformer.vocab }, { "model.seq_len", m.seqLen }, { mbField, mb },
                           { "", 4, "bytes per fp32 logit" } },
            "logit bytes (the LM head's output, kept for the loss)", kExactCount);
    }
}

/// The inter-node link's latency, as checkClusterAndCosts checks the intra-node one.
void checkNodeLink(const ClusterDesc& cluster)
{
    if (!(cluster.interNodeLatencyUs <= kMaxCostUs))
        throw FormatError("cluster.inter_node_latency_us: must be at most 2^53 µs (≈ 285 years), got "
            + shown(cluster.interNodeLatencyUs));
}

} // namespace

void validateProject(const Project& project)
{
    checkModelAndTraining(project);
    checkVariants(project);
    if (project.model.kind == ModelKind::Transformer) {
        checkTransformerSizes(project);
        // Every stage's sizes and times, as the prediction will build them (O(layers) per variant).
        for (const Variant& v : project.variants)
            (void)buildCostModel(project, v);
    } else
        checkStageSizes(project);
    checkClusterAndCosts(project);
    checkNodeLink(project.cluster);
}

Project parseProject(const std::string& text, const std::string& source)
{
    const json j = JsonReader::parse(text, source);
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
    if (m.kind != ModelKind::Block || !m.preset.empty() || m.recompute != model::Recompute::None || p.training.present)
        return true;
    if (!c.device.empty() || c.deviceFlopsFp8 != defaults.deviceFlopsFp8 || c.gpusPerNode != defaults.gpusPerNode
        || c.nodes != defaults.nodes || c.interNodeLatencyUs != defaults.interNodeLatencyUs
        || c.interNodeBandwidthBytesPerUs != defaults.interNodeBandwidthBytesPerUs
        || c.commComputeShare != defaults.commComputeShare)
        return true;
    return std::any_of(p.variants.begin(), p.variants.end(), [](const Variant& v) {
        return v.dp != 1 || v.microbatchSize != 0 || v.recompute.has_value() || v.recomputeLayers.has_value()
            || v.tp != 1 || v.cp != 1 || v.sequenceParallel;
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
        || moe.imbalance != dense.imbalance;
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
    JsonReader::checkVersion(j, source, kCostsFormatVersion);
    const JsonReader root(j, "", source);
    root.allowOnly({ "format_version", "stages", "overlap_factor", "latency_us", "bandwidth_bytes_per_us", "info" });
    CostsFile costs;
    if (root.has("stages"))
        costs.stages = readStageOverrides(root);
    costs.overlapFactor = root.optionalNumber("overlap_factor", JsonReader::kPositive);
    costs.latencyUs = root.optionalNumber("latency_us", JsonReader::kNonNegative);
    costs.bandwidthBytesPerUs = root.optionalNumber("bandwidth_bytes_per_us", JsonReader::kNonNegative);
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
}

} // namespace dps
