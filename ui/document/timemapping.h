#pragma once
// Plain time↔pixel and rank↔pixel mappings of the timeline. No Qt: the plottable, the view and the tests
// all go through these, so what is drawn and what is hit-tested agree by construction.

namespace dps::ui {

/// Maps a visible time range [startUs, endUs] onto a horizontal pixel span [left, right].
class TimeMapping {
public:
    TimeMapping() = default;
    TimeMapping(double startUs, double endUs, double left, double right);

    double startUs() const { return m_startUs; }
    double endUs() const { return m_endUs; }
    double spanUs() const { return m_endUs - m_startUs; }
    double left() const { return m_left; }
    double right() const { return m_right; }
    /// Pixels per microsecond (0 for an empty range).
    double scale() const;

    /// Pixel x of time t; times outside the range map outside the span (linear, no clamping).
    double toPixel(double timeUs) const;
    /// Time at pixel x.
    double toTime(double x) const;
    /// Width in pixels of a duration.
    double toWidth(double durationUs) const { return durationUs * scale(); }

    /// The range zoomed by `factor` (> 1 zooms in) keeping `anchorUs` at the same pixel.
    TimeMapping zoomed(double factor, double anchorUs) const;
    /// The range moved by `dx` pixels (positive moves the view right, i.e. to later times).
    TimeMapping panned(double dx) const;
    /// The range kept inside [minUs, maxUs] and at least `minSpanUs` wide, span preserved when possible.
    TimeMapping clamped(double minUs, double maxUs, double minSpanUs) const;

private:
    double m_startUs = 0.0;
    double m_endUs = 1.0;
    double m_left = 0.0;
    double m_right = 1.0;
};

/// Maps `rows` equal rows onto a vertical pixel span [top, bottom], row 0 at the top. Blocks fill the middle
/// `fill` fraction of a row; the rest is the gap between rows.
class RowMapping {
public:
    RowMapping() = default;
    RowMapping(int rows, double top, double bottom, double fill = 0.78);

    int rows() const { return m_rows; }
    double top() const { return m_top; }
    double bottom() const { return m_bottom; }
    double rowHeight() const;
    double rowCenter(int row) const;
    /// Top and bottom pixel of the block band of a row.
    double bandTop(int row) const;
    double bandBottom(int row) const;
    double bandHeight() const { return rowHeight() * m_fill; }
    /// The row whose block band contains y, or -1 (outside every row, or in the gap between two rows).
    int rowAt(double y) const;
    /// The row whose full height contains y (gaps included), or -1 outside.
    int nearestRow(double y) const;

private:
    int m_rows = 0;
    double m_top = 0.0;
    double m_bottom = 1.0;
    double m_fill = 0.78;
};

} // namespace dps::ui
