#pragma once
// The validator: every check of a schedule, returned as data (a bad schedule is never an exception).
#include "schedule.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dps {

enum class Severity { Error, Warning, Info };
std::string_view severityName(Severity severity); // "error", "warning", "info"

/// One finding. rank/position are 0-based (-1 = not tied to one); action is PyTorch text ("" if none).
/// rule is a stable identifier, e.g. "counts.missing-forward", "order.w-before-i", "deadlock".
struct Diagnostic {
    Severity severity = Severity::Error;
    int rank = -1;
    int position = -1;
    std::string action;
    std::string rule;
    std::string message;
    bool inCycle = false; ///< deadlock only: this rank is part of the wait-for cycle
};

/// One line a user reads: "error: rank 0, position 3 (0B0): <message>".
std::string format(const Diagnostic& diagnostic);

struct ValidationReport {
    std::vector<Diagnostic> diagnostics;
    /// True when no diagnostic has severity Error.
    bool valid() const;
    std::size_t errorCount() const;
};

/// Runs every check: shape (stage/microbatch ranges, ranks), duplicates, counts (one F and one backward
/// — B, or I with its W — per stage and microbatch), per-rank order (backward after its F, W after its I,
/// every I has a later W on its rank), placement consistency (all ops of one (stage, microbatch) on one
/// rank, matching the placement; an overlapped pair whose backward half belongs to another rank is
/// shape.overlap-ranks), the kind's size constraints when it names a kind, and deadlock
/// (replay with blocking receives; when stuck, one diagnostic per blocked rank naming the action it waits
/// on and what it waits for, with inCycle marking the ranks of the wait-for cycle). Deadlock is checked
/// only when the structural checks pass. O(ops).
ValidationReport validate(const Schedule& schedule);

/// validate(Schedule) once per distinct schedule: a search that predicts many candidates sharing a schedule (the
/// planner: one for each kind, ranks, microbatches and chunks per rank, whatever the partition, recompute or
/// parallel sizes) validates each of them once. Keeps a copy of every schedule it has seen. Not thread-safe.
class ValidationMemo {
public:
    /// validate(schedule), or the report of an equal schedule seen before.
    const ValidationReport& validate(const Schedule& schedule);
    /// Distinct schedules validated so far.
    std::size_t size() const { return m_seen.size(); }

private:
    std::unordered_multimap<std::uint64_t, std::pair<Schedule, ValidationReport>> m_seen;
};

/// Checks a schedule in PyTorch's whole action language (positions are cell indices of the CSV row):
/// - an OVERLAP_F_B pair whose backward half belongs to another rank (shape.overlap-ranks);
/// - every check of validate(Schedule) on its compute actions;
/// - with communication actions: each send and receive on its stage's rank, towards a stage on another
///   rank, with its partner on the partner's rank (comm.send-without-recv, comm.recv-without-send,
///   comm.wrong-rank, comm.same-rank, comm.duplicate, comm.range), a send after the op that produces its
///   tensor and a receive before the op that uses it (order.send-before-compute, order.recv-after-compute),
///   every cross-rank activation and gradient sent and received (comm.missing), UNSHARD, RESHARD and
///   REDUCE_GRAD of a stage of the rank (comm.wrong-rank);
/// - then deadlock by the order of sends and receives (deadlock.comm-order): each rank's sends and
///   receives are served in their order on one communicator, a send or receive starts once the rank's
///   compute before it is done and completes when its partner has reached the matching op, and a compute
///   op waits for the receive of its input. One diagnostic per stuck rank names the op its communicator is
///   at and what the partner's communicator is at, with the wait-for cycle.
/// Throws ParseError as computeSchedule (absurd stage or microbatch numbers).
ValidationReport validate(const TorchSchedule& schedule);

} // namespace dps
