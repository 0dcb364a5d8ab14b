#pragma once
// The planner: the fastest schedule for a project's model on N devices under a memory limit. A search over
// schedule kind, tensor-, context- and pipeline-parallel sizes, data-parallel replicas, ZeRO stage, microbatch
// size and count (at a fixed global batch), layer partition and recompute; every candidate is a Variant predicted by
// predict() (so its step time is exactly what `dpstudio simulate` gives for it), the dominated ones pruned by bounds.
// Plain C++ (no Qt); the designer runs it off the GUI thread. Search space, bounds and pruning rule: docs/planner.md.
#include "predict.h"
#include "project.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dps {

/// What to search.
struct PlanRequest {
    int devices = 0; ///< devices of the job: tp × cp × pipeline size p × data-parallel replicas d
    int globalBatch = 0; ///< sequences per step: microbatches × microbatch size × d = globalBatch for every candidate
    double memoryLimitBytes = 0.0; ///< per device, bytes; 0 = the cluster's memory_per_device_bytes
    std::vector<ScheduleKind> kinds; ///< empty = all seven generated kinds
    std::vector<int> interleavedChunks { 2, 3, 4 }; ///< stages per rank tried for Interleaved 1F1B
    /// Recompute policies tried; empty = none, selective and full for a transformer, the model's for the block model.
    std::vector<model::Recompute> recomputes;
    /// Tensor-parallel sizes tried (sequence parallelism on with each tp > 1); empty = 1 and the divisors of the
    /// cluster's GPUs per node that divide model.heads (and kv_heads) and leave hidden ÷ tp ≥ 1024.
    std::vector<int> tps;
    /// Context-parallel sizes tried; empty = 1, and 2, 4, 8 dividing model.seq_len when it is ≥ 16384 tokens.
    std::vector<int> cps;
    /// ZeRO stages tried (0–3); empty = the project's training.zero and 1 (a project without a training object:
    /// its optimizer setting only, no ZeRO choice).
    std::vector<int> zeros;
    int maxMicrobatchSize = 16; ///< largest microbatch size (sequences) tried
    int maxMicrobatches = 512; ///< largest microbatch count tried
    bool refine = true; ///< refine each DP-balanced partition on the simulated critical stage
    int refineSteps = 4; ///< at most this many one-layer moves per candidate
    /// Prune candidates a bound shows dominated (docs/planner.md "Pruning"); false = simulate every candidate
    /// (the exhaustive enumeration the tests compare against).
    bool prune = true;
    /// Called before each candidate with (candidates done, total) and once at the end with (total, total); returning
    /// false before a candidate cancels the search (PlanResult::cancelled; the candidates kept so far are returned).
    std::function<bool(int done, int total)> progress;
};

/// One candidate: its variant and figures (from its Prediction).
struct PlanCandidate {
    Variant variant; ///< ready to be added to the project (name from planVariantName)
    ScheduleKind kind = ScheduleKind::DualPipe;
    int pp = 0; ///< pipeline ranks
    int dp = 1; ///< data-parallel replicas
    int tp = 1; ///< tensor-parallel size
    int cp = 1; ///< context-parallel size
    bool sequenceParallel = false; ///< with tp > 1 (always, in the search)
    int zero = 0; ///< ZeRO stage the candidate was predicted with (training.zero)
    int stagesPerRank = 1; ///< model stages ÷ ranks (DualPipe: 1, though each rank holds two stages, each twice)
    int microbatches = 0;
    int microbatchSize = 0; ///< sequences per microbatch
    std::vector<int> layerPartition; ///< layers per model stage
    model::Recompute recompute = model::Recompute::None;
    double stepUs = 0.0; ///< Prediction::stepUs, µs
    double makespanUs = 0.0; ///< µs
    double exposedAllReduceUs = 0.0; ///< µs
    double bubbleRate = 0.0; ///< Σ idle ÷ (ranks × makespan)
    double peakMemoryBytes = 0.0; ///< largest over ranks, bytes
    int peakMemoryRank = -1;
    std::vector<double> peakMemoryPerRank; ///< bytes
    double tokensPerSecond = 0.0; ///< whole job
    double tokensPerSecondPerDevice = 0.0;
    double mfu = 0.0; ///< model FLOPs utilisation, Prediction::mfu
    bool pareto = false; ///< on the Pareto front of step time against peak memory (among the candidates that fit)
};

/// Why a candidate was not kept.
struct PlanDrop {
    std::string candidate; ///< planVariantName of it
    std::string reason; ///< e.g. "peak memory 90.1 GiB on rank 3 exceeds the limit 74.51 GiB"
};

/// What became of one kind's candidates.
struct PlanKindSummary {
    ScheduleKind kind = ScheduleKind::DualPipe;
    int enumerated = 0;
    int simulated = 0;
    int pruned = 0;
    int overLimit = 0;
    int failed = 0;
    int fitting = 0;
    double smallestPeakBytes = 0.0; ///< among its simulated candidates, bytes; 0 when none was simulated
};

/// The result of a search.
struct PlanResult {
    std::vector<PlanCandidate> candidates; ///< those that fit, best step time first (ties: less memory first)
    int enumerated = 0; ///< candidates in the space (sizes the kinds accept, layers ≥ stages)
    int simulated = 0; ///< candidates predicted in full
    int refinements = 0; ///< further predictions of moved partitions while refining them
    int pruned = 0; ///< discarded by a bound: dominated, or its memory lower bound over the limit
    int overLimit = 0; ///< simulated and dropped: peak memory over the limit on some rank
    int failed = 0; ///< could not be predicted (a size rule, an invalid schedule, a deadlock)
    std::vector<PlanKindSummary> kinds; ///< one per kind searched, in the order of generatedKinds()
    /// Why each candidate over the limit (simulated, or by its memory bound) or failed was dropped (the first 200)
    std::vector<PlanDrop> drops;
    double searchMs = 0.0; ///< wall time of the search, ms
    double memoryLimitBytes = 0.0; ///< the limit applied, bytes
    bool cancelled = false;
    /// The smallest peak memory among the simulated candidates (bytes; 0 when none was simulated), which candidate
    /// and rank: what `plan` reports when nothing fits.
    double smallestPeakBytes = 0.0;
    std::string smallestPeakCandidate;
    int smallestPeakRank = -1;
};

/// Searches (docs/planner.md). Throws ConstraintError naming the field ("--devices", "--global-batch",
/// "--memory-limit", "--tp", "--cp", "--zero") when devices or the global batch is < 1, the limit is negative, a
/// tp does not divide model.heads (kv_heads), a cp model.seq_len, a ZeRO stage is outside 0–3 or asked of a project
/// without a training object, or tp/cp > 1 is asked of the block model; FormatError when the project's model
/// cannot be costed. A candidate that cannot be predicted is a drop, never an exception.
PlanResult plan(const Project& project, const PlanRequest& request);

/// The name a candidate's variant gets: "<kind>-pp<P>[-v<V>][-tp<T>][-cp<C>]-dp<D>-mb<M>x<S>-<recompute>[-z<Z>]",
/// tp and cp when > 1, the ZeRO stage when `zero` is given and differs from the project's training.zero, e.g.
/// "dualpipe-pp16-dp128-mb32x1-selective", "1f1b-pp8-tp8-dp32-mb4x1-selective-z1".
std::string planVariantName(const Variant& variant, const Project& project, std::optional<int> zero = std::nullopt);

/// The project with the first `top` candidates added as variants (names made unique with "-2", "-3"…),
/// the first of them active. training.zero is the project's, not a variant's: it becomes the first candidate's,
/// and those of the `top` predicted with another stage are left out. Validates the result (validateProject);
/// throws FormatError as it does.
Project withPlanVariants(Project project, const PlanResult& result, int top);

/// The minimal-bottleneck contiguous split of layers over `stages` stages: layer l costs layerCost[l]; returns
/// layers per stage (each ≥ 1), minimising the largest stage sum by dynamic programming (O(stages × layers²)),
/// the earliest such split on ties. Empty when stages < 1 or stages > layers.
std::vector<int> minMaxPartition(const std::vector<double>& layerCost, int stages);

/// Parses a memory size: bytes ("80e9", "85899345920") or with a unit: kB/MB/GB/TB (10^3…), KiB/MiB/GiB/TiB
/// (2^10…), "B"; case of the unit as written. Throws ConstraintError naming `field` for anything else, a
/// negative or a non-finite value.
double parseMemorySize(const std::string& text, const std::string& field);

/// Indices of the Pareto front of (time, memory) pairs: a point is on it unless another is ≤ in both and < in
/// one. In the order of the input.
std::vector<std::size_t> paretoFront(const std::vector<std::pair<double, double>>& points);

} // namespace dps
