#pragma once
// The cost model: per-stage op times (µs), memory (bytes) and message sizes, plus the p2p link.
#include <optional>
#include <string>
#include <vector>

namespace dps {

/// Costs of one model stage for one microbatch.
struct StageCost {
    double forwardUs = 1.0; ///< F
    double inputGradUs = 1.0; ///< I (backward for inputs)
    double weightGradUs = 1.0; ///< W (backward for weights)
    std::optional<double> backwardUs; ///< full B; unset = I + W
    std::optional<double> overlapUs; ///< typed F&B slot time for slots whose *forward* half is this stage;
                                     ///< unset = overlap_factor × (F of this stage + B of the backward stage)
    double activationBytes = 1.0; ///< live from F until I or B (what I needs)
    double weightGradKeptBytes = 0.0; ///< live from I until W (what W keeps; may hold gradients I made)
    double parameterCount = 0.0; ///< parameters of the stage (elements)
    double parameterBytes = 0.0; ///< bytes of those parameters
    double gradientBytes = 0.0; ///< bytes of their gradients
    double messageBytes = 0.0; ///< activation sent to stage s+1 (and gradient sent back), bytes

    /// Full backward time: backwardUs if set, else inputGradUs + weightGradUs.
    double backward() const { return backwardUs ? *backwardUs : inputGradUs + weightGradUs; }
};

/// Everything the simulator needs to time and size a schedule.
struct CostModel {
    std::vector<StageCost> stages; ///< one per model stage
    double latencyUs = 0.0; ///< p2p latency per message between different ranks
    double bandwidthBytesPerUs = 0.0; ///< p2p bandwidth; 0 = unlimited
    double overlapFactor = 1.0; ///< F&B slot = factor × (F + B) unless a typed overlapUs wins
    double optimizerBytesPerParameter = 0.0; ///< optimizer state (e.g. 8 for Adam fp32 moments, 12 with master)

    /// Time of an overlapped slot whose forward is stage fStage and backward stage bStage (µs).
    double overlapTime(int fStage, int bStage) const;
    /// Transfer time of a message from stage s to an adjacent stage on another rank:
    /// latency + bytes / bandwidth (bandwidth 0 = unlimited).
    double transferTime(double bytes) const;
};

/// Per-stage cost numbers (µs) that replace the model-derived ones where set (typed by the user in a project,
/// or fitted by calibrate()); each unset field falls back to the model-derived value.
struct StageCostOverride {
    std::optional<double> forwardUs, inputGradUs, weightGradUs, backwardUs, overlapUs;
};

/// Lays `changes` over `stage`: every set time (µs) replaces the stage's, unset ones are kept. The one
/// rule for cost files, a project's typed costs and the CLI's --cost-* flags.
void applyOverride(StageCost& stage, const StageCostOverride& changes);

/// A cost file's content: measured or fitted costs that replace the model-derived ones (`costs.json`,
/// docs/project-format.md; read and written by engine/project's parseCostsFile and serializeCostsFile).
struct CostsFile {
    std::vector<StageCostOverride> stages; ///< by stage index
    std::optional<double> overlapFactor;
    std::optional<double> latencyUs; ///< µs
    std::optional<double> bandwidthBytesPerUs; ///< bytes/µs; 0 = unlimited
};

/// Uniform costs typed on the command line (flags --cost-f ... --bandwidth).
struct UniformCosts {
    double f = 1.0;
    double i = 1.0;
    double w = 1.0;
    std::optional<double> b; ///< unset = i + w
    std::optional<double> fb; ///< unset = overlapFactor × (f + b)
    double latencyUs = 0.0;
    double bandwidthBytesPerUs = 0.0; ///< 0 = unlimited
    double overlapFactor = 1.0;
};

/// The same costs on every stage: with the defaults, the "unit costs" of ARCHITECTURE.md (F = I = W = 1,
/// B = 2, F&B slot 3, latency 0, unlimited bandwidth, one byte unit of activation per stage and
/// microbatch of which W keeps none, no parameters, 1 byte per message).
CostModel uniformCostModel(int stages, const UniformCosts& costs = {});

} // namespace dps
