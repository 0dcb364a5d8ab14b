#pragma once
// Numbers as people read them: times, bytes, rates, counts.
#include <QString>

namespace dps::ui {

/// "850.0 µs", "12.35 ms", "1.250 s".
QString formatTime(double us);
/// "512 B", "1.50 KiB", "48.0 MiB", "7.45 GiB".
QString formatBytes(double bytes);
/// "12.3 %" from a fraction.
QString formatPercent(double fraction);
/// A relative error with its sign, e.g. "+12.5 %" or "−3.0 %".
QString formatSignedPercent(double fraction);
/// "1.05 M", "33.6 k", "512".
QString formatCount(double count);
/// A number with up to `decimals` decimals and no trailing zeros: "2", "2.5".
QString formatNumber(double value, int decimals = 3);

} // namespace dps::ui
