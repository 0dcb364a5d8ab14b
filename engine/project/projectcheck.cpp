// Validating a project as a whole: the rules that need more than one object (validateProject).
#include "base/fileio.h"
#include "project.h"

#include "base/checked.h"
#include "base/errors.h"
#include "jsonreader.h"
#include "modelcost.h"
#include "partitioning.h"
#include "projectparts.h"
#include "projectreaders.h"
#include "schedule/generator.h"
#include "transformercost.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>
#include <utility>

namespace dps {

using detail::JsonReader;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

using detail::checkedStageCount;
using detail::checkOp;
using detail::checkOrderSizes;
using detail::checkPartition;
using detail::fieldOf;
using detail::resolvedStagesPerRank;
using detail::stageLayersField;
using detail::stagesInOrder;
using detail::variantPath;

namespace {

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

/// A variant's hand-placed communication program fits its compute order and placement (commProgramOf).
void checkCommOrder(const Project& project, const Variant& v, const std::string& where)
{
    Schedule schedule;
    try {
        schedule = buildSchedule(project, v);
    } catch (const Error& e) {
        throw FormatError(where + ".comm_order: the variant's schedule cannot be built: " + e.what());
    }
    (void)commProgramOf(project, v, schedule);
}

/// Structural checks that need the whole project: stage counts fit an int, partitions and hand-edited orders
/// (compute and communication) fit their sizes; dp and microbatch_size are positive, ep divides dp, and the ranks ×
/// replicas device count fits an int.
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
        if (v.commOrder)
            checkCommOrder(project, v, where);
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

/// cluster.kernels, as the reader checks it: sm_count ≥ 1, hbm_bandwidth_bytes_per_us > 0, every efficiency in
/// (0, 1] and the all-to-all's inter-node rates ≥ 0 (a project built in code or edited in the designer has not been
/// through the reader).
void checkKernels(const ClusterDesc& cluster)
{
    if (!cluster.kernels)
        return;
    const KernelModel& k = *cluster.kernels;
    if (k.smCount < 1)
        throw FormatError("cluster.kernels.sm_count: must be a positive integer, got " + std::to_string(k.smCount));
    if (!(k.hbmBandwidthBytesPerUs > 0.0))
        throw FormatError("cluster.kernels.hbm_bandwidth_bytes_per_us: must be a positive number, got "
            + shown(k.hbmBandwidthBytesPerUs));
    const std::pair<const char*, double> fractions[]
        = { { "gemm_efficiency", k.gemmEfficiency }, { "gemm_efficiency_fp8", k.gemmEfficiencyFp8 },
              { "attention_forward_efficiency", k.attentionForwardEfficiency },
              { "attention_backward_efficiency", k.attentionBackwardEfficiency },
              { "memory_efficiency", k.memoryEfficiency } };
    for (const auto& [key, value] : fractions)
        if (!(value > 0.0 && value <= 1.0))
            throw FormatError(std::string("cluster.kernels.") + key + ": must be in (0, 1], got " + shown(value));
    if (!(k.wgradEfficiencyFp8 >= 0.0 && k.wgradEfficiencyFp8 <= 1.0))
        throw FormatError("cluster.kernels.wgrad_efficiency_fp8: must be 0 (the FP8 GEMM efficiency) or in (0, 1], got "
            + shown(k.wgradEfficiencyFp8));
    const std::pair<const char*, double> rates[]
        = { { "dispatch_inter_node_bandwidth_bytes_per_us", k.dispatchInterNodeBytesPerUs },
              { "combine_inter_node_bandwidth_bytes_per_us", k.combineInterNodeBytesPerUs } };
    for (const auto& [key, value] : rates)
        if (!(value >= 0.0 && std::isfinite(value)))
            throw FormatError(
                std::string("cluster.kernels.") + key + ": must be a non-negative number, got " + shown(value));
}

} // namespace

void validateProject(const Project& project)
{
    checkKernels(project.cluster); // before any stage is timed with them
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

} // namespace dps
