#include "jsonreader.h"

#include "base/errors.h"
#include "base/json.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dps::detail {

using json = nlohmann::json;

JsonReader::JsonReader(const json& value, std::string path, const std::string& source)
    : m_value(&value)
    , m_path(std::move(path))
    , m_source(&source)
{
}

json JsonReader::parse(const std::string& text, const std::string& source)
{
    return parseJson(text, source);
}

int JsonReader::checkVersion(const json& root, const std::string& source, int newest)
{
    if (!root.is_object())
        throw FormatError(source + ": must be a JSON object, got " + shown(root));
    const JsonReader reader(root, "", source);
    const int version = reader.integer("format_version", 1);
    if (version > newest)
        throw FormatError(source + ": format_version " + std::to_string(version) + " is newer than this build reads ("
            + std::to_string(newest) + ")");
    return version;
}

std::string JsonReader::shown(const json& value)
{
    std::string text = value.dump();
    if (text.size() > 40)
        text = text.substr(0, 37) + "...";
    return text;
}

std::string JsonReader::childPath(std::string_view key) const
{
    if (m_path.empty())
        return std::string(key);
    return m_path + "." + std::string(key);
}

void JsonReader::fail(const char* key, const std::string& message) const
{
    throw FormatError(*m_source + ": " + childPath(key) + ": " + message);
}

void JsonReader::failHere(const std::string& message) const
{
    throw FormatError(*m_source + ": " + (m_path.empty() ? std::string("document") : m_path) + ": " + message);
}

void JsonReader::allowOnly(std::initializer_list<std::string_view> known) const
{
    allowOnly(std::span<const std::string_view>(known.begin(), known.size()));
}

void JsonReader::allowOnly(std::span<const std::string_view> known) const
{
    for (const auto& item : m_value->items())
        if (std::find(known.begin(), known.end(), item.key()) == known.end())
            throw FormatError(*m_source + ": " + childPath(item.key()) + ": unknown field");
}

bool JsonReader::has(const char* key) const
{
    return m_value->contains(key);
}

const json& JsonReader::get(const char* key) const
{
    const auto it = m_value->find(key);
    if (it == m_value->end())
        fail(key, "missing (required)");
    return *it;
}

std::string JsonReader::integerRule(int minimum)
{
    if (minimum == 1)
        return "must be a positive integer";
    if (minimum == 0)
        return "must be a non-negative integer";
    return "must be an integer ≥ " + std::to_string(minimum);
}

int JsonReader::integer(const char* key, int minimum) const
{
    return JsonReader(get(key), childPath(key), *m_source).asInteger(minimum);
}

std::uint64_t JsonReader::unsignedInteger(const char* key) const
{
    const json& v = get(key);
    if (!v.is_number_unsigned())
        fail(key, "must be a non-negative integer, got " + shown(v));
    return v.get<std::uint64_t>();
}

std::optional<double> JsonReader::optionalNumber(const char* key, Bound bound) const
{
    if (!has(key))
        return std::nullopt;
    const json& v = get(key);
    const bool ok = v.is_number() && (bound == kPositive ? v.get<double>() > 0.0 : v.get<double>() >= 0.0);
    if (!ok)
        fail(key,
            std::string(bound == kPositive ? "must be a positive number" : "must be a non-negative number") + ", got "
                + shown(v));
    return v.get<double>();
}

double JsonReader::numberOr(const char* key, Bound bound, double fallback) const
{
    return optionalNumber(key, bound).value_or(fallback);
}

std::string JsonReader::string(const char* key) const
{
    const json& v = get(key);
    if (!v.is_string())
        fail(key, "must be a string, got " + shown(v));
    return v.get<std::string>();
}

const json& JsonReader::array(const char* key) const
{
    const json& v = get(key);
    if (!v.is_array())
        fail(key, "must be a list, got " + shown(v));
    return v;
}

JsonReader JsonReader::object(const char* key) const
{
    return JsonReader(get(key), childPath(key), *m_source).asObject();
}

JsonReader JsonReader::element(const json& list, std::size_t index, const char* key) const
{
    const std::string base = *key ? childPath(key) : m_path;
    return JsonReader(list.at(index), base + "[" + std::to_string(index) + "]", *m_source);
}

JsonReader JsonReader::asObject() const
{
    if (!m_value->is_object())
        failHere("must be an object, got " + shown(*m_value));
    return *this;
}

const json& JsonReader::asArray() const
{
    if (!m_value->is_array())
        failHere("must be a list, got " + shown(*m_value));
    return *m_value;
}

int JsonReader::asInteger(int minimum) const
{
    const json& v = *m_value;
    const bool integral = v.is_number_integer();
    const long long n = integral ? v.get<long long>() : 0;
    if (!integral || (v.is_number_unsigned() && v.get<std::uint64_t>() > INT_MAX) || n < minimum || n > INT_MAX)
        failHere(integerRule(minimum) + ", got " + shown(v));
    return static_cast<int>(n);
}

Action JsonReader::asAction() const
{
    if (!m_value->is_string())
        failHere("must be an action string such as \"0F1\", got " + shown(*m_value));
    try {
        return parseAction(m_value->get<std::string>());
    } catch (const Error& e) {
        failHere(e.what());
    }
}

Step JsonReader::asStep() const
{
    if (!m_value->is_string() || m_value->get<std::string>().empty())
        failHere("must be an action string such as \"1F0\" or \"1RECV_F0\", got " + shown(*m_value));
    try {
        return parseStep(m_value->get<std::string>());
    } catch (const Error& e) {
        failHere(e.what());
    }
}

} // namespace dps::detail
