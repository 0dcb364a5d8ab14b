#include "document/plannermodel.h"

#include "document/formatting.h"
#include "model/transformer.h"
#include "project/partitioning.h"

#include <QMetaObject>

#include <algorithm>
#include <cmath>

namespace dps::ui {

PlannerService::PlannerService(QObject* parent)
    : QObject(parent)
{
}

PlannerService::~PlannerService()
{
    if (m_cancel)
        m_cancel->store(true); // m_runner's destructor then waits for the thread
}

void PlannerService::start(const Project& project, PlanRequest request)
{
    if (m_cancel)
        m_cancel->store(true);
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    m_cancel = cancel;
    m_runner.submit([this, project, request = std::move(request), cancel]() mutable -> std::function<void()> {
        int lastPercent = -1;
        request.progress = [this, cancel, lastPercent](int done, int total) mutable {
            const int percent = total > 0 ? static_cast<int>(100.0 * done / total) : 0;
            if (percent != lastPercent || done == total) {
                lastPercent = percent;
                QMetaObject::invokeMethod(
                    this, [this, done, total] { emit progressed(done, total); }, Qt::QueuedConnection);
            }
            return !cancel->load();
        };
        try {
            auto result = std::make_shared<const PlanResult>(plan(project, request));
            return [this, result] {
                m_current = result;
                emit finished(result);
            };
        } catch (const std::exception& e) {
            const QString message = QString::fromUtf8(e.what());
            return [this, message] { emit failed(message); };
        }
    });
}

void PlannerService::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
}

QString partitionText(const std::vector<int>& layersPerStage)
{
    return QString::fromStdString(dps::partitionText(layersPerStage));
}

QString planKindText(const PlanCandidate& candidate)
{
    const QString name = QString::fromUtf8(kindDisplayName(candidate.kind).data());
    if (candidate.kind == ScheduleKind::Interleaved1F1B && candidate.stagesPerRank > 1)
        return QStringLiteral("%1 (v = %2)").arg(name).arg(candidate.stagesPerRank);
    return name;
}

PlannerModel::PlannerModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void PlannerModel::setResult(const PlanResultPtr& result, bool transformer)
{
    beginResetModel();
    m_result = result;
    m_transformer = transformer;
    m_rows.clear();
    if (result)
        for (int i = 0; i < static_cast<int>(result->candidates.size()); ++i)
            m_rows.push_back(i);
    endResetModel();
}

int PlannerModel::candidateAt(int row) const
{
    return row >= 0 && row < static_cast<int>(m_rows.size()) ? m_rows[row] : -1;
}

int PlannerModel::rowOf(int candidate) const
{
    const auto it = std::find(m_rows.begin(), m_rows.end(), candidate);
    return it == m_rows.end() ? -1 : static_cast<int>(it - m_rows.begin());
}

int PlannerModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int PlannerModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString PlannerModel::columnName(int column)
{
    static const char* const names[] = { "Kind", "tp", "cp", "pp", "dp", "ZeRO", "Microbatches", "Partition",
        "Recompute", "Step time", "Bubble", "Peak memory", "Tokens/s", "Tokens/s/device", "MFU", "Pareto" };
    return column >= 0 && column < ColumnCount ? tr(names[column]) : QString();
}

QVariant PlannerModel::value(const PlanCandidate& c, int column) const
{
    switch (column) {
    case Kind:
    case Partition:
    case Recompute:
        return text(c, column);
    case Tp:
        return c.tp;
    case Cp:
        return c.cp;
    case Pp:
        return c.pp;
    case Dp:
        return c.dp;
    case Zero:
        return c.zero;
    case Mfu:
        return c.mfu;
    case Microbatches: // the count (a stable sort keeps the planner's order among equal counts)
        return c.microbatches;
    case Step:
        return c.stepUs;
    case Bubble:
        return c.bubbleRate;
    case PeakMemory:
        return c.peakMemoryBytes;
    case TokensPerSecond:
        return c.tokensPerSecond;
    case TokensPerSecondPerDevice:
        return c.tokensPerSecondPerDevice;
    case Pareto:
        return c.pareto ? 1 : 0;
    default:
        return {};
    }
}

QString PlannerModel::text(const PlanCandidate& c, int column) const
{
    switch (column) {
    case Kind:
        return planKindText(c);
    case Tp:
        return QString::number(c.tp);
    case Cp:
        return QString::number(c.cp);
    case Pp:
        return QString::number(c.pp);
    case Dp:
        return QString::number(c.dp);
    case Zero:
        return QString::number(c.zero);
    case Mfu:
        return c.mfu > 0.0 ? formatPercent(c.mfu) : QStringLiteral("—");
    case Microbatches:
        return QStringLiteral("%1 × %2").arg(c.microbatches).arg(c.microbatchSize);
    case Partition:
        return partitionText(c.layerPartition);
    case Recompute:
        return m_transformer ? QString::fromUtf8(model::recomputeName(c.recompute).data()) : QStringLiteral("—");
    case Step:
        return formatTime(c.stepUs);
    case Bubble:
        return formatPercent(c.bubbleRate);
    case PeakMemory:
        return formatBytes(c.peakMemoryBytes);
    case TokensPerSecond:
        return c.tokensPerSecond > 0.0 ? formatCount(c.tokensPerSecond) : QStringLiteral("—");
    case TokensPerSecondPerDevice:
        return c.tokensPerSecondPerDevice > 0.0 ? formatCount(c.tokensPerSecondPerDevice) : QStringLiteral("—");
    case Pareto:
        return c.pareto ? QStringLiteral("●") : QString();
    default:
        return {};
    }
}

QVariant PlannerModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const int candidate = m_rows[index.row()];
    const PlanCandidate& c = m_result->candidates[candidate];
    switch (role) {
    case Qt::DisplayRole:
        return text(c, index.column());
    case ValueRole:
        return value(c, index.column());
    case CandidateRole:
        return candidate;
    case Qt::TextAlignmentRole:
        if (index.column() == Kind || index.column() == Partition || index.column() == Recompute)
            return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
        return QVariant::fromValue(index.column() == Pareto ? Qt::AlignCenter : Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ToolTipRole:
        switch (index.column()) {
        case Step:
            return tr("makespan %1 + the data-parallel all-reduce not hidden %2")
                .arg(formatTime(c.makespanUs), formatTime(c.exposedAllReduceUs));
        case PeakMemory:
            return tr("on rank %1").arg(c.peakMemoryRank);
        case Partition:
            return tr("layers per model stage: %1").arg(partitionText(c.layerPartition));
        case Pareto:
            return c.pareto ? tr("on the Pareto front: no other candidate is faster with no more memory") : QVariant();
        default:
            return QString::fromStdString(c.variant.name);
        }
    default:
        return {};
    }
}

QVariant PlannerModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::DisplayRole)
        return columnName(section);
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole) {
        switch (section) {
        case Tp:
            return tr("tensor-parallel size (sequence parallelism on when above 1)");
        case Cp:
            return tr("context-parallel size (ring attention over the sequence)");
        case Pp:
            return tr("pipeline ranks");
        case Dp:
            return tr("data-parallel replicas: devices ÷ (tp × cp × pp)");
        case Zero:
            return tr("ZeRO stage: 1 shards the optimizer state over the replicas, 2 also the gradients, 3 also the "
                      "parameters");
        case Mfu:
            return tr(
                "model FLOPs utilisation: the step's model FLOPs ÷ (step time × devices × the GEMM dtype's peak)");
        case Microbatches:
            return tr("microbatches × sequences per microbatch (× dp = the global batch)");
        case Partition:
            return tr("layers per model stage, runs shortened: 2×3 = three stages of 2 layers");
        case Step:
            return tr("makespan + the data-parallel all-reduce not hidden by the cool-down");
        case PeakMemory:
            return tr("the largest peak over the ranks");
        case Pareto:
            return tr("on the Pareto front of step time against peak memory");
        default:
            return {};
        }
    }
    if (orientation == Qt::Vertical && role == Qt::DisplayRole && section >= 0 && section < rowCount())
        return section + 1;
    return {};
}

void PlannerModel::sort(int column, Qt::SortOrder order)
{
    if (!m_result || column < 0 || column >= ColumnCount)
        return;
    emit layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
    const QModelIndexList before = persistentIndexList();
    std::vector<int> candidates;
    for (const QModelIndex& i : before)
        candidates.push_back(m_rows[i.row()]);
    const auto less = [&](int a, int b) {
        const QVariant va = value(m_result->candidates[a], column);
        const QVariant vb = value(m_result->candidates[b], column);
        const bool text = va.typeId() == QMetaType::QString;
        const bool lt = text ? va.toString() < vb.toString() : va.toDouble() < vb.toDouble();
        const bool gt = text ? vb.toString() < va.toString() : vb.toDouble() < va.toDouble();
        return order == Qt::AscendingOrder ? lt : gt;
    };
    std::stable_sort(m_rows.begin(), m_rows.end(), less);
    QModelIndexList after;
    for (std::size_t i = 0; i < candidates.size(); ++i)
        after << index(rowOf(candidates[i]), before[static_cast<int>(i)].column());
    changePersistentIndexList(before, after);
    emit layoutChanged({}, QAbstractItemModel::VerticalSortHint);
}

} // namespace dps::ui
