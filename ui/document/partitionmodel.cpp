#include "document/partitionmodel.h"

#include "document/formatting.h"
#include "document/projectdocument.h"

#include <set>

namespace dps::ui {

PartitionModel::PartitionModel(ProjectDocument* document, QObject* parent)
    : QAbstractTableModel(parent)
    , m_document(document)
{
    connect(document, &ProjectDocument::changed, this, &PartitionModel::reload);
    reload();
}

void PartitionModel::setSnapshot(const SnapshotPtr& snapshot)
{
    m_snapshot = snapshot;
    reload();
}

namespace {

QString ranksHolding(const Schedule& schedule, int stage)
{
    std::set<int> ranks;
    for (int m = 0; m < schedule.microbatches; ++m)
        ranks.insert(schedule.placement.rankOf(stage, m));
    QStringList names;
    for (int r : ranks)
        if (r >= 0)
            names << QString::number(r);
    return names.join(QStringLiteral(", "));
}

} // namespace

void PartitionModel::reload()
{
    beginResetModel();
    const Project& p = m_document->project();
    const Variant& v = m_document->activeVariant();
    try {
        m_partition = effectivePartition(p, v);
    } catch (const std::exception&) {
        m_partition.assign(static_cast<std::size_t>(std::max(0, stageCount(v))), 0);
    }
    m_ranks.assign(m_partition.size(), QString());
    m_stageTime.assign(m_partition.size(), 0.0);
    const bool current = m_snapshot && m_snapshot->schedule && m_snapshot->variantName == v.name
        && m_snapshot->schedule->stages == static_cast<int>(m_partition.size());
    for (std::size_t s = 0; current && s < m_partition.size(); ++s) {
        m_ranks[s] = ranksHolding(*m_snapshot->schedule, static_cast<int>(s));
        if (s < m_snapshot->costs.stages.size())
            m_stageTime[s] = m_snapshot->costs.stages[s].forwardUs + m_snapshot->costs.stages[s].backward();
    }
    endResetModel();
}

int PartitionModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_partition.size());
}

int PartitionModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PartitionModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const int s = index.row();
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole && index.column() == Layers)
        return tr("Type a count: the difference is taken from (or given to) the next stage");
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};
    switch (index.column()) {
    case Stage:
        return s;
    case Layers:
        return m_partition[s];
    case Ranks:
        return m_ranks[s];
    case StageTime:
        return role == Qt::EditRole ? QVariant(m_stageTime[s]) : QVariant(formatTime(m_stageTime[s]));
    default:
        return {};
    }
}

QVariant PartitionModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Stage:
        return tr("Stage");
    case Layers:
        return tr("Layers");
    case Ranks:
        return tr("On ranks");
    case StageTime:
        return tr("F + B");
    default:
        return {};
    }
}

Qt::ItemFlags PartitionModel::flags(const QModelIndex& index) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return Qt::NoItemFlags;
    const Qt::ItemFlags base = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
    return index.column() == Layers && m_partition.size() > 1 ? base | Qt::ItemIsEditable : base;
}

std::vector<int> PartitionModel::withLayers(int stage, int layers) const
{
    const int n = static_cast<int>(m_partition.size());
    if (stage < 0 || stage >= n || n < 2 || layers < 0)
        return {};
    const int neighbour = stage + 1 < n ? stage + 1 : stage - 1;
    std::vector<int> result = m_partition;
    const int delta = layers - result[stage];
    if (result[neighbour] - delta < 0)
        return {};
    result[stage] = layers;
    result[neighbour] -= delta;
    return result;
}

bool PartitionModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || role != Qt::EditRole || index.column() != Layers)
        return false;
    bool ok = false;
    const int layers = value.toInt(&ok);
    const auto next = ok ? withLayers(index.row(), layers) : std::vector<int>();
    if (next.empty() || next == m_partition)
        return false;
    m_document->setPartition(next);
    return true;
}

} // namespace dps::ui
