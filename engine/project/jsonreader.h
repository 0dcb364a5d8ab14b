#pragma once
// Internal to engine/project: reads JSON fields with messages that name the file and the field path
// ("p.dpstudio.json: variants[1].ranks: must be a positive integer, got -3"). Every failure throws
// FormatError.
#include "schedule/action.h"

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dps::detail {

/// A JSON value plus where it sits (file and field path), with typed accessors for its members.
class JsonReader {
public:
    enum Bound { kPositive, kNonNegative };

    /// `path` is the value's field path ("" for the document root); `source` names the file.
    JsonReader(const nlohmann::json& value, std::string path, const std::string& source);

    /// Parses text; throws FormatError "<source>: not valid JSON: <where and why>".
    static nlohmann::json parse(const std::string& text, const std::string& source);
    /// Checks that the root is an object whose format_version is a positive integer not above `newest`;
    /// a newer one is refused naming both versions. Returns the version.
    static int checkVersion(const nlohmann::json& root, const std::string& source, int newest);
    /// Short text of a value for messages (its JSON, cut at 40 characters).
    static std::string shown(const nlohmann::json& value);

    /// Throws for a member not in `known` ("<path>.<key>: unknown field").
    void allowOnly(std::initializer_list<std::string_view> known) const;
    void allowOnly(std::span<const std::string_view> known) const;
    bool has(const char* key) const;
    /// The member; throws "<path>.<key>: missing (required)".
    const nlohmann::json& get(const char* key) const;
    [[noreturn]] void fail(const char* key, const std::string& message) const;
    [[noreturn]] void failHere(const std::string& message) const;

    int integer(const char* key, int minimum) const;
    std::uint64_t unsignedInteger(const char* key) const;
    double numberOr(const char* key, Bound bound, double fallback) const;
    std::optional<double> optionalNumber(const char* key, Bound bound) const;
    std::string string(const char* key) const;
    const nlohmann::json& array(const char* key) const;
    /// The member as an object reader (throws unless it is an object).
    JsonReader object(const char* key) const;
    /// Element `index` of `list`, the member `key` of this value ("" when this value is the list).
    JsonReader element(const nlohmann::json& list, std::size_t index, const char* key) const;

    /// This value as an object / array / integer ≥ minimum / action text.
    JsonReader asObject() const;
    const nlohmann::json& asArray() const;
    int asInteger(int minimum) const;
    Action asAction() const;
    /// This value as one step of PyTorch's whole action language (parseStep): a compute action or a communication
    /// action such as "1RECV_F0"; an empty string (an idle step) is refused.
    Step asStep() const;

private:
    std::string childPath(std::string_view key) const;
    static std::string integerRule(int minimum);

    const nlohmann::json* m_value;
    std::string m_path;
    const std::string* m_source;
};

} // namespace dps::detail
