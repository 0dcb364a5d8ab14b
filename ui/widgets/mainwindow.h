#pragma once
// The designer's main window. It wires the document, the simulation service, the file controller and the
// views; it owns no data itself. Panels live in dock widgets, so a new panel (like the Run panel and the run
// overlay) is one addPanel() call, and the timeline can draw a measured set of blocks over the predicted one.
// It is the RunHost of the RunWorkspace: the run reaches the window only through that interface.
#include "document/simulationservice.h"
#include "widgets/runhost.h"
#include "widgets/theme.h"

#include <QMainWindow>

class QAction;
class QActionGroup;
class QDockWidget;
class QLabel;
class QMenu;
class QStackedWidget;
class QTableView;
class QToolBar;

namespace dps::ui {

class ClusterEditor;
class CompareView;
class DiagnosticsModel;
class FileController;
class MemoryChart;
class MetricsPanel;
class ModelEditor;
class PartitionEditor;
class PlannerPanel;
class ProjectDocument;
class ProjectPanel;
class RunWorkspace;
class TimelineView;
class TimelineLegend;

class MainWindow : public QMainWindow, public RunHost {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    ProjectDocument* document() const override { return m_document; }
    FileController* files() const { return m_files; }
    TimelineView* timeline() const { return m_timeline; }
    MemoryChart* memoryChart() const { return m_memory; }
    MetricsPanel* metrics() const { return m_metrics; }
    ProjectPanel* projectPanel() const { return m_projectPanel; }
    ModelEditor* modelEditor() const { return m_modelEditor; }
    ClusterEditor* clusterEditor() const { return m_clusterEditor; }
    /// Shows and raises the dock whose object name is `name` + "Dock" ("project", "model", "cluster",
    /// "partition", "metrics", "memory", ...); false when there is none.
    bool raisePanel(const QString& name);
    PartitionEditor* partitionEditor() const { return m_partition; }
    CompareView* compareView() const { return m_compare; }
    /// The Planner panel (a dock, hidden until View > Planner or Ctrl+3 shows it).
    PlannerPanel* planner() const { return m_planner; }
    DiagnosticsModel* diagnostics() const { return m_diagnostics; }
    MessageBanner* banner() const { return m_banner; }
    SimulationService* simulation() override { return &m_simulation; }
    /// The Run panel, the run overlay and their actions.
    RunWorkspace* runs() const { return m_runs; }
    /// The newest snapshot of the active variant.
    SnapshotPtr snapshot() const { return m_simulation.current(); }

    /// Adds a panel as a dock widget (e.g. the Run panel); its visibility goes into the View menu.
    QDockWidget* addPanel(const QString& objectName, const QString& title, QWidget* panel, Qt::DockWidgetArea area);
    /// Opens the comparison window (a separate top-level window, so it can sit on a second screen).
    void showCompare();
    /// Shows and raises the Planner dock, giving it half the window's height.
    void showPlanner();
    /// Waits until every requested simulation (and the model editor's figures) has been delivered (tests,
    /// screenshots).
    bool waitUntilIdle(int timeoutMs = 20000);
    /// Restores the window layout saved by the last session (not done for screenshots).
    void restoreLayout();
    /// Applies a palette; `remember` stores it for the next session.
    void setThemeMode(ThemeMode mode, bool remember = false);

    // RunHost
    /// Shows `text` in the banner above the chart.
    void showMessage(MessageBanner::Kind kind, const QString& text) override;
    /// Raises the Run panel's dock.
    void raiseRunPanel() override;
    /// Shows and raises the run overlay's dock.
    void raiseOverlayPanel() override;
    /// Draws the overlay on the timeline and the memory chart and gives it to the metrics panel.
    void showOverlay(const MeasuredOverlay& overlay) override;
    /// Selects the block on the timeline.
    void markBlock(int rank, int position) override;
    /// Gives the run to the file controller (the validated config export).
    void setLastRun(const std::optional<ValidatedRun>& run) override;

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    QWidget* setupDesignPage();
    void setupDocks();
    /// Creates the RunWorkspace, docks its two panels and puts its actions in a Run menu and the tool bar.
    void setupRunWorkspace();
    void setupActions();
    void createActions();
    void assignShortcuts();
    void setupFileMenu();
    void setupEditMenu();
    void setupViewMenu();
    void setupHelpMenu();
    void setupToolBar();
    /// Gives the actions their icons, drawn for the current palette.
    void applyIcons();
    void setupConnections();
    void connectViews();
    void connectFiles();
    void rebuildRecentMenu();
    void requestSimulation();
    void requestComparison();
    void showSnapshot(const SnapshotPtr& snapshot);
    void updateStatusLine(const SimulationSnapshot& snapshot);
    void updateTitle();
    void saveLayout();
    void showInfo(const QString& text);

    ProjectDocument* m_document;
    SimulationService m_simulation;
    CompareService m_compareService;
    FileController* m_files;
    MessageBanner* m_banner = nullptr;
    QLabel* m_status = nullptr;
    TimelineView* m_timeline = nullptr;
    TimelineLegend* m_legend = nullptr; ///< above the timeline; lists sends and receives while they are shown
    DiagnosticsModel* m_diagnostics = nullptr;
    QTableView* m_diagnosticsView = nullptr;
    QLabel* m_noFindings = nullptr;
    QStackedWidget* m_diagnosticsStack = nullptr;
    ProjectPanel* m_projectPanel = nullptr;
    ModelEditor* m_modelEditor = nullptr;
    ClusterEditor* m_clusterEditor = nullptr;
    PartitionEditor* m_partition = nullptr;
    MetricsPanel* m_metrics = nullptr;
    MemoryChart* m_memory = nullptr;
    CompareView* m_compare = nullptr;
    PlannerPanel* m_planner = nullptr;
    QDockWidget* m_plannerDock = nullptr;
    RunWorkspace* m_runs = nullptr;
    QDockWidget* m_partitionDock = nullptr;
    QDockWidget* m_metricsDock = nullptr;
    QDockWidget* m_memoryDock = nullptr;
    QDockWidget* m_runDock = nullptr;
    QDockWidget* m_overlayDock = nullptr;
    QToolBar* m_toolBar = nullptr;
    QMenu* m_viewMenu = nullptr;
    QMenu* m_recentMenu = nullptr;
    QActionGroup* m_themeGroup = nullptr;
    struct Actions {
        QAction *newFile, *open, *save, *saveAs, *importCsv, *exportConfig, *exportCsv, *exportTrace, *exportCommsCsv,
            *exportTorchtitan, *exportMegatron, *exportChart, *quit, *undo, *redo, *regenerate, *zoomIn, *zoomOut, *fit,
            *compare, *planner;
    } m_actions {};
    bool m_compareStale = true;
};

} // namespace dps::ui
