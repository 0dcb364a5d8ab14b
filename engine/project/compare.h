#pragma once
// The comparison of schedule variants: one row of figures per variant, as `dpstudio compare` prints it and
// a comparison view shows it.
#include "predict.h"
#include "project.h"
#include "sim/simulator.h"

#include <string>

namespace dps {

/// The figures of one variant under the project's costs, copied from its Prediction (predict()). When
/// `error` is set the variant could not be simulated (a size constraint, an invalid schedule, a deadlock) and
/// only the sizes known so far are set.
struct VariantComparison {
    std::string variant; ///< the variant's name
    ScheduleKind kind = ScheduleKind::Custom;
    int ranks = 0; ///< devices
    int stages = 0; ///< model stages
    int microbatches = 0;
    std::string error; ///< why there are no figures; empty when simulated
    double parametersPerDevice = 0.0; ///< largest over ranks: parameters (elements) of the stages a rank holds
    double peakActivationBytes = 0.0; ///< largest over ranks: live activations
    double peakMemoryBytes = 0.0; ///< largest over ranks: parameters + gradients + optimizer + activations
    double makespanUs = 0.0; ///< µs
    double bubbleRate = 0.0; ///< Σ idle ÷ (ranks × makespan)
    double largestIdleUs = 0.0; ///< largest per-rank idle time (simulated), µs
    double p2pBytes = 0.0; ///< bytes sent between different ranks in one step
    ClosedForm closedForm; ///< the kind's closed form of the largest idle, where it has one
    int dp = 1; ///< data-parallel replicas of the pipeline
    int tp = 1; ///< tensor-parallel size
    int cp = 1; ///< context-parallel size
    int zero = 0; ///< ZeRO stage (Prediction::zero)
    int devices = 0; ///< devices of the job: ranks × max(dp, ep) (set whenever the variant can be placed)
    double stepUs = 0.0; ///< makespan + the data-parallel all-reduce not hidden (Prediction::stepUs), µs
    double tokensPerStep = 0.0; ///< the global batch's tokens
    double tokensPerSecond = 0.0; ///< whole job
    double tokensPerSecondPerDevice = 0.0;
    double mfu = 0.0; ///< model FLOPs utilisation (Prediction::mfu)
};

/// Devices a variant's job uses: ranks × max(dp, ep) (the placement rule, transformercost.h). Throws FormatError as
/// placementOf.
int devicesOf(const Project& project, const Variant& variant);

/// The variant on `devices` devices at the same global batch (the "same devices" comparison): with k = devices ÷
/// devicesOf(variant), dp × k data-parallel replicas and microbatches ÷ k each; unchanged when k = 1. Throws
/// ConstraintError (rule "compare.same-devices") naming the variant when devices is not a multiple of its
/// devices or its microbatches are not a multiple of k.
Variant onSameDevices(const Project& project, const Variant& variant, int devices);

/// A variant named after `kind` with the ranks that give `like`'s stage count (DualPipe: ranks = stages;
/// V shapes: stages ÷ 2; interleaved: stages ÷ its default chunks; others: stages), `like`'s microbatches
/// and layer partition. Throws ConstraintError when the stage count is not a multiple of what one rank
/// holds.
Variant variantForKind(const Project& project, ScheduleKind kind, const Variant& like);

/// Predicts one variant (predict(), peaks only) with the project's costs, then `adjust` (a CostAdjuster of
/// predict.h, may be empty). Does not throw for a variant that cannot be built or simulated: the reason goes
/// to VariantComparison::error.
VariantComparison compareVariant(const Project& project, const Variant& variant, const CostAdjuster& adjust = {});
/// The same with `options` (peaks are enough: e.g. a prediction for this machine, engine/machine/machinecosts.h).
VariantComparison compareVariant(const Project& project, const Variant& variant, const PredictOptions& options);

} // namespace dps
