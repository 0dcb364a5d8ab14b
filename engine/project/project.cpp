// A project: its basics, the partition and sizes of a variant, its schedule and costs.
#include "project.h"
#include "base/fileio.h"

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
#include <cstdio>
#include <cstring>
#include <map>
#include <unistd.h>

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

namespace detail {

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

} // namespace detail

int stageCount(const Variant& variant)
{
    return checkedStageCount(variant, "variant \"" + variant.name + "\"");
}

// ----------------------------------------------------------------------------------- partition & sizes

namespace detail {

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

} // namespace detail

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
    model.slotVariation = settings.slotVariation;
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

} // namespace dps
