#pragma once
// The layer partition of the active variant: one row per stage with its layers (editable: typing a count
// takes the layers from, or gives them to, the next stage so the total stays the model's), the ranks that
// hold the stage and its F + B time from the latest simulation.
#include "document/snapshot.h"

#include <QAbstractTableModel>

#include <vector>

namespace dps::ui {

class ProjectDocument;

class PartitionModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Stage, Layers, Ranks, StageTime, ColumnCount };

    explicit PartitionModel(ProjectDocument* document, QObject* parent = nullptr);

    /// Ranks and times come from the newest snapshot of the active variant.
    void setSnapshot(const SnapshotPtr& snapshot);
    const std::vector<int>& partition() const { return m_partition; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

    /// The partition with stage `stage` set to `layers`, the difference taken from (or given to) the next
    /// stage (the previous one for the last stage); empty when that is impossible.
    std::vector<int> withLayers(int stage, int layers) const;

private:
    void reload();

    ProjectDocument* m_document;
    SnapshotPtr m_snapshot;
    std::vector<int> m_partition;
    std::vector<QString> m_ranks;
    std::vector<double> m_stageTime;
};

} // namespace dps::ui
