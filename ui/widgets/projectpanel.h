#pragma once
// The project panel: the schedule variants (add, rename, remove, pick the active one), the active variant's
// kind, ranks, microbatches and stages per rank, its data-parallel replicas, microbatch size and recompute
// policy, and the cost settings with the per-stage overrides table. The model and the cluster have their own
// editors (ModelEditor, ClusterEditor). Every change goes through the ProjectDocument (so it can be undone;
// fields through a FieldBinder, so a value the engine refuses shows its message and is not applied); the
// panel refreshes itself from the document whenever it changes.
#include "document/projectdocument.h"

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableView;

namespace dps::ui {

class FieldBinder;
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
    /// The message of the last refused edit ("" when none is shown).
    QString message() const;
    /// The binder of the panel's fields (tests drive edits through it).
    FieldBinder* binder() const { return m_binder; }

private:
    QWidget* setupVariants();
    QWidget* setupShape();
    QWidget* setupCosts();
    void refresh();
    void refreshShape();
    void applyShape();
    void selectActiveRow();

    ProjectDocument* m_document;
    QLabel* m_message;
    FieldBinder* m_binder;
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
};

} // namespace dps::ui
