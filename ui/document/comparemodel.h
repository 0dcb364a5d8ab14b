#pragma once
// The comparison table: one column per variant, one row per metric (devices, parameters per device, peak
// activation memory, bubble rate, makespan, p2p volume, ...). The best value of a row is shown in bold.
#include "document/simulationservice.h"

#include <QAbstractTableModel>

namespace dps::ui {

class CompareModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Metric {
        Kind,
        Devices,
        Stages,
        Microbatches,
        ParametersPerDevice,
        PeakActivations,
        PeakMemory,
        Bubble,
        Makespan,
        LargestIdle,
        ClosedFormIdle,
        P2pVolume,
        MetricCount
    };
    static constexpr int ValueRole = Qt::UserRole;

    explicit CompareModel(QObject* parent = nullptr);

    void setSnapshot(const CompareSnapshotPtr& snapshot);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QString metricName(int metric);

private:
    /// The number behind a cell (NaN when there is none).
    double value(const SimulationSnapshot& s, int metric) const;
    QString text(const SimulationSnapshot& s, int metric) const;
    bool isBest(int metric, int variant) const;

    CompareSnapshotPtr m_snapshot;
    int m_columns = 1; ///< the metric names, then one per variant
};

} // namespace dps::ui
