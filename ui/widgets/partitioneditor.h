#pragma once
// The layer partition editor: a bar with one segment per stage whose boundaries can be dragged, a table
// where counts can be typed, and "Even" and "Balance by cost" buttons. Every change is one undoable edit.
#include "document/snapshot.h"

#include <QWidget>

#include <vector>

class QTableView;
class QLabel;

namespace dps::ui {

class PartitionModel;
class ProjectDocument;

/// The bar: segments sized by layers; drag a boundary to move layers between neighbouring stages.
class PartitionBar : public QWidget {
    Q_OBJECT
public:
    explicit PartitionBar(QWidget* parent = nullptr);

    void setPartition(const std::vector<int>& partition);
    const std::vector<int>& partition() const { return m_shown; }
    /// X pixel of the boundary after stage `boundary` (tests).
    double boundaryX(int boundary) const;
    QSize sizeHint() const override { return { 300, 46 }; }
    QSize minimumSizeHint() const override { return { 120, 40 }; }

signals:
    /// A drag ended with a new partition.
    void partitionEdited(const std::vector<int>& partition);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;

private:
    int boundaryAt(double x) const;
    int layersAt(double x) const;
    QRectF barRect() const;

    std::vector<int> m_partition; ///< as in the project
    std::vector<int> m_shown; ///< while dragging, the preview
    int m_dragging = -1;
};

class PartitionEditor : public QWidget {
    Q_OBJECT
public:
    explicit PartitionEditor(ProjectDocument* document, QWidget* parent = nullptr);

    void setSnapshot(const SnapshotPtr& snapshot);
    PartitionModel* model() const { return m_model; }
    PartitionBar* bar() const { return m_bar; }

    void makeEven();
    void balanceByCost();

private:
    void refresh();
    /// F + B per layer of each stage, from the newest simulation's costs (uniform when unknown).
    std::vector<double> costPerLayer() const;

    ProjectDocument* m_document;
    PartitionModel* m_model;
    PartitionBar* m_bar;
    QTableView* m_table;
    QLabel* m_total;
    SnapshotPtr m_snapshot;
};

} // namespace dps::ui
