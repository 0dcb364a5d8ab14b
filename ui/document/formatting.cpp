#include "document/formatting.h"

#include "base/format.h"

namespace dps::ui {

QString formatTime(double us)
{
    return QString::fromStdString(dps::formatTime(us));
}

QString formatSignedTime(double us)
{
    return QString::fromStdString(dps::formatSignedTime(us));
}

QString formatBytes(double bytes)
{
    return QString::fromStdString(dps::formatBytes(bytes));
}

QString formatPercent(double fraction)
{
    return QString::fromStdString(dps::formatPercent(fraction));
}

QString formatSignedPercent(double fraction)
{
    return QString::fromStdString(dps::formatSignedPercent(fraction));
}

QString formatCount(double count)
{
    return QString::fromStdString(dps::formatCount(count));
}

QString formatNumber(double value, int decimals)
{
    return QString::fromStdString(dps::formatNumber(value, decimals));
}

} // namespace dps::ui
