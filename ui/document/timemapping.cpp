#include "document/timemapping.h"

#include <algorithm>
#include <cmath>

namespace dps::ui {

TimeMapping::TimeMapping(double startUs, double endUs, double left, double right)
    : m_startUs(startUs)
    , m_endUs(endUs)
    , m_left(left)
    , m_right(right)
{
}

double TimeMapping::scale() const
{
    const double span = spanUs();
    return span > 0.0 ? (m_right - m_left) / span : 0.0;
}

double TimeMapping::toPixel(double timeUs) const
{
    return m_left + (timeUs - m_startUs) * scale();
}

double TimeMapping::toTime(double x) const
{
    const double s = scale();
    return s > 0.0 ? m_startUs + (x - m_left) / s : m_startUs;
}

TimeMapping TimeMapping::zoomed(double factor, double anchorUs) const
{
    if (factor <= 0.0)
        return *this;
    const double start = anchorUs - (anchorUs - m_startUs) / factor;
    const double end = anchorUs + (m_endUs - anchorUs) / factor;
    return { start, end, m_left, m_right };
}

TimeMapping TimeMapping::panned(double dx) const
{
    const double s = scale();
    if (s <= 0.0)
        return *this;
    const double dt = dx / s;
    return { m_startUs + dt, m_endUs + dt, m_left, m_right };
}

TimeMapping TimeMapping::clamped(double minUs, double maxUs, double minSpanUs) const
{
    const double limit = std::max(0.0, maxUs - minUs);
    double span = std::clamp(spanUs(), std::min(minSpanUs, limit), limit);
    double start = m_startUs + (spanUs() - span) / 2.0;
    start = std::clamp(start, minUs, maxUs - span);
    return { start, start + span, m_left, m_right };
}

RowMapping::RowMapping(int rows, double top, double bottom, double fill)
    : m_rows(rows)
    , m_top(top)
    , m_bottom(bottom)
    , m_fill(std::clamp(fill, 0.05, 1.0))
{
}

double RowMapping::rowHeight() const
{
    return m_rows > 0 ? (m_bottom - m_top) / m_rows : 0.0;
}

double RowMapping::rowCenter(int row) const
{
    return m_top + (row + 0.5) * rowHeight();
}

double RowMapping::bandTop(int row) const
{
    return rowCenter(row) - bandHeight() / 2.0;
}

double RowMapping::bandBottom(int row) const
{
    return rowCenter(row) + bandHeight() / 2.0;
}

int RowMapping::nearestRow(double y) const
{
    const double h = rowHeight();
    if (m_rows <= 0 || h <= 0.0 || y < m_top || y >= m_bottom)
        return -1;
    return std::clamp(static_cast<int>(std::floor((y - m_top) / h)), 0, m_rows - 1);
}

int RowMapping::rowAt(double y) const
{
    const int row = nearestRow(y);
    if (row < 0)
        return -1;
    return (y >= bandTop(row) && y <= bandBottom(row)) ? row : -1;
}

} // namespace dps::ui
