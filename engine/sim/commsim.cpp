// The comm-timed replay: the validator's replay of the communicators (commcheck.cpp) with times. Per rank a compute
// pointer and a communicator pointer move over the row; a compute step runs once its inputs have arrived, a send or
// receive once the compute before it has ended and its partner is at the head of the partner's communicator.
#include "commsim.h"

#include "base/errors.h"
#include "schedule/validator.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace dps {

namespace {

/// Where a step sits: rank and cell index in that rank's row.
struct Cell {
    int rank = -1;
    int position = -1;
};

/// When something ended and the rank that made or sent it.
struct Made {
    double endUs = 0.0;
    int rank = -1;
};

/// The latest input of a compute step.
struct Ready {
    double us = 0.0;
    int fromRank = -1;

    void add(double at, int rank)
    {
        if (at > us || (at == us && rank >= 0 && fromRank < 0)) {
            us = at;
            fromRank = rank;
        }
    }
};

/// The partner of a send or receive.
CommOp partnerOf(const CommOp& c)
{
    switch (c.kind) {
    case CommKind::SendF:
        return { CommKind::RecvF, c.stage + 1, c.microbatch };
    case CommKind::RecvF:
        return { CommKind::SendF, c.stage - 1, c.microbatch };
    case CommKind::SendB:
        return { CommKind::RecvB, c.stage - 1, c.microbatch };
    default:
        return { CommKind::SendB, c.stage + 1, c.microbatch };
    }
}

/// The lower stage of the boundary a send or receive's message crosses.
int boundaryOf(const CommOp& c)
{
    return c.kind == CommKind::SendF || c.kind == CommKind::RecvB ? c.stage : c.stage - 1;
}

bool isReceive(CommKind kind)
{
    return kind == CommKind::RecvF || kind == CommKind::RecvB;
}

/// The key of the gradient (I or B) of (stage, microbatch).
std::uint64_t gradientKey(int stage, int microbatch)
{
    return actionKey(Op { stage, microbatch, OpKind::B });
}

class CommTimer {
public:
    CommTimer(const TorchSchedule& program, const Schedule& compute, const CostModel& costs, SimResult base)
        : m_t(program)
        , m_costs(costs)
        , m_stages(simulatedSizes(compute).stages)
        , m_result(std::move(base))
    {
        index();
    }

    SimResult run()
    {
        for (bool progress = true; progress;) {
            progress = false;
            for (std::size_t r = 0; r < ranks(); ++r) {
                while (computeStep(r))
                    progress = true;
                while (commStep(r))
                    progress = true;
            }
        }
        if (stuck())
            return deadlock();
        finish();
        return std::move(m_result);
    }

private:
    /// Per rank: its compute and communication cells, pointers, and when its two streams are free.
    struct Rank {
        std::vector<int> compute; ///< cell indices of compute steps
        std::vector<int> comm; ///< cell indices of sends and receives
        std::vector<std::size_t> computeBefore; ///< per send or receive: compute steps before it in the row
        std::vector<double> computeEnd; ///< per compute step done: its end
        std::vector<SlotTiming> timing; ///< per compute step done
        std::size_t qp = 0; ///< sends and receives done
        double commFree = 0.0;
    };

    std::size_t ranks() const { return m_t.rows.size(); }
    const Step& step(std::size_t r, int position) const { return m_t.rows[r][static_cast<std::size_t>(position)]; }
    double transferUs(const CommOp& send, int from, int to) const
    {
        const auto b = static_cast<std::size_t>(boundaryOf(send));
        const double bytes = b < m_costs.stages.size() ? m_costs.stages[b].messageBytes : StageCost {}.messageBytes;
        return m_costs.transferTime(bytes, from, to);
    }

    void index();
    bool arrived(std::size_t r, const CommOp& recv, const Made* producer, int boundary, Ready& ready) const;
    bool inputsReady(std::size_t r, const Op& op, Ready& ready) const;
    void complete(std::size_t r, const Op& op, double endUs);
    bool computeStep(std::size_t r);
    bool headPosted(std::size_t r) const;
    double readyOf(std::size_t r) const;
    bool commStep(std::size_t r);
    bool stuck() const;
    SimResult deadlock();
    void finish();
    void restampMemory(std::size_t r);
    void findStalls();
    void findStall(std::size_t r, std::size_t index);

    const TorchSchedule& m_t;
    const CostModel& m_costs;
    int m_stages = 0;
    SimResult m_result;
    std::vector<Rank> m_rank;
    std::unordered_map<std::uint64_t, Cell> m_cells; ///< each send and receive: its cell
    std::unordered_map<std::uint64_t, Made> m_forward; ///< each F done
    std::unordered_map<std::uint64_t, Made> m_gradient; ///< each I or B done (gradientKey)
    std::unordered_set<std::uint64_t> m_inputGrad; ///< each I done (its W may run)
    std::unordered_map<std::uint64_t, Made> m_received; ///< each receive done: its end and its sender's rank
    std::unordered_map<std::uint64_t, double> m_sendReady; ///< each receive done: its send's readyUs
};

void CommTimer::index()
{
    m_rank.resize(ranks());
    m_result.comms.assign(ranks(), {});
    for (std::size_t r = 0; r < ranks(); ++r) {
        Rank& rk = m_rank[r];
        for (std::size_t p = 0; p < m_t.rows[r].size(); ++p) {
            const Step& s = m_t.rows[r][p];
            if (s.isCompute()) {
                rk.compute.push_back(static_cast<int>(p));
            } else if (s.isComm() && isPointToPoint(s.comm.kind)) {
                rk.comm.push_back(static_cast<int>(p));
                rk.computeBefore.push_back(rk.compute.size());
                m_cells.emplace(actionKey(s.comm), Cell { static_cast<int>(r), static_cast<int>(p) });
            }
        }
    }
}

/// Whether the input of an op has arrived on rank r: through its receive when the rank has one, else from its
/// producer (sent when made, over the boundary's link, as simulate() has it). Adds its arrival to `ready`.
bool CommTimer::arrived(std::size_t r, const CommOp& recv, const Made* producer, int boundary, Ready& ready) const
{
    const auto cell = m_cells.find(actionKey(recv));
    if (cell != m_cells.end() && cell->second.rank == static_cast<int>(r)) {
        const auto got = m_received.find(actionKey(recv));
        if (got == m_received.end())
            return false;
        ready.add(got->second.endUs, got->second.rank);
        return true;
    }
    if (!producer)
        return false;
    if (producer->rank == static_cast<int>(r)) {
        ready.add(producer->endUs, -1);
        return true;
    }
    const CommOp send = recv.kind == CommKind::RecvF ? CommOp { CommKind::SendF, boundary, recv.microbatch }
                                                     : CommOp { CommKind::SendB, boundary + 1, recv.microbatch };
    ready.add(producer->endUs + transferUs(send, producer->rank, static_cast<int>(r)), producer->rank);
    return true;
}

bool CommTimer::inputsReady(std::size_t r, const Op& op, Ready& ready) const
{
    const auto find = [](const std::unordered_map<std::uint64_t, Made>& map, std::uint64_t key) -> const Made* {
        const auto it = map.find(key);
        return it == map.end() ? nullptr : &it->second;
    };
    const int s = op.stage;
    const int m = op.microbatch;
    switch (op.kind) {
    case OpKind::F:
        return s == 0
            || arrived(
                r, { CommKind::RecvF, s, m }, find(m_forward, actionKey(Op { s - 1, m, OpKind::F })), s - 1, ready);
    case OpKind::W:
        return m_inputGrad.count(actionKey(Op { s, m, OpKind::I })) > 0;
    case OpKind::I:
    case OpKind::B: {
        const Made* own = find(m_forward, actionKey(Op { s, m, OpKind::F }));
        if (!own)
            return false;
        ready.add(own->endUs, -1);
        return s + 1 >= m_stages
            || arrived(r, { CommKind::RecvB, s, m }, find(m_gradient, gradientKey(s + 1, m)), s, ready);
    }
    }
    return false;
}

void CommTimer::complete(std::size_t r, const Op& op, double endUs)
{
    const Made made { endUs, static_cast<int>(r) };
    if (op.kind == OpKind::F)
        m_forward[actionKey(op)] = made;
    if (op.kind == OpKind::I || op.kind == OpKind::B)
        m_gradient[gradientKey(op.stage, op.microbatch)] = made;
    if (op.kind == OpKind::I)
        m_inputGrad.insert(actionKey(op));
}

/// Runs rank r's next compute step when its inputs are there; its duration is simulate()'s.
bool CommTimer::computeStep(std::size_t r)
{
    Rank& rk = m_rank[r];
    const std::size_t i = rk.timing.size();
    if (i >= rk.compute.size())
        return false;
    const Action& a = step(r, rk.compute[i]).compute;
    Ready ready;
    for (int k = 0; k < a.size(); ++k)
        if (!inputsReady(r, a.at(k), ready))
            return false;
    const SlotTiming& base = m_result.timing[r][i];
    const double free = i == 0 ? 0.0 : rk.computeEnd.back();
    const double start = std::max(free, ready.us);
    const double end = start + (base.endUs - base.startUs);
    rk.timing.push_back(SlotTiming { start, end, ready.us, ready.fromRank });
    rk.computeEnd.push_back(end);
    for (int k = 0; k < a.size(); ++k)
        complete(r, a.at(k), end);
    return true;
}

/// Whether rank r's communicator has a head whose compute before it has ended (the op is posted).
bool CommTimer::headPosted(std::size_t r) const
{
    const Rank& rk = m_rank[r];
    return rk.qp < rk.comm.size() && rk.computeBefore[rk.qp] <= rk.computeEnd.size();
}

/// The head's turn: max(posted, the communicator free). Precondition: headPosted(r).
double CommTimer::readyOf(std::size_t r) const
{
    const Rank& rk = m_rank[r];
    const std::size_t before = rk.computeBefore[rk.qp];
    const double posted = before == 0 ? 0.0 : rk.computeEnd[before - 1];
    return std::max(posted, rk.commFree);
}

/// Runs the send or receive at the head of rank r's communicator with its partner, when both are posted and the
/// partner is at the head of its own.
bool CommTimer::commStep(std::size_t r)
{
    if (!headPosted(r))
        return false;
    Rank& rk = m_rank[r];
    const CommOp& op = step(r, rk.comm[rk.qp]).comm;
    const auto partner = m_cells.find(actionKey(partnerOf(op)));
    if (partner == m_cells.end())
        return false;
    const auto q = static_cast<std::size_t>(partner->second.rank);
    Rank& rq = m_rank[q];
    if (q == r || !headPosted(q) || rq.comm[rq.qp] != partner->second.position)
        return false;
    const double readyR = readyOf(r);
    const double readyQ = readyOf(q);
    const double start = std::max(readyR, readyQ);
    const bool send = !isReceive(op.kind);
    const double end = start + transferUs(send ? op : partnerOf(op), send ? int(r) : int(q), send ? int(q) : int(r));
    const auto record = [&](std::size_t rank, const CommOp& c, double ready) {
        Rank& x = m_rank[rank];
        const std::size_t before = x.computeBefore[x.qp];
        const double posted = before == 0 ? 0.0 : x.computeEnd[before - 1];
        m_result.comms[rank].push_back(CommTiming { x.comm[x.qp], c, posted, ready, start, end });
        x.commFree = end;
        ++x.qp;
    };
    const CommOp other = partnerOf(op);
    const CommOp& recv = send ? other : op;
    m_received[actionKey(recv)] = Made { end, static_cast<int>(send ? r : q) };
    m_sendReady[actionKey(recv)] = send ? readyR : readyQ;
    record(r, op, readyR);
    record(q, other, readyQ);
    return true;
}

bool CommTimer::stuck() const
{
    for (const Rank& rk : m_rank)
        if (rk.timing.size() < rk.compute.size() || rk.qp < rk.comm.size())
            return true;
    return false;
}

/// The stuck ranks as the validator names them (deadlock.comm-order), else each rank's next step.
SimResult CommTimer::deadlock()
{
    SimResult out;
    out.ranks = m_result.ranks;
    out.deadlocked = true;
    ValidationReport report;
    try {
        report = validate(m_t);
    } catch (const Error&) {
    }
    for (const Diagnostic& d : report.diagnostics)
        if (d.severity == Severity::Error && d.rule.rfind("deadlock", 0) == 0)
            out.stuck.push_back(StuckRank { d.rank, d.position, d.action, d.message });
    if (out.stuck.empty())
        for (std::size_t r = 0; r < ranks(); ++r) {
            const Rank& rk = m_rank[r];
            const int at = rk.timing.size() < rk.compute.size() ? rk.compute[rk.timing.size()]
                : rk.qp < rk.comm.size()                        ? rk.comm[rk.qp]
                                                                : -1;
            if (at >= 0)
                out.stuck.push_back(StuckRank {
                    static_cast<int>(r), at, toString(step(r, at)), "an input or a partner that never comes" });
        }
    out.deadlockMessage = "deadlock: " + std::to_string(out.stuck.size()) + " rank(s) cannot progress";
    for (const StuckRank& s : out.stuck)
        out.deadlockMessage += "; " + s.waitsFor;
    return out;
}

void CommTimer::finish()
{
    m_result.commsTimed = true;
    m_result.computeOnlyMakespanUs = m_result.makespanUs;
    double makespan = 0.0;
    for (std::size_t r = 0; r < ranks(); ++r) {
        const Rank& rk = m_rank[r];
        m_result.ranks[r].endUs = rk.computeEnd.empty() ? 0.0 : rk.computeEnd.back();
        makespan = std::max({ makespan, m_result.ranks[r].endUs, rk.commFree });
        restampMemory(r);
        m_result.timing[r] = rk.timing;
    }
    m_result.makespanUs = makespan;
    double idle = 0.0;
    for (RankResult& rr : m_result.ranks) {
        rr.idleUs = makespan - rr.busyUs;
        idle += rr.idleUs;
    }
    const double capacity = makespan * static_cast<double>(m_result.ranks.size());
    m_result.bubbleRate = capacity > 0.0 ? idle / capacity : 0.0;
    findStalls();
}

/// Moves rank r's memory points to the new slot ends: simulate() records one at 0, one per op at its slot's end,
/// and (replica gradient sum) one at the rank's end.
void CommTimer::restampMemory(std::size_t r)
{
    std::vector<MemoryPoint>& points = m_result.ranks[r].memory;
    if (points.empty())
        return;
    std::size_t p = 1;
    const Rank& rk = m_rank[r];
    for (std::size_t i = 0; i < rk.compute.size(); ++i)
        for (int k = 0; k < step(r, rk.compute[i]).compute.size() && p < points.size(); ++k)
            points[p++].timeUs = rk.computeEnd[i];
    for (; p < points.size(); ++p)
        points[p].timeUs = m_result.ranks[r].endUs;
}

void CommTimer::findStalls()
{
    for (std::size_t r = 0; r < ranks(); ++r)
        for (std::size_t i = 0; i < m_result.comms[r].size(); ++i)
            if (isReceive(m_result.comms[r][i].op.kind))
                findStall(r, i);
}

/// A receive that was ready after its send (lateUs > 0) and whose consumer waited for it: how much of that wait the
/// lateness caused, and why it was late (its compute before it, or the communicator's previous op).
void CommTimer::findStall(std::size_t r, std::size_t index)
{
    const CommTiming& c = m_result.comms[r][index];
    const double late = c.readyUs - m_sendReady[actionKey(c.op)];
    if (late <= 0.0)
        return;
    const Rank& rk = m_rank[r];
    for (std::size_t i = 0; i < rk.compute.size(); ++i) {
        const Action& a = step(r, rk.compute[i]).compute;
        for (int k = 0; k < a.size(); ++k) {
            const Op& op = a.at(k);
            const bool uses
                = c.op.kind == CommKind::RecvF ? op.kind == OpKind::F : op.kind == OpKind::I || op.kind == OpKind::B;
            if (!uses || op.stage != c.op.stage || op.microbatch != c.op.microbatch)
                continue;
            const double free = i == 0 ? 0.0 : rk.computeEnd[i - 1];
            const SlotTiming& t = rk.timing[i];
            const double waited = t.startUs - free;
            if (waited <= 0.0 || c.endUs < t.startUs)
                return;
            StalledReceive s { static_cast<int>(r), c.position, toString(c.op), toString(a), late,
                std::min(late, waited), {} };
            const std::size_t before = rk.computeBefore[index];
            if (c.readyUs > c.postedUs && index > 0) {
                const int prev = m_result.comms[r][index - 1].position;
                s.cause = "queued behind " + toString(step(r, prev)) + " (position " + std::to_string(prev)
                    + ") on rank " + std::to_string(r) + "'s communicator";
            } else if (before > 0) {
                const int prev = rk.compute[before - 1];
                s.cause
                    = "posted only after " + toString(step(r, prev)) + " (position " + std::to_string(prev) + ") ended";
            }
            m_result.stalledReceives.push_back(std::move(s));
            return;
        }
    }
}

} // namespace

SimResult simulateWithComms(
    const TorchSchedule& program, const Schedule& compute, const CostModel& costs, const SimOptions& options)
{
    SimOptions timed = options;
    timed.recordTiming = true;
    SimResult base = simulate(compute, costs, timed);
    bool p2p = false;
    for (const auto& row : program.rows)
        for (const Step& s : row)
            p2p = p2p || (s.isComm() && isPointToPoint(s.comm.kind));
    if (base.deadlocked || !p2p || base.timing.size() != program.rows.size()) {
        if (!options.recordTiming)
            base.timing.clear();
        return base;
    }
    SimResult out = CommTimer(program, compute, costs, std::move(base)).run();
    if (!options.recordTiming)
        out.timing.clear();
    return out;
}

} // namespace dps
