#pragma once
// The executor of one rank: runs the rank's action list of a schedule for one training step on a Backend,
// exchanging activations and gradients through a Comm, and measures every action.
//
// Routing uses only Placement::rankOf(stage, microbatch), so any valid schedule runs (generated,
// hand-edited, imported): after F of stage s the output goes to the rank of (s+1, m), after I/B the input
// gradient to the rank of (s−1, m); when that is this rank the tensor is handed over in memory. Receives
// are posted ahead in the order the rank will need them (a window), sends are non-blocking, and a rank only
// ever blocks on a receive its next action needs, so a schedule the validator accepts cannot deadlock.
//
// Memory (docs/memory.md): every buffer comes from the backend's counting allocator and goes at a point of
// the rank's own order, never when the transport happens to finish (a send's buffer is freed at the receive
// planMessages() names, sim/messageplan.h), so what a step allocates is the same in every run and the
// simulator predicts it to the byte.
#include "comm.h"
#include "model.h"
#include "schedule/schedule.h"
#include "sim/costmodel.h"
#include "stagemath.h"
#include "transformerstage.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace dps::runtime {

/// The measurement of one action (one slot; an overlapped pair is one record). Times in µs since the
/// barrier that started the step: start when the rank turned to the action, end when its outputs were
/// computed and their sends posted; wait_us is the part of [start, end] blocked on receives.
struct ActionRecord {
    int step = 0;
    int index = 0; ///< position in the rank's order
    double startUs = 0.0;
    double endUs = 0.0;
    double waitUs = 0.0;
    /// The part of [start, end] spent computing (both halves of an overlapped slot, until the backend is
    /// synchronised); the rest of end − start − wait is the executor's own overhead.
    double computeUs = 0.0;
    /// Of computeUs, the time the halves spent in the expert all-to-all (both halves together; an MoE with
    /// expert parallelism), and of that the time the other half of an overlapped slot was computing: the
    /// all-to-all it hid (Backend::laneActivity). 0 without expert parallelism.
    double a2aUs = 0.0;
    double a2aHiddenUs = 0.0;
    std::uint64_t bytesSent = 0;
    std::uint64_t bytesReceived = 0;
    /// The high-water mark of everything live in the backend's allocator during the action: from the start
    /// of its input fetch (receives posted, sends freed) to its outputs sent, an overlapped slot's two halves
    /// at their bound (MemoryCounter::endLanes); a rank's last action also covers the step's end (the replica
    /// gradient sum, when sumReplicaGradients is given the records). docs/memory.md.
    std::uint64_t memoryBytes = 0;
    /// The activation ledger (modelcost.h) after the action. An overlapped slot reports its high-water mark
    /// as the simulator counts it: its forward half's activations added before its backward half frees any
    /// (memoryBytes then includes the same difference).
    std::uint64_t activationBytes = 0;
};

struct ExecutorOptions {
    /// Receives posted ahead of need (≥ 1); receives of the action about to run are always posted. The
    /// prediction assumes CostModel::receiveWindow, the same default.
    int receiveWindow = kDefaultReceiveWindow;
    /// Called before each action (step, position); tests use it to inject faults.
    std::function<void(int step, int index)> beforeAction;
    /// Called after each action with the number of actions done and the total of the step.
    std::function<void(int step, int done, int total)> progress;
    /// Data-parallel replicas of the pipeline (≥ 1): the job has schedule ranks × replicas processes; comm rank
    /// c is pipeline rank c / replicas of replica c % replicas (the placement rule of docs/model-library.md,
    /// device = rank × dp + replica), each replica runs the schedule on its own microbatches (replica d's
    /// microbatch m is the model's microbatch d × microbatches + m) and sumReplicaGradients sums a stage's
    /// gradients over every holder of every replica. docs/worker-protocol.md.
    int replicas = 1;
    /// Stage 0's I and B (block model) also compute the gradient of the stage's input, then drop it: a serial
    /// run then does the work of a rank whose every stage passes a gradient on (the side-by-side benchmark's
    /// floor, docs/performance.md). Off: stage 0 skips that GEMM, as nothing needs its result.
    bool firstStageInputGrad = false;
};

class RankExecutor {
public:
    /// Builds the stages this rank holds (every stage its order mentions) and the inputs/targets of the
    /// microbatches whose first/last stage runs here. Throws RuntimeError when an op of the rank's order is
    /// placed on another rank, or the tags of the schedule exceed comm.maxTag().
    RankExecutor(
        Backend& backend, Comm& comm, const ModelSpec& spec, const Schedule& schedule, ExecutorOptions options = {});
    ~RankExecutor();
    RankExecutor(const RankExecutor&) = delete;
    RankExecutor& operator=(const RankExecutor&) = delete;

    /// Runs one step: zeroes the gradients, a barrier, then every action of the rank in order. Returns one
    /// record per action. Throws RuntimeError naming the rank and action on an inconsistency.
    std::vector<ActionRecord> runStep(int step);
    /// Sums the weight gradients of stages held by several ranks (DualPipe's two replicas of a stage, and the
    /// data-parallel replicas) so that every holder has the total. Collective over the holders; call on every rank
    /// after runStep. Returns the allocator's high-water mark during the sum (bytes: it receives each other holder's
    /// gradients into a buffer of their size); with `stepRecords` (runStep's records of the step) the last one's
    /// memoryBytes is raised to it, so the step's memory covers the sum. Throws RuntimeError on a communication
    /// failure.
    std::size_t sumReplicaGradients(std::vector<ActionRecord>* stepRecords = nullptr);

    /// Replaces ExecutorOptions::beforeAction.
    void setBeforeAction(std::function<void(int step, int index)> hook) { m_options.beforeAction = std::move(hook); }

    /// Losses of the last step, by the model's microbatch (replica × microbatches + m), for the microbatches
    /// whose last-stage F ran here.
    const std::map<int, double>& losses() const { return m_losses; }
    /// The stages this rank holds, ascending.
    std::vector<int> localStages() const;
    /// Parameters of a local stage; throws RuntimeError when the stage is not held here.
    const StageParams& stageParams(int stage) const;
    /// Comm ranks that hold each stage (ascending), from the whole schedule, every replica's.
    const std::vector<std::vector<int>>& holders() const { return m_holders; }
    /// The expert-parallel member (ModelSpec::epMember) of comm rank `commRank`: its replica mod ep.
    int expertMemberOf(int commRank) const { return (commRank % m_replicas) % std::max(1, m_spec.ep); }
    /// Tag of the message into (stage, microbatch): kind 0 activation, 1 gradient. In [0, 2·S·C).
    int messageTag(int stage, int microbatch, int kind) const;

private:
    /// A receive the step needs: message key (= tag), source rank, position of the action that needs it.
    struct Incoming {
        int key;
        int peer;
        int position;
    };
    /// A message buffer on the device, with its host copy when messages pass through host memory.
    struct Transfer {
        Tensor device;
        std::vector<char> host;
        RequestId request = kNoRequest;
        int releasedBy = -1; ///< a send: index in m_plan of the receive that frees it; −1 the step's end
        bool done = false; ///< a send: test() saw it complete (the request is released)
    };

    void buildStages();
    void buildData();
    void planReceives();
    void postReceives(std::size_t through);
    Tensor fetchInput(int position, const Op& op, ActionRecord& record);
    Tensor receive(int key, ActionRecord& record);
    void deliver(const Op& op, Tensor output, ActionRecord& record);
    Tensor runOp(Lane lane, const Op& op, Tensor input, SavedActivations& saved, double& loss);
    SavedActivations& savedFor(const Op& op);
    void finishOp(const Op& op, double loss);
    void runSlot(int position, const Action& action, ActionRecord& record);
    /// Memory after a slot; `forwardHighWater` is the ledger after an overlapped slot's forward half
    /// (0 for a single op).
    void recordMemory(ActionRecord& record, std::size_t forwardHighWater) const;
    void progressSends();
    /// Frees the sends whose buffers the receive m_plan[index] frees (waiting for any not seen complete).
    void releaseSends(int index);
    void finishSends();
    void checkStepEnd() const;
    /// The replica sum itself (sumReplicaGradients counts its memory).
    void addReplicaGradients();
    /// Posts the exchange of a stage's gradients (or of `grads`, a packed part of them) with another holder;
    /// returns the incoming transfer, shaped like `grads`.
    Transfer exchangeGradients(const Tensor& grads, int peer, int tag);
    /// A stretch of a stage's gradient buffer summed over the same holders (elements).
    struct GradientRange {
        std::size_t offset = 0;
        std::size_t elements = 0;
        bool expert = false; ///< a routed expert's: summed only over the holders of the same experts
        std::size_t packedOffset = 0; ///< not expert: where it lies among the stage's non-expert ranges packed
    };
    /// The stage's gradient buffer as ranges of its parameters, consecutive parameters of the same kind merged.
    std::vector<GradientRange> gradientRanges(int stage) const;
    std::string where(const Action& action) const;
    /// The comm rank of pipeline rank `rank` in this replica.
    int commRank(int rank) const { return rank * m_replicas + m_replica; }
    /// Whether comm rank `holder` holds the same routed experts as this process (the same member of its
    /// expert-parallel group).
    bool sameExperts(int holder) const { return expertMemberOf(holder) == expertMemberOf(m_comm.rank()); }
    /// The model's index of this replica's microbatch `microbatch`.
    int modelMicrobatch(int microbatch) const { return m_replica * m_schedule.microbatches + microbatch; }

    Backend& m_backend;
    Comm& m_comm;
    ModelSpec m_spec;
    const Schedule& m_schedule;
    ExecutorOptions m_options;
    StageMath m_math;
    int m_rank; ///< the pipeline rank: the schedule's row this process runs
    int m_replica; ///< the data-parallel replica, in [0, replicas)
    int m_replicas;
    bool m_staging; ///< messages pass through host buffers
    std::vector<std::vector<int>> m_holders;
    std::map<int, std::unique_ptr<StageParams>> m_params;
    std::map<int, Tensor> m_inputs; ///< by microbatch: inputs of stage 0 run here (Data)
    std::map<int, Tensor> m_targets; ///< by microbatch: targets of the last stage run here (Data)
    /// A transformer: by microbatch, the token ids and labels of those whose first or last stage runs here
    /// (host memory, not counted)
    std::map<int, MicrobatchTokens> m_tokens;
    layers::ExpertGroup m_expertGroup; ///< the MoE layers' expert-parallel group (ModelSpec::ep > 1)
    std::map<std::pair<int, int>, SavedActivations> m_saved; ///< by (stage, microbatch)
    std::map<int, Tensor> m_local; ///< in-memory handovers by message key
    std::vector<Incoming> m_plan; ///< the receives of a step in the order they are needed
    std::map<int, Transfer> m_posted; ///< posted receives by message key
    std::size_t m_nextPost = 0; ///< index in m_plan of the next receive to post
    std::size_t m_nextNeeded = 0; ///< index in m_plan of the next receive to consume
    std::vector<Transfer> m_pending; ///< sends whose buffers are held (until their release point)
    std::map<int, int> m_releaseOf; ///< by message key: the receive index (m_plan) that frees a send of it
    std::map<int, double> m_losses;
    std::chrono::steady_clock::time_point m_stepStart;
};

} // namespace dps::runtime
