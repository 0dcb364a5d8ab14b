#pragma once
// JSON form of a schedule (the IR with its placement), used by `dpstudio generate --format json` and
// inside project files for hand-edited orders.
#include "schedule.h"

#include <nlohmann/json.hpp>

namespace dps {

/// {"kind","ranks","microbatches","stages","stages_per_rank","placement":{"mode":"per_stage"|"mirrored"
/// |"table", "rank_of_stage":[...]} ,"order":[["0F0","(0F3;3B5)OVERLAP_F_B",...], ...]}
nlohmann::json toJson(const Schedule& schedule);

/// Per-rank order only: [["0F0",...], ...].
nlohmann::json orderToJson(const std::vector<std::vector<Action>>& order);

/// Inverse of orderToJson. Throws FormatError naming `field` and the rank/position of a bad action.
std::vector<std::vector<Action>> orderFromJson(const nlohmann::json& j, const std::string& field);

/// Inverse of toJson. Throws FormatError naming the field at fault.
Schedule scheduleFromJson(const nlohmann::json& j);

} // namespace dps
