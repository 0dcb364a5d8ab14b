#pragma once
// Numbers as people read them, one rule for every front end: the CLI's tables, the run report and the
// designer all print the same makespan the same way.
//
// Times (given in µs): below 1 ms in µs with up to 3 decimals ("66 µs", "850.5 µs"); below 1 s in ms with up
// to 2 ("12.35 ms"); then in s with up to 3 ("2.365 s"). Bytes: binary units, up to 2 decimals ("48 MiB",
// "1.5 KiB", "512 B"). Trailing zeros are dropped everywhere; "-0" reads "0".
#include <cstdint>
#include <string>
#include <vector>

namespace dps {

/// `value` with up to `decimals` decimals and no trailing zeros: "2", "2.5", "0.091".
std::string formatNumber(double value, int decimals = 3);
/// A time given in µs: "66 µs", "12.35 ms", "2.365 s". Not finite: "n/a".
std::string formatTime(double us);
/// A time difference given in µs, with its sign: "+66 µs", "-1.5 ms", "+0 µs". Not finite: "n/a".
std::string formatSignedTime(double us);
/// `value` with `digits` significant digits, in exponent form when very small or large (printf's %g):
/// 0.0312 → "0.0312", 1.5e-7 → "1.5e-07" (relative errors and their thresholds).
std::string formatSignificant(double value, int digits = 3);
/// A size given in bytes: "512 B", "1.5 KiB", "45.5 MiB", "7.45 GiB".
std::string formatBytes(double bytes);
/// A fraction as a percentage with up to 2 decimals: 0.0909 → "9.09 %".
std::string formatPercent(double fraction);
/// A relative error with its sign and up to 1 decimal: 0.125 → "+12.5 %", −0.03 → "-3 %".
std::string formatSignedPercent(double fraction);
/// A count with a decimal prefix: "512", "33.6 k", "1.05 M", "671.03 G".
std::string formatCount(double count);
/// `count` and its noun, the noun plural unless the count is 1: (1, "step") → "1 step", (3, "rank") → "3 ranks".
/// `plural` when the noun does not take an "s" ("variants" is the default for "variant").
std::string formatCountOf(std::size_t count, const std::string& noun, const std::string& plural = {});
/// Wall-clock time given in ms: "0.8 s", "42 s", then as a clock: "12:03", "1:02:03".
std::string formatElapsed(std::int64_t ms);

/// Display width of UTF-8 text: its code points ("µs" is 2 columns).
std::size_t displayWidth(const std::string& text);
/// `text` padded with spaces to `width` display columns, on the left when `right` (right-aligned).
std::string padded(const std::string& text, std::size_t width, bool right);
/// A plain text table, one line per row: columns two spaces apart, the first `leftColumns` columns
/// left-aligned and the others right-aligned, no trailing spaces.
std::string formatTable(const std::vector<std::vector<std::string>>& rows, std::size_t leftColumns = 1);

} // namespace dps
