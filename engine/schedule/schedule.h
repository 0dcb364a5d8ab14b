#pragma once
// The schedule IR: kind, sizes, placement and, for each rank, its ordered list of actions.
#include "action.h"
#include "placement.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dps {

/// The schedule families we generate; Custom = hand-edited or imported with no family.
enum class ScheduleKind { Custom, GPipe, OneFOneB, Interleaved1F1B, ZBH1, ZBV, DualPipe, DualPipeV };

/// Command-line / file name of a kind: "custom", "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v",
/// "dualpipe", "dualpipev".
std::string_view kindName(ScheduleKind kind);
/// Display name, e.g. "Interleaved 1F1B", "DualPipeV".
std::string_view kindDisplayName(ScheduleKind kind);
/// Inverse of kindName (case-insensitive; also accepts "cut-in-half" for DualPipeV). nullopt if unknown.
std::optional<ScheduleKind> parseKind(std::string_view name);
/// All generated kinds (not Custom), in display order.
const std::vector<ScheduleKind>& generatedKinds();
/// The generated kinds' names in display order, `last` before the last one: with " or ", "gpipe, 1f1b,
/// interleaved-1f1b, zb-h1, zb-v, dualpipe or dualpipev" (for messages); with ", " a plain list (for help).
std::string generatedKindNames(std::string_view last = " or ");
/// The generated kind named `name` (parseKind; Custom is refused). Throws ConstraintError "kind.unknown":
/// "<what>: unknown schedule '<name>' (expected gpipe, 1f1b, …, dualpipe or dualpipev)", `what` naming the
/// flag or field (e.g. "--schedule").
ScheduleKind parseGeneratedKind(const std::string& name, const std::string& what);

/// A complete schedule for one training step.
struct Schedule {
    ScheduleKind kind = ScheduleKind::Custom;
    int ranks = 0; ///< pipeline ranks (devices)
    int microbatches = 0; ///< microbatches per step
    int stages = 0; ///< model stages (DualPipe: = ranks, each stored twice)
    int stagesPerRank = 1; ///< model chunks a rank holds (2 for V shapes and DualPipe)
    Placement placement;
    std::vector<std::vector<Action>> order; ///< order[r] = rank r's actions, in execution order

    /// Total number of slots over all ranks (an overlapped pair counts once).
    std::size_t slotCount() const;
    /// Total number of ops over all ranks (an overlapped pair counts twice).
    std::size_t opCount() const;

    friend bool operator==(const Schedule&, const Schedule&) = default;
};

/// A schedule in PyTorch's whole action language, cell by cell as its CSV holds it: rows[r] = rank r's
/// steps in order, compute, communication and idle. The compute_only format has compute and idle cells;
/// compute_comms (what PyTorch's _PipelineScheduleRuntime runs) adds sends, receives, UNSHARD, RESHARD
/// and REDUCE_GRAD.
struct TorchSchedule {
    std::vector<std::vector<Step>> rows;
    std::string lineEnd = "\r\n"; ///< the CSV's line end: Python's csv.writer (PyTorch's _dump_csv) writes CRLF

    /// Whether any cell is a communication or sharding action (the compute_comms format).
    bool hasComms() const;
};

/// Text form: one line per rank, "rank 0: 0F0 0F1 ... (0F3;3B5)OVERLAP_F_B ...".
std::string toText(const Schedule& schedule);

} // namespace dps
