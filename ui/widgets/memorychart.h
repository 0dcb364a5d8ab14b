#pragma once
// Memory over time per rank: for one rank, stacked areas of parameters, gradients, optimizer state and
// live activations; for all ranks, one line each. The peak is marked and the device limit drawn (or, when
// it is far above the curves, named in a corner so the curves stay readable). A third view, "per rank",
// draws every rank's memory at its peak as one stacked bar (parameters, gradients, optimizer state,
// activations) and marks the heaviest rank with what makes it heavier than the median rank.
#include "document/measuredoverlay.h"
#include "document/snapshot.h"
#include "widgets/theme.h"

#include <qcustomplot.h>

#include <QWidget>

class QComboBox;
class QLabel;

namespace dps::ui {

class MemoryChart : public QWidget {
    Q_OBJECT
public:
    explicit MemoryChart(QWidget* parent = nullptr);

    void setSnapshot(const SnapshotPtr& snapshot);
    /// A run's measured memory per rank, drawn dashed against the prediction (empty hides it).
    void setMeasuredMemory(const std::vector<std::vector<MeasuredMemoryPoint>>& memory);
    bool hasMeasuredMemory() const { return !m_measured.empty(); }
    /// The view showing every rank's parts at its peak as stacked bars (a value of setRank).
    static constexpr int kPerRankParts = -2;
    /// A rank (0, 1, ...) over time; -1 every rank's total over time; kPerRankParts the bars. False (and nothing
    /// changes) for a rank the shown snapshot does not have.
    bool setRank(int rank);
    int rank() const { return m_rank; }
    /// Follows the timeline's visible time range.
    void setTimeRange(const QCPRange& range);
    /// Puts the plot's time axis under the timeline's: its left and right ends at these global x pixels.
    void alignTimeAxis(int globalLeft, int globalRight);
    QCustomPlot* plot() const { return m_plot; }
    /// The line above the plot (e.g. "rank 15 heaviest: peak 71.3 GiB, +3.2 GiB over the median rank
    /// (parameters +1.8 GiB)" in the per-rank view).
    QString summaryText() const;

protected:
    void changeEvent(QEvent* event) override;

private:
    void rebuild();
    void fillRankCombo();
    void styleAxes();
    void drawStacked(int rank, double divisor);
    void drawAllRanks(double divisor);
    /// The per-rank view: stacked bars, the heaviest rank outlined and named, the device limit.
    void drawParts();
    void markPeak(int rank, double divisor);
    void drawLimit(double divisor, double top);
    void drawMeasured(double divisor);
    double measuredPeak() const;
    /// Step curve of a rank: (time, value) with the last value held until the makespan.
    void addStep(
        const QVector<double>& t, const QVector<double>& v, const QColor& color, const QString& name, bool filled);

    QComboBox* m_rankBox;
    QLabel* m_summary;
    QCustomPlot* m_plot;
    SnapshotPtr m_snapshot;
    std::vector<std::vector<MeasuredMemoryPoint>> m_measured;
    int m_rank = 0;
    QCPRange m_timeRange; ///< the timeline's visible range, restored when leaving the bars
    bool m_hasTimeRange = false;
    ChartColors m_colors;
};

} // namespace dps::ui
