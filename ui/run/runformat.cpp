#include "runformat.h"

#include <cmath>

namespace dps::ui {

QString formatMicroseconds(double us)
{
    if (!std::isfinite(us) || us < 0)
        return QStringLiteral("–");
    if (us < 1000.0)
        return QStringLiteral("%1 µs").arg(us, 0, 'f', 0);
    if (us < 1e6)
        return QStringLiteral("%1 ms").arg(us / 1e3, 0, 'f', us < 1e4 ? 2 : 1);
    return QStringLiteral("%1 s").arg(us / 1e6, 0, 'f', 2);
}

QString formatElapsed(qint64 ms)
{
    ms = std::max<qint64>(0, ms);
    if (ms < 10000)
        return QStringLiteral("%1 s").arg(ms / 1000.0, 0, 'f', 1);
    if (ms < 60000)
        return QStringLiteral("%1 s").arg(ms / 1000);
    const qint64 seconds = ms / 1000;
    const qint64 h = seconds / 3600, m = (seconds / 60) % 60, s = seconds % 60;
    if (h > 0)
        return QStringLiteral("%1:%2:%3").arg(h).arg(m, 2, 10, QLatin1Char('0')).arg(s, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2").arg(m).arg(s, 2, 10, QLatin1Char('0'));
}

QString formatBytes(qint64 bytes)
{
    constexpr double gib = 1024.0 * 1024.0 * 1024.0;
    if (bytes >= gib)
        return QStringLiteral("%1 GiB").arg(bytes / gib, 0, 'f', bytes >= 10 * gib ? 0 : 1);
    return QStringLiteral("%1 MiB").arg(bytes / (1024.0 * 1024.0), 0, 'f', 0);
}

} // namespace dps::ui
