#pragma once
// The one way the engine turns JSON text into a value: nlohmann's parser with a nesting limit, so that a file
// of 50,000 nested brackets is a clear error instead of a stack overflow when the value is later printed or
// walked (nlohmann's dump() and our readers recurse once per level).
#include "base/errors.h"

#include <nlohmann/json.hpp>

#include <string>

namespace dps {

/// The deepest nesting of arrays and objects a file may have (ours nest at most 6 levels).
inline constexpr int kMaxJsonDepth = 64;

/// Parses `text`. Throws FormatError "<source>: not valid JSON: <nlohmann's reason without its error id>" for
/// bad syntax or a number out of a double's range, and "<source>: not valid JSON: arrays and objects nested
/// deeper than 64 levels" past kMaxJsonDepth.
template <typename Json = nlohmann::json> Json parseJson(const std::string& text, const std::string& source)
{
    struct TooDeep { };
    try {
        return Json::parse(text, [](int depth, typename Json::parse_event_t, Json&) {
            if (depth > kMaxJsonDepth)
                throw TooDeep {};
            return true;
        });
    } catch (const TooDeep&) {
        throw FormatError(source + ": not valid JSON: arrays and objects nested deeper than "
            + std::to_string(kMaxJsonDepth) + " levels");
    } catch (const nlohmann::json::exception& e) { // parse_error, and out_of_range for a number like 1e400
        std::string why = e.what();
        const auto bracket = why.find("] ");
        if (bracket != std::string::npos)
            why = why.substr(bracket + 2);
        throw FormatError(source + ": not valid JSON: " + why);
    }
}

} // namespace dps
