#pragma once
// Small text renderings shared by the run panel and the runs history.
#include <QString>

namespace dps::ui {

/// A duration given in µs, with a unit that suits it: "850 µs", "12.3 ms", "1.28 s".
QString formatMicroseconds(double us);
/// Wall-clock time given in ms: "0.8 s", "42 s", then as a clock: "12:03", "1:02:03".
QString formatElapsed(qint64 ms);
/// Memory: "80 GiB", "512 MiB".
QString formatBytes(qint64 bytes);

} // namespace dps::ui
