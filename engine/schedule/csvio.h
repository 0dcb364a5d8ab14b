#pragma once
// PyTorch's compute-only schedule CSV (torch.distributed.pipelining): no header, row r = rank r, one cell
// per action in the text form of action.h.
#include "schedule.h"

#include <string>
#include <string_view>
#include <vector>

namespace dps {

/// Dialect choice when reading; Auto detects: a file with B cells, each followed later on its row by a W
/// of the same stage and microbatch, and no I anywhere, or any "BW" cell, is Legacy2024.
enum class CsvDialect { Auto, Current, Legacy2024 };

struct CsvImport {
    Schedule schedule; ///< kind Custom; placement inferred (per stage, or per (stage, microbatch))
    Dialect dialect = Dialect::Current; ///< the dialect used
    std::vector<std::string> warnings; ///< e.g. "dialect detected as 2024 (B = backward for inputs)"
};

/// Reads CSV text: blank cells (idle slots) skipped, spaces around cells, CRLF/LF, trailing empty lines.
/// Stages = max stage + 1, microbatches = max microbatch + 1, ranks = rows. Placement per stage when
/// every stage appears on one row, else per (stage, microbatch). Throws ParseError with the 1-based row
/// and column of a malformed cell ("row 2, column 5: '1X0' is not an action: ...").
CsvImport readCsv(std::string_view text, CsvDialect dialect = CsvDialect::Auto);

/// Reads a schedule CSV file a user gave (`dpstudio validate/simulate FILE.csv`, the designer's Import PyTorch
/// CSV): readCsv, plus the checks that make it a schedule. Throws ParseError with `source` in front: "SOURCE: not
/// a text file (a NUL byte at offset N)…", "SOURCE: row 2, column 5: …" for a malformed cell, and "SOURCE:
/// empty: …" / "SOURCE: no actions: …" when no cell holds an action (such a file would make a schedule of 0
/// ranks). A compute_comms CSV (csvHasComms) is read with readTorchCsv and validated (validate(TorchSchedule)); its
/// compute actions make the schedule, and its first finding is the ParseError. Warnings are returned, not printed.
CsvImport readScheduleCsv(const std::string& source, std::string_view text, CsvDialect dialect = CsvDialect::Auto);

/// Writes the current dialect: one row per rank, cells joined by ',', LF line ends, final newline, no
/// empty cells. A rank with no actions gives an empty line.
std::string writeCsv(const Schedule& schedule);

/// True when the CSV puts one stage on two rows (DualPipe's replicas) — our extension, which PyTorch's
/// loader refuses.
bool csvNeedsExtension(const Schedule& schedule);

/// Whether CSV text uses PyTorch's communication actions (SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD,
/// REDUCE_GRAD): then it is read with readTorchCsv, not readCsv.
bool csvHasComms(std::string_view text);

/// Reads either of PyTorch's CSV formats cell by cell (compute_only or compute_comms; the current dialect):
/// empty cells are idle steps, rows are ranks, the line end is kept. Throws ParseError with the 1-based
/// row and column of a cell that is not an action ("row 2, column 5: '1SEND_X0' is not an action: ...").
TorchSchedule readTorchCsv(std::string_view text);

/// Writes the cells as PyTorch's _dump_csv does (Python's csv.writer): cells joined by ',', every row ended
/// by the schedule's line end, idle steps as empty cells. readTorchCsv then writeTorchCsv gives back the
/// same bytes for any file in that form.
std::string writeTorchCsv(const TorchSchedule& schedule);

/// The compute actions of a TorchSchedule in their order (idle and communication steps dropped), with sizes
/// and placement inferred as readCsv does. Throws ParseError as readCsv.
Schedule computeSchedule(const TorchSchedule& schedule);

/// A schedule's compute actions as a compute_only TorchSchedule (no idle steps).
TorchSchedule torchScheduleOf(const Schedule& schedule, std::string lineEnd = "\r\n");

} // namespace dps
