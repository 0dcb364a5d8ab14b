// NcclComm's host half without a GPU: the issue order (TransferSequencer) and the request bookkeeping
// (OrderedP2p: groups, markers, wait and test) as unit cases, and every generated schedule run by simulated
// executors that drive OrderedP2p as RankExecutor drives NcclComm (receives posted ahead in the order they
// are needed, sends after each slot, tests after each slot, the replica exchange after each step) over a
// simulated NCCL with its documented semantics: per rank one stream on which each group starts once the
// previous one completed, sends and receives between two ranks matched in issue order, a send or receive
// blocking until its counterpart is issued; also with data-parallel replicas (comm rank = rank × dp + replica,
// the transfer order of jobsetup.h's ncclTransfersOf).
#include "base/errors.h"
#include "runtime/backend.h"
#include "runtime/cuda/jobsetup.h"
#include "runtime/cuda/orderedp2p.h"
#include "runtime/cuda/transferorder.h"
#include "runtime/cuda/transfersequencer.h"
#include "schedule/generator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace dps;
using namespace dps::runtime;
using Kind = SequencerCommand::Kind;

namespace {

/// Staging buffers from the host heap, counted.
struct Staging {
    int live = 0;
    std::function<void*(std::size_t)> allocate()
    {
        return [this](std::size_t bytes) {
            ++live;
            return std::malloc(bytes);
        };
    }
    std::function<void(void*, std::size_t)> release()
    {
        return [this](void* p, std::size_t) {
            --live;
            std::free(p);
        };
    }
};

char g_buffers[16][64];

} // namespace

TEST(TransferSequencer, IssuesInPlanOrderWhateverTheCallOrder)
{
    Staging staging;
    TransferSequencer seq(staging.allocate(), staging.release());
    seq.setPlan({ { true, 1, 10, 64 }, { false, 1, 11, 64 }, { true, 1, 12, 64 } });
    const RequestId late = seq.add(true, g_buffers[0], 64, 1, 12);
    EXPECT_TRUE(seq.next().empty()); // the plan starts with tag 10, not posted yet
    const RequestId first = seq.add(true, g_buffers[1], 64, 1, 10);
    auto cmds = seq.next();
    // Tag 10 goes; then the receive of 11 is not posted but a posted send waits behind it: staged.
    ASSERT_EQ(cmds.size(), 3u);
    EXPECT_EQ(cmds[0].tag, 10);
    EXPECT_EQ(cmds[0].request, first);
    EXPECT_EQ(cmds[1].kind, Kind::Receive);
    EXPECT_EQ(cmds[1].request, kNoRequest);
    EXPECT_EQ(cmds[1].tag, 11);
    EXPECT_EQ(cmds[2].request, late);
    EXPECT_EQ(staging.live, 1);
    // The executor posts the receive later: its data is copied out of staging.
    const RequestId receive = seq.add(false, g_buffers[2], 64, 1, 11);
    cmds = seq.next();
    ASSERT_EQ(cmds.size(), 1u);
    EXPECT_EQ(cmds[0].kind, Kind::CopyFromStaging);
    EXPECT_EQ(cmds[0].request, receive);
    EXPECT_EQ(cmds[0].data, g_buffers[2]);
    seq.release(receive);
    EXPECT_EQ(staging.live, 0);
    EXPECT_EQ(seq.cycle(), 1); // the plan wrapped: the next step starts
}

TEST(TransferSequencer, AFrontReceiveWithNothingBehindItWaitsForTheExecutor)
{
    Staging staging;
    TransferSequencer seq(staging.allocate(), staging.release());
    seq.setPlan({ { false, 0, 1, 8 }, { true, 0, 2, 8 } });
    EXPECT_TRUE(seq.next().empty());
    EXPECT_EQ(staging.live, 0);
    const RequestId r = seq.add(false, g_buffers[0], 8, 0, 1);
    const auto cmds = seq.next();
    ASSERT_EQ(cmds.size(), 1u);
    EXPECT_EQ(cmds[0].request, r);
    EXPECT_TRUE(seq.issued(r));
}

TEST(TransferSequencer, WaitingOnAMessageBehindAnUnpostedSendNamesBoth)
{
    Staging staging;
    TransferSequencer seq(staging.allocate(), staging.release());
    seq.setPlan({ { true, 1, 5, 8 }, { false, 1, 6, 8 } });
    const RequestId r = seq.add(false, g_buffers[0], 8, 1, 6);
    try {
        seq.next(r);
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("receive from rank 1 (tag 6)"), std::string::npos) << what;
        EXPECT_NE(what.find("send to rank 1 (tag 5)"), std::string::npos) << what;
    }
}

TEST(TransferSequencer, UnplannedMessagesGoTogetherOnceTheStepIsDone)
{
    Staging staging;
    TransferSequencer seq(staging.allocate(), staging.release());
    seq.setPlan({ { true, 1, 0, 8 }, { true, 1, 1, 8 } });
    seq.add(true, g_buffers[3], 8, 1, 0);
    EXPECT_EQ(seq.next().size(), 1u); // the step is half-way through its planned transfers
    const RequestId in = seq.add(false, g_buffers[0], 16, 1, 100);
    const RequestId out = seq.add(true, g_buffers[1], 16, 1, 100);
    EXPECT_THROW(seq.next(in), RuntimeError);
    seq.add(true, g_buffers[2], 8, 1, 1);
    const auto cmds = seq.next(in);
    ASSERT_EQ(cmds.size(), 3u);
    EXPECT_EQ(cmds[0].tag, 1); // the step's last planned transfer first
    EXPECT_EQ(cmds[1].request, in); // then the unplanned ones, in call order, in the same group
    EXPECT_EQ(cmds[2].request, out);
    EXPECT_TRUE(seq.issued(out));
}

TEST(TransferSequencer, ATestNeverForcesWhatOnlyAWaitMay)
{
    Staging staging;
    TransferSequencer seq(staging.allocate(), staging.release());
    seq.setPlan({ { true, 1, 5, 8 }, { true, 1, 6, 8 }, { false, 1, 7, 8 } });
    const RequestId later = seq.add(true, g_buffers[0], 8, 1, 6);
    EXPECT_TRUE(seq.next(later, false).empty()); // behind the unposted send of tag 5: stays, no error
    EXPECT_FALSE(seq.issued(later));
    EXPECT_THROW(seq.next(later, true), RuntimeError);
    seq.add(true, g_buffers[1], 8, 1, 5);
    EXPECT_EQ(seq.next(kNoRequest, false).size(), 2u);
    // Half-way through the step: an unplanned message is not issued by a test, and is an error to wait on.
    const RequestId unplanned = seq.add(false, g_buffers[2], 8, 1, 99);
    EXPECT_TRUE(seq.next(unplanned, false).empty());
    EXPECT_FALSE(seq.issued(unplanned));
    EXPECT_THROW(seq.next(unplanned, true), RuntimeError);
    EXPECT_TRUE(seq.known(unplanned));
    EXPECT_FALSE(seq.known(12345));
}

TEST(TransferSequencer, RefusesDuplicatesAndWrongSizes)
{
    Staging staging;
    TransferSequencer seq(staging.allocate(), staging.release());
    EXPECT_THROW(seq.setPlan({ { true, 1, 3, 8 }, { true, 1, 3, 8 } }), RuntimeError);
    seq.setPlan({ { true, 1, 3, 8 }, { false, 1, 3, 8 } }); // same tag, two directions: fine
    EXPECT_THROW(seq.add(true, g_buffers[0], 9, 1, 3), RuntimeError);
}

TEST(TransferSequencer, PlannedTransfersCarryTheExecutorsTags)
{
    const Schedule s = generate({ ScheduleKind::OneFOneB, 2, 2, 0 });
    const TransferPlan plan = deriveTransferPlan(s);
    const auto tagOf = [&](const Transfer& t) {
        return (t.consumer.microbatch * s.stages + t.consumer.stage) * 2 + (t.gradient() ? 1 : 0);
    };
    const auto mine = plannedTransfersOf(plan, 0, tagOf, 128);
    ASSERT_EQ(mine.size(), 4u);
    EXPECT_TRUE(mine[0].send);
    EXPECT_EQ(mine[0].tag, (0 * 2 + 1) * 2 + 0); // activation into stage 1, microbatch 0
    EXPECT_EQ(mine[0].bytes, 128u);
    for (const auto& e : mine)
        EXPECT_EQ(e.peer, 1);
}

namespace {

constexpr std::size_t kBytes = 64;
constexpr int kWindow = 8;
constexpr int kSteps = 2;

int messageTag(const Schedule& s, int stage, int microbatch, int kind)
{
    return (microbatch * s.stages + stage) * 2 + kind;
}

/// A simulated NCCL: per rank a serial stream of batches (a group, then its copies); a batch's operations
/// join the per-pair FIFO queues when it becomes the rank's active batch and complete when matched.
class FakeNccl {
public:
    explicit FakeNccl(int ranks)
        : m_streams(static_cast<std::size_t>(ranks))
    {
    }

    void enqueue(int rank, const std::vector<SequencerCommand>& batch)
    {
        if (batch.empty())
            return;
        ++m_enqueued[rank];
        auto& stream = m_streams[static_cast<std::size_t>(rank)];
        stream.push_back(Batch { batch, 0 });
        if (stream.size() == 1)
            activate(rank);
    }

    bool complete(int rank, RequestId request) const { return m_done.count({ rank, request }) > 0; }
    /// Batches rank `rank` has issued, and of those the ones the device finished (in stream order).
    int enqueued(int rank) const { return m_enqueued.count(rank) ? m_enqueued.at(rank) : 0; }
    int retired(int rank) const { return m_retired.count(rank) ? m_retired.at(rank) : 0; }

    /// Matches what can be matched; returns whether anything moved.
    bool progress()
    {
        bool moved = false;
        for (auto& [pair, sends] : m_sends) {
            auto& receives = m_receives[pair];
            while (!sends.empty() && !receives.empty()) {
                const Pending s = sends.front();
                const Pending r = receives.front();
                sends.pop_front();
                receives.pop_front();
                if (s.tag != r.tag)
                    m_errors.push_back("rank " + std::to_string(pair.first) + " -> " + std::to_string(pair.second)
                        + ": send tag " + std::to_string(s.tag) + " matched receive tag " + std::to_string(r.tag));
                finishOne(pair.first);
                finishOne(pair.second);
                moved = true;
            }
        }
        return moved;
    }

    const std::vector<std::string>& errors() const { return m_errors; }
    bool idle(int rank) const { return m_streams[static_cast<std::size_t>(rank)].empty(); }

private:
    struct Batch {
        std::vector<SequencerCommand> commands;
        int open = 0; ///< operations not yet matched
    };
    struct Pending {
        int tag;
    };

    void activate(int rank)
    {
        auto& stream = m_streams[static_cast<std::size_t>(rank)];
        while (!stream.empty()) {
            Batch& b = stream.front();
            for (const auto& c : b.commands) {
                if (c.kind == Kind::Send)
                    m_sends[{ rank, c.peer }].push_back({ c.tag });
                else if (c.kind == Kind::Receive)
                    m_receives[{ c.peer, rank }].push_back({ c.tag });
                b.open += c.kind == Kind::CopyFromStaging ? 0 : 1;
            }
            if (b.open > 0)
                return;
            retire(rank); // copies only: done at once
        }
    }

    void finishOne(int rank)
    {
        Batch& b = m_streams[static_cast<std::size_t>(rank)].front();
        if (--b.open == 0) {
            retire(rank);
            activate(rank);
        }
    }

    void retire(int rank)
    {
        ++m_retired[rank];
        auto& stream = m_streams[static_cast<std::size_t>(rank)];
        for (const auto& c : stream.front().commands)
            if (c.request != kNoRequest)
                m_done.insert({ rank, c.request });
        stream.pop_front();
    }

    std::vector<std::deque<Batch>> m_streams;
    std::map<std::pair<int, int>, std::deque<Pending>> m_sends; ///< (from, to) → active sends in order
    std::map<std::pair<int, int>, std::deque<Pending>> m_receives;
    std::set<std::pair<int, RequestId>> m_done;
    std::map<int, int> m_enqueued;
    std::map<int, int> m_retired;
    std::vector<std::string> m_errors;
};

/// OrderedP2p's device for one rank of the fake NCCL: a marker passes once every batch issued before it has
/// finished, as a CUDA event recorded on the stream after them does.
class FakeP2pDevice final : public P2pDevice {
public:
    FakeP2pDevice(FakeNccl& nccl, int rank)
        : m_nccl(nccl)
        , m_rank(rank)
    {
    }

    void issue(const std::vector<SequencerCommand>& batch) override
    {
        if (batch.empty())
            ADD_FAILURE() << "rank " << m_rank << ": an empty batch was issued";
        m_nccl.enqueue(m_rank, batch);
    }
    Marker mark() override
    {
        m_after[m_next] = m_nccl.enqueued(m_rank);
        return m_next++;
    }
    bool passed(Marker marker) override { return m_nccl.retired(m_rank) >= m_after.at(marker); }
    void release(Marker marker) override
    {
        if (!m_after.erase(marker))
            ADD_FAILURE() << "rank " << m_rank << ": marker " << marker << " released twice";
    }
    std::size_t held() const { return m_after.size(); }

private:
    FakeNccl& m_nccl;
    int m_rank;
    Marker m_next = 0;
    std::map<Marker, int> m_after; ///< marker → batches that must finish first
};

/// One rank's executor, as RankExecutor drives its Comm, over a TransferSequencer and the fake NCCL: comm rank
/// `commRank` is pipeline rank commRank / replicas of replica commRank % replicas. With one replica its order
/// is plannedTransfersOf(plan), with more ncclTransfersOf's (what NcclComm gets in a run).
class FakeExecutor {
public:
    FakeExecutor(
        const Schedule& s, int commRank, int replicas, const TransferPlan& plan, FakeNccl& nccl, Staging& staging)
        : m_s(s)
        , m_rank(commRank / replicas)
        , m_replica(commRank % replicas)
        , m_replicas(replicas)
        , m_device(nccl, commRank)
        , m_p2p(m_device, staging.allocate(), staging.release())
    {
        const auto tagOf = [&](const Transfer& t) {
            return messageTag(s, t.consumer.stage, t.consumer.microbatch, t.gradient() ? 1 : 0);
        };
        m_p2p.setPlan(replicas == 1 ? plannedTransfersOf(plan, m_rank, tagOf, kBytes)
                                    : ncclTransfersOf(s, commRank, tagOf, kBytes, replicas).transfers);
        planReceives();
        startStep();
    }

    bool done() const { return m_step >= kSteps; }

    /// Runs until blocked; returns whether anything moved.
    bool advance()
    {
        bool moved = false;
        while (!done() && stepOnce())
            moved = true;
        return moved;
    }

    std::string state() const
    {
        return "rank " + std::to_string(m_rank) + " replica " + std::to_string(m_replica) + " step "
            + std::to_string(m_step) + " slot " + std::to_string(m_slot) + " phase "
            + std::to_string(static_cast<int>(m_phase));
    }

    /// What is left once done: requests not released, markers held (0 and 0 when all went well).
    std::size_t outstanding() const { return m_p2p.outstanding(); }
    std::size_t markersHeld() const { return m_p2p.markersHeld() + m_device.held(); }

private:
    enum class Phase { Inputs, EndSends, Replica, ReplicaWait };
    struct Incoming {
        int tag;
        int peer;
    };

    const std::vector<Action>& order() const { return m_s.order[static_cast<std::size_t>(m_rank)]; }

    void planReceives()
    {
        for (const Action& a : order())
            for (int i = 0; i < a.size(); ++i) {
                const Op& op = a.at(i);
                if (op.kind == OpKind::F && op.stage > 0) {
                    const int peer = m_s.placement.rankOf(op.stage - 1, op.microbatch);
                    if (peer != m_rank)
                        m_incoming.push_back({ messageTag(m_s, op.stage, op.microbatch, 0), peer });
                } else if ((op.kind == OpKind::I || op.kind == OpKind::B) && op.stage + 1 < m_s.stages) {
                    const int peer = m_s.placement.rankOf(op.stage + 1, op.microbatch);
                    if (peer != m_rank)
                        m_incoming.push_back({ messageTag(m_s, op.stage, op.microbatch, 1), peer });
                }
            }
    }

    void startStep()
    {
        m_slot = 0;
        m_nextPost = 0;
        m_nextNeeded = 0;
        m_inputsTaken = 0;
        m_phase = Phase::Inputs;
        postReceives(kWindow - 1);
    }

    void postReceives(std::size_t through)
    {
        while (m_nextPost < m_incoming.size() && m_nextPost <= through) {
            const Incoming& in = m_incoming[m_nextPost++];
            m_posted[in.tag] = m_p2p.irecv(g_buffers[0], kBytes, commRank(in.peer, m_replica), in.tag);
        }
    }

    /// NcclComm::wait, cut where it spins: beginWait once, then poll until done.
    bool waitFor(RequestId r)
    {
        if (m_waiting != r) {
            m_waiting = r;
            m_p2p.beginWait(r);
        }
        if (!m_p2p.poll(r))
            return false;
        m_waiting = kNoRequest;
        return true;
    }

    bool test(RequestId r) { return m_p2p.test(r); }

    int inputsOf(const Action& a) const
    {
        int n = 0;
        for (int i = 0; i < a.size(); ++i) {
            const Op& op = a.at(i);
            if (op.kind == OpKind::F && op.stage > 0)
                n += m_s.placement.rankOf(op.stage - 1, op.microbatch) != m_rank;
            else if ((op.kind == OpKind::I || op.kind == OpKind::B) && op.stage + 1 < m_s.stages)
                n += m_s.placement.rankOf(op.stage + 1, op.microbatch) != m_rank;
        }
        return n;
    }

    void sendOutputs(const Action& a)
    {
        for (int i = 0; i < a.size(); ++i) {
            const Op& op = a.at(i);
            int stage = -1;
            int kind = 0;
            if (op.kind == OpKind::F && op.stage + 1 < m_s.stages)
                stage = op.stage + 1;
            else if ((op.kind == OpKind::I || op.kind == OpKind::B) && op.stage > 0) {
                stage = op.stage - 1;
                kind = 1;
            }
            if (stage < 0)
                continue;
            const int dest = m_s.placement.rankOf(stage, op.microbatch);
            if (dest == m_rank)
                continue;
            m_sends.push_back(m_p2p.isend(
                g_buffers[1], kBytes, commRank(dest, m_replica), messageTag(m_s, stage, op.microbatch, kind)));
        }
        std::erase_if(m_sends, [this](RequestId r) { return test(r); });
    }

    bool stepInputs()
    {
        const Action& a = order()[m_slot];
        if (m_inputsTaken < inputsOf(a)) {
            if (m_waiting == kNoRequest) {
                const Incoming& in = m_incoming[m_nextNeeded];
                postReceives(m_nextNeeded + kWindow - 1);
                ++m_nextNeeded;
                m_current = m_posted.at(in.tag);
            }
            if (!waitFor(m_current))
                return false;
            ++m_inputsTaken;
            return true;
        }
        sendOutputs(a);
        m_inputsTaken = 0;
        if (++m_slot == order().size())
            m_phase = Phase::EndSends;
        return true;
    }

    bool stepReplica()
    {
        std::set<int> stages;
        for (const Action& a : order())
            for (int i = 0; i < a.size(); ++i)
                stages.insert(a.at(i).stage);
        const int tagBase = 2 * m_s.stages * m_s.microbatches;
        // Every other holder of the stage in every replica, ascending comm rank (RankExecutor::m_holders).
        for (int stage : stages)
            for (int peer = 0; peer < m_s.ranks; ++peer)
                for (int replica = 0; replica < m_replicas; ++replica) {
                    if ((peer == m_rank && replica == m_replica) || !holds(peer, stage))
                        continue;
                    const int to = commRank(peer, replica);
                    m_replicaReceives.push_back(m_p2p.irecv(g_buffers[2], 2 * kBytes, to, tagBase + stage));
                    m_sends.push_back(m_p2p.isend(g_buffers[3], 2 * kBytes, to, tagBase + stage));
                }
        m_phase = Phase::ReplicaWait;
        return true;
    }

    int commRank(int rank, int replica) const { return rank * m_replicas + replica; }

    bool holds(int rank, int stage) const
    {
        for (const Action& a : m_s.order[static_cast<std::size_t>(rank)])
            for (int i = 0; i < a.size(); ++i)
                if (a.at(i).stage == stage)
                    return true;
        return false;
    }

    bool stepOnce()
    {
        switch (m_phase) {
        case Phase::Inputs:
            return stepInputs();
        case Phase::EndSends:
            if (!m_sends.empty()) {
                if (!waitFor(m_sends.front()))
                    return false;
                m_sends.erase(m_sends.begin());
                return true;
            }
            m_phase = Phase::Replica;
            return true;
        case Phase::Replica:
            return stepReplica();
        case Phase::ReplicaWait:
            for (auto* list : { &m_replicaReceives, &m_sends })
                if (!list->empty()) {
                    if (!waitFor(list->front()))
                        return false;
                    list->erase(list->begin());
                    return true;
                }
            ++m_step;
            if (!done())
                startStep();
            return true;
        }
        return false;
    }

    const Schedule& m_s;
    int m_rank;
    int m_replica;
    int m_replicas;
    FakeP2pDevice m_device;
    OrderedP2p m_p2p;
    std::vector<Incoming> m_incoming;
    std::map<int, RequestId> m_posted;
    std::vector<RequestId> m_sends;
    std::vector<RequestId> m_replicaReceives;
    std::size_t m_nextPost = 0;
    std::size_t m_nextNeeded = 0;
    std::size_t m_slot = 0;
    int m_inputsTaken = 0;
    int m_step = 0;
    Phase m_phase = Phase::Inputs;
    RequestId m_waiting = kNoRequest;
    RequestId m_current = kNoRequest;
};

/// Runs every rank of every replica to the end; returns "" or what went wrong.
std::string runAll(const Schedule& s, int replicas = 1)
{
    const TransferPlan plan = deriveTransferPlan(s);
    FakeNccl nccl(s.ranks * replicas);
    Staging staging;
    std::vector<std::unique_ptr<FakeExecutor>> ranks;
    for (int r = 0; r < s.ranks * replicas; ++r)
        ranks.push_back(std::make_unique<FakeExecutor>(s, r, replicas, plan, nccl, staging));
    for (bool moved = true; moved;) {
        moved = false;
        for (auto& r : ranks)
            moved = r->advance() || moved;
        moved = nccl.progress() || moved;
    }
    std::string problems;
    for (const auto& e : nccl.errors())
        problems += e + "; ";
    for (const auto& r : ranks) {
        if (!r->done())
            problems += "stuck: " + r->state() + "; ";
        else if (r->outstanding() != 0 || r->markersHeld() != 0)
            problems += r->state() + ": " + std::to_string(r->outstanding()) + " requests and "
                + std::to_string(r->markersHeld()) + " markers left; ";
    }
    ranks.clear();
    if (staging.live != 0)
        problems += std::to_string(staging.live) + " staging buffers leaked; ";
    return problems;
}

} // namespace

TEST(TransferSequencer, EveryGeneratedScheduleRunsTwoStepsOverFifoNccl)
{
    const std::vector<std::pair<int, int>> sizes { { 2, 4 }, { 2, 8 }, { 4, 8 }, { 4, 16 }, { 6, 12 }, { 8, 16 } };
    int runs = 0;
    for (const ScheduleKind kind : generatedKinds())
        for (const auto& [ranks, microbatches] : sizes) {
            const GenerateOptions o { kind, ranks, microbatches, 0 };
            try {
                checkConstraints(o);
            } catch (const ConstraintError&) {
                continue;
            }
            SCOPED_TRACE(
                std::string(kindName(kind)) + " " + std::to_string(ranks) + "x" + std::to_string(microbatches));
            EXPECT_EQ(runAll(generate(o)), "");
            ++runs;
        }
    EXPECT_GE(runs, 30);
}

TEST(TransferSequencer, DataParallelReplicasRunTwoStepsOverFifoNccl)
{
    // ranks × dp comm ranks: each replica's pipeline in its own slice of the order, then the gradient sum over
    // every holder of a stage in every replica (unplanned, after the step), as a dp > 1 run over NCCL does.
    int runs = 0;
    for (const ScheduleKind kind : generatedKinds())
        for (const auto& [ranks, microbatches, replicas] :
            std::vector<std::tuple<int, int, int>> { { 2, 4, 2 }, { 2, 8, 3 }, { 4, 8, 2 } }) {
            const GenerateOptions o { kind, ranks, microbatches, 0 };
            try {
                checkConstraints(o);
            } catch (const ConstraintError&) {
                continue;
            }
            SCOPED_TRACE(std::string(kindName(kind)) + " " + std::to_string(ranks) + "x" + std::to_string(microbatches)
                + " dp " + std::to_string(replicas));
            EXPECT_EQ(runAll(generate(o), replicas), "");
            ++runs;
        }
    EXPECT_GE(runs, 15);
}

TEST(OrderedP2p, StagedReceivesCopiesAndMarkersAreAllGivenBack)
{
    FakeNccl nccl(2);
    Staging staging;
    FakeP2pDevice device0(nccl, 0);
    FakeP2pDevice device1(nccl, 1);
    {
        OrderedP2p rank0(device0, staging.allocate(), staging.release());
        OrderedP2p rank1(device1, staging.allocate(), staging.release());
        rank0.setPlan({ { true, 1, 10, 64 }, { true, 1, 12, 64 } });
        rank1.setPlan({ { false, 0, 10, 64 }, { false, 0, 12, 64 } });
        // Rank 1 posts the second message's receive first: the first is received into staging ahead of it,
        // in the same group, and the two share the group's marker (only the posted one holds it).
        const RequestId late = rank1.irecv(g_buffers[4], 64, 0, 12);
        EXPECT_EQ(rank1.stagingBuffers(), 1u);
        EXPECT_EQ(rank1.markersHeld(), 1u);
        EXPECT_FALSE(rank1.test(late)); // nothing sent yet
        const RequestId a = rank0.isend(g_buffers[5], 64, 1, 10);
        const RequestId b = rank0.isend(g_buffers[6], 64, 1, 12);
        EXPECT_EQ(rank0.markersHeld(), 2u); // two groups: the second send was posted after the first went
        EXPECT_TRUE(nccl.progress());
        rank1.beginWait(late);
        EXPECT_TRUE(rank1.poll(late));
        const RequestId first = rank1.irecv(g_buffers[7], 64, 0, 10); // copied out of staging
        EXPECT_TRUE(rank1.test(first));
        EXPECT_EQ(rank1.stagingBuffers(), 0u);
        EXPECT_EQ(staging.live, 0);
        EXPECT_TRUE(rank0.test(a));
        rank0.beginWait(b);
        EXPECT_TRUE(rank0.poll(b));
        EXPECT_EQ(rank0.markersHeld() + rank1.markersHeld(), 0u);
        EXPECT_EQ(rank0.outstanding() + rank1.outstanding(), 0u);
    }
    EXPECT_EQ(device0.held() + device1.held(), 0u);
    EXPECT_TRUE(nccl.errors().empty());
}

TEST(OrderedP2p, UnknownRequestsAndPollsBeforeIssueAreRefused)
{
    FakeNccl nccl(2);
    Staging staging;
    FakeP2pDevice device(nccl, 0);
    OrderedP2p p2p(device, staging.allocate(), staging.release());
    p2p.setPlan({ { true, 1, 1, 8 }, { true, 1, 2, 8 } });
    EXPECT_THROW(p2p.beginWait(42), RuntimeError);
    EXPECT_THROW(p2p.test(42), RuntimeError);
    const RequestId second = p2p.isend(g_buffers[8], 8, 1, 2); // behind the unposted send of tag 1
    EXPECT_FALSE(p2p.test(second));
    EXPECT_THROW(p2p.poll(second), RuntimeError);
    EXPECT_THROW(p2p.beginWait(second), RuntimeError); // the executor left the order: named, not a hang
    EXPECT_EQ(p2p.markersHeld(), 0u);
}
