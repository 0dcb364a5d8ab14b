#pragma once
// predict(): the one prediction entry point. Every front end (dpstudio simulate/compare/export, the
// designer's snapshot and sweep, the run report) asks it for a Prediction and only formats the result:
// build the schedule and the cost model → validate → (only when valid) simulate → deadlock check →
// closed form → summary figures, each figure computed here once.
#include "project.h"
#include "schedule/validator.h"
#include "sim/sharedcores.h"
#include "sim/simulator.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dps {

/// Changes a cost model after the source's own costs (e.g. the command line's --cost flags); may be empty.
using CostAdjuster = std::function<void(CostModel&)>;

/// How to predict.
struct PredictOptions {
    CostAdjuster adjustCosts; ///< applied to the cost model last; may be empty
    bool fp32Tensors = false; ///< tensors of 4 bytes whatever the model's dtype (what a CPU run moves); predict only
    /// A run of our engine (`dpstudio run`, Run on This Machine): a transformer's prediction then also counts the
    /// engine's replica gradient sum at the step's end (CostModel::engineReplicaSum, docs/memory.md); the block
    /// model's EngineBuffers count it already. predict only.
    bool engineRun = false;
    bool recordTiming = true; ///< per-slot timing (SimResult::timing) for timelines and traces
    bool recordMemory = true; ///< memory curves (RankResult::memory); the peaks are always computed
    /// Cores every rank of the run shares on one host; 0 (or less) = every rank has a device of its own. When
    /// 0 < cores < peakComputeThreads(schedule) (a rank with an overlapped F&B slot counts 2), the timing is
    /// simulateSharedCores()'s (docs/shared-cores.md), with Open MPI's rule for waiting ranks; else simulate()'s.
    int cores = 0;
    /// predict() only: predict PyTorch's lowering of the variant's schedule (lowerToComms: the sends and receives its
    /// runtime adds) with them timed where they sit, as predictProgram; an order that cannot be lowered is predicted
    /// as it is (the validator names its deadlock). A variant with a hand-placed program (comm_order) is predicted
    /// with that program whether this is set or not.
    bool lowerComms = false;
    /// Steps drawn when the costs carry a machine's slot variation (CostModel::slotVariation, a calibration's): each
    /// draw simulates the step with every slot's time scaled by its drawn factor (SimOptions::variationDraw), and the
    /// prediction is the draw of the median makespan (Prediction::drawn). 0: the costs' times as they are.
    int variationDraws = kVariationDraws;
    /// 31: odd, so the median is one of the draws; the median of 31 draws (their 16th order statistic) lies between
    /// the 40th and 60th percentiles of all steps with probability 0.74 (1 − P(Bin(31, 0.4) ≥ 16) − P(Bin(31, 0.6) ≤
    /// 15)).
    static constexpr int kVariationDraws = 31;
    /// Where the schedule is validated when set (a search predicting many candidates that share schedules validates
    /// each distinct one once); validate() each time when null. It must outlive the call.
    ValidationMemo* validationMemo = nullptr;

    /// Peaks and totals only, no timelines: what a comparison, a sweep or a run report needs.
    static PredictOptions peaksOnly(CostAdjuster adjust = {});
};

/// The static memory of one rank: parameters, gradients and optimizer state of the stages it holds (bytes).
struct StaticMemory {
    double parameters = 0.0;
    double gradients = 0.0;
    double optimizer = 0.0;
    double parameterCount = 0.0; ///< elements, not bytes
    double total() const { return parameters + gradients + optimizer; }
};

/// The prediction of one schedule. A variant that cannot be built, an invalid schedule and a deadlock are
/// data here, never exceptions: `error` says why there are no figures.
struct Prediction {
    std::string variantName; ///< the variant predicted (as asked for when there is none); "" for predictSchedule
    std::string error; ///< why there are no figures: the build error, "invalid schedule: …", "deadlock: …"
    std::optional<Schedule> schedule; ///< unset when it could not be built
    /// The program predictProgram was given (PyTorch's whole action language); unset otherwise. When it has sends
    /// and receives, sim holds their timing (SimResult::commsTimed, comms, stalledReceives).
    std::optional<TorchSchedule> program;
    CostModel costs; ///< the costs simulated (after PredictOptions::adjustCosts)
    ValidationReport report;
    SimResult sim; ///< empty unless the schedule is valid
    ClosedForm closedForm; ///< the kind's closed form of the largest idle; set when timed
    bool timed = false; ///< simulated to the end: valid schedule, no deadlock
    bool handEdited = false; ///< the variant's order, or its sends and receives (comm_order), were edited by hand

    // The summary, computed once (zero and rank −1 unless timed; static memory whenever built).
    double makespanUs = 0.0; ///< µs
    double bubbleRate = 0.0; ///< Σ idle ÷ (ranks × makespan)
    double largestIdleUs = 0.0; ///< largest per-rank idle (simulated), µs
    int largestIdleRank = -1; ///< its rank, the first on a tie
    double peakMemoryBytes = 0.0; ///< largest over ranks: parameters + gradients + optimizer + activations
    int peakMemoryRank = -1; ///< its rank, the first on a tie
    double peakActivationBytes = 0.0; ///< largest over ranks: live activations
    double parametersPerDevice = 0.0; ///< largest over ranks: parameters (elements) of the stages a rank holds
    double p2pBytes = 0.0; ///< bytes sent between different ranks in one step
    /// Set when the costs carry a slot variation and the step was drawn (PredictOptions::variationDraws): sim is then
    /// the draw whose makespan is the median of the draws, and the figures above are that step's.
    struct Drawn {
        int draws = 0; ///< steps simulated with drawn slot times
        double exactUs = 0.0; ///< the makespan with every slot at its cost model's time, µs
        double p10Us = 0.0; ///< the draws' makespans: 10th percentile, µs
        double p90Us = 0.0; ///< 90th percentile, µs
    };
    std::optional<Drawn> drawn;
    std::vector<StaticMemory> staticMemory; ///< per rank

    // The training step (docs/planner.md "The step time"): set when timed. predictSchedule knows no model and no
    // data parallelism: dp 1, devices = ranks, no all-reduce, step = makespan, tokens 0.
    int dp = 1; ///< data-parallel replicas of the pipeline (the variant's dp)
    int devices = 0; ///< devices of the job: ranks × max(dp, ep) (placement rule, transformercost.h)
    double tokensPerStep = 0.0; ///< microbatches × microbatch size × seq len × dp (the global batch's tokens)
    std::vector<double> allReduceUsPerRank; ///< per rank: its gradient all-reduce over the dp replicas, µs
    double allReduceUs = 0.0; ///< the largest of them, µs
    double stepUs = 0.0; ///< max(makespan, max over ranks of last slot end + all-reduce), µs
    double exposedAllReduceUs = 0.0; ///< stepUs − makespanUs: the all-reduce not hidden by the cool-down, µs
    int tp = 1; ///< tensor-parallel size (the variant's)
    int cp = 1; ///< context-parallel size (the variant's)
    int zero = 0; ///< ZeRO stage (training.zero; 0 without a training object)
    double modelFlopsPerStep = 0.0; ///< trainingFlopsPerToken (modelinfo.h) × tokensPerStep, FLOPs
    /// Model FLOPs utilisation: modelFlopsPerStep ÷ (stepUs × 1e-6 × devices × gemmPeakFlops), in [0, 1]; 0
    /// without time, devices or a peak.
    double mfu = 0.0;
    /// Tokens per second of the whole job (tokensPerStep ÷ stepUs × 1e6); 0 without tokens or time.
    double tokensPerSecond() const { return stepUs > 0.0 ? tokensPerStep / stepUs * 1e6 : 0.0; }
    /// tokensPerSecond() ÷ devices; 0 without devices.
    double tokensPerSecondPerDevice() const { return devices > 0 ? tokensPerSecond() / devices : 0.0; }

    /// Whether the schedule could be built (when not, `error` says why).
    bool built() const { return schedule.has_value(); }
    /// Built, valid and simulated without deadlock: the figures are real.
    bool valid() const { return error.empty() && timed; }
};

/// Prediction::drawn in words: "the median of 31 steps drawn from the slot variation (p10 1.21 s, p90 1.3 s; 1.18 s
/// with every slot at its time)" (formatTime). Never throws.
std::string describeDrawn(const Prediction::Drawn& drawn);

/// Validates `schedule`, then (only when valid) simulates it under `costs` after options.adjustCosts, checks
/// for a deadlock, and computes the closed form and the summary. Never throws for a bad schedule: an
/// invalid one gives error "invalid schedule: <first error> (+N more)", a deadlock "deadlock: <message>".
/// options.fp32Tensors does not apply (the costs are given). O(ops + stages × microbatches).
Prediction predictSchedule(Schedule schedule, CostModel costs, const PredictOptions& options = {});

/// The same for a program in PyTorch's whole action language (a compute_comms CSV, lowerToComms's output): it is
/// validated with validate(TorchSchedule), its compute actions (computeSchedule) are the schedule, and its sends and
/// receives, when it has any, are timed where they sit (simulateWithComms, docs/comms.md; options.cores does not
/// apply); without them it is predicted as predictSchedule. Never throws: a program whose compute actions cannot
/// make a schedule gives `error`.
Prediction predictProgram(TorchSchedule program, CostModel costs, const PredictOptions& options = {});

/// Builds the schedule (buildSchedule) and the cost model (buildCostModel, with 4-byte tensors when
/// options.fp32Tensors) of `variant` and predicts them as predictSchedule; a variant with a hand-placed program
/// (Variant::commOrder, checked by commProgramOf) is predicted with its sends and receives timed where they sit, as
/// predictProgram, whatever options.lowerComms says. A size rule, partition or comm_order the variant breaks becomes
/// `error` (the engine's message, naming the field), never an exception.
Prediction predict(const Project& project, const Variant& variant, const PredictOptions& options = {});

/// The same for the variant named `variantName` (empty: the active one), found by findVariant; an unknown
/// name becomes `error` ("no variant named 'x' (variants: a, b)").
Prediction predict(const Project& project, const std::string& variantName, const PredictOptions& options = {});

/// The variant named `name`, or the active one when `name` is empty. Throws FormatError "no variant named
/// 'x' (variants: a, b)" for an unknown name, or as Project::active() when the active variant is missing.
const Variant& findVariant(const Project& project, const std::string& name);

/// The static memory of each rank: the parameters, gradients and optimizer state of the stages the
/// placement gives it (stages beyond the cost model's are skipped).
std::vector<StaticMemory> staticMemoryPerRank(const Schedule& schedule, const CostModel& costs);

} // namespace dps
