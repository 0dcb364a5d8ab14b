#include "executor.h"

#include "sim/messageplan.h"

#include <algorithm>
#include <set>

namespace dps::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double microsSince(Clock::time_point start)
{
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

constexpr int kActivation = 0;
constexpr int kGradient = 1;

bool isBackward(OpKind kind)
{
    return kind == OpKind::I || kind == OpKind::B;
}

/// Comm::beginCompute() … endCompute() around a computation, also when it throws.
class ComputeScope {
public:
    explicit ComputeScope(Comm& comm)
        : m_comm(comm)
    {
        m_comm.beginCompute();
    }
    ~ComputeScope() { m_comm.endCompute(); }
    ComputeScope(const ComputeScope&) = delete;
    ComputeScope& operator=(const ComputeScope&) = delete;

private:
    Comm& m_comm;
};

} // namespace

RankExecutor::RankExecutor(
    Backend& backend, Comm& comm, const ModelSpec& spec, const Schedule& schedule, ExecutorOptions options)
    : m_backend(backend)
    , m_comm(comm)
    , m_spec(spec)
    , m_schedule(schedule)
    , m_options(std::move(options))
    , m_math(backend, m_spec)
    , m_rank(comm.rank() / std::max(1, m_options.replicas))
    , m_replica(comm.rank() % std::max(1, m_options.replicas))
    , m_replicas(std::max(1, m_options.replicas))
    , m_staging(!backend.hostAccessible() && !comm.acceptsDevicePointers())
{
    if (static_cast<long long>(schedule.ranks) * m_replicas != comm.size())
        throw RuntimeError("the schedule has " + std::to_string(schedule.ranks) + " ranks"
            + (m_replicas > 1 ? " × " + std::to_string(m_replicas) + " replicas" : std::string()) + " but the job has "
            + std::to_string(comm.size()));
    if (schedule.stages != spec.stages())
        throw RuntimeError("the schedule has " + std::to_string(schedule.stages) + " stages but the layer partition "
            + std::to_string(spec.stages()));
    const long long maxTag = 2LL * schedule.stages * schedule.microbatches + schedule.stages;
    if (maxTag > comm.maxTag())
        throw RuntimeError("message tags up to " + std::to_string(maxTag) + " exceed the communicator's limit "
            + std::to_string(comm.maxTag()) + " (fewer stages × microbatches needed)");
    m_options.receiveWindow = std::max(1, m_options.receiveWindow);
    if (m_spec.ep > 1) {
        // The expert-parallel group: the ep consecutive replicas of this pipeline rank (placement rule:
        // docs/model-library.md), member replica mod ep; its exchanges' tags follow the gradient sums'.
        if (m_replicas % m_spec.ep != 0 || m_spec.epMember != m_replica % m_spec.ep)
            throw RuntimeError("expert parallelism " + std::to_string(m_spec.ep) + " needs the replicas ("
                + std::to_string(m_replicas) + ") to be a multiple of it and member replica mod ep");
        m_expertGroup.comm = &m_comm;
        m_expertGroup.backend = &m_backend;
        const int first = m_replica - m_replica % m_spec.ep;
        for (int d = first; d < first + m_spec.ep; ++d)
            m_expertGroup.members.push_back(commRank(m_rank) - m_replica + d);
        m_expertGroup.me = m_replica % m_spec.ep;
        m_expertGroup.tagBase = 2 * schedule.stages * schedule.microbatches + schedule.stages;
    }
    buildStages();
    buildData();
    planReceives();
}

RankExecutor::~RankExecutor()
{
    // Outstanding requests reference our buffers: complete them before the buffers go.
    try {
        finishSends();
        for (auto& [key, t] : m_posted)
            if (t.request != kNoRequest)
                m_comm.wait(t.request);
    } catch (...) {
    }
}

int RankExecutor::messageTag(int stage, int microbatch, int kind) const
{
    return (microbatch * m_schedule.stages + stage) * 2 + kind;
}

std::string RankExecutor::where(const Action& action) const
{
    return "rank " + std::to_string(m_rank) + (m_replicas > 1 ? " (replica " + std::to_string(m_replica) + ")" : "")
        + ", action " + toString(action);
}

void RankExecutor::buildStages()
{
    m_holders.assign(static_cast<std::size_t>(m_schedule.stages), {});
    for (int r = 0; r < m_schedule.ranks; ++r) {
        std::set<int> stages;
        for (const Action& a : m_schedule.order[static_cast<std::size_t>(r)])
            for (int i = 0; i < a.size(); ++i)
                stages.insert(a.at(i).stage);
        for (int s : stages) {
            if (s < 0 || s >= m_schedule.stages)
                throw RuntimeError("rank " + std::to_string(r) + ": stage " + std::to_string(s) + " out of range");
            for (int d = 0; d < m_replicas; ++d)
                m_holders[static_cast<std::size_t>(s)].push_back(r * m_replicas + d); // ascending in r, then d
        }
    }
    for (const Action& a : m_schedule.order[static_cast<std::size_t>(m_rank)]) {
        for (int i = 0; i < a.size(); ++i) {
            const Op& op = a.at(i);
            if (op.microbatch < 0 || op.microbatch >= m_schedule.microbatches)
                throw RuntimeError(where(a) + ": microbatch out of range");
            if (m_schedule.placement.rankOf(op.stage, op.microbatch) != m_rank)
                throw RuntimeError(where(a) + ": the placement puts stage " + std::to_string(op.stage)
                    + " of microbatch " + std::to_string(op.microbatch) + " on rank "
                    + std::to_string(m_schedule.placement.rankOf(op.stage, op.microbatch)));
            if (!m_params.count(op.stage)) {
                auto params = std::make_unique<StageParams>(m_backend, m_spec, op.stage);
                if (params->transformer() && m_spec.ep > 1)
                    params->transformer()->setExpertGroup(&m_expertGroup);
                m_params.emplace(op.stage, std::move(params));
            }
        }
    }
}

void RankExecutor::buildData()
{
    const int last = m_schedule.stages - 1;
    if (m_spec.transformer) {
        for (const Action& a : m_schedule.order[static_cast<std::size_t>(m_rank)])
            for (int i = 0; i < a.size(); ++i) {
                const Op& op = a.at(i);
                if ((op.stage == 0 || op.stage == last) && !m_tokens.count(op.microbatch)) {
                    MicrobatchTokens tokens
                        = microbatchTokens(*m_spec.transformer, m_spec.seed, modelMicrobatch(op.microbatch));
                    tokens.microbatch = op.microbatch; // the replica's index: the same on every member
                    m_tokens.emplace(op.microbatch, std::move(tokens));
                }
            }
        return;
    }
    const std::size_t h = static_cast<std::size_t>(m_spec.hidden);
    const std::size_t t = static_cast<std::size_t>(m_spec.tokens);
    for (const Action& a : m_schedule.order[static_cast<std::size_t>(m_rank)]) {
        for (int i = 0; i < a.size(); ++i) {
            const Op& op = a.at(i);
            if (op.kind != OpKind::F)
                continue;
            if (op.stage == 0 && !m_inputs.count(op.microbatch)) {
                Tensor x(m_backend, t, h, MemoryCategory::Data);
                m_backend.uploadFloats(
                    0, x.data(), microbatchInput(m_spec, modelMicrobatch(op.microbatch)).data(), x.elements());
                m_inputs.emplace(op.microbatch, std::move(x));
            }
            if (op.stage == last && !m_targets.count(op.microbatch)) {
                Tensor y(m_backend, t, h, MemoryCategory::Data);
                m_backend.uploadFloats(
                    0, y.data(), microbatchTarget(m_spec, modelMicrobatch(op.microbatch)).data(), y.elements());
                m_targets.emplace(op.microbatch, std::move(y));
            }
        }
    }
    m_backend.synchronize();
}

void RankExecutor::planReceives()
{
    const auto& order = m_schedule.order[static_cast<std::size_t>(m_rank)];
    const auto& placement = m_schedule.placement;
    for (std::size_t p = 0; p < order.size(); ++p) {
        for (int i = 0; i < order[p].size(); ++i) {
            const Op& op = order[p].at(i);
            int peer = -1;
            int key = -1;
            if (op.kind == OpKind::F && op.stage > 0) {
                peer = placement.rankOf(op.stage - 1, op.microbatch);
                key = messageTag(op.stage, op.microbatch, kActivation);
            } else if (isBackward(op.kind) && op.stage < m_schedule.stages - 1) {
                peer = placement.rankOf(op.stage + 1, op.microbatch);
                key = messageTag(op.stage, op.microbatch, kGradient);
            }
            if (peer < 0 && key >= 0)
                throw RuntimeError(where(order[p]) + ": the placement names no rank for the producer");
            if (key >= 0 && peer != m_rank)
                m_plan.push_back(Incoming { key, peer, static_cast<int>(p) });
        }
    }
    // When each send's buffer goes: the rule the simulator counts (sim/messageplan.h), on the same receives.
    const RankMessagePlan plan = MessagePlanner(m_schedule).plan(m_rank);
    auto keyOf = [this](const PlannedMessage& m) {
        return messageTag(m.stage, m.microbatch, m.gradient ? kGradient : kActivation);
    };
    bool same = plan.receives.size() == m_plan.size();
    for (std::size_t i = 0; same && i < m_plan.size(); ++i)
        same = keyOf(plan.receives[i]) == m_plan[i].key && plan.receives[i].peer == m_plan[i].peer;
    if (!same)
        throw RuntimeError("rank " + std::to_string(m_rank)
            + ": the placement routes messages differently from the ranks' lists (a producer on another rank)");
    for (std::size_t j = 0; j < plan.sends.size(); ++j)
        if (plan.releasedBy[j] >= 0)
            m_releaseOf[keyOf(plan.sends[j])] = plan.releasedBy[j];
}

void RankExecutor::postReceives(std::size_t through)
{
    const std::size_t bytes = m_spec.messageElements() * static_cast<std::size_t>(m_backend.elementBytes());
    while (m_nextPost < m_plan.size() && m_nextPost <= through) {
        const Incoming& in = m_plan[m_nextPost++];
        Transfer t;
        t.device = Tensor(m_backend, static_cast<std::size_t>(m_spec.tokens), static_cast<std::size_t>(m_spec.hidden),
            MemoryCategory::Communication);
        if (m_staging) {
            t.host.resize(bytes);
            t.request = m_comm.irecv(t.host.data(), bytes, commRank(in.peer), in.key);
        } else {
            t.request = m_comm.irecv(t.device.data(), bytes, commRank(in.peer), in.key);
        }
        m_posted.emplace(in.key, std::move(t));
    }
}

Tensor RankExecutor::receive(int key, ActionRecord& record)
{
    if (m_nextNeeded >= m_plan.size() || m_plan[m_nextNeeded].key != key)
        throw RuntimeError(
            "rank " + std::to_string(m_rank) + ": receive plan out of order for message " + std::to_string(key));
    postReceives(m_nextNeeded + static_cast<std::size_t>(m_options.receiveWindow) - 1);
    ++m_nextNeeded;
    auto it = m_posted.find(key);
    Transfer t = std::move(it->second);
    m_posted.erase(it);
    const auto waitStart = Clock::now();
    m_comm.wait(t.request);
    record.waitUs += microsSince(waitStart);
    if (m_staging) {
        m_backend.copyHostToDevice(0, t.device.data(), t.host.data(), t.host.size());
        m_backend.synchronize();
    }
    releaseSends(static_cast<int>(m_nextNeeded - 1));
    record.bytesReceived += t.device.bytes();
    return std::move(t.device);
}

Tensor RankExecutor::fetchInput(int position, const Op& op, ActionRecord& record)
{
    if (op.kind == OpKind::W || (isBackward(op.kind) && op.stage == m_schedule.stages - 1))
        return {};
    if (op.kind == OpKind::F && op.stage == 0) {
        if (m_spec.transformer)
            return {}; // the embedding reads the microbatch's token ids
        const Tensor& source = m_inputs.at(op.microbatch);
        Tensor x(m_backend, source.rows(), source.cols(), MemoryCategory::Communication);
        m_backend.copyDeviceToDevice(0, x.data(), source.data(), source.bytes());
        return x;
    }
    const bool forward = op.kind == OpKind::F;
    const int key = messageTag(op.stage, op.microbatch, forward ? kActivation : kGradient);
    const int producer = m_schedule.placement.rankOf(forward ? op.stage - 1 : op.stage + 1, op.microbatch);
    if (producer != m_rank)
        return receive(key, record);
    auto it = m_local.find(key);
    if (it == m_local.end())
        throw RuntimeError("rank " + std::to_string(m_rank) + ", position " + std::to_string(position) + " ("
            + toString(op) + "): its input from this rank was not produced earlier in the order");
    Tensor t = std::move(it->second);
    m_local.erase(it);
    return t;
}

void RankExecutor::deliver(const Op& op, Tensor output, ActionRecord& record)
{
    if (output.empty())
        return;
    const bool forward = op.kind == OpKind::F;
    const int stage = forward ? op.stage + 1 : op.stage - 1;
    const int key = messageTag(stage, op.microbatch, forward ? kActivation : kGradient);
    const int dest = m_schedule.placement.rankOf(stage, op.microbatch);
    if (dest == m_rank) {
        m_local[key] = std::move(output);
        return;
    }
    Transfer t;
    t.device = std::move(output);
    const auto release = m_releaseOf.find(key);
    t.releasedBy = release == m_releaseOf.end() ? -1 : release->second;
    record.bytesSent += t.device.bytes();
    if (m_staging) {
        t.host.resize(t.device.bytes());
        m_backend.copyDeviceToHost(0, t.host.data(), t.device.data(), t.device.bytes());
        t.request = m_comm.isend(t.host.data(), t.host.size(), commRank(dest), key);
    } else {
        t.request = m_comm.isend(t.device.data(), t.device.bytes(), commRank(dest), key);
    }
    m_pending.push_back(std::move(t));
}

SavedActivations& RankExecutor::savedFor(const Op& op)
{
    const auto key = std::make_pair(op.stage, op.microbatch);
    if (op.kind == OpKind::F) {
        auto [it, inserted] = m_saved.try_emplace(key);
        if (!inserted)
            throw RuntimeError("rank " + std::to_string(m_rank) + ": " + toString(op) + " runs twice in one step");
        return it->second;
    }
    auto it = m_saved.find(key);
    if (it == m_saved.end())
        throw RuntimeError("rank " + std::to_string(m_rank) + ": " + toString(op) + " before its forward");
    return it->second;
}

Tensor RankExecutor::runOp(Lane lane, const Op& op, Tensor input, SavedActivations& saved, double& loss)
{
    const StageParams& params = *m_params.at(op.stage);
    const bool last = op.stage == m_schedule.stages - 1;
    if (const TransformerStage* stage = params.transformer()) {
        MicrobatchTokens none;
        none.microbatch = op.microbatch;
        const auto it = m_tokens.find(op.microbatch);
        const MicrobatchTokens& tokens = it == m_tokens.end() ? none : it->second;
        void* w = params.weights().data();
        void* g = params.gradients().data();
        switch (op.kind) {
        case OpKind::F:
            return stage->forward(lane, w, g, std::move(input), tokens, saved, &loss);
        case OpKind::I:
            return stage->inputGrad(lane, w, g, saved, std::move(input), tokens);
        case OpKind::W:
            stage->weightGrad(lane, w, g, saved, tokens);
            return {};
        case OpKind::B:
            return stage->backward(lane, w, g, saved, std::move(input), tokens);
        }
        return {};
    }
    switch (op.kind) {
    case OpKind::F: {
        const Tensor* target = last ? &m_targets.at(op.microbatch) : nullptr;
        return m_math.forward(lane, params, std::move(input), saved, last, target, &loss);
    }
    case OpKind::I:
    case OpKind::B: {
        const bool wantInputGrad = op.stage > 0 || m_options.firstStageInputGrad;
        Tensor dx = op.kind == OpKind::I ? m_math.inputGrad(lane, params, saved, std::move(input), wantInputGrad)
                                         : m_math.backward(lane, params, saved, std::move(input), wantInputGrad);
        return op.stage > 0 ? std::move(dx) : Tensor(); // stage 0's input gradient goes nowhere
    }
    case OpKind::W:
        m_math.weightGrad(lane, params, saved);
        return {};
    }
    return {};
}

void RankExecutor::finishOp(const Op& op, double loss)
{
    if (op.kind == OpKind::F && op.stage == m_schedule.stages - 1)
        m_losses[modelMicrobatch(op.microbatch)] = loss;
    if (op.kind == OpKind::W || op.kind == OpKind::B)
        m_saved.erase(std::make_pair(op.stage, op.microbatch));
}

void RankExecutor::runSlot(int position, const Action& action, ActionRecord& record)
{
    const int n = action.size();
    if (n == 2 && action.op.stage == action.backward.stage && action.op.microbatch == action.backward.microbatch)
        throw RuntimeError(where(action) + ": both halves of an overlapped slot on the same stage and microbatch");
    record.startUs = microsSince(m_stepStart);
    m_backend.memory().resetPeak(); // the action's high-water mark, from its input fetch on
    Tensor inputs[2];
    for (int i = 0; i < n; ++i)
        inputs[i] = fetchInput(position, action.at(i), record);
    SavedActivations* saved[2] = { &savedFor(action.at(0)), n == 2 ? &savedFor(action.at(1)) : nullptr };
    Tensor outputs[2];
    double losses[2] = { 0.0, 0.0 };
    const std::size_t ledgerBefore = m_backend.memory().live(MemoryCategory::Activation);
    m_backend.actionStarted(toString(action));
    m_backend.laneActivity().begin();
    const auto computeStart = Clock::now();
    {
        const ComputeScope computing(m_comm);
        auto half = [&](int i, Lane lane) {
            const MemoryCounter::LaneScope counted(i);
            m_backend.laneActivity().laneStarted();
            outputs[i] = runOp(lane, action.at(i), std::move(inputs[i]), *saved[i], losses[i]);
            m_backend.laneActivity().laneFinished();
        };
        if (n == 1) {
            half(0, 0);
        } else {
            // Two threads, or one after the other (the backend's choice): either way the slot's memory is each
            // half at its high-water mark at once, the bound of every order (docs/memory.md).
            m_backend.memory().beginLanes();
            try {
                m_backend.runConcurrently([&](Lane lane) { half(0, lane); }, [&](Lane lane) { half(1, lane); });
            } catch (...) {
                m_backend.memory().endLanes();
                throw;
            }
            m_backend.memory().endLanes();
        }
        m_backend.actionFinished(); // the work is issued: a device clock's end marks follow its last operation
        m_backend.synchronize();
    }
    // The device's own measure where the backend has one (cuda: events), else the host's.
    record.computeUs = m_backend.lastActionDeviceUs().value_or(microsSince(computeStart));
    record.a2aUs = m_backend.laneActivity().commUs();
    record.a2aHiddenUs = m_backend.laneActivity().hiddenCommUs();
    const std::size_t forwardHighWater = n == 2 ? ledgerBefore + saved[0]->bytes() : 0;
    for (int i = 0; i < n; ++i) {
        finishOp(action.at(i), losses[i]);
        deliver(action.at(i), std::move(outputs[i]), record);
    }
    record.endUs = microsSince(m_stepStart);
    recordMemory(record, forwardHighWater);
}

void RankExecutor::recordMemory(ActionRecord& record, std::size_t forwardHighWater) const
{
    const std::size_t ledger = m_backend.memory().live(MemoryCategory::Activation);
    const std::size_t highWater = std::max(ledger, forwardHighWater);
    record.activationBytes = highWater;
    record.memoryBytes = m_backend.memory().peak();
}

void RankExecutor::progressSends()
{
    // Progress only: a completed send keeps its buffer until its release point (releaseSends).
    for (Transfer& t : m_pending)
        if (!t.done && m_comm.test(t.request))
            t.done = true;
}

void RankExecutor::releaseSends(int index)
{
    std::erase_if(m_pending, [&](Transfer& t) {
        if (t.releasedBy != index)
            return false;
        if (!t.done)
            m_comm.wait(t.request); // the peer consumed it: complete, or completing without the peer
        return true;
    });
}

void RankExecutor::finishSends()
{
    for (Transfer& t : m_pending)
        if (!t.done)
            m_comm.wait(t.request);
    m_pending.clear();
}

void RankExecutor::checkStepEnd() const
{
    if (!m_saved.empty()) {
        const auto& [key, saved] = *m_saved.begin();
        throw RuntimeError("rank " + std::to_string(m_rank) + ": the step ended with stage " + std::to_string(key.first)
            + " of microbatch " + std::to_string(key.second) + " still waiting for its "
            + (saved.inputGradDone ? "W" : "backward"));
    }
    if (!m_local.empty())
        throw RuntimeError("rank " + std::to_string(m_rank) + ": the step ended with a message never consumed");
}

std::vector<ActionRecord> RankExecutor::runStep(int step)
{
    const auto& order = m_schedule.order[static_cast<std::size_t>(m_rank)];
    for (auto& [stage, params] : m_params)
        params->zeroGradients(m_backend);
    m_backend.synchronize();
    m_losses.clear();
    m_nextPost = 0;
    m_nextNeeded = 0;
    std::vector<ActionRecord> records(order.size());
    m_comm.barrier();
    m_stepStart = Clock::now();
    m_backend.stepStarted();
    postReceives(static_cast<std::size_t>(m_options.receiveWindow) - 1);
    for (std::size_t p = 0; p < order.size(); ++p) {
        if (m_options.beforeAction)
            m_options.beforeAction(step, static_cast<int>(p));
        ActionRecord& record = records[p];
        record.step = step;
        record.index = static_cast<int>(p);
        runSlot(static_cast<int>(p), order[p], record);
        progressSends();
        if (m_options.progress)
            m_options.progress(step, static_cast<int>(p) + 1, static_cast<int>(order.size()));
    }
    finishSends();
    checkStepEnd();
    return records;
}

std::vector<int> RankExecutor::localStages() const
{
    std::vector<int> stages;
    for (const auto& [s, p] : m_params)
        stages.push_back(s);
    return stages;
}

const StageParams& RankExecutor::stageParams(int stage) const
{
    auto it = m_params.find(stage);
    if (it == m_params.end())
        throw RuntimeError("rank " + std::to_string(m_rank) + " does not hold stage " + std::to_string(stage));
    return *it->second;
}

RankExecutor::Transfer RankExecutor::exchangeGradients(const Tensor& grads, int peer, int tag)
{
    Transfer in;
    in.device = Tensor(m_backend, grads.rows(), grads.cols(), MemoryCategory::Workspace);
    Transfer out;
    if (m_staging) {
        in.host.resize(grads.bytes());
        out.host.resize(grads.bytes());
        m_backend.copyDeviceToHost(0, out.host.data(), grads.data(), grads.bytes());
        in.request = m_comm.irecv(in.host.data(), grads.bytes(), peer, tag);
        out.request = m_comm.isend(out.host.data(), grads.bytes(), peer, tag);
    } else {
        in.request = m_comm.irecv(in.device.data(), grads.bytes(), peer, tag);
        out.request = m_comm.isend(grads.data(), grads.bytes(), peer, tag);
    }
    m_pending.push_back(std::move(out));
    return in;
}

std::size_t RankExecutor::sumReplicaGradients(std::vector<ActionRecord>* stepRecords)
{
    m_backend.memory().resetPeak();
    addReplicaGradients();
    const std::size_t peak = m_backend.memory().peak();
    if (stepRecords && !stepRecords->empty())
        stepRecords->back().memoryBytes = std::max<std::uint64_t>(stepRecords->back().memoryBytes, peak);
    return peak;
}

std::vector<RankExecutor::GradientRange> RankExecutor::gradientRanges(int stage) const
{
    std::vector<GradientRange> ranges;
    std::size_t packed = 0;
    for (const StageParameter& p : m_params.at(stage)->parameters(m_spec)) {
        if (!ranges.empty() && ranges.back().expert == p.expert
            && ranges.back().offset + ranges.back().elements == p.offset) {
            ranges.back().elements += p.elements;
        } else {
            ranges.push_back({ p.offset, p.elements, p.expert, packed });
        }
        if (!p.expert)
            packed += p.elements;
    }
    return ranges;
}

void RankExecutor::addReplicaGradients()
{
    const int tagBase = 2 * m_schedule.stages * m_schedule.microbatches;
    const auto e = static_cast<std::size_t>(m_backend.elementBytes());
    // By stage: its gradient ranges, and every other holder's gradients, by holder (comm rank). A holder of other
    // routed experts (expert parallelism) sums none of ours with its own: it gets, and sends, only the non-expert
    // ranges, packed one after the other (`packed`: the receive holds those alone).
    struct Incoming {
        Transfer transfer;
        bool packed = false;
    };
    std::map<int, std::vector<GradientRange>> rangesOf;
    std::map<int, std::map<int, Incoming>> received;
    std::map<int, Tensor> packedSends; // by stage: its non-expert ranges packed, read by the sends to other experts
    for (auto& [stage, params] : m_params) {
        const auto& holders = m_holders[static_cast<std::size_t>(stage)];
        Tensor& grads = params->gradients();
        if (holders.size() < 2 || grads.empty())
            continue;
        const std::vector<GradientRange>& ranges = rangesOf[stage] = gradientRanges(stage);
        std::size_t denseElements = 0;
        for (const GradientRange& r : ranges)
            denseElements += r.expert ? 0 : r.elements;
        const bool hasExperts = denseElements < grads.elements();
        for (int peer : holders) {
            if (peer == m_comm.rank())
                continue;
            if (!hasExperts || sameExperts(peer)) {
                received[stage].emplace(peer, Incoming { exchangeGradients(grads, peer, tagBase + stage), false });
                continue;
            }
            Tensor& packed = packedSends[stage];
            if (packed.empty() && denseElements > 0) {
                packed = Tensor(m_backend, denseElements, 1, MemoryCategory::Workspace);
                for (const GradientRange& r : ranges)
                    if (!r.expert)
                        m_backend.copyDeviceToDevice(0, static_cast<char*>(packed.data()) + r.packedOffset * e,
                            static_cast<const char*>(grads.data()) + r.offset * e, r.elements * e);
            }
            if (!packed.empty())
                received[stage].emplace(peer, Incoming { exchangeGradients(packed, peer, tagBase + stage), true });
        }
    }
    for (auto& [stage, fromHolders] : received)
        for (auto& [peer, in] : fromHolders)
            m_comm.wait(in.transfer.request);
    finishSends(); // our gradients are read by the sends: add only once they are done
    packedSends.clear();
    // Every holder adds in the same order, ascending holder, so that all end with the same bits (float addition
    // is not associative: with more than two holders, each adding the others to its own would differ).
    for (auto& [stage, fromHolders] : received) {
        Tensor& grads = m_params.at(stage)->gradients();
        for (auto& [peer, in] : fromHolders)
            if (m_staging)
                m_backend.copyHostToDevice(0, in.transfer.device.data(), in.transfer.host.data(), in.transfer.host.size());
        const auto& holders = m_holders[static_cast<std::size_t>(stage)];
        const auto gradientsOf = [&](int holder, const GradientRange& range) -> void* {
            if (holder == m_comm.rank())
                return static_cast<char*>(grads.data()) + range.offset * e;
            const Incoming& in = fromHolders.at(holder);
            return static_cast<char*>(in.transfer.device.data()) + (in.packed ? range.packedOffset : range.offset) * e;
        };
        for (const GradientRange& range : rangesOf.at(stage)) {
            std::vector<int> summed;
            for (int holder : holders)
                if (!range.expert || sameExperts(holder))
                    summed.push_back(holder);
            void* sum = gradientsOf(summed.front(), range); // the first holder's buffer accumulates
            for (std::size_t i = 1; i < summed.size(); ++i)
                m_backend.axpy(0, range.elements, 1.0f, gradientsOf(summed[i], range), sum);
            if (summed.front() != m_comm.rank())
                m_backend.copyDeviceToDevice(0, gradientsOf(m_comm.rank(), range), sum, range.elements * e);
        }
    }
    m_backend.synchronize();
}

} // namespace dps::runtime
