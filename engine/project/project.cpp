#include "project.h"
#include "base/fileio.h"

#include "jsonreader.h"
#include "modelcost.h"
#include "partitioning.h"
#include "base/checked.h"
#include "base/errors.h"
#include "schedule/generator.h"

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

CostModel buildCostModel(const Project& project, const Variant& variant, int bytesPerElement)
{
    const std::vector<int> partition = effectivePartition(project, variant);
    const std::string where = variantPath(project, variant);
    CostModel model;
    for (std::size_t s = 0; s < partition.size(); ++s) {
        const std::string field = stageLayersField(where, variant, s);
        model.stages.push_back(blockStageCost(
            project.model, project.cluster, partition[s], s + 1 == partition.size(), bytesPerElement, field));
        checkStageSettings(model.stages.back(), project, field);
    }
    checkClusterAndCosts(project);
    model.latencyUs = project.cluster.latencyUs;
    model.bandwidthBytesPerUs = project.cluster.bandwidthBytesPerUs;
    applyCostSettings(model, project.costs);
    return model;
}

CostModel buildCostModel(const Project& project, const Variant& variant)
{
    return buildCostModel(project, variant, dtypeBytes(project.model.dtype));
}

// ------------------------------------------------------------------------------------------- parsing

namespace {

ModelDesc readModel(const JsonReader& r, const std::string& source)
{
    r.allowOnly({ "layers", "hidden", "ffn", "seq_len", "microbatch_size", "dtype" });
    ModelDesc m;
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
    const std::string dtype = r.has("dtype") ? r.string("dtype") : "fp32";
    if (dtype != "fp32" && dtype != "bf16")
        r.fail("dtype", "must be \"fp32\" or \"bf16\", got " + JsonReader::shown(r.get("dtype")));
    m.dtype = dtype == "bf16" ? DType::BF16 : DType::FP32;
    return m;
}

ClusterDesc readCluster(const JsonReader& r)
{
    r.allowOnly({ "device_flops", "efficiency", "memory_per_device_bytes", "latency_us", "bandwidth_bytes_per_us" });
    ClusterDesc c;
    c.deviceFlops = r.numberOr("device_flops", JsonReader::kPositive, c.deviceFlops);
    c.efficiency = r.numberOr("efficiency", JsonReader::kPositive, c.efficiency);
    if (c.efficiency > 1.0)
        r.fail("efficiency", "must be in (0, 1], got " + JsonReader::shown(r.get("efficiency")));
    c.memoryPerDeviceBytes = r.numberOr("memory_per_device_bytes", JsonReader::kNonNegative, c.memoryPerDeviceBytes);
    c.latencyUs = r.numberOr("latency_us", JsonReader::kNonNegative, c.latencyUs);
    c.bandwidthBytesPerUs = r.numberOr("bandwidth_bytes_per_us", JsonReader::kNonNegative, c.bandwidthBytesPerUs);
    return c;
}

ScheduleKind readKind(const JsonReader& r)
{
    const std::string name = r.string("kind");
    const auto kind = parseKind(name);
    if (!kind)
        r.fail("kind",
            "unknown schedule kind \"" + name
                + "\" (expected gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, dualpipe, dualpipev or custom)");
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
    r.allowOnly({ "name", "kind", "ranks", "microbatches", "stages_per_rank", "layer_partition", "order" });
    Variant v;
    v.name = r.string("name");
    if (v.name.empty())
        r.fail("name", "must not be empty");
    v.kind = readKind(r);
    v.ranks = r.integer("ranks", 1);
    v.microbatches = r.integer("microbatches", 1);
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

/// Structural checks that need the whole project: stage counts fit an int, partitions and hand-edited orders
/// fit their sizes.
void checkVariants(const Project& project)
{
    for (std::size_t i = 0; i < project.variants.size(); ++i) {
        const Variant& v = project.variants[i];
        const std::string where = "variants[" + std::to_string(i) + "]";
        checkedStageCount(v, where);
        if (!v.layerPartition.empty())
            checkPartition(project, v, where);
        checkOrderSizes(v, where);
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

} // namespace

void validateProject(const Project& project)
{
    checkVariants(project);
    checkStageSizes(project);
    checkClusterAndCosts(project);
}

Project parseProject(const std::string& text, const std::string& source)
{
    const json j = JsonReader::parse(text, source);
    JsonReader::checkVersion(j, source, kProjectFormatVersion);
    const JsonReader root(j, "", source);
    root.allowOnly({ "format_version", "name", "seed", "model", "cluster", "variants", "active_variant", "costs" });
    Project p;
    p.name = root.has("name") ? root.string("name") : "";
    p.seed = root.has("seed") ? root.unsignedInteger("seed") : 233;
    p.model = readModel(root.object("model"), source);
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

ojson modelJson(const ModelDesc& m)
{
    return { { "layers", m.layers }, { "hidden", m.hidden }, { "ffn", m.ffn }, { "seq_len", m.seqLen },
        { "microbatch_size", m.microbatchSize }, { "dtype", std::string(dtypeName(m.dtype)) } };
}

ojson clusterJson(const ClusterDesc& c)
{
    return { { "device_flops", c.deviceFlops }, { "efficiency", c.efficiency },
        { "memory_per_device_bytes", c.memoryPerDeviceBytes }, { "latency_us", c.latencyUs },
        { "bandwidth_bytes_per_us", c.bandwidthBytesPerUs } };
}

ojson variantJson(const Variant& v)
{
    ojson j { { "name", v.name }, { "kind", std::string(kindName(v.kind)) }, { "ranks", v.ranks },
        { "microbatches", v.microbatches } };
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
    ojson j;
    j["format_version"] = kProjectFormatVersion;
    j["name"] = project.name;
    j["seed"] = project.seed;
    j["model"] = modelJson(project.model);
    j["cluster"] = clusterJson(project.cluster);
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
