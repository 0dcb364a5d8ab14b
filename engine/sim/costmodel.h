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
    std::vector<LaneSegment> segments; ///< in start order, the forward half first at equal starts; empty when
                                       ///< the slot is flat (no chains, or a typed time)
    double commUs = 0.0; ///< communication time in the slot
    double hiddenCommUs = 0.0; ///< of it, the time the compute lane was busy too (hidden communication)
};

/// Whether `chain` holds a communication chunk (then an overlapped slot is laid out on two lanes).
bool hasCommunication(const std::vector<Chunk>& chain);
/// The chunks of `chain` on `lane` together, each at its time alone (µs).
double laneUs(const std::vector<Chunk>& chain, Chunk::Lane lane);

/// Receives our engine's executor posts ahead of need (ExecutorOptions::receiveWindow, the worker's
/// --recv-window): each holds a message buffer from its post until the op that consumes it (docs/memory.md).
inline constexpr int kDefaultReceiveWindow = 8;

/// What one op of a stage allocates in our engine's runtime, in bytes of live memory (docs/memory.md): the
/// op's start is after its input is live (a received or handed-over message, or the copy of the first stage's
/// input), its end before its output is sent.
struct OpBuffers {
    /// The most the op's own allocations hold above its start at any moment (≥ 0): the ledger it adds,
    /// transient workspaces and the output it makes.
    double highWaterBytes = 0.0;
    /// Live bytes after the op − before it: the ledger's change, minus the input message it consumes, plus
    /// the output message it makes.
    double netBytes = 0.0;
};

/// The memory our engine's runtime allocates for a stage beyond the activation ledger: StageMath's
/// workspaces and messages, the executor's data (engine/runtime; the rules in docs/memory.md). Set only for a
/// model that runtime executes (the block model): a prediction with it on every stage counts what the run's
/// counting allocator counts (CostModel::receiveWindow, the message plan of sim/messageplan.h, the replica
/// gradient sum at the step's end), so the predicted peak is the measured one.
struct EngineBuffers {
    /// By OpKind (F, I, W, B) on a stage after the first: I and B make the input gradient sent back.
    OpBuffers ops[4];
    /// The same on the first stage: I and B make no input gradient.
    OpBuffers firstStageOps[4];
    /// One microbatch's input (bytes), used on the first stage only: the rank that runs F(0, m) holds it for
    /// the whole step, and F copies it into a fresh buffer (its input) when it starts.
    double inputBytes = 0.0;
    /// One microbatch's target (bytes), on the last stage: held for the whole step by the rank running its F.
    double targetBytes = 0.0;
    /// The op's buffers on this stage (`firstStage`: stage 0).
    const OpBuffers& op(int kind, bool firstStage) const { return firstStage ? firstStageOps[kind] : ops[kind]; }
};

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
    /// Of gradientBytes, the routed experts' a device holds (expert parallelism: our engine's replica gradient sum
    /// adds them only over the holders of the same experts, docs/memory.md).
    double expertGradientBytes = 0.0;
    double messageBytes = 0.0; ///< activation sent to stage s+1 (and gradient sent back), bytes
    std::optional<double> optimizerBytes; ///< optimizer state of the stage on one device (bytes); unset =
                                          ///< parameterCount × CostModel::optimizerBytesPerParameter
    double a2aBytes = 0.0; ///< expert all-to-all bytes leaving one device in one F (dispatch + combine)
    /// What our engine's runtime allocates beyond the ledger (the block model); unset for a model it does not
    /// run (a transformer), whose prediction counts the ledger and static memory only.
    std::optional<EngineBuffers> engine;

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
    /// Data-parallel replicas whose engine sums each stage's gradients at the step's end (≥ 1): a stage held by
    /// k ranks of the schedule has k × gradientReplicas holders, and each receives every other holder's
    /// gradients at once (docs/memory.md); counted only when every stage has EngineBuffers.
    int gradientReplicas = 1;
    /// The expert-parallel group size across those replicas (≥ 1, dividing gradientReplicas): replica d holds
    /// member d mod expertParallel's routed experts, and a holder of other experts gets only the non-expert part
    /// of a stage's gradients (packed), the holders of the same experts all of it.
    int expertParallel = 1;
    /// Counts the replica gradient sum at each rank's last slot also where the stages have no EngineBuffers (a
    /// transformer run of our engine, PredictOptions::engineRun): the peak is then at least static + the ledger
    /// then + what the sum receives.
    bool engineReplicaSum = false;
    /// Receives the engine posts ahead of need (≥ 1); counted only when every stage has EngineBuffers.
    int receiveWindow = kDefaultReceiveWindow;
    /// How a measured machine's slots vary about their fitted times: evenly spaced quantiles, from the lowest
    /// (p0) to the highest (p100), of measured ÷ fitted − 1 over a calibration's slots (Calibration::residuals);
    /// empty (or fewer than 2): the slots take their times exactly. A prediction with it simulates draws of
    /// slot times (SimOptions::variationDraw, PredictOptions::variationDraws).
    std::vector<double> slotVariation;

    /// Time of an overlapped slot whose forward is stage fStage and backward stage bStage (µs):
    /// overlapLayout(fStage, bStage).durationUs, without allocating in the flat case. Throws std::out_of_range
    /// for a stage the model does not list.
    double overlapTime(int fStage, int bStage) const;
    /// The same for the stage costs `f` (forward half) and `b` (backward half), e.g. StageCost's defaults for
    /// a stage the model does not list.
    double overlapTime(const StageCost& f, const StageCost& b) const;
    /// The slot laid out: a typed overlapUs of fStage wins (flat); stages without chains, or whose chains
    /// hold no communication, take overlapFactor × (F + B) (flat); otherwise the two chains are laid on a
    /// compute lane and a communication lane as time goes on (a free lane takes the next chunk of a half whose
    /// previous chunk has ended and that belongs on it, the forward half first), a compute chunk running at
    /// (1 − commComputeShare) of its speed while the communication lane is busy; a half without a chain
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
    std::vector<double> slotVariation; ///< CostModel::slotVariation; empty = none
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
