#include "widgets/runworkspace.h"

#include "document/projectdocument.h"
#include "document/simulationservice.h"
#include "run/runhistory.h"
#include "widgets/runhost.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "base/hostinfo.h"
#include "machine/costsource.h"
#include "sim/calibrate.h"
#include "trace/measured.h"

#include <QAction>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace dps::ui {

RunWorkspace::RunWorkspace(RunHost& host, QObject* parent)
    : QObject(parent)
    , m_host(host)
    , m_runPanel(new RunPanel)
    , m_overlay(new OverlayPanel)
{
    m_runPanel->setProgram(defaultProgram());
    m_overlay->setHistory(m_runPanel->history());
    setupActions();
    setupConnections();
    updateProject();
    m_overlay->setSnapshot(m_host.simulation()->current());
}

RunWorkspace::~RunWorkspace()
{
    if (m_runPanel && !m_runPanel->parent())
        delete m_runPanel;
    if (m_overlay && !m_overlay->parent())
        delete m_overlay;
}

QString RunWorkspace::defaultProgram()
{
    const QByteArray env = qgetenv("DPSTUDIO_PROGRAM");
    if (!env.isEmpty())
        return QString::fromLocal8Bit(env);
    const QString beside = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("dpstudio"));
    return QFileInfo(beside).isExecutable() ? beside : QStringLiteral("dpstudio");
}

void RunWorkspace::setRunPanelVisible(bool visible)
{
    if (visible && !m_probed) {
        m_probed = true;
        m_runPanel->refreshDevices();
    }
}

void RunWorkspace::setupActions()
{
    m_run = new QAction(tr("&Run on This Machine"), this);
    m_run->setShortcut(QKeySequence(Qt::Key_F5));
    m_run->setToolTip(tr("Run the project with dpstudio on this machine's GPUs or CPUs (F5)"));
    m_cancel = new QAction(tr("&Cancel Run"), this);
    m_cancel->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F5));
    m_calibrate = new QAction(tr("Ca&librate from Run"), this);
    m_calibrate->setToolTip(tr("Fit the cost model to the overlaid run and predict again"));
    updateActions();
}

void RunWorkspace::setupConnections()
{
    ProjectDocument* doc = m_host.document();
    connect(m_run, &QAction::triggered, m_runPanel, [this] {
        m_host.raiseRunPanel();
        m_runPanel->startRun();
    });
    connect(m_cancel, &QAction::triggered, m_runPanel, &RunPanel::cancelRun);
    connect(m_calibrate, &QAction::triggered, this, [this] { calibrate(); });
    connect(m_overlay, &OverlayPanel::calibrateRequested, this, [this] { calibrate(); });
    connect(doc, &ProjectDocument::changed, this, &RunWorkspace::updateProject);
    connect(doc, &ProjectDocument::titleChanged, this, &RunWorkspace::updateProject);
    connect(m_host.simulation(), &SimulationService::snapshotChanged, this, [this](const SnapshotPtr& s) {
        m_overlay->setSnapshot(s);
        updateProject();
    });
    connect(m_runPanel, &RunPanel::aboutToRun, this, &RunWorkspace::writeRunFile, Qt::DirectConnection);
    connect(m_runPanel, &RunPanel::runStarted, this, &RunWorkspace::updateActions);
    connect(m_runPanel, &RunPanel::runFinished, this, &RunWorkspace::onRunFinished);
    connect(m_runPanel, &RunPanel::runFailed, this, &RunWorkspace::onRunFailed);
    connect(m_runPanel, &RunPanel::runCancelled, this, &RunWorkspace::updateActions);
    connect(m_runPanel, &RunPanel::runActivated, this, [this](const QString& path) { loadMeasured(path); });
    connect(m_overlay, &OverlayPanel::overlayChanged, this, &RunWorkspace::applyOverlay);
    connect(m_overlay, &OverlayPanel::loadFailed, this,
        [this](const QString& text) { m_host.showMessage(MessageBanner::Kind::Error, text); });
    connect(m_overlay, &OverlayPanel::slipActivated, this,
        [this](int rank, int position) { m_host.markBlock(rank, position); });
}

QString RunWorkspace::runFilePath() const
{
    const QString dir
        = QDir(QDir::tempPath()).filePath(QStringLiteral("dualpipe-studio-%1").arg(QCoreApplication::applicationPid()));
    const QString path = m_host.document()->filePath();
    QString name = path.isEmpty() ? QStringLiteral("untitled.dpstudio.json") : QFileInfo(path).fileName();
    if (!name.endsWith(QStringLiteral(".dpstudio.json")))
        name += QStringLiteral(".dpstudio.json");
    return QDir(dir).filePath(name);
}

RunProjectInfo RunWorkspace::projectInfo() const
{
    const ProjectDocument* doc = m_host.document();
    RunProjectInfo info;
    info.path = doc->filePath().isEmpty() ? runFilePath() : doc->filePath();
    if (doc->filePath().isEmpty() || doc->isModified())
        info.runPath = runFilePath();
    info.variant = doc->activeName();
    info.ranks = doc->activeVariant().ranks;
    const SnapshotPtr s = m_host.simulation()->current();
    if (s && !s->built())
        info.validationErrors << QString::fromStdString(s->error);
    else if (s)
        for (const auto& d : s->report.diagnostics)
            if (d.severity == Severity::Error)
                info.validationErrors << QString::fromStdString(d.message);
    return info;
}

void RunWorkspace::updateProject()
{
    m_runPanel->setProject(projectInfo());
    updateActions();
}

void RunWorkspace::writeRunFile()
{
    const RunProjectInfo info = projectInfo();
    if (info.runPath.isEmpty())
        return;
    QDir().mkpath(QFileInfo(info.runPath).absolutePath());
    try {
        writeFileAtomic(info.runPath.toStdString(), serializeProject(m_host.document()->project()));
    } catch (const Error& e) {
        m_host.showMessage(MessageBanner::Kind::Error,
            tr("Cannot write the project for the run to %1: %2").arg(info.runPath, QString::fromUtf8(e.what())));
    }
    m_runPanel->setProject(info);
}

void RunWorkspace::predictAsRun(const MeasuredTrace& trace)
{
    std::optional<machine::MachineProfile> profile;
    if (machine::measuredHere(trace))
        profile = machine::cachedMachineProfile(std::max(1, trace.threads));
    const machine::CostSource source = machine::costSourceOfRun(trace, std::move(profile));
    m_host.simulation()->setPredictionProvider(
        [source](const Project& project, const std::string& variant) -> std::optional<PredictionSetup> {
            machine::RunPredictionSetup setup = machine::runPredictionSetup(source, project, variant, true);
            return PredictionSetup { std::move(setup.options), std::move(setup.label) };
        });
    m_predictionLabel = QString::fromStdString(source.label(m_host.document()->project()));
    resimulate();
}

void RunWorkspace::predictForProject()
{
    if (m_predictionLabel.isEmpty())
        return;
    m_predictionLabel.clear();
    m_host.simulation()->setPredictionProvider({});
    resimulate();
}

void RunWorkspace::resimulate()
{
    const ProjectDocument* doc = m_host.document();
    m_host.simulation()->request(doc->project(), doc->project().activeVariant);
}

bool RunWorkspace::loadMeasured(const QString& path, QString* error)
{
    if (!m_overlay->loadMeasured(path, error))
        return false;
    m_host.setLastRun(validatedRunOf(*m_overlay->trace(), path.toStdString()));
    m_host.raiseOverlayPanel();
    updateActions();
    emit overlayLoaded(path);
    return true;
}

void RunWorkspace::onRunFinished(const QString& measuredPath)
{
    if (loadMeasured(measuredPath))
        m_host.showMessage(MessageBanner::Kind::Info,
            tr("Run finished: the measurement is overlaid on the prediction for %1, as dpstudio run reports it "
               "(lower half of each row); hide the run to predict for the project's devices.")
                .arg(m_predictionLabel));
    updateActions();
}

void RunWorkspace::onRunFailed(const QString& message)
{
    // A run that failed its correctness check still wrote its trace: overlay it, and the validated config
    // records the failure.
    const QString written = m_runPanel->controller()->lastOutcome().measuredPath;
    if (!written.isEmpty() && QFileInfo::exists(written))
        loadMeasured(written);
    m_host.showMessage(MessageBanner::Kind::Error, message);
    updateActions();
}

void RunWorkspace::applyOverlay(const MeasuredOverlay& overlay)
{
    // What the prediction is for follows the overlaid run: this machine for a CPU run of it, else (another
    // machine's run, a GPU run, none) the project's devices.
    if (const auto trace = m_overlay->trace(); trace != m_decidedFor) {
        m_decidedFor = trace;
        if (trace)
            predictAsRun(*trace);
        else
            predictForProject();
    }
    m_host.showOverlay(overlay);
    updateActions();
}

bool RunWorkspace::calibrate(QString* error)
{
    const auto trace = m_overlay->trace();
    QString why;
    if (!trace) {
        why = tr("Nothing to calibrate from: overlay a run first");
    } else {
        try {
            const Project& project = m_host.document()->project();
            const Calibration fit = dps::calibrate(measuredSlots(*trace), measuredStageCount(*trace, &project));
            m_host.document()->edit(tr("Calibrate from %1").arg(QFileInfo(m_overlay->measuredPath()).fileName()),
                [costs = fit.costs](Project& p) { applyCostsFile(p.costs, costs); });
            m_host.showMessage(MessageBanner::Kind::Info,
                tr("Calibrated the costs from the run; the prediction and its error are updated (Ctrl+Z undoes)."));
            return true;
        } catch (const std::exception& e) {
            why = tr("Calibration failed: %1").arg(QString::fromUtf8(e.what()));
        }
    }
    if (error)
        *error = why;
    m_host.showMessage(MessageBanner::Kind::Error, why);
    return false;
}

void RunWorkspace::updateActions()
{
    const bool running = m_runPanel->controller()->isRunning();
    m_run->setEnabled(!running);
    m_cancel->setEnabled(running);
    m_calibrate->setEnabled(m_overlay->hasOverlay());
}

} // namespace dps::ui
