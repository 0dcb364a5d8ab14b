#pragma once
// The timeline chart: one row per rank, time on x, one TimelinePlottable per lane (the main window has
// one lane, the comparison stacks one per variant on the same time axis). Zoom with the wheel or +/−,
// pan by dragging empty space or with the arrow keys, Home (or 0) fits. In an editable view a block can be
// dragged along its row: blockMoveRequested says where it was dropped; so can a send or receive drawn under the
// blocks (commMoveRequested, its cells in the prediction's program row). Hovering shows the action, its
// start and end, what it waited for and, for a model with expert parallelism, its all-to-all (an overlapped
// slot: the communication time and how much of it the other half's compute hides). The "Critical path"
// toggle (criticalPathAction, also in the view's context menu) outlines each lane's critical path and, with a
// run overlaid, the measured step's (sim/criticalpath.h, docs/analysis.md).
#include "document/snapshot.h"
#include "widgets/theme.h"
#include "widgets/timelineplottable.h"

#include "sim/criticalpath.h"

#include <qcustomplot.h>

#include <memory>
#include <vector>

class QAction;

namespace dps::ui {

/// Colours both axes of `plot` (base, ticks, labels, dotted grid) from `colors`: the one axis style the
/// timeline, the memory chart and the comparison sweep share.
void styleChartAxes(QCustomPlot& plot, const ChartColors& colors);

class TimelineView : public QCustomPlot {
    Q_OBJECT
public:
    explicit TimelineView(QWidget* parent = nullptr);

    /// One editable lane (the active variant).
    void setSnapshot(const SnapshotPtr& snapshot);
    /// Several lanes stacked, each under a title row (comparison view); not editable.
    void setLanes(const std::vector<SnapshotPtr>& lanes);
    int laneCount() const { return static_cast<int>(m_lanes.size()); }
    TimelinePlottable* lane(int index) const;
    SnapshotPtr laneSnapshot(int index) const;

    /// Draws a run's measured blocks beside lane 0's predicted ones (null hides them); the fitted view
    /// then spans the longer of the two timelines.
    /// `measuredPath` is that step's critical path (slots = indices in each rank's measured blocks; null: none).
    void setMeasuredBlocks(
        std::shared_ptr<const BlockIndex> measured, std::shared_ptr<const CriticalPath> measuredPath = nullptr);
    const BlockIndex* measuredBlocks() const;
    /// The measured part of a predicted block's tooltip (HTML, starting with a line break): the measured start,
    /// its slip, end, duration and wait, and for an expert-parallel run its all-to-all and the part hidden; "not in
    /// the run" when no measured block matches; empty without a run laid over.
    QString measuredTooltip(const TimelineBlock& predicted) const;

    /// The checkable "Sends and Receives" action (off by default): asks (commsToggled) for predictions of PyTorch's
    /// lowering of the schedule with its sends and receives timed where they sit; lanes whose snapshot has them draw
    /// them under their rank's blocks.
    QAction* commsAction() const { return m_commsAction; }
    /// The checkable "Critical path" action (off by default) that shows or hides the critical paths.
    QAction* criticalPathAction() const { return m_pathAction; }
    /// Shows or hides the critical paths (the action's state).
    void setCriticalPathShown(bool shown);
    bool criticalPathShown() const;
    /// The critical path of lane `index`'s prediction (empty unless it was timed); computed when asked.
    CriticalPath predictedCriticalPath(int index) const;
    /// Draws `path` as lane `index`'s critical path instead of its prediction's (a lane laid out from a measured
    /// run: its slots index the lane's blocks); null goes back to the prediction's. Lanes set anew forget it.
    void setLaneCriticalPath(int index, std::shared_ptr<const CriticalPath> path);

    void setEditable(bool editable) { m_editable = editable; }
    /// Outlines a block (e.g. the one a diagnostic names); an invalid ref clears.
    void markBlock(BlockRef block);

    void fitAll();
    /// Zooms the time axis by `factor` (> 1 zooms in) around the centre of the view.
    void zoomBy(double factor);
    /// Zooms and pans so the block at `position` of `rank` (lane 0) is centred and takes `share` of the
    /// visible span (e.g. 0.5); nothing when there is no such block.
    void zoomToBlock(int rank, int position, double share = 0.5);
    /// Pans by a fraction of the visible span (positive: later).
    void panBy(double fraction);
    /// Centre of a block in widget pixels (lane 0), for tests; (-1, -1) when it does not exist.
    QPointF blockCenter(int rank, int position) const;
    /// The hover text for a widget position (empty over idle time or outside the rows).
    QString tooltipAt(const QPointF& pos) const;
    /// Pixel x of a time (lane 0's mapping).
    double timeToPixel(double us) const;
    /// The end time shown by the fitted view (largest makespan over lanes).
    double makespan() const { return m_makespanUs; }
    void applyColors(const ChartColors& colors);

signals:
    /// The "Sends and Receives" action was switched.
    void commsToggled(bool shown);
    /// An editable lane's block was dragged from `from` to `to` on `rank`.
    void blockMoveRequested(int rank, int from, int to);
    /// An editable lane's send or receive was dragged along `rank`'s row: from cell `from` of the prediction's program
    /// row (Prediction::program) to cell `to` (the index it has afterwards, commDropCell).
    void commMoveRequested(int rank, int from, int to);
    /// The user pointed at a block (or nothing: rank = -1).
    void blockHovered(int rank, int position);

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void changeEvent(QEvent* event) override;
    bool event(QEvent* event) override;

private:
    struct Lane {
        TimelinePlottable* plottable = nullptr;
        SnapshotPtr snapshot;
    };
    struct Hit {
        int lane = -1;
        BlockRef block;
        CommRef comm; ///< a send or receive bar (block is then invalid)
    };
    void setupAxes();
    /// Gives every lane its critical-path marks (none while hidden).
    void updatePaths();
    void rebuildLanes(const std::vector<SnapshotPtr>& lanes, bool titled);
    void updateTicks(bool titled);
    void clampRange(const QCPRange& range);
    Hit hitAt(const QPointF& pos) const;
    QString tooltipFor(const Hit& hit) const;
    void updateHover(const QPointF& pos);
    void updateDrag(const QPointF& pos);
    void finishDrag(const QPointF& pos);
    bool sameShape(const std::vector<SnapshotPtr>& lanes) const;
    /// The hover text of a send or receive bar.
    QString commTooltip(const Hit& hit) const;
    /// A drag of a send or receive; false (nothing started) when the bar is neither.
    bool startCommDrag(const Hit& hit, double pressUs);
    /// The tooltip's all-to-all line of a block ("" without expert parallelism).
    QString communicationLine(const SimulationSnapshot& s, const TimelineBlock& b) const;

    std::vector<Lane> m_lanes;
    QAction* m_pathAction = nullptr;
    QAction* m_commsAction = nullptr;
    std::shared_ptr<const CriticalPath> m_measuredPath;
    std::vector<std::shared_ptr<const CriticalPath>> m_lanePaths; ///< per lane: drawn instead of the prediction's
    ChartColors m_colors;
    double m_makespanUs = 0.0;
    bool m_editable = false;
    bool m_userZoomed = false;
    bool m_clamping = false;
    Hit m_hovered;
    struct DragState {
        Hit hit;
        double pressTimeUs = 0.0;
        double centreUs = 0.0;
        int drop = -1;
    } m_drag;
};

/// The legend above a timeline: a swatch per kind, the overlapped pair, idle time and invalid blocks.
class TimelineLegend : public QWidget {
    Q_OBJECT
public:
    explicit TimelineLegend(QWidget* parent = nullptr);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    /// Adds (or removes) the entries of the sends and receives the timeline draws under each rank.
    void setCommsShown(bool shown);

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    struct Entry {
        QString label;
        int kind; ///< 0-3 an op kind, 4 overlapped, 5 idle, 6 invalid, 7 all-to-all (an F&B slot's lower lane),
                  ///< 8 the critical path, 9 a send, 10 a receive, 11 a stalled receive
    };
    /// Top-left of each entry when laid out in rows of `width` pixels.
    std::vector<QPoint> layoutEntries(int width) const;
    int entryWidth(const Entry& entry) const;
    void paintSwatch(QPainter& painter, const QRect& swatch, int kind) const;
    std::vector<Entry> m_entries;
};

/// Gives `axis` time tick labels in the unit that suits `spanUs` (µs, ms or s) and the matching title.
void setTimeAxisUnit(QCPAxis* axis, double spanUs);

/// Saves a chart as PNG, SVG or PDF by the file's suffix; returns an empty string or the reason it failed.
QString saveChart(QCustomPlot* plot, const QString& path, int width = 0, int height = 0);

} // namespace dps::ui
