#include "document/variantlistmodel.h"

#include "document/projectdocument.h"

#include <QFont>

namespace dps::ui {

VariantListModel::VariantListModel(ProjectDocument* document, QObject* parent)
    : QAbstractTableModel(parent)
    , m_document(document)
{
    connect(document, &ProjectDocument::changed, this, &VariantListModel::reload);
    reload();
}

void VariantListModel::reload()
{
    beginResetModel();
    m_rows.clear();
    const Project& p = m_document->project();
    for (const auto& v : p.variants)
        m_rows.push_back({ QString::fromStdString(v.name), QString::fromUtf8(kindDisplayName(v.kind).data()), v.ranks,
            v.microbatches, v.order.has_value() || v.commOrder.has_value(), v.name == p.activeVariant });
    endResetModel();
}

int VariantListModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int VariantListModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant VariantListModel::display(const Row& row, int column) const
{
    switch (column) {
    case Name:
        return row.name;
    case Kind:
        return row.kind;
    case Ranks:
        return row.ranks;
    case Microbatches:
        return row.microbatches;
    case Order:
        return row.handEdited ? tr("edited") : tr("generated");
    default:
        return {};
    }
}

QVariant VariantListModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Row& row = m_rows[index.row()];
    switch (role) {
    case Qt::DisplayRole:
    case Qt::EditRole:
        return display(row, index.column());
    case Qt::FontRole: {
        QFont font;
        font.setBold(row.active);
        return font;
    }
    case Qt::ToolTipRole:
        return row.active ? tr("%1: the active variant (shown in the timeline)").arg(row.name)
                          : tr("%1: click to make it the active variant").arg(row.name);
    case ActiveRole:
        return row.active;
    default:
        return {};
    }
}

QVariant VariantListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name:
        return tr("Variant");
    case Kind:
        return tr("Kind");
    case Ranks:
        return tr("Ranks");
    case Microbatches:
        return tr("Microbatches");
    case Order:
        return tr("Order");
    default:
        return {};
    }
}

Qt::ItemFlags VariantListModel::flags(const QModelIndex& index) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return Qt::NoItemFlags;
    const Qt::ItemFlags base = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
    return index.column() == Name ? base | Qt::ItemIsEditable : base;
}

bool VariantListModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || role != Qt::EditRole || index.column() != Name)
        return false;
    return m_document->renameVariant(m_rows[index.row()].name, value.toString());
}

int VariantListModel::rowOf(const QString& name) const
{
    for (int i = 0; i < static_cast<int>(m_rows.size()); ++i)
        if (m_rows[i].name == name)
            return i;
    return -1;
}

QString VariantListModel::nameAt(int row) const
{
    return row >= 0 && row < static_cast<int>(m_rows.size()) ? m_rows[row].name : QString();
}

} // namespace dps::ui
