#include "format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dps {

std::string formatNumber(double value, int decimals)
{
    if (!std::isfinite(value))
        return "n/a";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", std::clamp(decimals, 0, 12), value);
    std::string s = buffer;
    if (s.find('.') != std::string::npos) {
        s.erase(s.find_last_not_of('0') + 1);
        if (s.back() == '.')
            s.pop_back();
    }
    return s == "-0" ? "0" : s;
}

std::string formatTime(double us)
{
    if (!std::isfinite(us))
        return "n/a";
    if (std::abs(us) < 1e3)
        return formatNumber(us, 3) + " µs";
    if (std::abs(us) < 1e6)
        return formatNumber(us / 1e3, 2) + " ms";
    return formatNumber(us / 1e6, 3) + " s";
}

std::string formatSignedTime(double us)
{
    if (!std::isfinite(us))
        return "n/a";
    return (us < 0 ? "-" : "+") + formatTime(std::fabs(us));
}

std::string formatSignificant(double value, int digits)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.*g", std::clamp(digits, 1, 17), value);
    return buffer;
}

std::string formatBytes(double bytes)
{
    if (!std::isfinite(bytes))
        return "n/a";
    static const char* const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    int unit = 0;
    while (std::abs(bytes) >= 1024.0 && unit < 5) {
        bytes /= 1024.0;
        ++unit;
    }
    return formatNumber(bytes, 2) + " " + units[unit];
}

std::string formatPercent(double fraction)
{
    return formatNumber(fraction * 100.0, 2) + " %";
}

std::string formatSignedPercent(double fraction)
{
    if (!std::isfinite(fraction))
        return "n/a";
    const std::string magnitude = formatNumber(std::abs(fraction) * 100.0, 1);
    return (magnitude == "0" ? "" : fraction < 0 ? "-" : "+") + magnitude + " %";
}

std::string formatCount(double n)
{
    const double a = std::abs(n);
    if (a >= 1e9)
        return formatNumber(n / 1e9, 2) + " G";
    if (a >= 1e6)
        return formatNumber(n / 1e6, 2) + " M";
    if (a >= 1e3)
        return formatNumber(n / 1e3, 2) + " k";
    return formatNumber(n);
}

std::string formatElapsed(std::int64_t ms)
{
    ms = std::max<std::int64_t>(0, ms);
    if (ms < 10000)
        return formatNumber(static_cast<double>(ms / 100) / 10.0, 1) + " s";
    if (ms < 60000)
        return std::to_string(ms / 1000) + " s";
    const std::int64_t seconds = ms / 1000;
    const std::int64_t h = seconds / 3600, m = (seconds / 60) % 60, s = seconds % 60;
    char buffer[64];
    if (h > 0)
        std::snprintf(buffer, sizeof buffer, "%lld:%02lld:%02lld", static_cast<long long>(h), static_cast<long long>(m),
            static_cast<long long>(s));
    else
        std::snprintf(buffer, sizeof buffer, "%lld:%02lld", static_cast<long long>(m), static_cast<long long>(s));
    return buffer;
}

std::size_t displayWidth(const std::string& text)
{
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string padded(const std::string& text, std::size_t width, bool right)
{
    const std::size_t columns = displayWidth(text);
    const std::string fill(columns < width ? width - columns : 0, ' ');
    return right ? fill + text : text + fill;
}

std::string formatTable(const std::vector<std::vector<std::string>>& rows, std::size_t leftColumns)
{
    std::vector<std::size_t> widths;
    for (const auto& row : rows) {
        widths.resize(std::max(widths.size(), row.size()), 0);
        for (std::size_t c = 0; c < row.size(); ++c)
            widths[c] = std::max(widths[c], displayWidth(row[c]));
    }
    std::string out;
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t c = 0; c < row.size(); ++c)
            line += (c ? "  " : "") + padded(row[c], widths[c], c >= leftColumns);
        out += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
    }
    return out;
}

std::string formatCountOf(std::size_t count, const std::string& noun, const std::string& plural)
{
    return std::to_string(count) + " " + (count == 1 ? noun : plural.empty() ? noun + "s" : plural);
}

} // namespace dps
