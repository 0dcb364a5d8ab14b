#pragma once
// The project's schedule variants as a table (name, kind, ranks, microbatches, order); the name is
// editable (renames through the document, so it is undoable). The active variant is shown in bold.
#include <QAbstractTableModel>

#include <vector>

namespace dps::ui {

class ProjectDocument;

class VariantListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, Kind, Ranks, Microbatches, Order, ColumnCount };
    /// Qt::UserRole: true for the active variant.
    static constexpr int ActiveRole = Qt::UserRole;

    explicit VariantListModel(ProjectDocument* document, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

    /// Row of a variant name, -1 if none.
    int rowOf(const QString& name) const;
    QString nameAt(int row) const;

private:
    struct Row {
        QString name;
        QString kind;
        int ranks = 0;
        int microbatches = 0;
        bool handEdited = false;
        bool active = false;
    };
    void reload();
    QVariant display(const Row& row, int column) const;

    ProjectDocument* m_document;
    std::vector<Row> m_rows;
};

} // namespace dps::ui
