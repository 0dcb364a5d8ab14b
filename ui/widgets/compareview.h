#pragma once
// The comparison view: every variant of the project stacked on one time axis, a side-by-side metrics table,
// and a sweep of all variants over the microbatch count or the F&B / (F + B) ratio drawn as a plot.
#include "document/simulationservice.h"
#include "widgets/theme.h"

#include <QWidget>

class QComboBox;
class QCustomPlot;
class QLabel;
class QTableView;

namespace dps::ui {

class CompareModel;
class TimelineView;

class CompareView : public QWidget {
    Q_OBJECT
public:
    explicit CompareView(QWidget* parent = nullptr);

    void setSnapshot(const CompareSnapshotPtr& snapshot);
    void setSweep(const SweepResultPtr& sweep);
    /// The value the project has now, marked on the sweep plot (NaN: none).
    void setCurrentValue(double x) { m_currentX = x; }
    SweepParameter sweepParameter() const;
    CompareModel* model() const { return m_model; }
    TimelineView* timeline() const { return m_timeline; }
    QCustomPlot* sweepPlot() const { return m_sweepPlot; }

signals:
    /// The user chose another sweep parameter.
    void sweepParameterChanged(dps::SweepParameter parameter);
    /// The view became visible (its content is computed only while shown).
    void shown();

protected:
    void showEvent(QShowEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    QWidget* setupSweep();
    void drawSweep();
    void markCurrentValue(double top);
    /// One line per variant; returns the largest y value.
    double addSweepSeries(bool bubble);
    void styleSweep();

    TimelineView* m_timeline;
    CompareModel* m_model;
    QTableView* m_table;
    QComboBox* m_parameter = nullptr;
    QComboBox* m_metric = nullptr;
    QCustomPlot* m_sweepPlot = nullptr;
    QLabel* m_sweepNote = nullptr;
    SweepResultPtr m_sweep;
    double m_currentX;
    ChartColors m_colors;
};

} // namespace dps::ui
