#include "document/stagecostmodel.h"

#include "document/formatting.h"

#include <QFont>

namespace dps::ui {

StageCostModel::StageCostModel(ProjectDocument* document, QObject* parent)
    : QAbstractTableModel(parent)
    , m_document(document)
{
    connect(document, &ProjectDocument::changed, this, &StageCostModel::reload);
    reload();
}

CostField StageCostModel::fieldOf(int column)
{
    switch (column) {
    case Forward:
        return CostField::Forward;
    case InputGrad:
        return CostField::InputGrad;
    case WeightGrad:
        return CostField::WeightGrad;
    case Backward:
        return CostField::Backward;
    default:
        return CostField::Overlap;
    }
}

namespace {

/// The costs of a variant from the model alone (overrides removed); empty when it cannot be built.
std::vector<StageCost> derivedCosts(const Project& project, const Variant& variant)
{
    Project bare = project;
    bare.costs.stages.clear();
    try {
        return buildCostModel(bare, variant).stages;
    } catch (const std::exception&) {
        return {};
    }
}

std::vector<int> partitionOf(const Project& project, const Variant& variant)
{
    try {
        return effectivePartition(project, variant);
    } catch (const std::exception&) {
        return {};
    }
}

} // namespace

void StageCostModel::reload()
{
    beginResetModel();
    const Project& p = m_document->project();
    const Variant& v = m_document->activeVariant();
    const auto derived = derivedCosts(p, v);
    const auto partition = partitionOf(p, v);
    m_overlapFactor = p.costs.overlapFactor;
    m_rows.assign(static_cast<std::size_t>(std::max(0, stageCount(v))), {});
    for (std::size_t s = 0; s < m_rows.size(); ++s) {
        Row& row = m_rows[s];
        row.layers = s < partition.size() ? partition[s] : 0;
        if (s < derived.size()) {
            const StageCost& c = derived[s];
            row.cells[0].derived = c.forwardUs;
            row.cells[1].derived = c.inputGradUs;
            row.cells[2].derived = c.weightGradUs;
            row.cells[3].derived = c.backward();
        }
        if (s < p.costs.stages.size()) {
            const StageCostOverride& o = p.costs.stages[s];
            row.cells[0].typed = o.forwardUs;
            row.cells[1].typed = o.inputGradUs;
            row.cells[2].typed = o.weightGradUs;
            row.cells[3].typed = o.backwardUs;
            row.cells[4].typed = o.overlapUs;
        }
    }
    endResetModel();
}

int StageCostModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int StageCostModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant StageCostModel::display(const Row& row, int column) const
{
    if (column == Stage)
        return QVariant();
    if (column == Layers)
        return row.layers;
    const Cell& cell = row.cells[column - Forward];
    if (cell.typed)
        return formatNumber(*cell.typed, 2);
    if (cell.derived)
        return formatNumber(*cell.derived, 2);
    return column == Overlap ? tr("×%1").arg(formatNumber(m_overlapFactor, 2)) : QString();
}

QVariant StageCostModel::tooltip(const Row& row, int column) const
{
    if (column < Forward)
        return {};
    const Cell& cell = row.cells[column - Forward];
    if (cell.typed)
        return tr("Typed: %1 µs. Clear the cell to use the model's value again.").arg(formatNumber(*cell.typed, 3));
    if (column == Overlap)
        return tr("Slots whose forward half is this stage take overlap factor × (F + B of the backward stage). "
                  "Type a time to override.");
    return tr("From the model: %1 µs. Type a number to override it.").arg(formatNumber(cell.derived.value_or(0), 3));
}

QVariant StageCostModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Row& row = m_rows[index.row()];
    const bool isCost = index.column() >= Forward;
    switch (role) {
    case Qt::DisplayRole:
        return index.column() == Stage ? QVariant(index.row()) : display(row, index.column());
    case Qt::EditRole:
        if (!isCost)
            return index.column() == Stage ? QVariant(index.row()) : QVariant(row.layers);
        return row.cells[index.column() - Forward].typed ? QVariant(*row.cells[index.column() - Forward].typed)
                                                         : QVariant(QString());
    case Qt::FontRole: {
        if (!isCost)
            return {};
        QFont font;
        const bool typed = row.cells[index.column() - Forward].typed.has_value();
        font.setBold(typed);
        font.setItalic(!typed);
        return font;
    }
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ToolTipRole:
        return tooltip(row, index.column());
    case OverrideRole:
        return isCost && row.cells[index.column() - Forward].typed.has_value();
    default:
        return {};
    }
}

QVariant StageCostModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::ToolTipRole))
        return {};
    static const char* const names[] = { "Stage", "Layers", "F", "I", "W", "B", "F&B" };
    static const char* const tips[] = { "Model stage", "Layers in the stage", "Forward, µs", "Backward for inputs, µs",
        "Backward for weights, µs", "Full backward, µs (I + W unless typed)", "Overlapped F&B slot, µs" };
    if (section < 0 || section >= ColumnCount)
        return {};
    return role == Qt::DisplayRole ? tr(names[section]) : tr(tips[section]);
}

Qt::ItemFlags StageCostModel::flags(const QModelIndex& index) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return Qt::NoItemFlags;
    const Qt::ItemFlags base = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
    return index.column() >= Forward ? base | Qt::ItemIsEditable : base;
}

bool StageCostModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || role != Qt::EditRole || index.column() < Forward)
        return false;
    const QString text = value.toString().trimmed();
    if (text.isEmpty()) {
        m_document->setStageCost(index.row(), fieldOf(index.column()), std::nullopt);
        return true;
    }
    bool ok = false;
    const double us = text.toDouble(&ok);
    if (!ok || us <= 0.0)
        return false;
    m_document->setStageCost(index.row(), fieldOf(index.column()), us);
    return true;
}

} // namespace dps::ui
