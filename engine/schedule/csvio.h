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
/// ranks). Warnings are returned, not printed.
CsvImport readScheduleCsv(const std::string& source, std::string_view text, CsvDialect dialect = CsvDialect::Auto);

/// Writes the current dialect: one row per rank, cells joined by ',', LF line ends, final newline, no
/// empty cells. A rank with no actions gives an empty line.
std::string writeCsv(const Schedule& schedule);

/// True when the CSV puts one stage on two rows (DualPipe's replicas) — our extension, which PyTorch's
/// loader refuses.
bool csvNeedsExtension(const Schedule& schedule);

} // namespace dps
