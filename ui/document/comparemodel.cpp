#include "document/comparemodel.h"

#include "document/formatting.h"
#include "project/compare.h"

#include <QFont>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dps::ui {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
} // namespace

CompareModel::CompareModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void CompareModel::setSnapshot(const CompareSnapshotPtr& snapshot)
{
    beginResetModel();
    m_snapshot = snapshot;
    m_columns = snapshot ? static_cast<int>(snapshot->variants.size()) + 1 : 1;
    endResetModel();
}

int CompareModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : MetricCount;
}

int CompareModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : m_columns;
}

QString CompareModel::metricName(int metric)
{
    static const char* const names[] = { "Kind", "Devices", "Data-parallel replicas", "Stages", "Microbatches",
        "Parameters per device", "Peak activation memory", "Peak memory", "Bubble rate", "Makespan", "Step time",
        "Tokens/s", "Tokens/s per device", "Largest idle (simulated)", "Largest idle (closed form)", "P2P volume" };
    return metric >= 0 && metric < MetricCount ? tr(names[metric]) : QString();
}

double CompareModel::value(const SimulationSnapshot& s, int metric) const
{
    if (!s.schedule)
        return kNaN;
    switch (metric) {
    case Devices:
        return s.devices > 0 ? s.devices : s.schedule->ranks;
    case DataParallel:
        return s.dp;
    case Stages:
        return s.schedule->stages;
    case Microbatches:
        return s.schedule->microbatches;
    default:
        break;
    }
    if (!s.timed)
        return kNaN;
    switch (metric) {
    case ParametersPerDevice:
        return s.parametersPerDevice;
    case PeakActivations:
        return s.peakActivationBytes;
    case PeakMemory:
        return s.peakMemoryBytes;
    case Bubble:
        return s.bubbleRate;
    case Makespan:
        return s.makespanUs;
    case StepTime:
        return s.stepUs > 0.0 ? s.stepUs : kNaN;
    case TokensPerSecond:
        return s.tokensPerSecond() > 0.0 ? s.tokensPerSecond() : kNaN;
    case TokensPerSecondPerDevice:
        return s.tokensPerSecondPerDevice() > 0.0 ? s.tokensPerSecondPerDevice() : kNaN;
    case LargestIdle:
        return s.largestIdleUs;
    case ClosedFormIdle:
        return s.closedForm.available && s.closedForm.applicable ? s.closedForm.valueUs : kNaN;
    case P2pVolume:
        return s.p2pBytes;
    default:
        return kNaN;
    }
}

QString CompareModel::text(const SimulationSnapshot& s, int metric) const
{
    if (metric == Kind)
        return s.schedule ? QString::fromUtf8(kindDisplayName(s.schedule->kind).data()) : tr("cannot build");
    const double v = value(s, metric);
    if (std::isnan(v)) {
        if (metric == ClosedFormIdle && s.timed)
            return s.closedForm.available ? tr("not applicable") : tr("none for this kind");
        return s.built() ? tr("invalid order") : QStringLiteral("—");
    }
    switch (metric) {
    case ParametersPerDevice:
        return formatCount(v);
    case PeakActivations:
    case PeakMemory:
    case P2pVolume:
        return formatBytes(v);
    case Bubble:
        return formatPercent(v);
    case Makespan:
    case StepTime:
    case LargestIdle:
    case ClosedFormIdle:
        return formatTime(v);
    case TokensPerSecond:
    case TokensPerSecondPerDevice:
        return formatCount(v);
    default:
        return QString::number(v, 'f', 0);
    }
}

bool CompareModel::higherIsBetter(int metric)
{
    return metric == TokensPerSecond || metric == TokensPerSecondPerDevice;
}

bool CompareModel::isBest(int metric, int variant) const
{
    static const int lowerIsBetter[]
        = { ParametersPerDevice, PeakActivations, PeakMemory, Bubble, Makespan, StepTime, P2pVolume };
    if ((!std::count(std::begin(lowerIsBetter), std::end(lowerIsBetter), metric) && !higherIsBetter(metric))
        || m_snapshot->variants.size() < 2)
        return false;
    const double sign = higherIsBetter(metric) ? -1.0 : 1.0; // compare −tokens/s: lower is better then
    const double mine = value(*m_snapshot->variants[variant], metric);
    if (std::isnan(mine))
        return false;
    for (const auto& other : m_snapshot->variants) {
        const double v = value(*other, metric);
        if (!std::isnan(v) && sign * v < sign * mine - 1e-9 * std::abs(mine))
            return false;
    }
    return true;
}

QVariant CompareModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    if (index.column() == 0)
        return role == Qt::DisplayRole ? QVariant(metricName(index.row())) : QVariant();
    const SimulationSnapshot& s = *m_snapshot->variants[index.column() - 1];
    switch (role) {
    case Qt::DisplayRole:
        return text(s, index.row());
    case ValueRole:
        return value(s, index.row());
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ToolTipRole:
        if (index.row() == ClosedFormIdle && s.closedForm.available)
            return tr("%1 — %2").arg(
                QString::fromStdString(s.closedForm.formula), QString::fromStdString(s.closedForm.reason));
        switch (index.row()) {
        case Bubble:
            return tr("Σ idle ÷ (ranks × makespan)");
        case StepTime:
            return tr("makespan + the data-parallel gradient all-reduce not hidden by the cool-down (docs/planner.md)");
        case TokensPerSecond:
            return tr("microbatches × microbatch size × sequence length × dp tokens per step ÷ step time");
        case TokensPerSecondPerDevice:
            return tr("tokens/s ÷ devices: compares variants on different device counts fairly");
        default:
            return {};
        }
    case Qt::FontRole: {
        if (!isBest(index.row(), index.column() - 1))
            return {};
        QFont font;
        font.setBold(true);
        return font;
    }
    default:
        return {};
    }
}

QVariant CompareModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    if (section == 0)
        return tr("Metric");
    if (!m_snapshot || section < 1 || section > static_cast<int>(m_snapshot->variants.size()))
        return {};
    return QString::fromStdString(m_snapshot->variants[section - 1]->variantName);
}

} // namespace dps::ui

namespace dps::ui {

Project onSameDevicesProject(const Project& project, QStringList* notes)
{
    int devices = 0;
    for (const auto& v : project.variants) {
        try {
            devices = std::max(devices, devicesOf(project, v));
        } catch (const std::exception&) { // cannot be placed: it keeps its error in the comparison
        }
    }
    Project result = project;
    if (devices <= 0)
        return result;
    for (auto& v : result.variants) {
        try {
            v = onSameDevices(project, v, devices);
        } catch (const std::exception& e) {
            if (notes)
                *notes << QString::fromStdString(v.name) + QStringLiteral(": ") + QString::fromUtf8(e.what());
        }
    }
    return result;
}

} // namespace dps::ui
