#pragma once
// The comparison view: every variant of the project stacked on one time axis, a side-by-side metrics table
// (makespan, step time, tokens/s and tokens/s per device, ...) with a "Same devices" toggle that puts every
// variant on the same device count at the same global batch, and a sweep of all variants over the microbatch
// count or the F&B / (F + B) ratio drawn as a plot.
#include "document/simulationservice.h"
#include "widgets/theme.h"

#include <QWidget>

class QCheckBox;
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
    /// Whether "Same devices" is ticked: the variants are then compared as onSameDevicesProject() moves them.
    bool sameDevices() const;
    QCheckBox* sameDevicesBox() const { return m_sameDevices; }
    /// Why some variants could not be moved onto the same devices (the engine's messages); empty clears.
    void setSameDevicesNotes(const QStringList& notes);
    QCustomPlot* sweepPlot() const { return m_sweepPlot; }

signals:
    /// The user chose another sweep parameter.
    void sweepParameterChanged(dps::SweepParameter parameter);
    /// The user ticked or cleared "Same devices".
    void sameDevicesChanged(bool same);
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
    QCheckBox* m_sameDevices;
    QLabel* m_sameDevicesNote;
    QComboBox* m_parameter = nullptr;
    QComboBox* m_metric = nullptr;
    QCustomPlot* m_sweepPlot = nullptr;
    QLabel* m_sweepNote = nullptr;
    SweepResultPtr m_sweep;
    double m_currentX;
    ChartColors m_colors;
};

} // namespace dps::ui
