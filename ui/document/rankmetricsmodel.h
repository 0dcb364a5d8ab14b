#pragma once
// Per-rank results of the latest simulation: busy, idle, peak memory, peak activations, peak in-flight,
// parameters held and p2p bytes. Display text is formatted; Qt::UserRole holds the raw number for sorting.
#include "document/snapshot.h"

#include <QAbstractTableModel>

namespace dps::ui {

class RankMetricsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Rank,
        Busy,
        Idle,
        IdleShare,
        PeakMemory,
        PeakActivations,
        PeakInflight,
        Parameters,
        P2pSent,
        ColumnCount
    };
    static constexpr int ValueRole = Qt::UserRole;

    explicit RankMetricsModel(QObject* parent = nullptr);

    void setSnapshot(const SnapshotPtr& snapshot);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    double value(int rank, int column) const;
    QString text(int rank, int column) const;

    SnapshotPtr m_snapshot;
    int m_rows = 0;
};

} // namespace dps::ui
