#pragma once
// The validator: every check of a schedule, returned as data (a bad schedule is never an exception).
#include "schedule.h"

#include <string>
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
/// rank, matching the placement), the kind's size constraints when it names a kind, and deadlock
/// (replay with blocking receives; when stuck, one diagnostic per blocked rank naming the action it waits
/// on and what it waits for, with inCycle marking the ranks of the wait-for cycle). Deadlock is checked
/// only when the structural checks pass. O(ops).
ValidationReport validate(const Schedule& schedule);

} // namespace dps
