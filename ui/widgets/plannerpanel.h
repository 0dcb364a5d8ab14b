#pragma once
// The Planner panel: asks the planner (engine/project/planner.h) for the fastest schedule of the project's
// model on N devices at a global batch under a memory limit, in the background with a progress bar and
// Cancel; shows the candidates as a scatter of step time against peak memory (kinds as colours, the Pareto
// front as a step line, the limit as a vertical line) and as a sortable table; "Add as variant" puts the
// selected candidates into the project as one undoable edit. docs/planner.md, "The Planner panel".
#include "document/plannermodel.h"
#include "widgets/theme.h"

#include <QWidget>

#include <map>
#include <vector>

class QCheckBox;
class QHBoxLayout;
class QCustomPlot;
class QCPAbstractPlottable;
class QCPGraph;
class QLabel;
class QLineEdit;
class QMouseEvent;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace dps::ui {

class ProjectDocument;

class PlannerPanel : public QWidget {
    Q_OBJECT
public:
    explicit PlannerPanel(ProjectDocument* document, QWidget* parent = nullptr);

    /// Starts a search with the fields' values (the project as it is now); a field the engine refuses shows its
    /// message beside the field or in the status line, and nothing starts. Returns whether it started.
    bool startPlan();
    /// Asks the running search to stop; its partial result is shown.
    void cancelPlan();
    /// Processes events until the search ended and its result is drawn; true when it did (tests, screenshots).
    bool waitUntilIdle(int timeoutMs = 60000);
    /// Adds the selected candidates (best step time first) to the project as variants, the first one active, as
    /// one undoable edit (withPlanVariants). Returns the engine's message, or "" when added.
    QString addSelectedAsVariants();
    /// Selects the table rows of these candidates (indices into PlanResult::candidates) and highlights them.
    void selectCandidates(const std::vector<int>& candidates);
    /// The candidates selected in the table, best step time first.
    std::vector<int> selectedCandidates() const;
    /// The memory limit the field holds (bytes; 0 when empty: the cluster's); throws ConstraintError as
    /// parseMemorySize (field "memory limit").
    double memoryLimitBytes() const;

    PlannerModel* model() const { return m_model; }
    PlannerService* service() { return &m_service; }
    QSpinBox* devicesField() const { return m_devices; }
    QSpinBox* globalBatchField() const { return m_globalBatch; }
    QLineEdit* memoryField() const { return m_memory; }
    QLabel* memoryError() const { return m_memoryError; }
    /// The sizes searched: comma lists ("1,2,4,8"); empty = the planner's defaults (PlanRequest::tps, cps, zeros).
    QLineEdit* tpField() const { return m_tps; }
    QLineEdit* cpField() const { return m_cps; }
    QLineEdit* zeroField() const { return m_zeros; }
    /// The kind checkboxes, in the order of generatedKinds().
    const std::vector<QCheckBox*>& kindBoxes() const { return m_kindBoxes; }
    QPushButton* planButton() const { return m_plan; }
    QPushButton* cancelButton() const { return m_cancel; }
    QPushButton* addButton() const { return m_add; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* summary() const { return m_summary; }
    QCustomPlot* plot() const { return m_plot; }
    QTableView* table() const { return m_table; }
    /// The scatter graph of a kind (null when the result has no candidate of it).
    QCPGraph* kindGraph(ScheduleKind kind) const;
    QCPGraph* paretoGraph() const { return m_paretoGraph; }
    QCPGraph* selectionGraph() const { return m_selectionGraph; }

protected:
    void changeEvent(QEvent* event) override;

private:
    QWidget* setupRequest();
    /// The TP, CP and ZeRO fields in a row.
    QHBoxLayout* setupSizes();
    QWidget* setupResults();
    /// Devices and global batch from the project: its cluster's nodes × GPUs per node (else the active variant's
    /// devices) and the active variant's microbatches × size × dp. Only while the user has not typed.
    void loadDefaults();
    void checkMemoryField();
    void showProgress(int done, int total);
    void showResult(const PlanResultPtr& result);
    void showFailure(const QString& message);
    void setRunning(bool running);
    void drawPlot();
    /// One scatter per kind, its points in `order` (by memory: a point's data index maps to its candidate).
    void drawKindGraphs(const std::vector<PlanCandidate>& candidates, const std::vector<int>& order);
    /// The Pareto front: from the least memory up, each point holds its step time until the next is reached.
    void drawParetoFront(const std::vector<PlanCandidate>& candidates, const std::vector<int>& order);
    /// The axes' ranges, the memory limit's line and, without candidates, a note in the middle.
    void drawRangesAndLimit(const PlanResultPtr& result, double maxBytes, double minStep, double maxStep);
    void drawSelection();
    void pointClicked(QCPAbstractPlottable* plottable, int dataIndex, QMouseEvent* event);

    ProjectDocument* m_document;
    PlannerService m_service;
    PlannerModel* m_model;
    QSpinBox* m_devices = nullptr;
    QSpinBox* m_globalBatch = nullptr;
    QLineEdit* m_memory = nullptr;
    QLabel* m_memoryError = nullptr;
    QLineEdit* m_tps = nullptr;
    QLineEdit* m_cps = nullptr;
    QLineEdit* m_zeros = nullptr;
    std::vector<QCheckBox*> m_kindBoxes;
    QPushButton* m_plan = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_add = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_addNote = nullptr;
    QCustomPlot* m_plot = nullptr;
    QTableView* m_table = nullptr;
    std::map<QCPGraph*, std::vector<int>> m_graphCandidates; ///< per scatter graph: the candidate of each point
    std::map<ScheduleKind, QCPGraph*> m_kindGraphs;
    QCPGraph* m_paretoGraph = nullptr;
    QCPGraph* m_selectionGraph = nullptr;
    bool m_loading = false; ///< the fields are being set from the project, not typed
    bool m_userEdited = false; ///< the user typed into devices or global batch: keep their values
    bool m_transformer = true; ///< the planned project's model is a transformer
    double m_byteDivisor = 1.0; ///< the memory axis' unit, bytes
    ChartColors m_colors;
};

} // namespace dps::ui
