#include "formatting.h"

#include <cmath>

namespace dps::ui {

QString formatTime(double us)
{
    const double a = std::abs(us);
    if (a >= 1e6)
        return QStringLiteral("%1 s").arg(us / 1e6, 0, 'f', 3);
    if (a >= 1e4)
        return QStringLiteral("%1 ms").arg(us / 1e3, 0, 'f', 2);
    return QStringLiteral("%1 µs").arg(us, 0, 'f', 1);
}

QString formatBytes(double bytes)
{
    const double a = std::abs(bytes);
    if (a >= 1024.0 * 1024.0 * 1024.0)
        return QStringLiteral("%1 GiB").arg(bytes / (1024.0 * 1024.0 * 1024.0), 0, 'f', 2);
    if (a >= 1024.0 * 1024.0)
        return QStringLiteral("%1 MiB").arg(bytes / (1024.0 * 1024.0), 0, 'f', 1);
    if (a >= 1024.0)
        return QStringLiteral("%1 KiB").arg(bytes / 1024.0, 0, 'f', 2);
    return QStringLiteral("%1 B").arg(bytes, 0, 'f', 0);
}

QString formatPercent(double fraction)
{
    return QStringLiteral("%1 %").arg(fraction * 100.0, 0, 'f', 1);
}

QString formatSignedPercent(double fraction)
{
    const QString sign = fraction >= 0 ? QStringLiteral("+") : QStringLiteral("−");
    return sign + QStringLiteral("%1 %").arg(std::abs(fraction) * 100.0, 0, 'f', 1);
}

QString formatCount(double count)
{
    const double a = std::abs(count);
    if (a >= 1e9)
        return QStringLiteral("%1 G").arg(count / 1e9, 0, 'f', 2);
    if (a >= 1e6)
        return QStringLiteral("%1 M").arg(count / 1e6, 0, 'f', 2);
    if (a >= 1e4)
        return QStringLiteral("%1 k").arg(count / 1e3, 0, 'f', 1);
    return QString::number(count, 'f', 0);
}

QString formatNumber(double value, int decimals)
{
    QString text = QString::number(value, 'f', decimals);
    if (text.contains(QLatin1Char('.'))) {
        while (text.endsWith(QLatin1Char('0')))
            text.chop(1);
        if (text.endsWith(QLatin1Char('.')))
            text.chop(1);
    }
    return text;
}

} // namespace dps::ui
