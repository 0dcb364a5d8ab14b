#include "document/diagnosticsmodel.h"

#include <QBrush>
#include <QColor>

namespace dps::ui {

DiagnosticsModel::DiagnosticsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void DiagnosticsModel::setSnapshot(const SnapshotPtr& snapshot)
{
    beginResetModel();
    m_rows.clear();
    if (snapshot && !snapshot->built())
        m_rows.push_back({ Severity::Error, -1, -1, {}, "build", snapshot->error, false });
    if (snapshot)
        m_rows.insert(m_rows.end(), snapshot->report.diagnostics.begin(), snapshot->report.diagnostics.end());
    endResetModel();
}

int DiagnosticsModel::errorCount() const
{
    int n = 0;
    for (const auto& d : m_rows)
        n += d.severity == Severity::Error ? 1 : 0;
    return n;
}

int DiagnosticsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int DiagnosticsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant DiagnosticsModel::display(const Diagnostic& d, int column) const
{
    switch (column) {
    case SeverityColumn:
        return QString::fromUtf8(severityName(d.severity).data(), static_cast<int>(severityName(d.severity).size()));
    case Rank:
        return d.rank >= 0 ? QVariant(d.rank) : QVariant(QStringLiteral("–"));
    case Position:
        return d.position >= 0 ? QVariant(d.position) : QVariant(QStringLiteral("–"));
    case ActionColumn:
        return QString::fromStdString(d.action);
    case Message:
        return d.inCycle ? tr("%1 (in the wait-for cycle)").arg(QString::fromStdString(d.message))
                         : QString::fromStdString(d.message);
    default:
        return {};
    }
}

QVariant DiagnosticsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Diagnostic& d = m_rows[index.row()];
    switch (role) {
    case Qt::DisplayRole:
        return display(d, index.column());
    case Qt::ToolTipRole:
        return QString::fromStdString(format(d));
    case Qt::ForegroundRole:
        if (index.column() == SeverityColumn && d.severity == Severity::Error)
            return QBrush(QColor(0xd0, 0x30, 0x30));
        return {};
    case RankRole:
        return d.rank;
    case PositionRole:
        return d.position;
    default:
        return {};
    }
}

QVariant DiagnosticsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case SeverityColumn:
        return tr("Severity");
    case Rank:
        return tr("Rank");
    case Position:
        return tr("Position");
    case ActionColumn:
        return tr("Action");
    case Message:
        return tr("Message");
    default:
        return {};
    }
}

} // namespace dps::ui
