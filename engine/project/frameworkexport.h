#pragma once
// Framework configs from a project's variant: torchtitan's parallelism section (with PyTorch's schedule
// CSV beside it) and Megatron-Core's pipeline arguments, or the reason the framework cannot run the
// schedule; and the way back: a Megatron layout string or torchtitan's layers-per-stage settings read into
// a partition. Targets are named in docs/export.md.
#include "project.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dps {

/// A config written for a framework, or why the framework cannot run the variant.
struct FrameworkConfig {
    bool supported = false;
    std::string refusal; ///< when !supported: the reason, naming what the framework lacks
    std::string text; ///< the config: TOML (torchtitan) or one argument per line (Megatron)
    std::string csv; ///< torchtitan: PyTorch's compute-only schedule CSV to write at the config's csv path
    std::vector<std::string> notes; ///< what to know when running it
};

/// torchtitan's split of a model: stages, first and last stage lighter by the given layer counts.
struct TorchtitanSplit {
    std::optional<int> layersPerStage; ///< pipeline_parallel_layers_per_stage; unset = stages from the schedule
    int firstStageLessLayers = 1; ///< pipeline_parallel_first_stage_less_layers (torchtitan's default 1)
    int lastStageLessLayers = 1; ///< pipeline_parallel_last_stage_less_layers (default 1)
};

/// The layers per stage torchtitan builds for `stages` stages of a `layers`-layer model
/// (_generate_llm_fqn_per_model_part: the embedding counts as `firstLess` layers and the output as `lastLess`,
/// layers + both spread evenly with earlier stages taking the remainder). Throws ConstraintError
/// ("torchtitan.split") where torchtitan refuses: more stages than weighted layers, or a weight above the
/// smallest stage's share.
std::vector<int> torchtitanPartition(int layers, int stages, int firstLess, int lastLess);

/// The stage count torchtitan derives: ceil((layers + firstLess + lastLess) / layersPerStage), or
/// `defaultStages` without layersPerStage.
int torchtitanStageCount(int layers, const TorchtitanSplit& split, int defaultStages);

/// torchtitan's config for a variant: schedule name (chosen from the placement: a V-shaped schedule gets a V
/// schedule's name so that torchtitan places its stages as a V, one stage per rank a single-stage name,
/// several a looped name), pipeline_parallel_schedule_csv = `csvPath` with the compute-only CSV, degrees,
/// num_pp_microbatches and the split (layers per stage with first/last stage less layers when they give the
/// partition, else module_fqns_per_model_part). Refuses placements torchtitan cannot express (a stage on
/// two ranks: DualPipe). Throws as buildSchedule and effectivePartition.
FrameworkConfig torchtitanConfig(const Project& project, const Variant& variant, const std::string& csvPath);

/// Megatron-Core's pipeline arguments for a variant (1F1B or interleaved 1F1B; a hand-edited order only
/// when it is Megatron's own order with some F and B pairs overlapped): --pipeline-model-parallel-size,
/// --num-layers, --num-layers-per-virtual-pipeline-stage for an even interleaved split or
/// --pipeline-model-parallel-layout for an uneven one, batch sizes, expert parallelism, and
/// --overlap-moe-expert-parallel-comm with --delay-wgrad-compute when the order overlaps F and B.
/// Refuses by name what Megatron-Core cannot run (DualPipe, V shapes, GPipe, ZB-H1, other orders, F&B
/// overlap without expert parallelism or interleaving). Throws as buildSchedule and effectivePartition.
FrameworkConfig megatronArgs(const Project& project, const Variant& variant);

/// Megatron's layout string for a partition in stage order: "E" on the first stage, "L" on the last, "t"
/// per decoder layer, stages joined by "|", runs written t*n (e.g. {3,4,4,3} → "Et*3|t*4|t*4|t*3L").
std::string megatronLayout(const std::vector<int>& partition);

/// Reads a --pipeline-model-parallel-layout string (Megatron's grammar: stages split by '|', symbols E, t,
/// m, L, x*n and (…)*n repeats, commas ignored) into the decoder layers of each stage, in layer order.
/// Checks it as Megatron does for `pipelineRanks` ranks and a `layers`-layer model without MTP: a stage
/// count that is a multiple of the ranks, E first and once, L last and once, `layers` t. Throws ParseError
/// naming the 1-based character at fault, e.g. "character 14 'L': the loss layer must come last".
std::vector<int> parseMegatronLayout(std::string_view layout, int pipelineRanks, int layers);

} // namespace dps
