#pragma once
// Per-stage costs of the active variant: the value in use for F, I, W, B and F&B, either typed by the user
// (an override, bold) or derived from the model (italic). Typing a number sets an override through the
// document (undoable); clearing the cell removes it.
#include "document/projectdocument.h"

#include <QAbstractTableModel>

#include <array>
#include <optional>
#include <vector>

namespace dps::ui {

class StageCostModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Stage, Layers, Forward, InputGrad, WeightGrad, Backward, Overlap, ColumnCount };
    /// Qt::UserRole: true when the cell holds a typed override.
    static constexpr int OverrideRole = Qt::UserRole;

    explicit StageCostModel(ProjectDocument* document, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

    static CostField fieldOf(int column);

private:
    struct Cell {
        std::optional<double> typed;
        std::optional<double> derived; ///< unset for F&B (depends on the pair) or when the model fails
    };
    struct Row {
        int layers = 0;
        std::array<Cell, 5> cells;
    };
    void reload();
    QVariant display(const Row& row, int column) const;
    QVariant tooltip(const Row& row, int column) const;

    ProjectDocument* m_document;
    std::vector<Row> m_rows;
    double m_overlapFactor = 1.0;
};

} // namespace dps::ui
