#pragma once
// The validator's findings for the active variant (plus a row when it cannot be built at all), shown in
// the list under the timeline. Selecting a row selects the block it names.
#include "document/snapshot.h"

#include <QAbstractTableModel>

#include <vector>

namespace dps::ui {

class DiagnosticsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { SeverityColumn, Rank, Position, ActionColumn, Message, ColumnCount };
    /// Qt::UserRole: the rank, Qt::UserRole + 1: the position (-1 when not tied to one).
    static constexpr int RankRole = Qt::UserRole;
    static constexpr int PositionRole = Qt::UserRole + 1;

    explicit DiagnosticsModel(QObject* parent = nullptr);

    void setSnapshot(const SnapshotPtr& snapshot);
    int errorCount() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QVariant display(const Diagnostic& d, int column) const;

    std::vector<Diagnostic> m_rows;
};

} // namespace dps::ui
