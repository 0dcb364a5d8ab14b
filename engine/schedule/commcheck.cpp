// Checks of a schedule in PyTorch's whole action language (validator.h): overlap pairs, the compute
// actions, the sends and receives, and a replay of each rank's communicator in order.
#include "validator.h"

#include "csvio.h"
#include "waitgraph.h"

#include <unordered_map>

namespace dps {

namespace {

/// Where a step sits: rank and cell index in that rank's row.
struct Cell {
    int rank = -1;
    int position = -1;
};

/// What a send or receive moves: the op that produces or uses the tensor on its own rank, the partner
/// action on the neighbour stage's rank.
struct Link {
    bool send = true;
    bool forward = true;
    int peerStage = 0;
    CommOp partner;
};

Link linkOf(const CommOp& c)
{
    switch (c.kind) {
    case CommKind::SendF:
        return { true, true, c.stage + 1, CommOp { CommKind::RecvF, c.stage + 1, c.microbatch } };
    case CommKind::RecvF:
        return { false, true, c.stage - 1, CommOp { CommKind::SendF, c.stage - 1, c.microbatch } };
    case CommKind::SendB:
        return { true, false, c.stage - 1, CommOp { CommKind::RecvB, c.stage - 1, c.microbatch } };
    default:
        return { false, false, c.stage + 1, CommOp { CommKind::SendB, c.stage + 1, c.microbatch } };
    }
}

class CommCheck {
public:
    explicit CommCheck(const TorchSchedule& t)
        : m_t(t)
        , m_compute(computeSchedule(t))
    {
    }

    ValidationReport run()
    {
        index();
        if (checkOverlapRanks())
            return std::move(m_report);
        checkCompute();
        if (!m_report.valid() || !m_t.hasComms())
            return std::move(m_report);
        for (int r = 0; r < ranks(); ++r)
            for (int p = 0; p < static_cast<int>(row(r).size()); ++p)
                if (row(r)[static_cast<std::size_t>(p)].isComm())
                    checkComm(row(r)[static_cast<std::size_t>(p)].comm, Cell { r, p });
        checkMissing();
        if (m_report.valid())
            replay();
        return std::move(m_report);
    }

private:
    int ranks() const { return static_cast<int>(m_t.rows.size()); }
    const std::vector<Step>& row(int r) const { return m_t.rows[static_cast<std::size_t>(r)]; }
    int rankOf(int stage, int microbatch) const { return m_compute.placement.rankOf(stage, microbatch); }
    bool inRange(int stage, int microbatch) const
    {
        return stage >= 0 && stage < m_compute.stages && microbatch >= 0 && microbatch < m_compute.microbatches;
    }

    void add(const char* rule, Cell at, std::string action, std::string message)
    {
        m_report.diagnostics.push_back(
            Diagnostic { Severity::Error, at.rank, at.position, std::move(action), rule, std::move(message) });
    }

    const Cell* find(std::uint64_t key) const
    {
        const auto it = m_cells.find(key);
        return it == m_cells.end() ? nullptr : &it->second;
    }
    const Cell* findBackward(int stage, int microbatch) const
    {
        const Cell* b = find(actionKey(Op { stage, microbatch, OpKind::B }));
        return b ? b : find(actionKey(Op { stage, microbatch, OpKind::I }));
    }

    void index();
    bool checkOverlapRanks();
    void checkCompute();
    void checkComm(const CommOp& c, Cell at);
    void checkPointToPoint(const CommOp& c, Cell at);
    void checkMissing();
    void checkMissing(const Op& op, int rank);
    void replay();

    const TorchSchedule& m_t;
    Schedule m_compute;
    ValidationReport m_report;
    std::unordered_map<std::uint64_t, Cell> m_cells; ///< every op and comm action: its first cell
    std::vector<std::vector<int>> m_cellOfCompute; ///< per rank: compute index → cell index
    std::vector<std::vector<std::uint8_t>> m_stagesOfRank; ///< per rank, per stage: any op there
};

void CommCheck::index()
{
    m_cellOfCompute.resize(m_t.rows.size());
    m_stagesOfRank.assign(m_t.rows.size(), std::vector<std::uint8_t>(static_cast<std::size_t>(m_compute.stages), 0));
    for (int r = 0; r < ranks(); ++r) {
        for (int p = 0; p < static_cast<int>(row(r).size()); ++p) {
            const Step& step = row(r)[static_cast<std::size_t>(p)];
            if (step.isComm() && !isPointToPoint(step.comm.kind))
                continue; // a stage may be unsharded again after a reshard, and its replicas each have theirs
            if (step.isComm()) {
                if (!m_cells.emplace(actionKey(step.comm), Cell { r, p }).second)
                    add("comm.duplicate", Cell { r, p }, toString(step.comm),
                        toString(step.comm) + " appears more than once (first at rank "
                            + std::to_string(m_cells[actionKey(step.comm)].rank) + ", position "
                            + std::to_string(m_cells[actionKey(step.comm)].position) + ")");
                continue;
            }
            if (!step.isCompute())
                continue;
            m_cellOfCompute[static_cast<std::size_t>(r)].push_back(p);
            for (int k = 0; k < step.compute.size(); ++k) {
                const Op& op = step.compute.at(k);
                m_cells.emplace(actionKey(op), Cell { r, p });
                if (op.stage >= 0 && op.stage < m_compute.stages)
                    m_stagesOfRank[static_cast<std::size_t>(r)][static_cast<std::size_t>(op.stage)] = 1;
            }
        }
    }
}

/// The backward half of an overlapped pair must run where its forward ran, on the pair's rank.
bool CommCheck::checkOverlapRanks()
{
    bool found = false;
    for (int r = 0; r < ranks(); ++r) {
        for (int p = 0; p < static_cast<int>(row(r).size()); ++p) {
            const Step& step = row(r)[static_cast<std::size_t>(p)];
            if (!step.isCompute() || !step.compute.overlapped)
                continue;
            const Op& b = step.compute.backward;
            const Op forward { b.stage, b.microbatch, OpKind::F };
            const Cell* f = find(actionKey(forward));
            if (!f || f->rank == r)
                continue;
            found = true;
            add("shape.overlap-ranks", Cell { r, p }, toString(step.compute),
                "the halves of " + toString(step.compute) + " are on different ranks: " + toString(step.compute.op)
                    + " runs on rank " + std::to_string(r) + ", but " + toString(b) + " belongs on rank "
                    + std::to_string(f->rank) + ", where its forward " + toString(forward) + " runs (position "
                    + std::to_string(f->position) + ")");
        }
    }
    return found;
}

/// validate(Schedule) on the compute actions, its positions turned into cell indices.
void CommCheck::checkCompute()
{
    ValidationReport compute = validate(m_compute);
    for (Diagnostic& d : compute.diagnostics) {
        if (d.rank >= 0 && d.position >= 0 && d.rank < ranks()) {
            const auto& cells = m_cellOfCompute[static_cast<std::size_t>(d.rank)];
            if (static_cast<std::size_t>(d.position) < cells.size())
                d.position = cells[static_cast<std::size_t>(d.position)];
        }
        m_report.diagnostics.push_back(std::move(d));
    }
}

void CommCheck::checkComm(const CommOp& c, Cell at)
{
    if (isPointToPoint(c.kind))
        return checkPointToPoint(c, at);
    if (c.stage < 0 || c.stage >= m_compute.stages) {
        add("comm.range", at, toString(c),
            "stage " + std::to_string(c.stage) + " is outside [0, " + std::to_string(m_compute.stages) + ")");
        return;
    }
    if (!m_stagesOfRank[static_cast<std::size_t>(at.rank)][static_cast<std::size_t>(c.stage)])
        add("comm.wrong-rank", at, toString(c),
            toString(c) + " is on rank " + std::to_string(at.rank) + ", which runs no op of stage "
                + std::to_string(c.stage));
}

void CommCheck::checkPointToPoint(const CommOp& c, Cell at)
{
    const Link link = linkOf(c);
    const std::string text = toString(c);
    if (m_compute.stages == 0) {
        add("comm.range", at, text,
            text + " names stage " + std::to_string(c.stage) + ", but the file has no compute actions");
        return;
    }
    if (!inRange(c.stage, c.microbatch) || link.peerStage < 0 || link.peerStage >= m_compute.stages) {
        add("comm.range", at, text,
            text + " names no pair of stages: stages run 0.." + std::to_string(m_compute.stages - 1)
                + ", microbatches 0.." + std::to_string(m_compute.microbatches - 1));
        return;
    }
    const int own = rankOf(c.stage, c.microbatch);
    const int peer = rankOf(link.peerStage, c.microbatch);
    if (own != at.rank) {
        add("comm.wrong-rank", at, text,
            text + " is on rank " + std::to_string(at.rank) + " but stage " + std::to_string(c.stage)
                + " runs microbatch " + std::to_string(c.microbatch) + " on rank " + std::to_string(own));
        return;
    }
    if (peer == at.rank) {
        add("comm.same-rank", at, text,
            text + ": stages " + std::to_string(c.stage) + " and " + std::to_string(link.peerStage)
                + " are both on rank " + std::to_string(peer) + ", which passes the tensor without a send");
        return;
    }
    const Cell* partner = find(actionKey(link.partner));
    if (!partner || partner->rank != peer) {
        add(link.send ? "comm.send-without-recv" : "comm.recv-without-send", at, text,
            text + " has no matching " + toString(link.partner) + " on rank " + std::to_string(peer)
                + (partner ? " (there is one on rank " + std::to_string(partner->rank) + ")" : ""));
        return;
    }
    const Cell* use
        = link.forward ? find(actionKey(Op { c.stage, c.microbatch, OpKind::F })) : findBackward(c.stage, c.microbatch);
    const std::string what = link.forward
        ? toString(Op { c.stage, c.microbatch, OpKind::F })
        : "the backward of stage " + std::to_string(c.stage) + ", microbatch " + std::to_string(c.microbatch);
    if (!use || use->rank != at.rank)
        return; // the compute checks report the missing op
    if (link.send && use->position > at.position)
        add("order.send-before-compute", at, text,
            text + " comes before " + what + " (position " + std::to_string(use->position)
                + "), which computes what it sends");
    if (!link.send && use->position < at.position)
        add("order.recv-after-compute", at, text,
            text + " comes after " + what + " (position " + std::to_string(use->position)
                + "), which needs what it receives");
}

void CommCheck::checkMissing()
{
    for (int r = 0; r < ranks(); ++r)
        for (const Step& step : row(r))
            if (step.isCompute())
                for (int k = 0; k < step.compute.size(); ++k)
                    checkMissing(step.compute.at(k), r);
}

/// An op whose tensor crosses ranks with neither its send nor the matching receive.
void CommCheck::checkMissing(const Op& op, int rank)
{
    const bool forward = op.kind == OpKind::F;
    if (op.kind == OpKind::W)
        return;
    const int peerStage = op.stage + (forward ? 1 : -1);
    if (peerStage < 0 || peerStage >= m_compute.stages)
        return;
    const int peer = rankOf(peerStage, op.microbatch);
    if (peer == rank)
        return;
    const CommOp send { forward ? CommKind::SendF : CommKind::SendB, op.stage, op.microbatch };
    const CommOp recv { forward ? CommKind::RecvF : CommKind::RecvB, peerStage, op.microbatch };
    if (find(actionKey(send)) || find(actionKey(recv)))
        return;
    const Cell* at = find(actionKey(op));
    add("comm.missing", *at, toString(op),
        toString(op) + (forward ? "'s activation" : "'s gradient") + " goes to rank " + std::to_string(peer)
            + " but there is neither " + toString(send) + " on rank " + std::to_string(rank) + " nor " + toString(recv)
            + " on rank " + std::to_string(peer));
}

/// The replay of the communicators (see validate(TorchSchedule)).
class CommReplay {
public:
    CommReplay(const TorchSchedule& t, const std::unordered_map<std::uint64_t, Cell>& cells)
        : m_t(t)
        , m_cells(cells)
        , m_compute(t.rows.size())
        , m_comm(t.rows.size())
        , m_cp(t.rows.size(), 0)
        , m_qp(t.rows.size(), 0)
    {
        for (std::size_t r = 0; r < t.rows.size(); ++r)
            for (std::size_t p = 0; p < t.rows[r].size(); ++p) {
                const Step& s = t.rows[r][p];
                if (s.isCompute())
                    m_compute[r].push_back(static_cast<int>(p));
                else if (s.isComm() && isPointToPoint(s.comm.kind))
                    m_comm[r].push_back(static_cast<int>(p));
            }
    }

    /// Runs until nothing moves; returns the diagnostics of the stuck ranks.
    std::vector<Diagnostic> run()
    {
        for (bool progress = true; progress;) {
            progress = false;
            for (std::size_t r = 0; r < m_t.rows.size(); ++r) {
                while (computeReady(r)) {
                    ++m_cp[r];
                    progress = true;
                }
                if (commReady(r)) {
                    const Cell* partner = partnerOf(r);
                    ++m_qp[r];
                    ++m_qp[static_cast<std::size_t>(partner->rank)];
                    progress = true;
                }
            }
        }
        return report();
    }

private:
    const Step& step(std::size_t r, int position) const { return m_t.rows[r][static_cast<std::size_t>(position)]; }
    bool commLeft(std::size_t r) const { return m_qp[r] < m_comm[r].size(); }
    int commHead(std::size_t r) const { return m_comm[r][m_qp[r]]; }
    /// Whether the compute of rank r before `position` is done.
    bool computeDoneBefore(std::size_t r, int position) const
    {
        return m_cp[r] >= m_compute[r].size() || m_compute[r][m_cp[r]] > position;
    }
    /// Whether the receive `key` of rank r has completed (it is behind the communicator's head).
    bool received(std::size_t r, std::uint64_t key) const
    {
        const auto it = m_cells.find(key);
        if (it == m_cells.end() || it->second.rank != static_cast<int>(r))
            return true; // no receive on this rank: the input is local
        return !commLeft(r) || it->second.position < commHead(r);
    }

    bool computeReady(std::size_t r) const
    {
        if (m_cp[r] >= m_compute[r].size())
            return false;
        const Action& a = step(r, m_compute[r][m_cp[r]]).compute;
        for (int k = 0; k < a.size(); ++k) {
            const Op& op = a.at(k);
            if (op.kind == OpKind::W)
                continue;
            const CommKind kind = op.kind == OpKind::F ? CommKind::RecvF : CommKind::RecvB;
            if (!received(r, actionKey(CommOp { kind, op.stage, op.microbatch })))
                return false;
        }
        return true;
    }

    const Cell* partnerOf(std::size_t r) const
    {
        const auto it = m_cells.find(actionKey(linkOf(step(r, commHead(r)).comm).partner));
        return it == m_cells.end() ? nullptr : &it->second;
    }

    bool commReady(std::size_t r) const
    {
        if (!commLeft(r) || !computeDoneBefore(r, commHead(r)))
            return false;
        const Cell* partner = partnerOf(r);
        const auto q = static_cast<std::size_t>(partner->rank);
        return commLeft(q) && commHead(q) == partner->position && computeDoneBefore(q, partner->position);
    }

    std::string describe(std::size_t r) const;
    std::vector<Diagnostic> report() const;

    const TorchSchedule& m_t;
    const std::unordered_map<std::uint64_t, Cell>& m_cells;
    std::vector<std::vector<int>> m_compute; ///< per rank: cell indices of compute steps
    std::vector<std::vector<int>> m_comm; ///< per rank: cell indices of sends and receives
    std::vector<std::size_t> m_cp; ///< per rank: compute steps done
    std::vector<std::size_t> m_qp; ///< per rank: sends and receives done
};

/// Why rank r's communicator cannot go on.
std::string CommReplay::describe(std::size_t r) const
{
    const int head = commHead(r);
    const std::string headText = toString(step(r, head));
    std::string s = "rank " + std::to_string(r) + "'s communicator is at " + headText + " (position "
        + std::to_string(head) + ")";
    if (!computeDoneBefore(r, head))
        return s + ", after its compute " + toString(step(r, m_compute[r][m_cp[r]])) + " (position "
            + std::to_string(m_compute[r][m_cp[r]]) + "), which waits for a receive queued behind it";
    const Cell* partner = partnerOf(r);
    const auto q = static_cast<std::size_t>(partner->rank);
    s += ", waiting for rank " + std::to_string(q) + " to reach " + toString(step(q, partner->position)) + " (position "
        + std::to_string(partner->position) + ")";
    if (commLeft(q) && commHead(q) != partner->position)
        return s + ", but rank " + std::to_string(q) + "'s communicator is at " + toString(step(q, commHead(q)))
            + " (position " + std::to_string(commHead(q)) + ") before it";
    return s + ", which waits for rank " + std::to_string(q) + "'s compute before it";
}

std::vector<Diagnostic> CommReplay::report() const
{
    std::vector<int> target(m_t.rows.size(), -1);
    for (std::size_t r = 0; r < m_t.rows.size(); ++r)
        if (commLeft(r))
            target[r] = computeDoneBefore(r, commHead(r)) ? partnerOf(r)->rank : static_cast<int>(r);
    std::vector<std::string> cycleOf(target.size());
    for (const auto& cycle : findCycles(target))
        for (int r : cycle)
            cycleOf[static_cast<std::size_t>(r)] = cycleText(cycle);
    std::vector<Diagnostic> out;
    for (std::size_t r = 0; r < m_t.rows.size(); ++r) {
        if (!commLeft(r))
            continue;
        Diagnostic d { Severity::Error, static_cast<int>(r), commHead(r), toString(step(r, commHead(r))),
            "deadlock.comm-order", "rank " + std::to_string(r) + " is stuck: " + describe(r), !cycleOf[r].empty() };
        if (d.inCycle)
            d.message += " (wait-for cycle: " + cycleOf[r] + ")";
        out.push_back(std::move(d));
    }
    return out;
}

void CommCheck::replay()
{
    for (Diagnostic& d : CommReplay(m_t, m_cells).run())
        m_report.diagnostics.push_back(std::move(d));
}

} // namespace

ValidationReport validate(const TorchSchedule& schedule)
{
    return CommCheck(schedule).run();
}

} // namespace dps
