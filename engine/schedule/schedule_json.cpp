// JSON form of a schedule. Placement modes: "per_stage" with "rank_of_stage", "mirrored" (derived from
// ranks and microbatches), "table" with "table": one array of ranks per stage, indexed by microbatch.
#include "schedule_json.h"

#include "base/errors.h"

namespace dps {

namespace {

using nlohmann::json;

json placementToJson(const Schedule& s)
{
    const Placement& p = s.placement;
    if (p.isPerStage())
        return { { "mode", "per_stage" }, { "rank_of_stage", p.rankOfStage() } };
    if (p.isMirrored())
        return { { "mode", "mirrored" } };
    json table = json::array();
    for (int stage = 0; stage < p.stageCount(); ++stage) {
        json row = json::array();
        for (int m = 0; m < s.microbatches; ++m)
            row.push_back(p.rankOf(stage, m));
        table.push_back(std::move(row));
    }
    return { { "mode", "table" }, { "table", std::move(table) } };
}

const json& field(const json& j, const std::string& name, const std::string& where)
{
    if (!j.is_object())
        throw FormatError(where.empty() ? "expected a JSON object" : "field '" + where + "': expected an object");
    const auto it = j.find(name);
    if (it == j.end())
        throw FormatError("field '" + where + (where.empty() ? "" : ".") + name + "' is missing");
    return *it;
}

int intField(const json& j, const std::string& name, const std::string& where, int minimum)
{
    const json& v = field(j, name, where);
    const std::string path = where.empty() ? name : where + "." + name;
    if (!v.is_number_integer())
        throw FormatError("field '" + path + "': expected an integer, got " + v.dump());
    const auto value = v.get<long long>();
    if (value < minimum || value > 1'000'000'000)
        throw FormatError("field '" + path + "': " + std::to_string(value) + " is out of range");
    return static_cast<int>(value);
}

std::vector<int> intArray(const json& v, const std::string& path)
{
    if (!v.is_array())
        throw FormatError("field '" + path + "': expected an array of integers");
    std::vector<int> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_number_integer() || v[i].get<long long>() < -1 || v[i].get<long long>() > 1'000'000'000)
            throw FormatError("field '" + path + "[" + std::to_string(i) + "]': expected a rank (integer >= -1)");
        out.push_back(v[i].get<int>());
    }
    return out;
}

std::vector<int> tableFromJson(const json& v, const Schedule& s)
{
    if (!v.is_array() || v.size() != static_cast<std::size_t>(s.stages))
        throw FormatError("field 'placement.table': expected one array per stage (" + std::to_string(s.stages) + ")");
    std::vector<int> table;
    table.reserve(static_cast<std::size_t>(s.stages) * static_cast<std::size_t>(s.microbatches));
    for (std::size_t stage = 0; stage < v.size(); ++stage) {
        const std::string path = "placement.table[" + std::to_string(stage) + "]";
        const std::vector<int> row = intArray(v[stage], path);
        if (row.size() != static_cast<std::size_t>(s.microbatches))
            throw FormatError("field '" + path + "': expected " + std::to_string(s.microbatches) + " ranks");
        table.insert(table.end(), row.begin(), row.end());
    }
    return table;
}

Placement placementFromJson(const json& j, const Schedule& s)
{
    const json& mode = field(j, "mode", "placement");
    if (mode == "per_stage") {
        std::vector<int> ranks = intArray(field(j, "rank_of_stage", "placement"), "placement.rank_of_stage");
        if (ranks.size() != static_cast<std::size_t>(s.stages))
            throw FormatError("field 'placement.rank_of_stage': expected " + std::to_string(s.stages) + " ranks, got "
                + std::to_string(ranks.size()));
        return Placement::perStage(std::move(ranks));
    }
    if (mode == "mirrored")
        return Placement::mirrored(s.ranks, s.microbatches);
    if (mode == "table")
        return Placement::table(s.stages, s.microbatches, tableFromJson(field(j, "table", "placement"), s));
    throw FormatError("field 'placement.mode': expected \"per_stage\", \"mirrored\" or \"table\", got " + mode.dump());
}

Action actionFromJson(const json& v, const std::string& field, std::size_t rank, std::size_t position)
{
    const std::string where
        = "field '" + field + "', rank " + std::to_string(rank) + ", position " + std::to_string(position) + ": ";
    if (!v.is_string())
        throw FormatError(where + "expected an action string, got " + v.dump());
    try {
        return parseAction(v.get<std::string>());
    } catch (const ParseError& e) {
        throw FormatError(where + e.what());
    }
}

} // namespace

nlohmann::json orderToJson(const std::vector<std::vector<Action>>& order)
{
    json out = json::array();
    for (const auto& row : order) {
        json r = json::array();
        for (const Action& a : row)
            r.push_back(toString(a));
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<std::vector<Action>> orderFromJson(const nlohmann::json& j, const std::string& field)
{
    if (!j.is_array())
        throw FormatError("field '" + field + "': expected an array with one array of actions per rank");
    std::vector<std::vector<Action>> order(j.size());
    for (std::size_t r = 0; r < j.size(); ++r) {
        if (!j[r].is_array())
            throw FormatError("field '" + field + "', rank " + std::to_string(r) + ": expected an array of actions");
        order[r].reserve(j[r].size());
        for (std::size_t p = 0; p < j[r].size(); ++p)
            order[r].push_back(actionFromJson(j[r][p], field, r, p));
    }
    return order;
}

nlohmann::json toJson(const Schedule& schedule)
{
    return {
        { "kind", kindName(schedule.kind) },
        { "ranks", schedule.ranks },
        { "microbatches", schedule.microbatches },
        { "stages", schedule.stages },
        { "stages_per_rank", schedule.stagesPerRank },
        { "placement", placementToJson(schedule) },
        { "order", orderToJson(schedule.order) },
    };
}

Schedule scheduleFromJson(const nlohmann::json& j)
{
    Schedule s;
    const json& kind = field(j, "kind", "");
    const auto parsed = kind.is_string() ? parseKind(kind.get<std::string>()) : std::nullopt;
    if (!parsed)
        throw FormatError("field 'kind': unknown schedule kind " + kind.dump());
    s.kind = *parsed;
    s.ranks = intField(j, "ranks", "", 0);
    s.microbatches = intField(j, "microbatches", "", 0);
    s.stages = intField(j, "stages", "", 0);
    s.stagesPerRank = intField(j, "stages_per_rank", "", 1);
    s.placement = placementFromJson(field(j, "placement", ""), s);
    s.order = orderFromJson(field(j, "order", ""), "order");
    return s;
}

} // namespace dps
