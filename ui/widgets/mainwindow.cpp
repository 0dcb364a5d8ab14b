#include "widgets/mainwindow.h"

#include "document/comparemodel.h"
#include "document/diagnosticsmodel.h"
#include "document/formatting.h"
#include "document/projectdocument.h"
#include "run/messagebanner.h"
#include "run/runhistory.h"
#include "run/runpanel.h"
#include "run/runrecord.h"
#include "widgets/clustereditor.h"
#include "widgets/compareview.h"
#include "widgets/filecontroller.h"
#include "widgets/memorychart.h"
#include "widgets/metricspanel.h"
#include "widgets/modeleditor.h"
#include "widgets/partitioneditor.h"
#include "widgets/plannerpanel.h"
#include "widgets/projectpanel.h"
#include "widgets/runworkspace.h"
#include "widgets/timelineview.h"

#include "base/version.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDeadlineTimer>
#include <QDockWidget>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QUndoView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace dps::ui {

namespace {

/// `panel` in a scroll area, so its minimum size never forces the window wider than the screen.
QWidget* scrollable(QWidget* panel)
{
    auto* scroll = new QScrollArea;
    scroll->setWidget(panel);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    return scroll;
}

} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , m_document(new ProjectDocument(this))
    , m_files(new FileController(m_document, this, this))
{
    setObjectName(QStringLiteral("mainWindow"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/dualpipe-studio.svg")));
    setCentralWidget(setupDesignPage());
    m_compare = new CompareView(this);
    m_compare->setWindowFlag(Qt::Window);
    m_compare->setWindowTitle(tr("Compare variants — DualPipe Studio"));
    m_compare->resize(1400, 900);
    setupDocks();
    setupActions();
    setupToolBar();
    setupConnections();
    setupRunWorkspace();
    updateTitle();
    resize(1600, 1000);
    requestSimulation();
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::setupDesignPage()
{
    m_banner = new MessageBanner;
    m_status = new QLabel;
    m_status->setTextFormat(Qt::RichText);
    m_status->setWordWrap(true);
    m_timeline = new TimelineView;
    m_timeline->setEditable(true);
    m_diagnostics = new DiagnosticsModel(this);
    m_diagnosticsView = new QTableView;
    m_diagnosticsView->setModel(m_diagnostics);
    m_diagnosticsView->verticalHeader()->hide();
    m_diagnosticsView->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_diagnosticsView->horizontalHeader()->setStretchLastSection(true);
    m_diagnosticsView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_diagnosticsView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_diagnosticsView->setToolTip(tr("The validator's findings; click one to mark its block on the chart"));
    auto* chart = new QWidget;
    auto* chartLayout = new QVBoxLayout(chart);
    chartLayout->setContentsMargins(0, 0, 0, 0);
    m_legend = new TimelineLegend;
    chartLayout->addWidget(m_legend);
    chartLayout->addWidget(m_timeline, 1);
    m_noFindings = new QLabel(tr("The validator has no findings: the order is valid."));
    m_noFindings->setAlignment(Qt::AlignCenter);
    m_noFindings->setEnabled(false);
    m_diagnosticsStack = new QStackedWidget;
    m_diagnosticsStack->addWidget(m_noFindings);
    m_diagnosticsStack->addWidget(m_diagnosticsView);
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(chart);
    split->addWidget(m_diagnosticsStack);
    split->setStretchFactor(0, 5);
    split->setStretchFactor(1, 1);
    split->setSizes({ 600, 110 });
    auto* page = new QWidget;
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_banner);
    layout->addWidget(m_status);
    layout->addWidget(split, 1);
    return page;
}

QDockWidget* MainWindow::addPanel(
    const QString& objectName, const QString& title, QWidget* panel, Qt::DockWidgetArea area)
{
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(objectName);
    dock->setWidget(panel);
    addDockWidget(area, dock);
    if (m_viewMenu)
        m_viewMenu->insertAction(m_viewMenu->actions().value(0), dock->toggleViewAction());
    return dock;
}

void MainWindow::setupDocks()
{
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);
    m_projectPanel = new ProjectPanel(m_document);
    m_modelEditor = new ModelEditor(m_document);
    m_clusterEditor = new ClusterEditor(m_document);
    m_partition = new PartitionEditor(m_document);
    m_metrics = new MetricsPanel;
    m_memory = new MemoryChart;
    auto* project = addPanel(QStringLiteral("projectDock"), tr("Project"), m_projectPanel, Qt::LeftDockWidgetArea);
    auto* model = addPanel(QStringLiteral("modelDock"), tr("Model"), m_modelEditor, Qt::LeftDockWidgetArea);
    auto* cluster = addPanel(QStringLiteral("clusterDock"), tr("Cluster"), m_clusterEditor, Qt::LeftDockWidgetArea);
    tabifyDockWidget(project, model);
    tabifyDockWidget(model, cluster);
    project->raise();
    m_partitionDock
        = addPanel(QStringLiteral("partitionDock"), tr("Layer partition"), m_partition, Qt::LeftDockWidgetArea);
    m_metricsDock = addPanel(QStringLiteral("metricsDock"), tr("Metrics"), m_metrics, Qt::RightDockWidgetArea);
    auto* history = addPanel(
        QStringLiteral("historyDock"), tr("History"), new QUndoView(m_document->undoStack()), Qt::RightDockWidgetArea);
    m_memoryDock = addPanel(QStringLiteral("memoryDock"), tr("Memory"), m_memory, Qt::BottomDockWidgetArea);
    tabifyDockWidget(m_metricsDock, history);
    m_metricsDock->raise();
    resizeDocks({ project, m_metricsDock }, { 400, 420 }, Qt::Horizontal);
    resizeDocks({ project, m_partitionDock }, { 640, 300 }, Qt::Vertical);
    resizeDocks({ m_memoryDock }, { 250 }, Qt::Vertical);
    m_planner = new PlannerPanel(m_document);
    m_plannerDock = addPanel(QStringLiteral("plannerDock"), tr("Planner"), m_planner, Qt::BottomDockWidgetArea);
    tabifyDockWidget(m_memoryDock, m_plannerDock);
    m_plannerDock->hide(); // shown by View > Planner (Ctrl+3); hidden it leaves the memory dock as it was
}

bool MainWindow::raisePanel(const QString& name)
{
    auto* dock = findChild<QDockWidget*>(name + QStringLiteral("Dock"));
    if (!dock)
        return false;
    dock->show();
    dock->raise();
    return true;
}

void MainWindow::setupRunWorkspace()
{
    m_runs = new RunWorkspace(*this, this);
    m_runDock = addPanel(QStringLiteral("runDock"), tr("Run"), scrollable(m_runs->runPanel()), Qt::RightDockWidgetArea);
    m_overlayDock = addPanel(
        QStringLiteral("overlayDock"), tr("Run overlay"), scrollable(m_runs->overlayPanel()), Qt::LeftDockWidgetArea);
    // `dpstudio devices` is asked the first time the Run panel is seen.
    connect(m_runDock, &QDockWidget::visibilityChanged, m_runs, &RunWorkspace::setRunPanelVisible);
    tabifyDockWidget(m_metricsDock, m_runDock);
    m_metricsDock->raise();
    tabifyDockWidget(m_partitionDock, m_overlayDock);
    m_partitionDock->raise();
    // Sizes take once the window has its size; a layout restored from the last session wins.
    if (!QSettings().contains(QStringLiteral("mainWindow/state")))
        QTimer::singleShot(0, this, [this] {
            resizeDocks({ m_metricsDock }, { 430 }, Qt::Horizontal);
            resizeDocks({ m_memoryDock }, { 250 }, Qt::Vertical);
        });
    auto* menu = new QMenu(tr("&Run"), this);
    menuBar()->insertMenu(m_viewMenu->menuAction(), menu);
    menu->addActions({ m_runs->runAction(), m_runs->cancelAction() });
    menu->addSeparator();
    menu->addAction(m_runs->calibrateAction());
    m_toolBar->addSeparator();
    m_toolBar->addActions({ m_runs->runAction(), m_runs->cancelAction() });
}

void MainWindow::showMessage(MessageBanner::Kind kind, const QString& text)
{
    m_banner->showMessage(kind, text);
}

void MainWindow::raiseRunPanel()
{
    m_runDock->raise();
}

void MainWindow::raiseOverlayPanel()
{
    m_overlayDock->show();
    m_overlayDock->raise();
}

void MainWindow::showOverlay(const MeasuredOverlay& overlay)
{
    m_timeline->setMeasuredBlocks(overlay.blocks, overlay.criticalPath);
    // A run without memory figures (an imported profile without [memory] events) draws no measured curve.
    const bool memory = overlay.blocks
        && std::any_of(
            overlay.peakMemoryBytes.begin(), overlay.peakMemoryBytes.end(), [](double b) { return b > 0.0; });
    m_memory->setMeasuredMemory(memory ? overlay.memory : decltype(overlay.memory) {});
    m_metrics->setOverlay(overlay);
}

void MainWindow::markBlock(int rank, int position)
{
    m_timeline->markBlock({ rank, position });
}

void MainWindow::setLastRun(const std::optional<ValidatedRun>& run)
{
    m_files->setLastRun(run);
}

void MainWindow::createActions()
{
    auto& a = m_actions;
    a.newFile = new QAction(tr("&New"), this);
    a.open = new QAction(tr("&Open…"), this);
    a.save = new QAction(tr("&Save"), this);
    a.saveAs = new QAction(tr("Save &As…"), this);
    a.importCsv = new QAction(tr("&Import PyTorch CSV…"), this);
    a.exportConfig = new QAction(tr("Export &Validated Config…"), this);
    a.exportCsv = new QAction(tr("Export PyTorch &CSV…"), this);
    a.exportTrace = new QAction(tr("Export Chrome &Trace…"), this);
    a.exportCommsCsv = new QAction(tr("Export PyTorch CSV with C&omms…"), this);
    a.exportTorchtitan = new QAction(tr("Export torch&titan Config…"), this);
    a.exportMegatron = new QAction(tr("Export &Megatron-Core Arguments…"), this);
    a.exportChart = new QAction(tr("Export C&hart (PNG, SVG, PDF)…"), this);
    a.quit = new QAction(tr("&Quit"), this);
    a.undo = m_document->undoStack()->createUndoAction(this, tr("&Undo"));
    a.redo = m_document->undoStack()->createRedoAction(this, tr("&Redo"));
    a.regenerate = new QAction(tr("Re&generate Order"), this);
    a.zoomIn = new QAction(tr("Zoom &In"), this);
    a.zoomOut = new QAction(tr("Zoom &Out"), this);
    a.fit = new QAction(tr("&Fit Timeline"), this);
    a.compare = new QAction(tr("&Compare Variants"), this);
    a.planner = new QAction(tr("&Planner"), this);
    a.planner->setToolTip(tr("Find the fastest schedule for N devices under a memory limit"));
}

void MainWindow::assignShortcuts()
{
    auto& a = m_actions;
    a.newFile->setShortcut(QKeySequence::New);
    a.open->setShortcut(QKeySequence::Open);
    a.save->setShortcut(QKeySequence::Save);
    a.saveAs->setShortcut(QKeySequence::SaveAs);
    a.importCsv->setShortcut(QKeySequence(tr("Ctrl+I")));
    a.exportConfig->setShortcut(QKeySequence(tr("Ctrl+E")));
    a.exportChart->setShortcut(QKeySequence(tr("Ctrl+Shift+E")));
    a.quit->setShortcut(QKeySequence::Quit);
    a.undo->setShortcut(QKeySequence::Undo);
    a.redo->setShortcuts({ QKeySequence::Redo, QKeySequence(tr("Ctrl+Y")) });
    a.regenerate->setShortcut(QKeySequence(tr("Ctrl+R")));
    a.zoomIn->setShortcut(QKeySequence::ZoomIn);
    a.zoomOut->setShortcut(QKeySequence::ZoomOut);
    a.fit->setShortcut(QKeySequence(tr("Ctrl+0")));
    a.compare->setShortcut(QKeySequence(tr("Ctrl+2")));
    a.planner->setShortcut(QKeySequence(tr("Ctrl+3")));
}

void MainWindow::setupActions()
{
    createActions();
    assignShortcuts();
    applyIcons();
    setupFileMenu();
    setupEditMenu();
    setupViewMenu();
    setupHelpMenu();
}

void MainWindow::applyIcons()
{
    auto& a = m_actions;
    const QPalette p = QApplication::palette();
    const std::pair<QAction*, const char*> icons[]
        = { { a.newFile, "new" }, { a.open, "open" }, { a.save, "save" }, { a.importCsv, "import" },
              { a.exportConfig, "export" }, { a.undo, "undo" }, { a.redo, "redo" }, { a.regenerate, "regenerate" },
              { a.zoomIn, "zoom-in" }, { a.zoomOut, "zoom-out" }, { a.fit, "zoom-fit" }, { a.compare, "compare" } };
    for (const auto& [action, name] : icons)
        action->setIcon(themedIcon(QLatin1String(name), p));
}

void MainWindow::setupFileMenu()
{
    auto& a = m_actions;
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addActions({ a.newFile, a.open });
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    file->addActions({ a.save, a.saveAs });
    file->addSeparator();
    file->addAction(a.importCsv);
    // PyTorch profiler traces of the project's schedule, overlaid like a run (docs/profile-import.md).
    QAction* openProfile = file->addAction(tr("Open &Profile…"), m_files, &FileController::openProfile);
    openProfile->setObjectName(QStringLiteral("openProfileAction"));
    openProfile->setStatusTip(tr("Import PyTorch profiler traces (one per rank, .json or .json.gz) and overlay them"));
    QMenu* exports = file->addMenu(tr("&Export"));
    exports->addActions({ a.exportConfig, a.exportCsv, a.exportCommsCsv, a.exportTorchtitan, a.exportMegatron,
        a.exportTrace, a.exportChart });
    file->addSeparator();
    file->addAction(a.quit);
    rebuildRecentMenu();
}

void MainWindow::setupEditMenu()
{
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->addActions({ m_actions.undo, m_actions.redo });
    edit->addSeparator();
    edit->addAction(m_actions.regenerate);
}

void MainWindow::setupViewMenu()
{
    m_viewMenu = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* dock : findChildren<QDockWidget*>())
        m_viewMenu->addAction(dock->toggleViewAction());
    m_viewMenu->addSeparator();
    m_viewMenu->addAction(m_actions.compare);
    m_viewMenu->addAction(m_actions.planner);
    m_viewMenu->addSeparator();
    m_viewMenu->addActions({ m_actions.zoomIn, m_actions.zoomOut, m_actions.fit });
    m_viewMenu->addAction(m_timeline->criticalPathAction());
    m_viewMenu->addAction(m_timeline->commsAction());
    QMenu* theme = m_viewMenu->addMenu(tr("&Theme"));
    m_themeGroup = new QActionGroup(this);
    for (ThemeMode mode : { ThemeMode::System, ThemeMode::Light, ThemeMode::Dark }) {
        QAction* action = theme->addAction(themeModeName(mode).replace(0, 1, themeModeName(mode).at(0).toUpper()));
        action->setCheckable(true);
        action->setData(static_cast<int>(mode));
        m_themeGroup->addAction(action);
    }
    connect(m_themeGroup, &QActionGroup::triggered, this,
        [this](QAction* action) { setThemeMode(static_cast<ThemeMode>(action->data().toInt()), true); });
}

void MainWindow::setupHelpMenu()
{
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Keyboard Shortcuts"), this, [this] {
        QMessageBox::information(this, tr("Keyboard shortcuts"),
            tr("<table cellspacing=4>"
               "<tr><td><b>Ctrl+N / Ctrl+O / Ctrl+S</b></td><td>new, open, save the project</td></tr>"
               "<tr><td><b>Ctrl+Z / Ctrl+Shift+Z</b></td><td>undo, redo any edit</td></tr>"
               "<tr><td><b>Ctrl+R</b></td><td>regenerate the order from the kind</td></tr>"
               "<tr><td><b>Ctrl+I</b></td><td>import a PyTorch schedule CSV</td></tr>"
               "<tr><td><b>Ctrl+E / Ctrl+Shift+E</b></td><td>export the validated config, the chart</td></tr>"
               "<tr><td><b>Ctrl+2</b></td><td>compare the variants</td></tr>"
               "<tr><td><b>Ctrl+3</b></td><td>the planner: the fastest schedule under a memory limit</td></tr>"
               "<tr><td><b>+ / − / Home</b></td><td>zoom in, out, fit (timeline focused; also Ctrl++ / Ctrl+− / "
               "Ctrl+0)</td></tr>"
               "<tr><td><b>← / →</b></td><td>pan the timeline</td></tr>"
               "<tr><td><b>wheel / drag empty space</b></td><td>zoom, pan</td></tr>"
               "<tr><td><b>drag a block</b></td><td>move it along its rank's order (Esc cancels)</td></tr>"
               "</table>"));
    });
    help->addAction(tr("&About DualPipe Studio"), this, [this] {
        QMessageBox::about(this, tr("About DualPipe Studio"),
            tr("<b>DualPipe Studio %1</b><p>Design, simulate and compare pipeline-parallel training schedules: "
               "DualPipe, DualPipeV, 1F1B, ZB-H1, ZB-V, GPipe and interleaved 1F1B.</p>")
                .arg(QStringLiteral(DPS_VERSION)));
    });
}

void MainWindow::setupToolBar()
{
    auto& a = m_actions;
    QToolBar* bar = addToolBar(tr("Main"));
    m_toolBar = bar;
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setIconSize(QSize(20, 20));
    bar->addActions({ a.newFile, a.open, a.save });
    bar->addSeparator();
    bar->addActions({ a.undo, a.redo, a.regenerate });
    bar->addSeparator();
    bar->addActions({ a.zoomIn, a.zoomOut, a.fit });
    bar->addAction(m_timeline->criticalPathAction());
    bar->addSeparator();
    bar->addActions({ a.importCsv, a.exportConfig, a.compare, a.planner });
}

void MainWindow::setupConnections()
{
    auto& a = m_actions;
    connect(a.newFile, &QAction::triggered, m_files, &FileController::newProject);
    connect(a.open, &QAction::triggered, m_files, &FileController::open);
    connect(a.save, &QAction::triggered, m_files, &FileController::save);
    connect(a.saveAs, &QAction::triggered, m_files, &FileController::saveAs);
    connect(a.importCsv, &QAction::triggered, m_files, &FileController::importCsv);
    connect(a.exportConfig, &QAction::triggered, m_files, &FileController::exportConfig);
    connect(a.exportCsv, &QAction::triggered, m_files, &FileController::exportCsv);
    connect(a.exportTrace, &QAction::triggered, m_files, &FileController::exportTrace);
    connect(a.exportCommsCsv, &QAction::triggered, m_files,
        [this] { m_files->exportFramework(QStringLiteral("torch-comms-csv")); });
    connect(a.exportTorchtitan, &QAction::triggered, m_files,
        [this] { m_files->exportFramework(QStringLiteral("torchtitan")); });
    connect(a.exportMegatron, &QAction::triggered, m_files,
        [this] { m_files->exportFramework(QStringLiteral("megatron")); });
    connect(a.exportChart, &QAction::triggered, this, [this] {
        m_files->exportChart(
            m_compare->isActiveWindow() ? static_cast<QCustomPlot*>(m_compare->timeline()) : m_timeline);
    });
    connect(a.quit, &QAction::triggered, this, &QWidget::close);
    connect(a.regenerate, &QAction::triggered, m_document, &ProjectDocument::regenerate);
    connect(a.zoomIn, &QAction::triggered, this, [this] { m_timeline->zoomBy(1.5); });
    connect(a.zoomOut, &QAction::triggered, this, [this] { m_timeline->zoomBy(1 / 1.5); });
    connect(a.fit, &QAction::triggered, m_timeline, &TimelineView::fitAll);
    connect(a.compare, &QAction::triggered, this, &MainWindow::showCompare);
    connect(a.planner, &QAction::triggered, this, &MainWindow::showPlanner);
    connectFiles();
    connectViews();
}

void MainWindow::connectViews()
{
    connect(m_document, &ProjectDocument::changed, this, &MainWindow::requestSimulation);
    connect(m_document, &ProjectDocument::titleChanged, this, &MainWindow::updateTitle);
    connect(&m_simulation, &SimulationService::snapshotChanged, this, &MainWindow::showSnapshot);
    connect(m_timeline, &TimelineView::commsToggled, this, [this](bool shown) {
        m_simulation.setCommsTimed(shown);
        m_legend->setCommsShown(shown);
        requestSimulation();
    });
    connect(&m_compareService, &CompareService::variantsChanged, m_compare, &CompareView::setSnapshot);
    connect(&m_compareService, &CompareService::sweepChanged, m_compare, &CompareView::setSweep);
    connect(m_compare, &CompareView::sweepParameterChanged, this, [this] {
        m_compareStale = true;
        requestComparison();
    });
    connect(m_compare, &CompareView::shown, this, &MainWindow::requestComparison);
    connect(m_compare, &CompareView::sameDevicesChanged, this, [this] {
        m_compareStale = true;
        requestComparison();
    });
    connect(m_timeline, &TimelineView::blockMoveRequested, m_document, &ProjectDocument::moveAction);
    connect(m_timeline, &TimelineView::commMoveRequested, m_document,
        [this](int rank, int from, int to) { m_document->moveCommAction(rank, from, to); });
    connect(m_document, &ProjectDocument::notice, this, &MainWindow::showInfo);
    connect(
        m_timeline->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), m_memory, &MemoryChart::setTimeRange);
    connect(m_metrics, &MetricsPanel::rankActivated, m_memory, &MemoryChart::setRank);
    connect(m_timeline, &QCustomPlot::afterReplot, this, [this] {
        const QCPAxisRect* rect = m_timeline->axisRect();
        m_memory->alignTimeAxis(m_timeline->mapToGlobal(QPoint(rect->left(), 0)).x(),
            m_timeline->mapToGlobal(QPoint(rect->right(), 0)).x());
    });
    connect(m_diagnosticsView, &QTableView::clicked, this, [this](const QModelIndex& index) {
        m_timeline->markBlock(
            { index.data(DiagnosticsModel::RankRole).toInt(), index.data(DiagnosticsModel::PositionRole).toInt() });
    });
}

void MainWindow::connectFiles()
{
    connect(m_files, &FileController::failed, this,
        [this](const QString& text) { m_banner->showMessage(MessageBanner::Kind::Error, text); });
    connect(m_files, &FileController::warned, this,
        [this](const QString& text) { m_banner->showMessage(MessageBanner::Kind::Warning, text); });
    connect(m_files, &FileController::succeeded, this, &MainWindow::showInfo);
    connect(m_files, &FileController::opened, m_banner, &MessageBanner::clear);
    // An imported profile is overlaid exactly as an opened measured.json, and listed in the runs history
    // when it was written into the project's runs folder.
    connect(m_files, &FileController::profileImported, this, [this](const QString& path, const QString& summary) {
        if (RunHistory* history = m_runs->runPanel() ? m_runs->runPanel()->history() : nullptr; history
            && !history->folder().isEmpty()
            && QFileInfo(path).absolutePath() == QFileInfo(history->folder()).absoluteFilePath()) {
            RunRecord record;
            QString error;
            if (readRunRecord(path, record, &error))
                history->addRun(record, &error);
        }
        QString error;
        if (m_runs->loadMeasured(path, &error))
            showInfo(summary);
        else
            m_banner->showMessage(MessageBanner::Kind::Error, error);
    });
    connect(m_files, &FileController::recentFilesChanged, this, &MainWindow::rebuildRecentMenu);
}

void MainWindow::showInfo(const QString& text)
{
    m_banner->showMessage(MessageBanner::Kind::Info, text);
    QTimer::singleShot(6000, m_banner, [banner = m_banner, text] {
        if (banner->kind() == MessageBanner::Kind::Info && banner->text() == text)
            banner->clear();
    });
}

void MainWindow::rebuildRecentMenu()
{
    m_recentMenu->clear();
    const QStringList files = m_files->recentFiles();
    for (const QString& path : files) {
        QAction* action = m_recentMenu->addAction(QFileInfo(path).fileName());
        action->setToolTip(path);
        connect(action, &QAction::triggered, this, [this, path] {
            if (m_files->maybeSave())
                m_files->openFile(path);
        });
    }
    m_recentMenu->addSeparator();
    m_recentMenu->addAction(tr("Clear the List"), m_files, &FileController::clearRecentFiles)
        ->setEnabled(!files.isEmpty());
}

void MainWindow::requestSimulation()
{
    m_simulation.request(m_document->project(), m_document->activeVariant().name);
    m_compareStale = true;
    requestComparison();
}

void MainWindow::requestComparison()
{
    if (!m_compareStale || !m_compare->isVisible())
        return;
    m_compareStale = false;
    QStringList notes;
    const Project p
        = m_compare->sameDevices() ? onSameDevicesProject(m_document->project(), &notes) : m_document->project();
    m_compare->setSameDevicesNotes(notes);
    m_compareService.requestVariants(p);
    m_compareService.requestSweep(p, m_compare->sweepParameter());
    const Variant* active = p.find(m_document->activeVariant().name); // its microbatches on the same devices
    m_compare->setCurrentValue(m_compare->sweepParameter() == SweepParameter::Microbatches
            ? (active ? active : &m_document->activeVariant())->microbatches
            : p.costs.overlapFactor);
}

void MainWindow::showSnapshot(const SnapshotPtr& snapshot)
{
    m_timeline->setSnapshot(snapshot);
    // Sends and receives placed by hand are drawn whether View → Sends and Receives is on or not.
    m_legend->setCommsShown(m_timeline->commsAction()->isChecked() || snapshot->sim.commsTimed);
    m_diagnostics->setSnapshot(snapshot);
    m_diagnosticsStack->setCurrentWidget(
        m_diagnostics->rowCount() > 0 ? static_cast<QWidget*>(m_diagnosticsView) : m_noFindings);
    m_metrics->setSnapshot(snapshot);
    m_memory->setSnapshot(snapshot);
    m_partition->setSnapshot(snapshot);
    m_files->setSnapshot(snapshot);
    m_memory->setTimeRange(m_timeline->xAxis->range());
    updateStatusLine(*snapshot);
    m_actions.regenerate->setEnabled(snapshot->handEdited);
}

void MainWindow::updateStatusLine(const SimulationSnapshot& s)
{
    const QString name = QString::fromStdString(s.variantName).toHtmlEscaped();
    if (!s.built()) {
        m_status->setText(tr("<span style='color:#d03030'>✖</span> <b>%1</b> cannot be built: %2")
                              .arg(name, QString::fromStdString(s.error).toHtmlEscaped()));
        return;
    }
    const QString shape = tr("%1, %2 ranks × %3 microbatches")
                              .arg(QString::fromUtf8(kindDisplayName(s.schedule->kind).data()))
                              .arg(s.schedule->ranks)
                              .arg(s.schedule->microbatches);
    if (!s.valid()) {
        m_status->setText(
            tr("<span style='color:#d03030'>✖</span> <b>%1</b> (%2): the order is invalid — %3 "
               "error(s), listed under the chart. Move blocks back, undo (Ctrl+Z) or regenerate (Ctrl+R).")
                .arg(name, shape)
                .arg(s.report.errorCount()));
        return;
    }
    m_status->setText(tr("<span style='color:#3a9a3a'>✔</span> <b>%1</b> (%2%3): valid · makespan %4 · bubble %5 — "
                         "drag a block%6 along its row to reorder; wheel or +/− to zoom, drag empty space to pan")
                          .arg(name, shape, s.handEdited ? tr(", edited by hand") : QString(), formatTime(s.makespanUs),
                              formatPercent(s.bubbleRate), s.sim.commsTimed ? tr(" or a send or receive") : QString()));
}

void MainWindow::updateTitle()
{
    setWindowTitle(tr("%1 — DualPipe Studio").arg(m_document->displayName()));
}

void MainWindow::showCompare()
{
    m_compare->show();
    m_compare->raise();
    m_compare->activateWindow();
}

void MainWindow::showPlanner()
{
    m_plannerDock->show();
    m_plannerDock->raise();
    resizeDocks({ m_plannerDock }, { height() / 2 }, Qt::Vertical);
}

bool MainWindow::waitUntilIdle(int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    bool idle = false;
    while (!idle && !deadline.hasExpired()) {
        m_simulation.waitUntilIdle(static_cast<int>(deadline.remainingTime()));
        m_compareService.waitUntilIdle(static_cast<int>(deadline.remainingTime()));
        m_modelEditor->waitUntilIdle(static_cast<int>(deadline.remainingTime()));
        QApplication::processEvents();
        idle = m_simulation.isIdle() && m_compareService.isIdle() && m_modelEditor->isIdle();
    }
    return idle;
}

void MainWindow::setThemeMode(ThemeMode mode, bool remember)
{
    applyThemeMode(mode);
    applyIcons();
    if (remember)
        QSettings().setValue(QStringLiteral("theme"), themeModeName(mode));
    for (QAction* action : m_themeGroup->actions())
        action->setChecked(action->data().toInt() == static_cast<int>(mode));
}

void MainWindow::restoreLayout()
{
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("mainWindow/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("mainWindow/state")).toByteArray());
}

void MainWindow::saveLayout()
{
    QSettings settings;
    settings.setValue(QStringLiteral("mainWindow/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("mainWindow/state"), saveState());
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (!m_files->maybeSave()) {
        event->ignore();
        return;
    }
    saveLayout();
    m_compare->close();
    event->accept();
}

} // namespace dps::ui
