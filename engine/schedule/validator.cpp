// The validator. Every check is a pass over flat arrays indexed by stage * microbatches + microbatch, so the
// whole run is O(ops + stages × microbatches) with no maps in the hot loops. A quick pass (one byte per
// stage and microbatch) clears a sound schedule; a detailed pass with slot tables runs only to explain
// findings. Then the deadlock replay, then the kind's size rules.
//
// Rule ids (stable): shape.rank-count, shape.sizes, shape.placement, shape.stage-range,
// shape.microbatch-range, shape.overlap-pair, shape.overlap-ranks; counts.duplicate, counts.b-and-i,
// counts.missing-microbatch, counts.missing-forward, counts.missing-backward, counts.i-without-w, counts.w-without-i;
// order.backward-before-forward, order.w-before-i; placement.inconsistent; deadlock;
// constraint.<rule of ConstraintError>, constraint.stage-count, constraint.invalid. A rule with more than
// 100 findings reports the first 100 and one "... and N more" line.
//
// Where a finding concerns one op, Diagnostic::action is that op's text (e.g. "0I1", the backward half of
// an overlapped pair being named on its own); pair-shape and deadlock findings name the whole slot.
#include "validator.h"

#include "base/errors.h"
#include "generator.h"
#include "waitgraph.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string_view>

namespace dps {

std::string_view severityName(Severity severity)
{
    switch (severity) {
    case Severity::Error:
        return "error";
    case Severity::Warning:
        return "warning";
    case Severity::Info:
        return "info";
    }
    return "error";
}

std::string format(const Diagnostic& d)
{
    std::string where;
    if (d.rank >= 0)
        where = "rank " + std::to_string(d.rank);
    if (d.position >= 0)
        where += (where.empty() ? "" : ", ") + std::string("position ") + std::to_string(d.position);
    if (!d.action.empty())
        where += (where.empty() ? "(" : " (") + d.action + ")";
    std::string out(severityName(d.severity));
    out += ": ";
    if (!where.empty())
        out += where + ": ";
    return out + d.message;
}

bool ValidationReport::valid() const
{
    return errorCount() == 0;
}

std::size_t ValidationReport::errorCount() const
{
    return static_cast<std::size_t>(std::count_if(
        diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) { return d.severity == Severity::Error; }));
}

namespace {

constexpr std::int32_t kNone = -1;
/// Findings of one rule beyond this many are summarised in one extra diagnostic.
constexpr int kMaxPerRule = 100;

/// Bits of the per-(stage, microbatch) info byte.
constexpr std::uint8_t kSeenForward = 1; ///< quick pass: F seen
constexpr std::uint8_t kSeenBackward = 2; ///< quick pass: B or I seen
constexpr std::uint8_t kSeenWeight = 4; ///< quick pass: W seen
constexpr std::uint8_t kBackwardIsI = 8; ///< the (first) backward is an I, not a B
constexpr std::uint8_t kMisplaced = 16; ///< detailed pass: some op of the pair is not on the placement's rank
constexpr std::uint8_t kForwardDone = 32; ///< replay: F has run
constexpr std::uint8_t kBackwardDone = 64; ///< replay: B or I has run
constexpr std::uint8_t kWeightDone = 128; ///< replay: W has run

bool isBackward(OpKind kind)
{
    return kind == OpKind::B || kind == OpKind::I;
}

std::string stageMb(int stage, int microbatch)
{
    return "stage " + std::to_string(stage) + ", microbatch " + std::to_string(microbatch);
}

std::string opText(int stage, OpKind kind, int microbatch)
{
    return toString(Op { stage, microbatch, kind });
}

/// Collects diagnostics, capping each rule at kMaxPerRule.
class Sink {
public:
    /// Whether a finding of `rule` should be built (false once the rule is over its cap; counted).
    bool wants(std::string_view rule)
    {
        auto it = m_counts.find(rule); // no allocation per finding: a schedule can have millions
        if (it == m_counts.end())
            it = m_counts.emplace(std::string(rule), 0).first;
        return ++it->second <= kMaxPerRule;
    }

    void add(Diagnostic d) { m_report.diagnostics.push_back(std::move(d)); }

    void add(const std::string& rule, int rank, int position, std::string action, std::string message)
    {
        if (wants(rule))
            add(Diagnostic { Severity::Error, rank, position, std::move(action), rule, std::move(message) });
    }

    std::size_t errorCount() const { return m_report.errorCount(); }

    ValidationReport finish()
    {
        for (const auto& [rule, count] : m_counts) {
            if (count > kMaxPerRule)
                add(Diagnostic { Severity::Error, -1, -1, "", rule,
                    "... and " + std::to_string(count - kMaxPerRule) + " more findings of rule " + rule });
        }
        return std::move(m_report);
    }

private:
    ValidationReport m_report;
    std::map<std::string, int, std::less<>> m_counts;
};

/// Where the ops of each (stage, microbatch) sit, as global slot indices (slots numbered rank by rank).
struct OpTable {
    std::vector<std::int32_t> forward; ///< slot of F
    std::vector<std::int32_t> backward; ///< slot of B or I
    std::vector<std::int32_t> weight; ///< slot of W
    std::vector<std::uint8_t> info; ///< kBackwardIsI, kMisplaced, and the replay's done bits
    std::vector<std::uint8_t> microbatchSeen; ///< per microbatch: any op in range
};

class Validator {
public:
    explicit Validator(const Schedule& schedule)
        : m_s(schedule)
        , m_ranks(static_cast<int>(schedule.order.size()))
        , m_stages(schedule.stages)
        , m_mbs(schedule.microbatches)
    {
    }

    /// A quick pass with one byte per (stage, microbatch) decides whether the schedule is structurally
    /// sound; only when it is not does the detailed pass (slot tables, one diagnostic per finding) run.
    ValidationReport run()
    {
        if (checkSizes()) {
            allocate();
            if (m_sink.errorCount() > 0 || !quickStructure())
                checkStructure();
            if (m_sink.errorCount() == 0)
                checkDeadlock();
        }
        checkKind();
        return m_sink.finish();
    }

private:
    friend class Replay;

    std::size_t index(int stage, int microbatch) const
    {
        return static_cast<std::size_t>(stage) * static_cast<std::size_t>(m_mbs) + static_cast<std::size_t>(microbatch);
    }
    int rankOfSlot(std::int32_t slot) const
    {
        return static_cast<int>(std::upper_bound(m_base.begin(), m_base.end(), slot) - m_base.begin()) - 1;
    }
    int positionOfSlot(std::int32_t slot) const { return slot - m_base[static_cast<std::size_t>(rankOfSlot(slot))]; }
    std::string where(std::int32_t slot) const
    {
        return "rank " + std::to_string(rankOfSlot(slot)) + ", position " + std::to_string(positionOfSlot(slot));
    }
    /// Whether two recorded ops of pair `i` sit on one rank (known without a search unless misplaced).
    bool sameRank(std::size_t i, std::int32_t a, std::int32_t b) const
    {
        if (m_placementUsable && !(m_ops.info[i] & kMisplaced))
            return true;
        return rankOfSlot(a) == rankOfSlot(b);
    }
    void addAt(const std::string& rule, std::int32_t slot, std::string action, std::string message)
    {
        m_sink.add(rule, rankOfSlot(slot), positionOfSlot(slot), std::move(action), std::move(message));
    }

    bool checkSizes();
    bool checkPlacementShape();
    void allocate();
    bool quickStructure();
    bool quickSlot(const Action& action, int rank);
    bool quickOp(const Op& op, int rank);
    bool quickCounts() const;
    void checkStructure();
    void scanRank(int rank);
    void checkPairShape(const Action& action, int rank, int position);
    bool inRange(const Op& op) const
    {
        return op.stage >= 0 && op.stage < m_stages && op.microbatch >= 0 && op.microbatch < m_mbs;
    }
    /// The placement's rank for an op; the per-stage table is read directly (the common, hot case).
    int placedRank(const Op& op) const
    {
        if (m_perStage)
            return (*m_perStage)[static_cast<std::size_t>(op.stage)];
        return m_s.placement.rankOf(op.stage, op.microbatch);
    }
    void reportRange(const Op& op, int rank, int position);
    void reportPlacement(const Op& op, int rank, int position);
    void reportOverlapRanks(const Action& a, int rank, int position);
    void recordOp(const Op& op, int rank, int position, std::int32_t slot);
    void recordBackward(const Op& op, int rank, int position, std::int32_t slot);
    void checkCounts();
    void checkPair(int stage, int microbatch);
    void checkMissing(int stage, int microbatch);
    void checkWeight(int stage, int microbatch);
    void checkDeadlock();
    void checkKind();

    const Schedule& m_s;
    int m_ranks;
    int m_stages;
    int m_mbs;
    bool m_placementUsable = true;
    const std::vector<int>* m_perStage = nullptr; ///< the placement's rank of each stage, when per stage
    std::vector<std::int32_t> m_base; ///< first global slot of each rank; m_base[ranks] = total
    OpTable m_ops;
    Sink m_sink;
};

bool Validator::checkSizes()
{
    if (m_s.ranks != m_ranks)
        m_sink.add("shape.rank-count", -1, -1, "",
            "the schedule says " + std::to_string(m_s.ranks) + " ranks but has " + std::to_string(m_ranks)
                + " rows of actions");
    if (m_stages < 0 || m_mbs < 0) {
        m_sink.add("shape.sizes", -1, -1, "", "stages and microbatches must not be negative");
        return false;
    }
    const std::size_t slots = m_s.slotCount();
    const double pairs = static_cast<double>(m_stages) * static_cast<double>(m_mbs);
    if (slots >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())
        || pairs > static_cast<double>(std::max<std::size_t>(8 * slots, std::size_t(1) << 20))) {
        m_sink.add("shape.sizes", -1, -1, "",
            std::to_string(m_stages) + " stages × " + std::to_string(m_mbs) + " microbatches cannot be checked against "
                + std::to_string(slots) + " slots");
        return false;
    }
    m_placementUsable = checkPlacementShape();
    if (m_placementUsable && m_s.placement.isPerStage())
        m_perStage = &m_s.placement.rankOfStage();
    return true;
}

bool Validator::checkPlacementShape()
{
    if (m_s.placement.stageCount() == m_stages)
        return true;
    m_sink.add("shape.placement", -1, -1, "",
        "the placement covers " + std::to_string(m_s.placement.stageCount()) + " stages, the schedule has "
            + std::to_string(m_stages));
    return false;
}

void Validator::allocate()
{
    const std::size_t n = static_cast<std::size_t>(m_stages) * static_cast<std::size_t>(m_mbs);
    m_ops.info.assign(n, 0);
    m_ops.microbatchSeen.assign(static_cast<std::size_t>(m_mbs), 0);
    m_base.assign(static_cast<std::size_t>(m_ranks) + 1, 0);
    for (int r = 0; r < m_ranks; ++r)
        m_base[static_cast<std::size_t>(r) + 1] = m_base[static_cast<std::size_t>(r)]
            + static_cast<std::int32_t>(m_s.order[static_cast<std::size_t>(r)].size());
}

/// True when no structural rule is broken. Ranks are scanned in order and every op must be on its placed
/// rank, so "seen earlier in the scan" means "earlier on the same rank".
bool Validator::quickStructure()
{
    for (int r = 0; r < m_ranks; ++r)
        for (const Action& a : m_s.order[static_cast<std::size_t>(r)])
            if (!quickSlot(a, r))
                return false;
    return quickCounts();
}

bool Validator::quickSlot(const Action& a, int rank)
{
    if (!a.overlapped)
        return quickOp(a.op, rank);
    const bool shape = a.op.kind == OpKind::F && isBackward(a.backward.kind)
        && (a.op.stage != a.backward.stage || a.op.microbatch != a.backward.microbatch);
    return shape && quickOp(a.op, rank) && quickOp(a.backward, rank);
}

bool Validator::quickOp(const Op& op, int rank)
{
    if (!inRange(op) || placedRank(op) != rank)
        return false;
    m_ops.microbatchSeen[static_cast<std::size_t>(op.microbatch)] = 1;
    std::uint8_t& info = m_ops.info[index(op.stage, op.microbatch)];
    switch (op.kind) {
    case OpKind::F:
        if (info & kSeenForward)
            return false;
        info |= kSeenForward;
        return true;
    case OpKind::W:
        if ((info & kSeenWeight) || (info & (kSeenBackward | kBackwardIsI)) != (kSeenBackward | kBackwardIsI))
            return false;
        info |= kSeenWeight;
        return true;
    default:
        if ((info & kSeenBackward) || !(info & kSeenForward))
            return false;
        info |= kSeenBackward | (op.kind == OpKind::I ? kBackwardIsI : 0);
        return true;
    }
}

/// Every microbatch present; every (stage, microbatch) with its F and backward, and an I with its W.
bool Validator::quickCounts() const
{
    if (std::find(m_ops.microbatchSeen.begin(), m_ops.microbatchSeen.end(), 0) != m_ops.microbatchSeen.end())
        return false;
    return std::all_of(m_ops.info.begin(), m_ops.info.end(), [](std::uint8_t info) {
        return (info & (kSeenForward | kSeenBackward)) == (kSeenForward | kSeenBackward)
            && (!(info & kBackwardIsI) || (info & kSeenWeight));
    });
}

/// The detailed pass: slot tables, then one diagnostic per finding.
void Validator::checkStructure()
{
    const std::size_t n = m_ops.info.size();
    m_ops.forward.assign(n, kNone);
    m_ops.backward.assign(n, kNone);
    m_ops.weight.assign(n, kNone);
    std::fill(m_ops.info.begin(), m_ops.info.end(), 0);
    std::fill(m_ops.microbatchSeen.begin(), m_ops.microbatchSeen.end(), 0);
    for (int r = 0; r < m_ranks; ++r)
        scanRank(r);
    checkCounts();
}

/// One pass over a rank's slots: ranges, pair shape, placement, and recording (duplicates).
void Validator::scanRank(int r)
{
    const auto& row = m_s.order[static_cast<std::size_t>(r)];
    const std::int32_t base = m_base[static_cast<std::size_t>(r)];
    for (int p = 0; p < static_cast<int>(row.size()); ++p) {
        const Action& a = row[static_cast<std::size_t>(p)];
        if (a.overlapped)
            checkPairShape(a, r, p);
        for (int k = 0; k < a.size(); ++k) {
            const Op& op = a.at(k);
            if (!inRange(op)) {
                reportRange(op, r, p);
                continue;
            }
            if (m_placementUsable && placedRank(op) != r) {
                if (k == 1 && inRange(a.op) && placedRank(a.op) == r)
                    reportOverlapRanks(a, r, p);
                else
                    reportPlacement(op, r, p);
            }
            recordOp(op, r, p, base + p);
        }
    }
}

void Validator::checkPairShape(const Action& a, int rank, int position)
{
    if (a.op.kind == OpKind::F && isBackward(a.backward.kind))
        return;
    m_sink.add("shape.overlap-pair", rank, position, toString(a),
        "an overlapped pair must be a forward (F) and a backward (B or I), not " + toString(a.op) + " and "
            + toString(a.backward));
}

void Validator::reportRange(const Op& op, int rank, int position)
{
    if (op.stage < 0 || op.stage >= m_stages)
        m_sink.add("shape.stage-range", rank, position, toString(op),
            "stage " + std::to_string(op.stage) + " is outside [0, " + std::to_string(m_stages) + ")");
    else
        m_sink.add("shape.microbatch-range", rank, position, toString(op),
            "microbatch " + std::to_string(op.microbatch) + " is outside [0, " + std::to_string(m_mbs) + ")");
}

void Validator::reportPlacement(const Op& op, int rank, int position)
{
    m_ops.info[index(op.stage, op.microbatch)] |= kMisplaced;
    if (!m_sink.wants("placement.inconsistent"))
        return;
    const int placed = placedRank(op);
    const std::string pair = stageMb(op.stage, op.microbatch);
    const std::string expected
        = placed < 0 ? "has no rank for " + pair : "puts " + pair + " on rank " + std::to_string(placed);
    m_sink.add(Diagnostic { Severity::Error, rank, position, toString(op), "placement.inconsistent",
        toString(op) + " is on rank " + std::to_string(rank) + " but the placement " + expected });
}

/// An overlapped pair whose forward half is on its rank and whose backward half belongs to another.
void Validator::reportOverlapRanks(const Action& a, int rank, int position)
{
    m_ops.info[index(a.backward.stage, a.backward.microbatch)] |= kMisplaced;
    if (!m_sink.wants("shape.overlap-ranks"))
        return;
    m_sink.add(Diagnostic { Severity::Error, rank, position, toString(a), "shape.overlap-ranks",
        "the halves of " + toString(a) + " are on different ranks: " + toString(a.op) + " runs on rank "
            + std::to_string(rank) + ", but " + toString(a.backward) + " belongs on rank "
            + std::to_string(placedRank(a.backward)) + ", where the placement puts "
            + stageMb(a.backward.stage, a.backward.microbatch) });
}

void Validator::recordOp(const Op& op, int rank, int position, std::int32_t slot)
{
    m_ops.microbatchSeen[static_cast<std::size_t>(op.microbatch)] = 1;
    if (isBackward(op.kind))
        return recordBackward(op, rank, position, slot);
    const std::size_t i = index(op.stage, op.microbatch);
    std::int32_t& cell = op.kind == OpKind::F ? m_ops.forward[i] : m_ops.weight[i];
    if (cell == kNone) {
        cell = slot;
        return;
    }
    if (m_sink.wants("counts.duplicate"))
        m_sink.add(Diagnostic { Severity::Error, rank, position, toString(op), "counts.duplicate",
            toString(op) + " appears more than once (first at " + where(cell) + ")" });
}

void Validator::recordBackward(const Op& op, int rank, int position, std::int32_t slot)
{
    const std::size_t i = index(op.stage, op.microbatch);
    std::int32_t& cell = m_ops.backward[i];
    if (cell == kNone) {
        cell = slot;
        if (op.kind == OpKind::I)
            m_ops.info[i] |= kBackwardIsI;
        return;
    }
    const Op first { op.stage, op.microbatch, (m_ops.info[i] & kBackwardIsI) ? OpKind::I : OpKind::B };
    const bool same = first.kind == op.kind;
    const std::string rule = same ? "counts.duplicate" : "counts.b-and-i";
    if (!m_sink.wants(rule))
        return;
    const std::string message = same ? toString(op) + " appears more than once (first at " + where(cell) + ")"
                                     : stageMb(op.stage, op.microbatch) + " has both " + toString(first) + " (at "
            + where(cell) + ") and " + toString(op) + ": one backward, B or I with its W";
    m_sink.add(Diagnostic { Severity::Error, rank, position, toString(op), rule, message });
}

void Validator::checkCounts()
{
    for (int m = 0; m < m_mbs; ++m) {
        // wants() before the message: a 12-byte CSV can name microbatch 777776 (found by fuzzing).
        if (!m_ops.microbatchSeen[static_cast<std::size_t>(m)] && m_sink.wants("counts.missing-microbatch"))
            m_sink.add(Diagnostic { Severity::Error, -1, -1, "", "counts.missing-microbatch",
                "microbatch " + std::to_string(m) + " has no ops at all (microbatches run 0.."
                    + std::to_string(m_mbs - 1) + ")" });
    }
    for (int s = 0; s < m_stages; ++s)
        for (int m = 0; m < m_mbs; ++m)
            if (m_ops.microbatchSeen[static_cast<std::size_t>(m)])
                checkPair(s, m);
}

/// Counts and per-rank order of one (stage, microbatch); strings are built only for findings.
void Validator::checkPair(int stage, int microbatch)
{
    const std::size_t i = index(stage, microbatch);
    const std::int32_t f = m_ops.forward[i];
    const std::int32_t b = m_ops.backward[i];
    if (f == kNone || b == kNone)
        checkMissing(stage, microbatch);
    else if (b <= f && sameRank(i, f, b)) {
        const std::string fwd = opText(stage, OpKind::F, microbatch);
        const std::string bwd = opText(stage, (m_ops.info[i] & kBackwardIsI) ? OpKind::I : OpKind::B, microbatch);
        addAt("order.backward-before-forward", b, bwd,
            b == f ? bwd + " is in the same slot as its forward " + fwd
                   : bwd + " runs before its forward " + fwd + " (position " + std::to_string(positionOfSlot(f)) + ")");
    }
    if (m_ops.weight[i] != kNone || (b != kNone && (m_ops.info[i] & kBackwardIsI)))
        checkWeight(stage, microbatch);
}

void Validator::checkMissing(int stage, int microbatch)
{
    // wants() before any message is built: a 20-byte CSV can name stage 422608, and a message per missing
    // op past the rule's cap made validation take seconds (found by fuzzing).
    const std::size_t i = index(stage, microbatch);
    const std::int32_t f = m_ops.forward[i];
    const std::int32_t b = m_ops.backward[i];
    const auto found = [this](const char* rule, int rank, int position, std::string action, std::string message) {
        m_sink.add(Diagnostic { Severity::Error, rank, position, std::move(action), rule, std::move(message) });
    };
    const int placed = m_placementUsable ? m_s.placement.rankOf(stage, microbatch) : -1;
    if (f != kNone) {
        if (!m_sink.wants("counts.missing-backward"))
            return;
        const std::string fwd = opText(stage, OpKind::F, microbatch);
        found("counts.missing-backward", rankOfSlot(f), positionOfSlot(f), fwd,
            fwd + " has no backward (" + opText(stage, OpKind::B, microbatch) + ", or "
                + opText(stage, OpKind::I, microbatch) + " with its " + opText(stage, OpKind::W, microbatch) + ")");
        return;
    }
    if (m_sink.wants("counts.missing-forward")) {
        const std::string fwd = opText(stage, OpKind::F, microbatch);
        const std::string message = "there is no forward " + fwd + " (" + stageMb(stage, microbatch) + ")";
        const std::int32_t other = b != kNone ? b : m_ops.weight[i];
        if (other != kNone) {
            const OpKind kind = b == kNone ? OpKind::W : (m_ops.info[i] & kBackwardIsI) ? OpKind::I : OpKind::B;
            const std::string op = opText(stage, kind, microbatch);
            found("counts.missing-forward", rankOfSlot(other), positionOfSlot(other), op,
                op + " has no forward: " + message);
        } else {
            found("counts.missing-forward", placed, -1, fwd, message);
        }
    }
    if (b == kNone && m_sink.wants("counts.missing-backward"))
        found("counts.missing-backward", placed, -1, opText(stage, OpKind::B, microbatch),
            "there is no backward of " + stageMb(stage, microbatch));
}

/// W after its I on the same rank; every I has its W; no W without an I.
void Validator::checkWeight(int stage, int microbatch)
{
    const std::size_t i = index(stage, microbatch);
    const std::int32_t b = m_ops.backward[i];
    const std::int32_t w = m_ops.weight[i];
    const bool hasI = b != kNone && (m_ops.info[i] & kBackwardIsI);
    const std::string input = opText(stage, OpKind::I, microbatch);
    const std::string weight = opText(stage, OpKind::W, microbatch);
    if (w == kNone) {
        addAt("counts.i-without-w", b, input,
            input + " has no later " + weight + " on rank " + std::to_string(rankOfSlot(b)));
    } else if (!hasI) {
        addAt("counts.w-without-i", w, weight,
            weight + " has no " + input + ": "
                + (b == kNone ? "there is no " + input
                              : opText(stage, OpKind::B, microbatch)
                            + " is a full backward that already computes the weight gradient"));
    } else if (w < b && sameRank(i, w, b)) {
        addAt("order.w-before-i", w, weight,
            weight + " runs before its " + input + " (position " + std::to_string(positionOfSlot(b)) + ")");
    }
}

/// Replays the schedule with blocking receives: each rank runs its slots in order; a slot runs when
/// every op in it has its inputs (F of s−1, the backward of s+1, the own F, the own I). Sends never
/// block. A rank that cannot go on is parked until the op it waits for runs, so the replay is O(ops).
class Replay {
    static constexpr std::uint64_t kNoKey = ~std::uint64_t(0);

public:
    explicit Replay(Validator& v)
        : m_v(v)
        , m_info(v.m_ops.info)
        , m_stride(static_cast<std::size_t>(v.m_mbs))
        , m_next(static_cast<std::size_t>(v.m_ranks), 0)
        , m_waitingFor(static_cast<std::size_t>(v.m_ranks), kNoKey)
    {
    }

    void run()
    {
        for (int r = m_v.m_ranks - 1; r >= 0; --r)
            m_queue.push_back(r);
        while (!m_queue.empty()) {
            const int r = m_queue.back();
            m_queue.pop_back();
            advance(r);
        }
        report();
    }

private:
    const std::vector<Action>& row(int rank) const { return m_v.m_s.order[static_cast<std::size_t>(rank)]; }
    int rankOf(int stage, int microbatch) const { return m_v.m_s.placement.rankOf(stage, microbatch); }

    /// Whether `op` cannot start yet; then sets `need` to its first missing input.
    bool blocked(const Op& op, Op& need) const
    {
        const std::size_t i = m_v.index(op.stage, op.microbatch);
        switch (op.kind) {
        case OpKind::F:
            if (op.stage == 0 || (m_info[i - m_stride] & kForwardDone))
                return false;
            need = Op { op.stage - 1, op.microbatch, OpKind::F };
            return true;
        case OpKind::I:
        case OpKind::B:
            if (!(m_info[i] & kForwardDone)) {
                need = Op { op.stage, op.microbatch, OpKind::F };
                return true;
            }
            if (op.stage + 1 == m_v.m_stages || (m_info[i + m_stride] & kBackwardDone))
                return false;
            need = Op { op.stage + 1, op.microbatch, (m_info[i + m_stride] & kBackwardIsI) ? OpKind::I : OpKind::B };
            return true;
        case OpKind::W:
            if (m_info[i] & kBackwardDone)
                return false;
            need = Op { op.stage, op.microbatch, OpKind::I };
            return true;
        }
        return false;
    }

    bool slotBlocked(const Action& a, Op& need) const
    {
        return blocked(a.op, need) || (a.overlapped && blocked(a.backward, need));
    }

    /// Ranks resume where they stopped, one after another: fetching the slots a rank will read next while
    /// the others run hides most of the memory latency of large schedules.
    static void prefetch(const std::vector<Action>& ops, int position)
    {
#if defined(__GNUC__)
        if (position < static_cast<int>(ops.size()))
            __builtin_prefetch(ops.data() + position);
#endif
    }

    /// The key of an op a rank can wait on: its pair index, and whether it is the forward or the backward.
    std::uint64_t key(const Op& op) const
    {
        return m_v.index(op.stage, op.microbatch) * 2 + (op.kind == OpKind::F ? 0 : 1);
    }

    void advance(int rank)
    {
        const auto& ops = row(rank);
        const int size = static_cast<int>(ops.size());
        int next = m_next[static_cast<std::size_t>(rank)];
        Op need;
        for (; next < size && !slotBlocked(ops[static_cast<std::size_t>(next)], need); ++next) {
            const Action& a = ops[static_cast<std::size_t>(next)];
            complete(a.op, rank);
            if (a.overlapped)
                complete(a.backward, rank);
        }
        m_next[static_cast<std::size_t>(rank)] = next;
        m_waitingFor[static_cast<std::size_t>(rank)] = next < size ? key(need) : kNoKey;
        prefetch(ops, next + 2);
        prefetch(ops, next + 4);
    }

    void complete(const Op& op, int rank)
    {
        const std::size_t i = m_v.index(op.stage, op.microbatch);
        if (op.kind == OpKind::F) {
            m_info[i] |= kForwardDone;
            if (op.stage + 1 < m_v.m_stages)
                wake(rankOf(op.stage + 1, op.microbatch), rank, i * 2);
        } else if (op.kind == OpKind::W) {
            m_info[i] |= kWeightDone;
        } else {
            m_info[i] |= kBackwardDone;
            if (op.stage > 0)
                wake(rankOf(op.stage - 1, op.microbatch), rank, i * 2 + 1);
        }
    }

    /// Queues `target` when it is parked waiting for exactly the op `done` (a key) that just ran. Ops
    /// a rank waits for on its own rank never come, so only other ranks are woken.
    void wake(int target, int running, std::uint64_t done)
    {
        if (target == running || m_waitingFor[static_cast<std::size_t>(target)] != done)
            return;
        m_waitingFor[static_cast<std::size_t>(target)] = kNoKey;
        m_queue.push_back(target);
    }

    /// Position of `op` in its rank's order (a linear search: only for reporting a deadlock).
    int positionOf(const Op& op, int rank) const
    {
        const auto& ops = row(rank);
        for (std::size_t p = 0; p < ops.size(); ++p)
            if (ops[p].op == op || (ops[p].overlapped && ops[p].backward == op))
                return static_cast<int>(p);
        return -1;
    }

    std::string describeWait(int rank, const Op& need, int owner) const;
    std::vector<int> waitTargets() const;
    void report();

    Validator& m_v;
    std::vector<std::uint8_t>& m_info;
    std::size_t m_stride;
    std::vector<int> m_next;
    std::vector<std::uint64_t> m_waitingFor; ///< key of the op a parked rank waits for; kNoKey if none
    std::vector<int> m_queue;
};

std::string Replay::describeWait(int rank, const Op& need, int owner) const
{
    const std::string needText = toString(need);
    const std::string ownerText = owner == rank ? "the same rank" : "rank " + std::to_string(owner);
    const std::string s = need.kind == OpKind::F ? needText + (owner == rank ? " on " : " from ") + ownerText
                                                 : "the gradient from " + needText + " on " + ownerText;
    const int needPos = positionOf(need, owner);
    const int ownerNext = m_next[static_cast<std::size_t>(owner)];
    if (owner == rank)
        return s + ", which comes later at position " + std::to_string(needPos);
    if (needPos == ownerNext)
        return s + ", which rank " + std::to_string(owner) + " is itself stuck at (position " + std::to_string(needPos)
            + ")";
    return s + ", which is queued behind " + toString(row(owner)[static_cast<std::size_t>(ownerNext)]) + " at position "
        + std::to_string(ownerNext);
}

/// For each stuck rank, the rank it waits on; -1 for ranks that finished.
std::vector<int> Replay::waitTargets() const
{
    std::vector<int> target(static_cast<std::size_t>(m_v.m_ranks), -1);
    for (int r = 0; r < m_v.m_ranks; ++r) {
        const int next = m_next[static_cast<std::size_t>(r)];
        Op need;
        if (next < static_cast<int>(row(r).size()) && slotBlocked(row(r)[static_cast<std::size_t>(next)], need))
            target[static_cast<std::size_t>(r)] = rankOf(need.stage, need.microbatch);
    }
    return target;
}

void Replay::report()
{
    const std::vector<int> target = waitTargets();
    std::vector<std::string> cycleOf(target.size());
    for (const auto& cycle : findCycles(target))
        for (int r : cycle)
            cycleOf[static_cast<std::size_t>(r)] = cycleText(cycle);
    for (int r = 0; r < m_v.m_ranks; ++r) {
        if (target[static_cast<std::size_t>(r)] < 0)
            continue;
        const int next = m_next[static_cast<std::size_t>(r)];
        const Action& a = row(r)[static_cast<std::size_t>(next)];
        Op need;
        slotBlocked(a, need);
        Diagnostic d { Severity::Error, r, next, toString(a), "deadlock",
            "rank " + std::to_string(r) + " is stuck at " + toString(a) + ", waiting for "
                + describeWait(r, need, target[static_cast<std::size_t>(r)]),
            !cycleOf[static_cast<std::size_t>(r)].empty() };
        if (d.inCycle)
            d.message += " (wait-for cycle: " + cycleOf[static_cast<std::size_t>(r)] + ")";
        m_v.m_sink.add(std::move(d));
    }
}

void Validator::checkDeadlock()
{
    Replay(*this).run();
}

/// The size rules of the schedule's kind (generator.h), and its stage count.
void Validator::checkKind()
{
    if (m_s.kind == ScheduleKind::Custom)
        return;
    const GenerateOptions options { m_s.kind, m_s.ranks, m_s.microbatches, m_s.stagesPerRank };
    try {
        dps::checkConstraints(options);
    } catch (const ConstraintError& e) {
        m_sink.add("constraint." + e.rule(), -1, -1, "", e.what());
        return;
    } catch (const Error& e) {
        m_sink.add("constraint.invalid", -1, -1, "", e.what());
        return;
    }
    const int expected = stageCountFor(m_s.kind, m_s.ranks, m_s.stagesPerRank);
    if (expected != m_stages)
        m_sink.add("constraint.stage-count", -1, -1, "",
            std::string(kindDisplayName(m_s.kind)) + " on " + std::to_string(m_s.ranks) + " ranks has "
                + std::to_string(expected) + " stages, the schedule has " + std::to_string(m_stages));
}

} // namespace

ValidationReport validate(const Schedule& schedule)
{
    return Validator(schedule).run();
}

namespace {

/// A 64-bit FNV-1a hash of the schedule's sizes and orders (the placement is compared on a hit, not hashed).
std::uint64_t scheduleHash(const Schedule& s)
{
    std::uint64_t h = 14695981039346656037ULL;
    const auto mix = [&h](std::int64_t v) {
        h ^= static_cast<std::uint64_t>(v);
        h *= 1099511628211ULL;
    };
    for (const std::int64_t v : { static_cast<std::int64_t>(s.kind), std::int64_t { s.ranks },
             std::int64_t { s.microbatches }, std::int64_t { s.stages }, std::int64_t { s.stagesPerRank } })
        mix(v);
    for (const std::vector<Action>& row : s.order) {
        mix(static_cast<std::int64_t>(row.size()));
        for (const Action& a : row)
            for (int i = 0; i < a.size(); ++i)
                mix((std::int64_t { a.at(i).stage } << 40) ^ (std::int64_t { a.at(i).microbatch } << 8)
                    ^ (static_cast<std::int64_t>(a.at(i).kind) << 1) ^ std::int64_t { a.overlapped });
    }
    return h;
}

} // namespace

const ValidationReport& ValidationMemo::validate(const Schedule& schedule)
{
    const std::uint64_t key = scheduleHash(schedule);
    const auto [first, last] = m_seen.equal_range(key);
    for (auto it = first; it != last; ++it)
        if (it->second.first == schedule)
            return it->second.second;
    ValidationReport report = dps::validate(schedule);
    return m_seen.emplace(key, std::make_pair(schedule, std::move(report)))->second.second;
}

} // namespace dps
