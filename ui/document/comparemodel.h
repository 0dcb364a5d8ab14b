#pragma once
// The comparison table: one column per variant, one row per metric (devices, parameters per device, peak
// activation memory, bubble rate, makespan, step time, tokens/s, p2p volume, ...). The best value of a row is
// shown in bold. onSameDevicesProject() gives the "same devices" comparison its project.
#include "document/simulationservice.h"

#include <QAbstractTableModel>
#include <QStringList>

namespace dps::ui {

class CompareModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Metric {
        Kind,
        Devices, ///< devices of the job: ranks × max(dp, ep) (Prediction::devices)
        DataParallel, ///< data-parallel replicas of the pipeline
        Stages,
        Microbatches,
        ParametersPerDevice,
        PeakActivations,
        PeakMemory,
        Bubble,
        Makespan,
        StepTime, ///< makespan + the data-parallel all-reduce not hidden (Prediction::stepUs), µs
        TokensPerSecond, ///< the global batch's tokens ÷ step time (Prediction::tokensPerSecond)
        TokensPerSecondPerDevice, ///< tokens/s ÷ devices: the fair figure across device counts
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
    static bool higherIsBetter(int metric);

    CompareSnapshotPtr m_snapshot;
    int m_columns = 1; ///< the metric names, then one per variant
};

/// The project with every variant moved onto the largest device count any of them uses, at the same global batch
/// (onSameDevices of engine/project/compare.h: k times the data-parallel replicas, microbatches ÷ k), so that
/// DualPipe on 8 ranks and DualPipeV on 4 are compared on 8 devices each. A variant that cannot be moved (its
/// devices do not divide the count, its microbatches not by k, or it cannot be placed) stays as it is and the
/// engine's reason goes to `notes`.
Project onSameDevicesProject(const Project& project, QStringList* notes = nullptr);

} // namespace dps::ui
