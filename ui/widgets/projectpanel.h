#pragma once
// The project panel: the schedule variants (add, rename, remove, pick the active one), the active variant's
// kind, ranks, microbatches and stages per rank, the model, the cluster, and the cost settings with the
// per-stage overrides table. Every change goes through the ProjectDocument (so it can be undone); the
// panel refreshes itself from the document whenever it changes.
#include "document/projectdocument.h"

#include <QWidget>

#include <functional>
#include <vector>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableView;

namespace dps::ui {

class StageCostModel;
class VariantListModel;

class ProjectPanel : public QWidget {
    Q_OBJECT
public:
    explicit ProjectPanel(ProjectDocument* document, QWidget* parent = nullptr);

    VariantListModel* variantModel() const { return m_variants; }
    StageCostModel* costModel() const { return m_costs; }
    /// Regenerates the active variant's order (also a window action).
    void regenerate();

private:
    QWidget* setupVariants();
    QWidget* setupShape();
    QWidget* setupModel();
    QWidget* setupCluster();
    QWidget* setupCosts();
    void refresh();
    void refreshShape();
    void applyShape();
    void selectActiveRow();

    /// Adds a spin box row whose value comes from `get` and goes to the project through `set`.
    /// Wires a spin box (QSpinBox or QDoubleSpinBox) to a project field: an edit is one undoable document
    /// edit (merged per box), and the box follows the document. Adds the labelled row to `form`.
    template <typename Box, typename T>
    Box* bindSpinBox(QFormLayout* form, const QString& label, Box* box, std::function<T(const Project&)> get,
        std::function<void(Project&, T)> set);
    QSpinBox* addInt(QFormLayout* form, const QString& label, int min, int max, std::function<int(const Project&)> get,
        std::function<void(Project&, int)> set);
    QDoubleSpinBox* addDouble(QFormLayout* form, const QString& label, double min, double max, int decimals,
        const QString& suffix, std::function<double(const Project&)> get, std::function<void(Project&, double)> set);

    ProjectDocument* m_document;
    VariantListModel* m_variants;
    StageCostModel* m_costs;
    QTableView* m_variantView = nullptr;
    QPushButton* m_removeButton = nullptr;
    QComboBox* m_kind = nullptr;
    QSpinBox* m_ranks = nullptr;
    QSpinBox* m_microbatches = nullptr;
    QSpinBox* m_stagesPerRank = nullptr;
    QLabel* m_orderState = nullptr;
    QPushButton* m_regenerate = nullptr;
    QComboBox* m_dtype = nullptr;
    std::vector<std::function<void()>> m_refreshers;
    int m_nextKey = 1000;
};

} // namespace dps::ui
