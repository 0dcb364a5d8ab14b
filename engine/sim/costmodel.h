#pragma once
// The cost model: per-stage op times (µs), memory (bytes) and message sizes, plus the p2p link.
#include <optional>
#include <string>
#include <vector>

namespace dps {

/// One piece of a slot's work on one of its two lanes: the compute lane (GEMMs, attention, norms) or the
/// communication lane (the expert-parallel all-to-all: dispatch and combine). A chain is the sequence of a
/// stage's pieces for one microbatch in the order they depend on each other, e.g. for an MoE layer's forward:
/// attention (compute) → dispatch (comm) → experts (compute) → combine (comm).
struct Chunk {
    enum Lane : unsigned char { Compute, Comm };
    Lane lane = Compute;
    double us = 0.0; ///< duration on its lane when it runs alone, µs
    int layer = -1; ///< global layer index it belongs to (−1: embedding, head or the whole stage)
};

/// Where one chunk of an overlapped F&B slot ran (µs from the slot's start).
struct LaneSegment {
    double startUs = 0.0;
    double endUs = 0.0;
    Chunk::Lane lane = Chunk::Compute;
    bool backwardHalf = false; ///< from the slot's backward (B) half, else its forward (F) half
    int layer = -1;
};

/// An overlapped F&B slot laid out on its two lanes.
struct OverlapLayout {
    double durationUs = 0.0;
    std::vector<LaneSegment> segments; ///< empty when the slot is flat (no chains, or a typed time)
    double commUs = 0.0; ///< communication time in the slot
    double hiddenCommUs = 0.0; ///< of it, the time the compute lane was busy too (hidden communication)
};

/// Whether `chain` holds a communication chunk (then an overlapped slot is laid out on two lanes).
bool hasCommunication(const std::vector<Chunk>& chain);

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
    std::optional<double> optimizerBytes; ///< optimizer state of the stage on one device (bytes); unset =
                                          ///< parameterCount × CostModel::optimizerBytesPerParameter
    double a2aBytes = 0.0; ///< expert all-to-all bytes leaving one device in one F (dispatch + combine)

    /// The stage's work for one microbatch as chains of compute and communication chunks (transformer models
    /// with expert parallelism); empty = flat: the slot is its time. When set, forwardUs is the sum of
    /// forwardChain and backward() of backwardChain (a plain slot waits for its communication), and an
    /// overlapped F&B slot is laid out on two lanes (CostModel::overlapLayout). A typed time (applyOverride)
    /// clears the chain it replaces.
    std::vector<Chunk> forwardChain;
    std::vector<Chunk> backwardChain; ///< the full backward B (I + W), in execution order

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
    /// Share of the device's compute the all-to-all takes while it runs beside compute in an overlapped slot
    /// (DeepSeek-V3 report §3.2.2: 20 of 132 SMs of an H800); compute chunks of a slot with communication run
    /// at (1 − share) of their speed.
    double commComputeShare = 0.0;

    /// Node of each pipeline rank (placement rule: docs/model-library.md); empty = every rank on one node.
    /// A message between ranks on different nodes takes the inter-node link.
    std::vector<int> rankNode;
    double interNodeLatencyUs = 0.0; ///< µs
    double interNodeBandwidthBytesPerUs = 0.0; ///< bytes/µs; 0 = unlimited

    /// Time of an overlapped slot whose forward is stage fStage and backward stage bStage (µs):
    /// overlapLayout(fStage, bStage).durationUs, without allocating in the flat case. Throws std::out_of_range
    /// for a stage the model does not list.
    double overlapTime(int fStage, int bStage) const;
    /// The same for the stage costs `f` (forward half) and `b` (backward half), e.g. StageCost's defaults for
    /// a stage the model does not list.
    double overlapTime(const StageCost& f, const StageCost& b) const;
    /// The slot laid out: a typed overlapUs of fStage wins (flat); stages without chains, or whose chains
    /// hold no communication, take overlapFactor × (F + B) (flat); otherwise the two chains are list-scheduled
    /// on a compute lane and a communication lane (each chunk starts when its lane is free and the chunk
    /// before it in its own chain has ended; each lane takes whichever half's chunk can start first, the
    /// forward half on a tie), compute chunks stretched by 1 / (1 − commComputeShare); a half without a chain
    /// is one compute chunk of its time (F, or backward() of B). Segment times are µs from the slot's start.
    /// Throws std::out_of_range for a stage the model does not list.
    OverlapLayout overlapLayout(int fStage, int bStage) const;
    /// The same for the stage costs `f` (forward half) and `b` (backward half).
    OverlapLayout overlapLayout(const StageCost& f, const StageCost& b) const;
    /// Transfer time of a message between adjacent stages on different ranks of one node:
    /// latency + bytes / bandwidth (bandwidth 0 = unlimited).
    double transferTime(double bytes) const;
    /// The same between ranks `from` and `to`: the inter-node link (interNodeLatencyUs + bytes ÷
    /// interNodeBandwidthBytesPerUs, 0 = unlimited) when crossesNodes(from, to), else transferTime(bytes).
    double transferTime(double bytes, int from, int to) const;
    /// Whether ranks `from` and `to` sit on different nodes: false when rankNode is empty or does not list
    /// one of them (a rank it does not list counts as on the same node).
    bool crossesNodes(int from, int to) const;
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
