// PyTorch's compute-only schedule CSV: reading (both dialects, placement inferred) and writing.
#include "csvio.h"

#include "base/errors.h"
#include "validator.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <unordered_set>

namespace dps {

namespace {

bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && isSpace(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && isSpace(s.back()))
        s.remove_suffix(1);
    return s;
}

/// One non-blank cell: its text (trimmed, unquoted) and 1-based row and column.
struct Cell {
    std::string_view text;
    int row = 0;
    int column = 0;
};

/// Walks the non-blank cells of one CSV line; a quoted cell ("0F0") is unquoted.
class CellCursor {
public:
    CellCursor(std::string_view line, int row)
        : m_line(line)
        , m_row(row)
    {
    }

    /// Sets `cell` to the next non-blank cell; false at the end of the line.
    bool next(Cell& cell)
    {
        while (m_start != std::string_view::npos) {
            const std::size_t comma = m_line.find(',', m_start);
            std::string_view text = trim(m_line.substr(m_start, comma == m_line.npos ? m_line.npos : comma - m_start));
            m_start = comma == m_line.npos ? m_line.npos : comma + 1;
            ++m_column;
            if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
                text = trim(text.substr(1, text.size() - 2));
            if (!text.empty()) {
                cell = Cell { text, m_row, m_column };
                return true;
            }
        }
        return false;
    }

private:
    std::string_view m_line;
    int m_row;
    int m_column = 0;
    std::size_t m_start = 0;
};

/// The lines of a CSV text: CR/LF line ends and a UTF-8 byte order mark dropped.
std::vector<std::string_view> splitLines(std::string_view text)
{
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
        text.remove_prefix(3);
    std::vector<std::string_view> lines;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t nl = text.find('\n', start);
        lines.push_back(text.substr(start, nl == std::string_view::npos ? text.npos : nl - start));
        if (nl == std::string_view::npos)
            break;
        start = nl + 1;
    }
    return lines;
}

/// Lexical view of one op text "<digits><letters><digits>", without judging it.
struct OpToken {
    std::string_view stage;
    std::string_view letters;
    std::string_view microbatch;

    /// (stage, microbatch) as one number, for matching a B with its W; 0 when the digits do not fit.
    std::uint64_t key() const
    {
        std::uint32_t s = 0;
        std::uint32_t m = 0;
        std::from_chars(stage.data(), stage.data() + stage.size(), s);
        std::from_chars(microbatch.data(), microbatch.data() + microbatch.size(), m);
        return (std::uint64_t(s) << 32) | m;
    }
};

OpToken lexOp(std::string_view text)
{
    text = trim(text);
    std::size_t i = 0;
    while (i < text.size() && isDigit(text[i]))
        ++i;
    std::size_t j = i;
    while (j < text.size() && !isDigit(text[j]))
        ++j;
    return { text.substr(0, i), text.substr(i, j - i), text.substr(j) };
}

/// The op tokens of a cell: one, or the two halves of "(a;b)OVERLAP_F_B". Returns how many (1 or 2).
int lexCell(std::string_view cell, std::array<OpToken, 2>& out)
{
    if (cell.empty() || cell.front() != '(') {
        out[0] = lexOp(cell);
        return 1;
    }
    const std::size_t close = cell.find(')');
    const std::string_view inner = cell.substr(1, close == cell.npos ? cell.npos : close - 1);
    const std::size_t semi = inner.find(';');
    out[0] = lexOp(inner.substr(0, semi));
    if (semi == inner.npos)
        return 1;
    out[1] = lexOp(inner.substr(semi + 1));
    return 2;
}

/// Whether every B on a line is followed later on that line by the W of its stage and microbatch.
bool everyBHasLaterW(std::string_view line)
{
    std::unordered_set<std::uint64_t> pending;
    CellCursor cursor(line, 0);
    std::array<OpToken, 2> tokens;
    for (Cell cell; cursor.next(cell);) {
        for (int k = lexCell(cell.text, tokens) - 1; k >= 0; --k) {
            if (tokens[k].letters == "B")
                pending.insert(tokens[k].key());
            else if (tokens[k].letters == "W")
                pending.erase(tokens[k].key());
        }
    }
    return pending.empty();
}

/// Auto detection (see CsvDialect): any BW, or B cells each with a later W and no I anywhere.
Dialect detectDialect(const std::vector<std::string_view>& lines)
{
    bool anyB = false;
    std::array<OpToken, 2> tokens;
    for (const std::string_view line : lines) {
        CellCursor cursor(line, 0);
        for (Cell cell; cursor.next(cell);) {
            for (int k = lexCell(cell.text, tokens) - 1; k >= 0; --k) {
                if (tokens[k].letters == "BW")
                    return Dialect::Legacy2024;
                if (tokens[k].letters == "I")
                    return Dialect::Current;
                anyB = anyB || tokens[k].letters == "B";
            }
        }
    }
    if (!anyB || !std::all_of(lines.begin(), lines.end(), everyBHasLaterW))
        return Dialect::Current;
    return Dialect::Legacy2024;
}

Action parseCell(const Cell& cell, Dialect dialect)
{
    try {
        return parseAction(cell.text, dialect);
    } catch (const ParseError& e) {
        throw ParseError(
            "row " + std::to_string(cell.row) + ", column " + std::to_string(cell.column) + ": " + e.what(), cell.row,
            cell.column);
    }
}

/// Per stage: the row of its F ops (or of any op when it has no F), and whether that row is unique.
struct StageRows {
    int forwardRow = -1;
    bool forwardSplit = false;
    int anyRow = -1;
    bool anySplit = false;

    void see(int row, bool forward)
    {
        if (forward) {
            forwardSplit = forwardSplit || (forwardRow >= 0 && forwardRow != row);
            forwardRow = forwardRow < 0 ? row : forwardRow;
        }
        anySplit = anySplit || (anyRow >= 0 && anyRow != row);
        anyRow = anyRow < 0 ? row : anyRow;
    }
    int row() const { return forwardRow >= 0 ? forwardRow : anyRow; }
    bool split() const { return forwardRow >= 0 ? forwardSplit : anySplit; }
};

/// Placement per (stage, microbatch): the row of its F, else of its first op; -1 when absent.
Placement tablePlacement(const Schedule& s)
{
    const std::size_t mbs = static_cast<std::size_t>(s.microbatches);
    std::vector<int> table(static_cast<std::size_t>(s.stages) * mbs, -1);
    std::vector<std::uint8_t> fromForward(table.size(), 0);
    for (int r = 0; r < s.ranks; ++r) {
        for (const Action& a : s.order[static_cast<std::size_t>(r)]) {
            for (int k = 0; k < a.size(); ++k) {
                const Op& op = a.at(k);
                const std::size_t i
                    = static_cast<std::size_t>(op.stage) * mbs + static_cast<std::size_t>(op.microbatch);
                const bool forward = op.kind == OpKind::F;
                if (table[i] < 0 || (forward && !fromForward[i])) {
                    table[i] = r;
                    fromForward[i] = forward;
                }
            }
        }
    }
    return Placement::table(s.stages, s.microbatches, std::move(table));
}

/// The most distinct stages one rank holds (at least 1).
void inferStagesPerRank(Schedule& s)
{
    std::vector<int> lastRow(static_cast<std::size_t>(s.stages), -1);
    s.stagesPerRank = 1;
    for (int r = 0; r < s.ranks; ++r) {
        int distinct = 0;
        for (const Action& a : s.order[static_cast<std::size_t>(r)])
            for (int k = 0; k < a.size(); ++k) {
                int& last = lastRow[static_cast<std::size_t>(a.at(k).stage)];
                distinct += last != r;
                last = r;
            }
        s.stagesPerRank = std::max(s.stagesPerRank, distinct);
    }
}

void inferPlacement(Schedule& s)
{
    std::vector<StageRows> rows(static_cast<std::size_t>(s.stages));
    for (int r = 0; r < s.ranks; ++r)
        for (const Action& a : s.order[static_cast<std::size_t>(r)])
            for (int k = 0; k < a.size(); ++k)
                rows[static_cast<std::size_t>(a.at(k).stage)].see(r, a.at(k).kind == OpKind::F);
    const bool perStage = std::none_of(rows.begin(), rows.end(), [](const StageRows& x) { return x.split(); });
    if (!perStage) {
        s.placement = tablePlacement(s);
        return;
    }
    std::vector<int> rankOfStage(rows.size());
    std::transform(rows.begin(), rows.end(), rankOfStage.begin(), [](const StageRows& x) { return x.row(); });
    s.placement = Placement::perStage(std::move(rankOfStage));
}

/// Appends the text of toString(op) without temporaries (exports of large schedules are hundreds of MB).
void appendOp(std::string& out, const Op& op)
{
    char buf[16];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, op.stage).ptr);
    out += kindLetter(op.kind);
    out.append(buf, std::to_chars(buf, buf + sizeof buf, op.microbatch).ptr);
}

void appendAction(std::string& out, const Action& a)
{
    if (!a.overlapped)
        return appendOp(out, a.op);
    out += '(';
    appendOp(out, a.op);
    out += ';';
    appendOp(out, a.backward);
    out += ")OVERLAP_F_B";
}

/// The cells holding the largest stage and the largest microbatch, to blame when the numbers are absurd.
struct Extremes {
    int stage = -1;
    int microbatch = -1;
    Cell stageCell;
    Cell microbatchCell;

    void see(const Action& a, const Cell& cell)
    {
        for (int k = 0; k < a.size(); ++k) {
            if (a.at(k).stage > stage) {
                stage = a.at(k).stage;
                stageCell = cell;
            }
            if (a.at(k).microbatch > microbatch) {
                microbatch = a.at(k).microbatch;
                microbatchCell = cell;
            }
        }
    }
};

/// Refuses numbers so far beyond the file's ops that a (stage, microbatch) table could not be held, e.g. a
/// typo like 0F99999999 in a small file.
void checkDensity(const Schedule& s, const Extremes& x)
{
    const double pairs = double(s.stages) * double(s.microbatches);
    const double limit = std::max(8.0 * double(s.opCount()), double(1 << 20));
    if (pairs <= limit)
        return;
    const bool stage = s.stages > s.microbatches;
    const Cell& cell = stage ? x.stageCell : x.microbatchCell;
    throw ParseError("row " + std::to_string(cell.row) + ", column " + std::to_string(cell.column) + ": '"
            + std::string(cell.text) + "': " + (stage ? "stage " : "microbatch ")
            + std::to_string(stage ? x.stage : x.microbatch) + " is far beyond the " + std::to_string(s.opCount())
            + " ops of the file (stages and microbatches are numbered densely from 0)",
        cell.row, cell.column);
}

} // namespace

CsvImport readCsv(std::string_view text, CsvDialect dialect)
{
    const std::vector<std::string_view> lines = splitLines(text);
    CsvImport result;
    result.dialect = dialect == CsvDialect::Current ? Dialect::Current
        : dialect == CsvDialect::Legacy2024         ? Dialect::Legacy2024
                                                    : detectDialect(lines);
    if (dialect == CsvDialect::Auto && result.dialect == Dialect::Legacy2024)
        result.warnings.push_back("dialect detected as 2024 (B = backward for inputs, BW = full backward)");
    Schedule& s = result.schedule;
    s.kind = ScheduleKind::Custom;
    s.ranks = static_cast<int>(lines.size());
    s.order.resize(lines.size());
    Extremes extremes;
    for (std::size_t r = 0; r < lines.size(); ++r) {
        CellCursor cursor(lines[r], static_cast<int>(r) + 1);
        for (Cell cell; cursor.next(cell);) {
            s.order[r].push_back(parseCell(cell, result.dialect));
            extremes.see(s.order[r].back(), cell);
        }
    }
    // Trailing rows without an action are no ranks ("0F0,0B0\n , \n\"\"" is one rank), so a written
    // schedule, whose last ranks may be empty lines, reads back with the same ranks (found by fuzzing).
    while (!s.order.empty() && s.order.back().empty())
        s.order.pop_back();
    s.ranks = static_cast<int>(s.order.size());
    s.stages = extremes.stage + 1;
    s.microbatches = extremes.microbatch + 1;
    checkDensity(s, extremes);
    inferStagesPerRank(s);
    inferPlacement(s);
    return result;
}

namespace {

/// A compute_comms CSV read and validated (validate(TorchSchedule)); ParseError naming `source` and the first
/// finding.
TorchSchedule readCheckedTorchCsv(const std::string& source, std::string_view text)
{
    try {
        TorchSchedule comms = readTorchCsv(text);
        const ValidationReport report = validate(comms);
        if (!report.valid())
            throw ParseError(format(report.diagnostics.front()) + " (`dpstudio validate` lists every finding)");
        return comms;
    } catch (const ParseError& e) {
        throw ParseError(source + ": " + e.what(), e.row(), e.column());
    }
}

} // namespace

CsvImport readScheduleCsv(const std::string& source, std::string_view text, CsvDialect dialect)
{
    if (const auto nul = text.find('\0'); nul != std::string_view::npos)
        throw ParseError(source + ": not a text file (a NUL byte at offset " + std::to_string(nul)
            + "); expected a schedule CSV, one row of actions per rank");
    CsvImport imported;
    if (csvHasComms(text)) { // PyTorch's compute_comms form: its compute actions, once the whole is sound
        imported.schedule = computeSchedule(readCheckedTorchCsv(source, text));
        return imported;
    }
    try {
        imported = readCsv(text, dialect);
    } catch (const ParseError& e) {
        throw ParseError(source + ": " + e.what(), e.row(), e.column());
    }
    if (imported.schedule.opCount() == 0)
        throw ParseError(source + ": "
            + (text.find_first_not_of(" \t\r\n,\xEF\xBB\xBF") == std::string_view::npos ? "empty" : "no actions")
            + ": a schedule CSV has one row of actions per rank, e.g. 0F0,0B0");
    return imported;
}

std::string writeCsv(const Schedule& schedule)
{
    std::string out;
    out.reserve(schedule.slotCount() * 6 + schedule.order.size());
    for (const auto& row : schedule.order) {
        for (std::size_t i = 0; i < row.size(); ++i) {
            if (i > 0)
                out += ',';
            appendAction(out, row[i]);
        }
        out += '\n';
    }
    return out;
}

bool csvNeedsExtension(const Schedule& schedule)
{
    std::vector<int> rankOfStage;
    for (std::size_t r = 0; r < schedule.order.size(); ++r) {
        for (const Action& a : schedule.order[r]) {
            for (int k = 0; k < a.size(); ++k) {
                const int stage = a.at(k).stage;
                if (stage < 0)
                    continue;
                if (static_cast<std::size_t>(stage) >= rankOfStage.size())
                    rankOfStage.resize(static_cast<std::size_t>(stage) + 1, -1);
                int& seen = rankOfStage[static_cast<std::size_t>(stage)];
                if (seen >= 0 && seen != static_cast<int>(r))
                    return true;
                seen = static_cast<int>(r);
            }
        }
    }
    return false;
}

bool csvHasComms(std::string_view text)
{
    for (const std::string_view name : { "SEND_", "RECV_", "UNSHARD", "RESHARD", "REDUCE_GRAD" })
        if (text.find(name) != std::string_view::npos)
            return true;
    return false;
}

TorchSchedule readTorchCsv(std::string_view text)
{
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
        text.remove_prefix(3);
    TorchSchedule result;
    const std::size_t firstNl = text.find('\n');
    result.lineEnd = firstNl != std::string_view::npos && firstNl > 0 && text[firstNl - 1] == '\r' ? "\r\n" : "\n";
    if (firstNl == std::string_view::npos)
        result.lineEnd = "\r\n";
    std::size_t start = 0;
    for (int row = 1; start < text.size(); ++row) {
        const std::size_t nl = text.find('\n', start);
        std::string_view line = text.substr(start, nl == std::string_view::npos ? text.npos : nl - start);
        start = nl == std::string_view::npos ? text.size() : nl + 1;
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        auto& cells = result.rows.emplace_back();
        for (std::size_t from = 0, column = 1; !line.empty() && from <= line.size(); ++column) {
            const std::size_t comma = line.find(',', from);
            std::string_view cell = trim(line.substr(from, comma == line.npos ? line.npos : comma - from));
            from = comma == line.npos ? line.size() + 1 : comma + 1;
            if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"')
                cell = trim(cell.substr(1, cell.size() - 2));
            try {
                cells.push_back(parseStep(cell));
            } catch (const ParseError& e) {
                throw ParseError("row " + std::to_string(row) + ", column " + std::to_string(column) + ": " + e.what(),
                    row, static_cast<int>(column));
            }
        }
    }
    return result;
}

std::string writeTorchCsv(const TorchSchedule& schedule)
{
    std::string out;
    for (const auto& row : schedule.rows) {
        for (std::size_t i = 0; i < row.size(); ++i) {
            if (i > 0)
                out += ',';
            if (row[i].isCompute())
                appendAction(out, row[i].compute);
            else if (row[i].isComm())
                out += toString(row[i].comm);
        }
        out += schedule.lineEnd;
    }
    return out;
}

Schedule computeSchedule(const TorchSchedule& schedule)
{
    Schedule compute;
    compute.order.resize(schedule.rows.size());
    for (std::size_t r = 0; r < schedule.rows.size(); ++r)
        for (const Step& step : schedule.rows[r])
            if (step.isCompute())
                compute.order[r].push_back(step.compute);
    // The sizes and placement follow from the compute cells exactly as for a compute-only file.
    Schedule s = readCsv(writeCsv(compute), CsvDialect::Current).schedule;
    s.ranks = static_cast<int>(schedule.rows.size()); // a last rank of only idle cells is still a rank
    s.order.resize(schedule.rows.size());
    return s;
}

TorchSchedule torchScheduleOf(const Schedule& schedule, std::string lineEnd)
{
    TorchSchedule out;
    out.lineEnd = std::move(lineEnd);
    out.rows.resize(schedule.order.size());
    for (std::size_t r = 0; r < schedule.order.size(); ++r)
        for (const Action& a : schedule.order[r])
            out.rows[r].push_back(Step::of(a));
    return out;
}

} // namespace dps
