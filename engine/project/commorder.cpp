// A variant's hand-placed communication program (Variant::commOrder, `comm_order`): checked against the variant's
// compute order and the placement (commProgramOf).
#include "project.h"

#include "base/errors.h"
#include "projectparts.h"
#include "schedule/validator.h"

#include <string_view>

namespace dps {

namespace {

std::string cellOf(const std::string& field, std::size_t rank, std::size_t position)
{
    return field + "[" + std::to_string(rank) + "][" + std::to_string(position) + "]";
}

/// Rank `rank`'s row holds exactly `order`'s compute actions in order (sends, receives and sharding steps among them).
void checkComputeOf(
    const std::vector<Step>& row, const std::vector<Action>& order, std::size_t rank, const std::string& field)
{
    std::size_t next = 0;
    for (std::size_t p = 0; p < row.size(); ++p) {
        const Step& step = row[p];
        if (step.isIdle())
            throw FormatError(cellOf(field, rank, p) + ": an idle step (the program holds actions only)");
        if (!step.isCompute())
            continue;
        const std::string text = toString(step.compute);
        if (next == order.size())
            throw FormatError(cellOf(field, rank, p) + ": " + text + " is beyond the variant's order, which has "
                + std::to_string(order.size()) + " compute actions on rank " + std::to_string(rank));
        if (!(step.compute == order[next]))
            throw FormatError(cellOf(field, rank, p) + ": " + text + " where the variant's order has "
                + toString(order[next]) + " (rank " + std::to_string(rank) + "'s compute action " + std::to_string(next)
                + ")");
        ++next;
    }
    if (next < order.size())
        throw FormatError(field + "[" + std::to_string(rank) + "]: ends after " + std::to_string(next)
            + " compute actions, the variant's order has " + std::to_string(order.size()) + " on rank "
            + std::to_string(rank) + " (the next is " + toString(order[next]) + ")");
}

/// The first send or receive the placement refuses (validate(TorchSchedule)'s comm.* rules), the ones about the
/// step itself before the ones about its partner. Where the steps sit (order.*, deadlock.*) is the prediction's.
const Diagnostic* placementError(const ValidationReport& report)
{
    static constexpr std::string_view kRules[] = { "comm.range", "comm.wrong-rank", "comm.same-rank", "comm.duplicate",
        "comm.recv-without-send", "comm.send-without-recv", "comm.missing" };
    for (std::string_view rule : kRules)
        for (const Diagnostic& d : report.diagnostics)
            if (d.severity == Severity::Error && d.rule == rule)
                return &d;
    return nullptr;
}

} // namespace

std::optional<TorchSchedule> commProgramOf(const Project& project, const Variant& variant, const Schedule& schedule)
{
    if (!variant.commOrder)
        return std::nullopt;
    const std::string field = detail::variantPath(project, variant) + ".comm_order";
    const auto& rows = *variant.commOrder;
    if (rows.size() != schedule.order.size())
        throw FormatError(field + ": has " + std::to_string(rows.size()) + " rows, the variant has "
            + std::to_string(schedule.order.size()) + " ranks");
    for (std::size_t r = 0; r < rows.size(); ++r)
        checkComputeOf(rows[r], schedule.order[r], r, field);
    TorchSchedule program;
    program.rows = rows;
    program.lineEnd = "\n";
    const ValidationReport report = validate(program);
    if (const Diagnostic* d = placementError(report))
        throw FormatError(cellOf(field, static_cast<std::size_t>(d->rank), static_cast<std::size_t>(d->position)) + ": "
            + d->message);
    return program;
}

} // namespace dps
