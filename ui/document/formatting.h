#pragma once
// Numbers as people read them, as QString: thin wrappers over engine/base/format.h, so the designer prints
// a makespan exactly as `dpstudio simulate` and the run report do (one rule, documented there).
#include <QString>

namespace dps::ui {

/// "850.5 µs", "12.35 ms", "2.365 s" (dps::formatTime).
QString formatTime(double us);
/// A time difference with its sign: "+66 µs", "-1.5 ms" (dps::formatSignedTime).
QString formatSignedTime(double us);
/// "512 B", "1.5 KiB", "45.5 MiB", "7.45 GiB" (dps::formatBytes).
QString formatBytes(double bytes);
/// "9.09 %" from a fraction (dps::formatPercent).
QString formatPercent(double fraction);
/// A relative error with its sign: "+12.5 %", "-3 %" (dps::formatSignedPercent).
QString formatSignedPercent(double fraction);
/// "512", "33.6 k", "1.05 M" (dps::formatCount).
QString formatCount(double count);
/// A number with up to `decimals` decimals and no trailing zeros: "2", "2.5" (dps::formatNumber).
QString formatNumber(double value, int decimals = 3);

} // namespace dps::ui
