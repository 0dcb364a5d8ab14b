#include "schedule.h"

#include "base/errors.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace dps {

namespace {
    struct KindInfo {
        ScheduleKind kind;
        std::string_view name;
        std::string_view display;
    };
    constexpr std::array<KindInfo, 8> kKinds { {
        { ScheduleKind::Custom, "custom", "Custom" },
        { ScheduleKind::GPipe, "gpipe", "GPipe" },
        { ScheduleKind::OneFOneB, "1f1b", "1F1B" },
        { ScheduleKind::Interleaved1F1B, "interleaved-1f1b", "Interleaved 1F1B" },
        { ScheduleKind::ZBH1, "zb-h1", "ZB-H1" },
        { ScheduleKind::ZBV, "zb-v", "ZB-V" },
        { ScheduleKind::DualPipe, "dualpipe", "DualPipe" },
        { ScheduleKind::DualPipeV, "dualpipev", "DualPipeV" },
    } };
} // namespace

std::string_view kindName(ScheduleKind kind)
{
    for (const auto& k : kKinds)
        if (k.kind == kind)
            return k.name;
    return "custom";
}

std::string_view kindDisplayName(ScheduleKind kind)
{
    for (const auto& k : kKinds)
        if (k.kind == kind)
            return k.display;
    return "Custom";
}

std::optional<ScheduleKind> parseKind(std::string_view name)
{
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower == "cut-in-half")
        return ScheduleKind::DualPipeV;
    for (const auto& k : kKinds)
        if (k.name == lower)
            return k.kind;
    return std::nullopt;
}

const std::vector<ScheduleKind>& generatedKinds()
{
    static const std::vector<ScheduleKind> kinds { ScheduleKind::GPipe, ScheduleKind::OneFOneB,
        ScheduleKind::Interleaved1F1B, ScheduleKind::ZBH1, ScheduleKind::ZBV, ScheduleKind::DualPipe,
        ScheduleKind::DualPipeV };
    return kinds;
}

std::string generatedKindNames(std::string_view last)
{
    std::string out;
    const std::vector<ScheduleKind>& kinds = generatedKinds();
    for (std::size_t i = 0; i < kinds.size(); ++i) {
        if (i > 0)
            out += i + 1 == kinds.size() ? last : std::string_view(", ");
        out += kindName(kinds[i]);
    }
    return out;
}

ScheduleKind parseGeneratedKind(const std::string& name, const std::string& what)
{
    const auto kind = parseKind(name);
    if (!kind || *kind == ScheduleKind::Custom)
        throw ConstraintError(
            "kind.unknown", what + ": unknown schedule '" + name + "' (expected " + generatedKindNames() + ")");
    return *kind;
}

std::size_t Schedule::slotCount() const
{
    std::size_t n = 0;
    for (const auto& row : order)
        n += row.size();
    return n;
}

std::size_t Schedule::opCount() const
{
    std::size_t n = 0;
    for (const auto& row : order)
        for (const auto& a : row)
            n += static_cast<std::size_t>(a.size());
    return n;
}

std::string toText(const Schedule& schedule)
{
    std::string out;
    for (std::size_t r = 0; r < schedule.order.size(); ++r) {
        out += "rank " + std::to_string(r) + ":";
        for (const auto& a : schedule.order[r]) {
            out += ' ';
            out += toString(a);
        }
        out += '\n';
    }
    return out;
}

bool TorchSchedule::hasComms() const
{
    for (const auto& row : rows)
        for (const Step& step : row)
            if (step.isComm())
                return true;
    return false;
}

} // namespace dps
