// torchtitan and Megatron-Core configs from a variant, and Megatron layouts and torchtitan splits read back.
// Sources: torchtitan 0.2.2 (torchtitan/config/configs.py ParallelismConfig,
// torchtitan/distributed/pipeline_parallel.py: _generate_llm_fqn_per_model_part, _get_pipeline_metadata,
// _get_pp_rank_to_stage_indices_mapping); Megatron-LM (megatron/core/transformer/
// pipeline_parallel_layer_layout.py, megatron/training/arguments.py). See docs/export.md.
#include "frameworkexport.h"

#include "base/errors.h"
#include "schedule/csvio.h"
#include "schedule/generator.h"
#include "schedule/validator.h"
#include "transformercost.h"

#include <algorithm>
#include <cstdlib>

namespace dps {

namespace {

/// How a schedule's stages sit on its ranks, in the two shapes the frameworks know.
struct Shape {
    bool perStage = false; ///< every stage on one rank
    int stagesPerRank = 0; ///< when perStage and every rank holds the same number
    bool loop = false; ///< stage s on rank s mod p
    bool v = false; ///< two stages per rank, stage s and 2p − 1 − s on rank s
};

Shape shapeOf(const Schedule& s)
{
    Shape shape;
    if (!s.placement.isPerStage() || s.ranks <= 0 || s.stages % s.ranks != 0)
        return shape;
    shape.perStage = true;
    shape.stagesPerRank = s.stages / s.ranks;
    const auto& rankOf = s.placement.rankOfStage();
    shape.loop = true;
    for (int st = 0; st < s.stages; ++st)
        shape.loop = shape.loop && rankOf[static_cast<std::size_t>(st)] == st % s.ranks;
    shape.v = shape.stagesPerRank == 2;
    for (int r = 0; shape.v && r < s.ranks; ++r)
        shape.v
            = rankOf[static_cast<std::size_t>(r)] == r && rankOf[static_cast<std::size_t>(2 * s.ranks - 1 - r)] == r;
    return shape;
}

FrameworkConfig refuse(std::string reason)
{
    FrameworkConfig c;
    c.refusal = std::move(reason);
    return c;
}

/// The first error of the schedule's validation, "" when it is valid.
std::string firstError(const Schedule& s)
{
    const ValidationReport report = validate(s);
    for (const auto& d : report.diagnostics)
        if (d.severity == Severity::Error)
            return format(d);
    return {};
}

std::string tomlString(const std::string& text)
{
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\')
            out += '\\';
        out += c;
    }
    return out + "\"";
}

/// torchtitan's schedule name for a placement: the name decides how torchtitan lays stages on ranks.
std::string torchtitanScheduleName(ScheduleKind kind, const Shape& shape)
{
    if (shape.stagesPerRank == 1)
        return kind == ScheduleKind::GPipe ? "GPipe" : "1F1B";
    if (shape.v)
        return kind == ScheduleKind::DualPipeV ? "DualPipeV" : "ZBVZeroBubble";
    return "Interleaved1F1B";
}

/// The split settings giving `partition`, preferring torchtitan's defaults (1 and 1); unset when none does.
std::optional<TorchtitanSplit> findSplit(const std::vector<int>& partition, int layers)
{
    const int stages = static_cast<int>(partition.size());
    std::optional<TorchtitanSplit> best;
    int bestDistance = 0;
    for (int first = 0; first <= layers; ++first) {
        for (int last = 0; last <= layers; ++last) {
            const int distance = std::abs(first - 1) + std::abs(last - 1);
            if (best && distance >= bestDistance)
                continue;
            try {
                if (torchtitanPartition(layers, stages, first, last) != partition)
                    continue;
            } catch (const ConstraintError&) {
                continue;
            }
            best = TorchtitanSplit { std::nullopt, first, last };
            bestDistance = distance;
        }
    }
    return best;
}

/// layers_per_stage giving `stages` stages for the weighted layer count, when one does.
std::optional<int> layersPerStageFor(int weighted, int stages)
{
    const int lps = (weighted + stages - 1) / stages;
    if (lps > 0 && (weighted + lps - 1) / lps == stages)
        return lps;
    return std::nullopt;
}

/// module_fqns_per_model_part of a partition, torchtitan 0.2.2's LLM module names.
std::string moduleFqns(const std::vector<int>& partition)
{
    std::string out = "[";
    int layer = 0;
    for (std::size_t s = 0; s < partition.size(); ++s) {
        std::vector<std::string> names;
        if (s == 0)
            names.push_back("tok_embeddings");
        for (int k = 0; k < partition[s]; ++k)
            names.push_back("layers." + std::to_string(layer++));
        if (s + 1 == partition.size()) {
            names.push_back("norm");
            names.push_back("lm_head");
        }
        out += s == 0 ? "[" : ", [";
        for (std::size_t i = 0; i < names.size(); ++i)
            out += (i == 0 ? "" : ", ") + tomlString(names[i]);
        out += "]";
    }
    return out + "]";
}

/// The split lines of the TOML section (and their overrides): layers per stage with first/last less layers
/// when they give the partition, else the modules of every stage.
void addSplit(std::vector<std::pair<std::string, std::string>>& keys, const std::vector<int>& partition, int layers,
    int defaultStages, std::vector<std::string>& notes)
{
    const int stages = static_cast<int>(partition.size());
    if (stages == 1)
        return;
    const std::optional<TorchtitanSplit> split = findSplit(partition, layers);
    std::optional<int> lps;
    if (split)
        lps = layersPerStageFor(layers + split->firstStageLessLayers + split->lastStageLessLayers, stages);
    if (split && (lps || stages == defaultStages)) {
        if (lps)
            keys.emplace_back("pipeline_parallel_layers_per_stage", std::to_string(*lps));
        keys.emplace_back("pipeline_parallel_first_stage_less_layers", std::to_string(split->firstStageLessLayers));
        keys.emplace_back("pipeline_parallel_last_stage_less_layers", std::to_string(split->lastStageLessLayers));
        return;
    }
    keys.emplace_back("module_fqns_per_model_part", moduleFqns(partition));
    notes.push_back("the partition is not one torchtitan's layers per stage and first/last stage less layers give, "
                    "so each stage's modules are listed (torchtitan 0.2.2's LLM names: tok_embeddings, "
                    "layers.N, norm, lm_head)");
}

} // namespace

std::vector<int> torchtitanPartition(int layers, int stages, int firstLess, int lastLess)
{
    if (stages < 1)
        throw ConstraintError("torchtitan.split", "torchtitan needs at least one stage");
    if (stages == 1)
        return { layers };
    const int weighted = layers + firstLess + lastLess;
    if (stages > weighted)
        throw ConstraintError("torchtitan.split",
            "torchtitan refuses " + std::to_string(stages) + " stages for " + std::to_string(weighted)
                + " weighted layers (" + std::to_string(layers) + " + " + std::to_string(firstLess) + " + "
                + std::to_string(lastLess) + ")");
    const int per = weighted / stages;
    const int extra = weighted % stages;
    if (firstLess > per || lastLess > per)
        throw ConstraintError("torchtitan.split",
            "torchtitan refuses a first/last stage weight (" + std::to_string(firstLess) + "/"
                + std::to_string(lastLess) + ") above the smallest stage's " + std::to_string(per) + " layers");
    std::vector<int> out;
    int placed = 0;
    for (int s = 0; s < stages; ++s) {
        int share = per + (s < extra ? 1 : 0);
        if (s == 0)
            share -= firstLess;
        else if (s == stages - 1)
            share -= lastLess;
        const int n = std::clamp(share, 0, layers - placed);
        out.push_back(n);
        placed += n;
    }
    return out;
}

int torchtitanStageCount(int layers, const TorchtitanSplit& split, int defaultStages)
{
    if (!split.layersPerStage)
        return defaultStages;
    if (*split.layersPerStage < 1)
        throw ConstraintError("torchtitan.split", "pipeline_parallel_layers_per_stage must be at least 1");
    const int weighted = layers + split.firstStageLessLayers + split.lastStageLessLayers;
    return (weighted + *split.layersPerStage - 1) / *split.layersPerStage;
}

FrameworkConfig torchtitanConfig(const Project& project, const Variant& variant, const std::string& csvPath)
{
    const Schedule schedule = buildSchedule(project, variant);
    if (const std::string error = firstError(schedule); !error.empty())
        return refuse("the schedule is invalid (" + error + ")");
    const Shape shape = shapeOf(schedule);
    if (!shape.perStage)
        return refuse("torchtitan runs every stage on one rank (PyTorch's schedule loader infers one rank per "
                      "stage); this schedule runs a stage on two ranks (DualPipe's two replicas fed from both "
                      "ends). Export its one-directional form, DualPipeV");
    if (!shape.loop && !shape.v)
        return refuse("torchtitan lays stages on ranks either looped (stage s on rank s mod p) or as a V "
                      "(two stages per rank, s and 2p-1-s); this schedule's placement is neither");
    FrameworkConfig c;
    const std::string name = torchtitanScheduleName(variant.kind, shape);
    const std::vector<int> partition = effectivePartition(project, variant);
    std::vector<std::pair<std::string, std::string>> keys = {
        { "pipeline_parallel_degree", std::to_string(schedule.ranks) },
        { "data_parallel_replicate_degree", std::to_string(variant.dp) },
        { "data_parallel_shard_degree", "1" },
        { "tensor_parallel_degree", "1" },
    };
    if (project.model.kind == ModelKind::Transformer && project.model.transformer.isMoe())
        keys.emplace_back("expert_parallel_degree", std::to_string(std::max(1, project.model.transformer.moe.ep)));
    keys.emplace_back("pipeline_parallel_schedule", tomlString(name));
    keys.emplace_back("pipeline_parallel_schedule_csv", tomlString(csvPath));
    keys.emplace_back("num_pp_microbatches", std::to_string(schedule.microbatches));
    const int defaultStages = schedule.ranks * (name == "1F1B" || name == "GPipe" ? 1 : 2);
    addSplit(keys, partition, project.model.layers, defaultStages, c.notes);

    c.text = "# torchtitan job config: the parallelism section of "
        + (project.name.empty() ? "the project" : project.name) + ", variant " + variant.name + " ("
        + std::string(kindDisplayName(variant.kind)) + ", written by DualPipe Studio)\n"
        + "# Targets torchtitan 0.2.2 (ParallelismConfig) over torch.distributed.pipelining (PyTorch >= 2.9).\n"
        + "# \"" + name + "\" sets how torchtitan lays the stages on ranks"
        + (shape.v                         ? " (as a V)"
                : shape.stagesPerRank == 1 ? " (one stage per rank)"
                                           : " (looped)")
        + "; the order is the CSV's.\n# As command-line overrides:\n#  ";
    for (const auto& [key, value] : keys)
        if (key != "module_fqns_per_model_part")
            c.text += " --parallelism." + key + " " + value;
    c.text += "\n[parallelism]\n";
    for (const auto& [key, value] : keys)
        c.text += key + " = " + value + "\n";
    c.csv = writeCsv(schedule);
    c.supported = true;
    c.notes.push_back("training.local_batch_size = " + std::to_string(schedule.microbatches) + " microbatches x "
        + std::to_string(microbatchSizeOf(project, variant)) + " sequences");
    return c;
}

std::string megatronLayout(const std::vector<int>& partition)
{
    std::string out;
    for (std::size_t s = 0; s < partition.size(); ++s) {
        if (s > 0)
            out += '|';
        if (s == 0)
            out += 'E';
        if (partition[s] == 1)
            out += 't';
        else if (partition[s] > 1)
            out += "t*" + std::to_string(partition[s]);
        if (s + 1 == partition.size())
            out += 'L';
    }
    return out;
}

namespace {

/// Why Megatron-Core cannot run a kind at all; "" when it can (1F1B, interleaved 1F1B).
std::string megatronLacks(ScheduleKind kind)
{
    switch (kind) {
    case ScheduleKind::DualPipe:
        return "Megatron-Core has no DualPipe schedule: DualPipe runs every stage on two ranks fed from both ends, "
               "and Megatron-Core places each (virtual) stage on one rank";
    case ScheduleKind::DualPipeV:
    case ScheduleKind::ZBV:
        return "Megatron-Core places virtual stage i on rank i mod p (interleaved); it has no V placement, which "
            + std::string(kindDisplayName(kind)) + " needs";
    case ScheduleKind::GPipe:
        return "Megatron-Core's pipeline schedules are 1F1B and interleaved 1F1B; it has no GPipe order (every "
               "forward, then every backward)";
    case ScheduleKind::ZBH1:
        return "Megatron-Core has no zero-bubble schedule: its backward is not split into I and W steps that the "
               "schedule places (ZB-H1)";
    case ScheduleKind::Custom:
        return "a custom schedule: Megatron-Core runs its own 1F1B or interleaved 1F1B order and takes no order "
               "from outside";
    default:
        return {};
    }
}

/// The order with every OVERLAP_F_B pair written as its forward, then its backward.
std::vector<std::vector<Action>> pairsSplit(const std::vector<std::vector<Action>>& order, bool& anyPair)
{
    std::vector<std::vector<Action>> out(order.size());
    for (std::size_t r = 0; r < order.size(); ++r) {
        for (const Action& a : order[r]) {
            out[r].push_back(Action::single(a.op));
            if (a.overlapped) {
                out[r].push_back(Action::single(a.backward));
                anyPair = true;
            }
        }
    }
    return out;
}

/// Why Megatron-Core cannot overlap F and B for this variant; "" when it can (combined 1F1B:
/// megatron/core/pipeline_parallel/combined_1f1b.py; its checks in megatron/training/arguments.py).
std::string overlapLacks(const Project& project, const Variant& variant, const Schedule& s)
{
    const bool moe = project.model.kind == ModelKind::Transformer && project.model.transformer.isMoe();
    if (!moe || project.model.transformer.moe.ep <= 1)
        return "Megatron-Core overlaps F and B only in its combined 1F1B for MoE models with expert parallelism "
               "> 1 (--overlap-moe-expert-parallel-comm hides the expert all-to-all); this model has "
            + std::string(moe ? "ep 1" : "no experts");
    if (s.ranks > 1 && s.stagesPerRank < 2)
        return "Megatron-Core overlaps F and B with pipeline parallelism only in the interleaved schedule "
               "(virtual pipeline size > 1)";
    if (recomputeOf(project, variant) == model::Recompute::Full)
        return "Megatron-Core refuses --overlap-moe-expert-parallel-comm with full recompute";
    return {};
}

} // namespace

FrameworkConfig megatronArgs(const Project& project, const Variant& variant)
{
    if (const std::string lacks = megatronLacks(variant.kind); !lacks.empty())
        return refuse(lacks);
    const Schedule schedule = buildSchedule(project, variant);
    if (const std::string error = firstError(schedule); !error.empty())
        return refuse("the schedule is invalid (" + error + ")");
    bool overlapped = false;
    if (variant.order) {
        const Schedule own
            = generate(GenerateOptions { variant.kind, schedule.ranks, schedule.microbatches, schedule.stagesPerRank });
        if (pairsSplit(*variant.order, overlapped) != own.order)
            return refuse("a hand-edited order: Megatron-Core generates its own "
                + std::string(kindDisplayName(variant.kind))
                + " order; of a change to it only F and B pairs run overlapped can be asked for");
    }
    if (overlapped)
        if (const std::string lacks = overlapLacks(project, variant, schedule); !lacks.empty())
            return refuse(lacks);
    const std::vector<int> partition = effectivePartition(project, variant);
    const bool even = std::all_of(partition.begin(), partition.end(), [&](int n) { return n == partition.front(); });
    const int mbs = microbatchSizeOf(project, variant);
    std::vector<std::string> args = { "--pipeline-model-parallel-size " + std::to_string(schedule.ranks),
        "--num-layers " + std::to_string(project.model.layers) };
    if (!even)
        args.push_back("--pipeline-model-parallel-layout '" + megatronLayout(partition) + "'");
    else if (schedule.stagesPerRank > 1)
        args.push_back("--num-layers-per-virtual-pipeline-stage " + std::to_string(partition.front()));
    args.push_back("--micro-batch-size " + std::to_string(mbs));
    args.push_back("--global-batch-size " + std::to_string(mbs * schedule.microbatches * variant.dp));
    if (project.model.kind == ModelKind::Transformer && project.model.transformer.isMoe())
        args.push_back("--expert-model-parallel-size " + std::to_string(std::max(1, project.model.transformer.moe.ep)));
    if (overlapped) {
        args.push_back("--moe-token-dispatcher-type alltoall");
        args.push_back("--overlap-moe-expert-parallel-comm");
        args.push_back("--delay-wgrad-compute");
    }
    FrameworkConfig c;
    c.supported = true;
    c.text = "# Megatron-Core pipeline arguments of " + (project.name.empty() ? "the project" : project.name)
        + ", variant " + variant.name + " (" + std::string(kindDisplayName(variant.kind))
        + ", written by DualPipe Studio); one per line, for pretrain_gpt.py. Targets Megatron-Core 0.13+.\n";
    for (const auto& a : args)
        c.text += a + "\n";
    if (schedule.stagesPerRank > 1 && schedule.microbatches % schedule.ranks != 0)
        c.notes.push_back("Megatron-Core's interleaved schedule runs microbatches in groups of the pipeline size "
                          "(--microbatch-group-size-per-virtual-pipeline-stage); "
            + std::to_string(schedule.microbatches) + " is not a multiple of " + std::to_string(schedule.ranks));
    return c;
}

namespace {

/// One layout symbol (E, t, m, L or the stage separator |) and its 1-based character in the string.
struct Symbol {
    char c = 0;
    int at = 0;
};

[[noreturn]] void layoutError(std::string_view text, int at, const std::string& why)
{
    const std::string shown = at >= 1 && at <= static_cast<int>(text.size())
        ? "character " + std::to_string(at) + " '" + std::string(1, text[static_cast<std::size_t>(at - 1)]) + "'"
        : "the end";
    throw ParseError("--pipeline-model-parallel-layout '" + std::string(text) + "': " + shown + ": " + why, 1, at);
}

/// The repeat count after a '*' at text[i] (0-based); advances i past it.
int repeatCount(std::string_view text, std::size_t& i)
{
    const std::size_t star = i;
    if (i >= text.size() || text[i] != '*')
        layoutError(text, static_cast<int>(i) + 1, "a repeated group must be followed by *<count>");
    ++i;
    int n = 0;
    const std::size_t from = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && n < 1000000)
        n = n * 10 + (text[i++] - '0');
    if (i == from)
        layoutError(text, static_cast<int>(star) + 1, "'*' must be followed by a count");
    return n;
}

/// The symbols of text[from, to), groups and repeats unrolled.
std::vector<Symbol> unroll(std::string_view text, std::size_t from, std::size_t to, bool inGroup)
{
    std::vector<Symbol> out;
    for (std::size_t i = from; i < to;) {
        const char c = text[i];
        if (c == ',' || c == ' ') {
            ++i;
            continue;
        }
        std::vector<Symbol> unit;
        if (c == '(') {
            if (inGroup)
                layoutError(text, static_cast<int>(i) + 1, "groups do not nest");
            const std::size_t close = text.find(')', i);
            if (close == std::string_view::npos || close >= to)
                layoutError(text, static_cast<int>(i) + 1, "'(' has no ')'");
            unit = unroll(text, i + 1, close, true);
            i = close + 1;
        } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
            unit.push_back(Symbol { c, static_cast<int>(i) + 1 });
            ++i;
        } else {
            layoutError(text, static_cast<int>(i) + 1, "not a layout symbol (E, t, m, L, |, x*n, (...)*n)");
        }
        int times = 1;
        if (i < to && text[i] == '*')
            times = repeatCount(text, i);
        else if (c == '(')
            repeatCount(text, i); // throws: a group needs its count
        for (int k = 0; k < times; ++k)
            out.insert(out.end(), unit.begin(), unit.end());
        if (out.size() > 10000000)
            layoutError(text, static_cast<int>(i), "the layout unrolls to more than 10^7 symbols");
    }
    return out;
}

} // namespace

std::vector<int> parseMegatronLayout(std::string_view layout, int pipelineRanks, int layers)
{
    const std::vector<Symbol> symbols = unroll(layout, 0, layout.size(), false);
    std::vector<int> stages(1, 0);
    std::vector<Symbol> counted; // the symbols other than '|'
    int decoders = 0;
    for (const Symbol& s : symbols) {
        if (s.c == '|') {
            stages.push_back(0);
            continue;
        }
        if (s.c == 'm')
            layoutError(layout, s.at, "an MTP layer; the project's model has none");
        if (s.c == 'E' && !counted.empty())
            layoutError(layout, s.at, "the embedding E must come first, and once");
        if (counted.empty() && s.c != 'E')
            layoutError(layout, s.at, "the first layer must be the embedding E");
        if (!counted.empty() && counted.back().c == 'L')
            layoutError(layout, counted.back().at, "the loss layer L must come last");
        if (s.c == 't' && ++decoders > layers)
            layoutError(layout, s.at, "more decoder layers (t) than the model's " + std::to_string(layers));
        if (s.c == 't')
            ++stages.back();
        counted.push_back(s);
    }
    if (counted.empty() || counted.back().c != 'L')
        layoutError(layout, counted.empty() ? static_cast<int>(layout.size()) + 1 : counted.back().at,
            "the last layer must be the loss L");
    if (decoders != layers)
        layoutError(layout, counted.back().at,
            "the layout has " + std::to_string(decoders) + " decoder layers (t), the model " + std::to_string(layers));
    if (pipelineRanks < 1 || static_cast<int>(stages.size()) % pipelineRanks != 0)
        throw ParseError("--pipeline-model-parallel-layout '" + std::string(layout)
            + "': " + std::to_string(stages.size()) + " stages are not a multiple of the "
            + std::to_string(pipelineRanks) + " pipeline ranks");
    return stages;
}

} // namespace dps
