#include "document/rankmetricsmodel.h"

#include "document/formatting.h"

#include <QFont>

namespace dps::ui {

RankMetricsModel::RankMetricsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void RankMetricsModel::setSnapshot(const SnapshotPtr& snapshot)
{
    beginResetModel();
    m_snapshot = snapshot && snapshot->timed ? snapshot : nullptr;
    m_rows = m_snapshot ? static_cast<int>(m_snapshot->sim.ranks.size()) : 0;
    endResetModel();
}

int RankMetricsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : m_rows;
}

int RankMetricsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

double RankMetricsModel::value(int rank, int column) const
{
    const RankResult& r = m_snapshot->sim.ranks[rank];
    const double makespan = m_snapshot->sim.makespanUs;
    switch (column) {
    case Rank:
        return rank;
    case Busy:
        return r.busyUs;
    case Idle:
        return r.idleUs;
    case IdleShare:
        return makespan > 0 ? r.idleUs / makespan : 0.0;
    case PeakMemory:
        return r.peakMemoryBytes;
    case PeakActivations:
        return r.peakActivationBytes;
    case PeakInflight:
        return r.peakInflight;
    case Parameters:
        return r.parameterBytes;
    case P2pSent:
        return r.p2pBytesSent;
    default:
        return 0.0;
    }
}

QString RankMetricsModel::text(int rank, int column) const
{
    const double v = value(rank, column);
    switch (column) {
    case Busy:
    case Idle:
        return formatTime(v);
    case IdleShare:
        return formatPercent(v);
    case PeakMemory:
    case PeakActivations:
    case Parameters:
    case P2pSent:
        return formatBytes(v);
    default:
        return QString::number(v, 'f', 0);
    }
}

QVariant RankMetricsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    switch (role) {
    case Qt::DisplayRole:
        return text(index.row(), index.column());
    case ValueRole:
        return value(index.row(), index.column());
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::FontRole: {
        if (index.column() != Idle || m_snapshot->largestIdleRank != index.row())
            return {};
        QFont font;
        font.setBold(true);
        return font;
    }
    default:
        return {};
    }
}

QVariant RankMetricsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::ToolTipRole))
        return {};
    static const char* const names[]
        = { "Rank", "Busy", "Idle", "Idle %", "Peak mem.", "Peak act.", "In-flight", "Parameters", "P2P sent" };
    static const char* const tips[] = { "Pipeline rank (device)", "Time spent computing",
        "Makespan − busy, before the first and after the last action included (the largest in bold)", "Idle ÷ makespan",
        "Parameters + gradients + optimizer state + live activations, at its highest",
        "Live activations at their highest",
        "Most (stage, microbatch) activations made live by F and not yet consumed by I or B",
        "Bytes of the parameters of the stages the rank holds", "Bytes the rank sends to other ranks" };
    if (section < 0 || section >= ColumnCount)
        return {};
    return role == Qt::DisplayRole ? tr(names[section]) : tr(tips[section]);
}

} // namespace dps::ui
