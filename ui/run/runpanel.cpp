#include "run/runpanel.h"

#include "run/devicesprobe.h"
#include "run/messagebanner.h"
#include "run/preflightview.h"
#include "run/rankprogresswidget.h"
#include "run/runhistory.h"

#include "base/format.h"
#include "protocol/backends.h"

#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTextBlock>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

namespace dps::ui {

namespace {

constexpr int kLogLines = 5000;
constexpr int kLogFlushMs = 100; ///< log lines are added in batches, so a chatty run keeps the window responsive
constexpr int kVisibleRankRows = 8;
const QColor kProblemColor(0xd3, 0x2f, 0x2f);
/// The run timeout's QSettings key (seconds without progress, `dpstudio run --timeout`).
const QString kTimeoutKey = QStringLiteral("run/timeoutS");
constexpr int kMaxTimeoutS = 7 * 24 * 3600;

/// The timeout the user last chose, else dpstudio run's default.
int savedTimeoutS()
{
    const int fallback = static_cast<int>(launch::RunOptions {}.timeoutS);
    bool ok = false;
    const int saved = QSettings().value(kTimeoutKey, fallback).toInt(&ok);
    return ok && saved >= 1 && saved <= kMaxTimeoutS ? saved : fallback;
}

QLabel* makeValueLabel(QWidget* parent)
{
    auto* label = new QLabel(parent);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

QSpinBox* makeSpinBox(QWidget* parent, int minimum, int maximum, int value, const QString& toolTip)
{
    auto* spin = new QSpinBox(parent);
    spin->setRange(minimum, maximum);
    spin->setValue(value);
    spin->setToolTip(toolTip);
    return spin;
}

QWidget* row(QWidget* parent, std::initializer_list<QWidget*> widgets, bool stretch = true)
{
    auto* w = new QWidget(parent);
    auto* layout = new QHBoxLayout(w);
    layout->setContentsMargins(0, 0, 0, 0);
    for (QWidget* widget : widgets)
        layout->addWidget(widget);
    if (stretch)
        layout->addStretch(1);
    return w;
}

} // namespace

RunPanel::RunPanel(QWidget* parent)
    : QWidget(parent)
    , m_controller(new RunController(this))
    , m_probe(new DevicesProbe(this))
    , m_history(new RunHistory(this))
    , m_elapsedTimer(new QTimer(this))
    , m_logTimer(new QTimer(this))
{
    setupUi();
    setupConnections();
    updateMachineLabels();
    updatePreflight();
}

RunPanel::~RunPanel()
{
    m_controller->disconnect(this);
    m_probe->disconnect(this);
}

void RunPanel::setupUi()
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    m_banner = new MessageBanner(this);
    m_banner->setDismissible(false);
    layout->addWidget(m_banner);
    layout->addWidget(createMachineBox());
    layout->addWidget(createSettingsBox());
    m_preflight = new PreflightView(this);
    layout->addWidget(m_preflight);
    m_runButton = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("Run"), this);
    m_runButton->setObjectName(QStringLiteral("runButton"));
    m_runButton->setDefault(true);
    m_runButton->setToolTip(tr("Run the project on this machine with dpstudio run"));
    m_cancelButton = new QPushButton(style()->standardIcon(QStyle::SP_MediaStop), tr("Cancel"), this);
    m_cancelButton->setObjectName(QStringLiteral("cancelButton"));
    layout->addWidget(row(this, { m_runButton, m_cancelButton }));
    layout->addWidget(createProgressBox());
    layout->addWidget(createTabs(), 1);
}

QWidget* RunPanel::createMachineBox()
{
    auto* box = new QGroupBox(tr("This machine"), this);
    auto* form = new QFormLayout(box);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_cpuLabel = makeValueLabel(box);
    m_gpuLabel = makeValueLabel(box);
    m_mpirunLabel = makeValueLabel(box);
    m_refreshButton = new QPushButton(tr("Check again"), box);
    m_refreshButton->setToolTip(tr("Ask dpstudio devices again"));
    form->addRow(tr("CPU"), m_cpuLabel);
    form->addRow(tr("GPUs"), m_gpuLabel);
    form->addRow(tr("mpirun"), m_mpirunLabel);
    form->addRow(QString(), row(box, { m_refreshButton }));
    return box;
}

QWidget* RunPanel::createSettingsBox()
{
    auto* box = new QGroupBox(tr("Run settings"), this);
    m_settingsBox = box;
    auto* form = new QFormLayout(box);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_projectLabel = makeValueLabel(box);
    m_ranksLabel = makeValueLabel(box);
    m_backend = new QComboBox(box);
    for (std::string_view backend : kBackendNames) {
        const QString name = QString::fromLatin1(backend.data(), static_cast<qsizetype>(backend.size()));
        m_backend->addItem(name, name);
    }
    m_backendHint = new QLabel(box);
    m_backendHint->setForegroundRole(QPalette::PlaceholderText);
    m_steps = makeSpinBox(box, 1, 1000, 3, tr("Steps measured after the warm-up"));
    m_warmup = makeSpinBox(box, 0, 100, 1, tr("Steps run first and not measured"));
    m_threads = makeSpinBox(box, 1, 256, 1, tr("BLAS threads of each rank"));
    m_timeout = makeSpinBox(box, 1, kMaxTimeoutS, savedTimeoutS(),
        tr("The run is ended when this long passes without progress from its ranks (dpstudio run --timeout); "
           "kept for the next runs"));
    m_timeout->setObjectName(QStringLiteral("timeout"));
    m_timeout->setSuffix(tr(" s"));
    form->addRow(tr("Project"), m_projectLabel);
    form->addRow(tr("Ranks"), m_ranksLabel);
    form->addRow(tr("Backend"), row(box, { m_backend, m_backendHint }));
    form->addRow(tr("Steps"),
        row(box, { m_steps, new QLabel(tr("measured, after"), box), m_warmup, new QLabel(tr("warm-up"), box) }));
    form->addRow(tr("Threads per rank"), row(box, { m_threads }));
    form->addRow(tr("Timeout"), row(box, { m_timeout, new QLabel(tr("without progress"), box) }));
    form->addRow(tr("Hostfile"), createHostfileRow(box));
    return box;
}

QWidget* RunPanel::createHostfileRow(QWidget* parent)
{
    m_hostfile = new QLineEdit(parent);
    m_hostfile->setPlaceholderText(tr("none: this machine only"));
    m_hostfile->setClearButtonEnabled(true);
    auto* browse = new QToolButton(parent);
    browse->setText(tr("…"));
    browse->setToolTip(tr("Choose an Open MPI hostfile to run on several machines"));
    connect(browse, &QToolButton::clicked, this, &RunPanel::chooseHostfile);
    return row(parent, { m_hostfile, browse }, false);
}

QWidget* RunPanel::createProgressBox()
{
    auto* box = new QWidget(this);
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    m_overall = new QProgressBar(box);
    m_overall->setRange(0, 1000);
    m_overall->setValue(0);
    m_overall->setFormat(tr("Not started"));
    m_elapsed = new QLabel(box);
    m_elapsed->setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("0:00:00 elapsed")));
    m_elapsed->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    auto* top = row(box, { m_overall, m_elapsed }, false);
    static_cast<QHBoxLayout*>(top->layout())->setStretch(0, 1);
    layout->addWidget(top);
    m_ranks = new RankProgressWidget(box);
    m_ranksScroll = new QScrollArea(box);
    m_ranksScroll->setWidget(m_ranks);
    m_ranksScroll->setWidgetResizable(true);
    m_ranksScroll->setFrameShape(QFrame::NoFrame);
    m_ranksScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    layout->addWidget(m_ranksScroll);
    return box;
}

QWidget* RunPanel::createTabs()
{
    m_tabs = new QTabWidget(this);
    m_log = new QPlainTextEdit(m_tabs);
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(kLogLines);
    m_log->setLineWrapMode(QPlainTextEdit::NoWrap); // keeps dpstudio's tables readable
    m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_log->setPlaceholderText(tr("dpstudio's messages appear here while a run goes."));
    m_historyView = new QTableView(m_tabs);
    m_historyView->setModel(m_history);
    m_historyView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_historyView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_historyView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_historyView->verticalHeader()->hide();
    m_historyView->horizontalHeader()->setStretchLastSection(true);
    m_historyView->setToolTip(tr("Double-click a run to open its measurement"));
    m_tabs->addTab(m_log, tr("Log"));
    m_tabs->addTab(m_historyView, tr("Runs"));
    return m_tabs;
}

void RunPanel::setupConnections()
{
    connect(m_runButton, &QPushButton::clicked, this, &RunPanel::startRun);
    connect(m_cancelButton, &QPushButton::clicked, this, &RunPanel::cancelRun);
    connect(m_refreshButton, &QPushButton::clicked, this, &RunPanel::refreshDevices);
    connect(m_controller, &RunController::started, this, &RunPanel::onStarted);
    connect(m_controller, &RunController::progressChanged, this, &RunPanel::onProgress);
    connect(m_controller, &RunController::outputReceived, this, &RunPanel::onOutput);
    connect(m_controller, &RunController::finished, this, &RunPanel::onFinished);
    connect(m_controller, &RunController::failed, this, &RunPanel::onFailed);
    connect(m_controller, &RunController::cancelled, this, &RunPanel::onCancelled);
    connect(m_probe, &DevicesProbe::probed, this, &RunPanel::onDevicesProbed);
    connect(m_probe, &DevicesProbe::failed, this, &RunPanel::onDevicesFailed);
    connect(m_backend, &QComboBox::currentIndexChanged, this, &RunPanel::updatePreflight);
    connect(m_threads, &QSpinBox::valueChanged, this, &RunPanel::updatePreflight);
    connect(m_hostfile, &QLineEdit::textChanged, this, &RunPanel::updatePreflight);
    connect(m_timeout, &QSpinBox::valueChanged, this, [](int seconds) { QSettings().setValue(kTimeoutKey, seconds); });
    connect(m_historyView, &QTableView::doubleClicked, this, &RunPanel::openHistoryRun);
    connect(m_history, &RunHistory::rowsInserted, this, &RunPanel::updateHistoryTab);
    connect(m_history, &RunHistory::rowsRemoved, this, &RunPanel::updateHistoryTab);
    connect(m_history, &RunHistory::modelReset, this, &RunPanel::updateHistoryTab);
    connect(m_elapsedTimer, &QTimer::timeout, this, &RunPanel::updateElapsed);
    m_elapsedTimer->setInterval(250);
    connect(m_logTimer, &QTimer::timeout, this, &RunPanel::flushLog);
    m_logTimer->setSingleShot(true);
    m_logTimer->setInterval(kLogFlushMs);
}

// ------------------------------------------------------------------------------------------ inputs

void RunPanel::setProgram(const QString& program)
{
    m_controller->setProgram(program);
    m_probe->setProgram(program);
}

void RunPanel::setProject(const RunProjectInfo& project)
{
    const bool newFile = project.path != m_project.path;
    m_project = project;
    const QFileInfo file(project.path);
    m_projectLabel->setText(project.path.isEmpty() ? tr("untitled (not saved)")
                                                   : tr("%1 · variant %2").arg(file.fileName(), project.variant));
    m_projectLabel->setToolTip(QDir::toNativeSeparators(project.path));
    m_ranksLabel->setText(tr("%1, from the active variant").arg(project.ranks));
    if (!m_controller->isRunning())
        m_ranks->setRankCount(project.ranks);
    if (newFile)
        openHistory();
    updatePreflight();
}

void RunPanel::openHistory()
{
    QString error;
    if (m_project.path.isEmpty())
        m_history->clear();
    else if (!m_history->open(m_project.path, &error))
        m_banner->showMessage(MessageBanner::Kind::Warning, tr("The runs history cannot be read: %1").arg(error));
}

void RunPanel::refreshDevices()
{
    m_devicesKnown = false;
    m_devicesError.clear();
    updateMachineLabels();
    m_probe->probe();
}

void RunPanel::setDevices(const DeviceInfo& devices)
{
    onDevicesProbed(devices);
}

void RunPanel::setGpuSharingAllowed(bool allowed)
{
    m_allowGpuSharing = allowed;
    updatePreflight();
}

void RunPanel::onDevicesProbed(const DeviceInfo& devices)
{
    m_devices = devices;
    m_devicesKnown = true;
    m_devicesError.clear();
    updateMachineLabels();
    updatePreflight();
}

void RunPanel::onDevicesFailed(const QString& message)
{
    m_devicesKnown = false;
    m_devicesError = message;
    updateMachineLabels();
    updatePreflight();
}

void RunPanel::chooseHostfile()
{
    const QString path = QFileDialog::getOpenFileName(this, tr("Open MPI hostfile"), m_hostfile->text());
    if (!path.isEmpty())
        m_hostfile->setText(path);
}

launch::RunOptions RunPanel::currentOptions() const
{
    launch::RunOptions r;
    r.project = (m_project.runPath.isEmpty() ? m_project.path : m_project.runPath).toStdString();
    r.variant = m_project.variant.toStdString();
    r.backend = m_backend->currentData().toString().toStdString();
    r.steps = m_steps->value();
    r.warmup = m_warmup->value();
    r.threads = m_threads->value();
    r.timeoutS = m_timeout->value();
    r.hostfile = m_hostfile->text().trimmed().toStdString();
    return r;
}

const QVector<PreflightItem>& RunPanel::preflightItems() const
{
    return m_preflight->items();
}

bool RunPanel::canRun() const
{
    return !m_controller->isRunning() && !preflightBlocks(preflightItems());
}

QString RunPanel::statusText() const
{
    return m_banner->isVisibleTo(this) ? m_banner->text() : QString();
}

// ---------------------------------------------------------------------------------------- the run

void RunPanel::startRun()
{
    if (!canRun()) {
        if (preflightBlocks(preflightItems()))
            m_banner->showMessage(
                MessageBanner::Kind::Error, tr("The project cannot run here: %1").arg(preflightItems().front().text));
        return;
    }
    emit aboutToRun();
    launch::RunOptions options = currentOptions();
    QString error;
    const QString output = m_history->newMeasuredPath(m_project.variant, QDateTime::currentDateTime(), &error);
    options.output = output.toStdString();
    if (output.isEmpty()) {
        onFailed(tr("No place for the measured trace: %1").arg(error));
        return;
    }
    m_pendingLog.clear();
    m_log->clear();
    m_ranks->setRankCount(m_project.ranks);
    m_overall->setValue(0);
    m_overall->setFormat(tr("Starting…"));
    m_overall->setPalette(palette());
    m_tabs->setCurrentWidget(m_log);
    m_runStarted = false;
    m_controller->start(options);
    updateControls();
}

void RunPanel::cancelRun()
{
    if (!m_controller->isRunning())
        return;
    m_controller->stop();
    m_banner->showMessage(MessageBanner::Kind::Running, tr("Cancelling: ending dpstudio, mpirun and the ranks…"));
    updateControls();
}

void RunPanel::onStarted()
{
    m_runStarted = true;
    m_banner->showMessage(MessageBanner::Kind::Running, runningText(RunProgress()));
    m_elapsedTimer->start();
    updateElapsed();
    updateControls();
    emit runStarted();
}

void RunPanel::onProgress(const RunProgress& progress)
{
    m_overall->setValue(static_cast<int>(progress.overall * 1000.0 + 0.5));
    m_overall->setFormat(overallText(progress));
    if (!progress.perRank.isEmpty())
        m_ranks->setProgress(progress);
    if (!progress.backend.isEmpty() && m_controller->isRunning() && !m_controller->isStopping())
        m_banner->showMessage(MessageBanner::Kind::Running, runningText(progress));
    m_ranksScroll->setFixedHeight(
        m_ranks->rowHeight() * std::clamp(static_cast<int>(m_ranks->progress().perRank.size()), 1, kVisibleRankRows)
        + 2);
    updateElapsed();
}

QString RunPanel::runningText(const RunProgress& p) const
{
    const QString what = m_project.variant.isEmpty() ? tr("the project") : m_project.variant;
    const int ranks = p.ranks > 0 ? p.ranks : m_project.ranks;
    if (p.backend.isEmpty())
        return tr("Running %1 on %2 ranks…").arg(what).arg(ranks);
    const QString how = p.comm.isEmpty() ? p.backend : tr("%1, %2").arg(p.backend, p.comm);
    return tr("Running %1 on %2 ranks (%3)…").arg(what).arg(ranks).arg(how);
}

QString RunPanel::overallText(const RunProgress& p) const
{
    const int percent = static_cast<int>(p.overall * 100.0);
    if (p.done)
        return tr("Done · 100 %");
    if (p.totalSteps() == 0 || p.currentStep < 0)
        return p.ranks > 0 ? tr("Starting %1 ranks…").arg(p.ranks) : tr("Starting…");
    if (p.inWarmup())
        return tr("Warm-up step %1 of %2 · %3 %").arg(p.currentStep + 1).arg(p.warmup).arg(percent);
    return tr("Step %1 of %2 · %3 %").arg(p.currentStep - p.warmup + 1).arg(p.steps).arg(percent);
}

void RunPanel::onOutput(const QString& line, OutputChannel channel)
{
    m_pendingLog.push_back({ line, channel });
    if (m_pendingLog.size() > kLogLines)
        m_pendingLog.pop_front();
    if (!m_logTimer->isActive())
        m_logTimer->start();
}

QTextCharFormat RunPanel::logFormat(OutputChannel channel) const
{
    QTextCharFormat format;
    if (channel == OutputChannel::Event || channel == OutputChannel::Problem) {
        format.setForeground(channel == OutputChannel::Event ? palette().color(QPalette::Link) : kProblemColor);
        format.setFontWeight(QFont::Bold);
    }
    return format;
}

void RunPanel::flushLog()
{
    m_logTimer->stop();
    if (m_pendingLog.empty())
        return;
    QScrollBar* bar = m_log->verticalScrollBar();
    const bool atEnd = bar->value() >= bar->maximum() - 2;
    QTextCursor cursor(m_log->document());
    cursor.movePosition(QTextCursor::End);
    cursor.beginEditBlock();
    for (const auto& [line, channel] : m_pendingLog) {
        if (!m_log->document()->isEmpty())
            cursor.insertBlock();
        cursor.insertText(line, logFormat(channel));
    }
    cursor.endEditBlock();
    m_pendingLog.clear();
    if (atEnd)
        bar->setValue(bar->maximum());
}

void RunPanel::onFinished(const RunOutcome& outcome)
{
    flushLog();
    m_elapsedTimer->stop();
    updateElapsed();
    recordRun(outcome.measuredPath);
    m_banner->showMessage(MessageBanner::Kind::Success, tr("Run finished: %1.").arg(outcome.summary));
    updateControls();
    emit runFinished(outcome.measuredPath);
}

void RunPanel::onFailed(const QString& message)
{
    flushLog();
    m_elapsedTimer->stop();
    if (m_runStarted && !m_controller->lastOutcome().measuredPath.isEmpty())
        recordRun(m_controller->lastOutcome().measuredPath);
    m_runStarted = false;
    m_banner->showMessage(MessageBanner::Kind::Error, message);
    if (m_controller->lastOutcome().exitCode == 0 && m_overall->value() == 0)
        m_overall->setFormat(tr("Not started"));
    else
        m_overall->setFormat(tr("Failed · %1 %").arg(m_overall->value() / 10));
    QPalette failedPalette = palette();
    failedPalette.setColor(QPalette::Highlight, kProblemColor);
    m_overall->setPalette(failedPalette);
    updateControls();
    emit runFailed(message);
}

void RunPanel::onCancelled(const QString& message)
{
    flushLog();
    m_elapsedTimer->stop();
    m_runStarted = false;
    m_banner->showMessage(MessageBanner::Kind::Warning, message);
    m_overall->setFormat(tr("Cancelled · %1 %").arg(m_overall->value() / 10));
    updateControls();
    emit runCancelled();
}

void RunPanel::recordRun(const QString& measuredPath)
{
    RunRecord record;
    QString error;
    bool recorded = readRunRecord(measuredPath, record, &error);
    const QString runProject = QString::fromStdString(m_controller->options().project);
    const QString currentRunFile = m_project.runPath.isEmpty() ? m_project.path : m_project.runPath;
    if (recorded && QFileInfo(runProject) == QFileInfo(currentRunFile)) {
        recorded = m_history->addRun(record, &error);
    } else if (recorded) { // the window switched projects during the run: the run belongs to the old one
        RunHistory other;
        recorded = other.open(runProject, &error) && other.addRun(record, &error);
    }
    if (!recorded)
        onOutput(tr("the run was not added to the history: %1").arg(error), OutputChannel::Problem);
    else if (!record.problem.isEmpty())
        onOutput(tr("the run is in the history, but its measured trace was not read in full: %1").arg(record.problem),
            OutputChannel::Problem);
}

void RunPanel::openHistoryRun(const QModelIndex& index)
{
    const QString path = index.data(RunHistory::MeasuredPathRole).toString();
    if (!path.isEmpty())
        emit runActivated(path);
}

// -------------------------------------------------------------------------------------- updating

void RunPanel::updatePreflight()
{
    PreflightInput input;
    input.project = m_project;
    input.devices = m_devices;
    input.devicesKnown = m_devicesKnown;
    input.devicesError = m_devicesError;
    input.backend = m_backend->currentData().toString();
    input.threads = m_threads->value();
    input.hostfile = m_hostfile->text().trimmed();
    input.allowGpuSharing = m_allowGpuSharing;
    m_preflight->setItems(preflight(input));
    const QString resolved
        = input.backend == QLatin1String("auto") && m_devicesKnown ? autoBackend(m_devices) : QString();
    m_backendHint->setText(resolved.isEmpty() ? QString() : tr("→ %1").arg(resolved));
    updateControls();
}

void RunPanel::updateControls()
{
    const bool running = m_controller->isRunning();
    m_settingsBox->setEnabled(!running);
    m_refreshButton->setEnabled(!running && !m_probe->isRunning());
    m_runButton->setEnabled(canRun());
    m_cancelButton->setEnabled(running && !m_controller->isStopping());
}

void RunPanel::updateMachineLabels()
{
    if (!m_devicesKnown) {
        const QString text = m_devicesError.isEmpty() ? tr("checking…") : tr("unknown");
        for (QLabel* label : { m_cpuLabel, m_gpuLabel, m_mpirunLabel }) {
            label->setText(text);
            label->setToolTip(m_devicesError);
        }
        return;
    }
    m_cpuLabel->setText(m_devices.cpuSummary());
    m_gpuLabel->setText(m_devices.gpuSummary());
    m_mpirunLabel->setText(m_devices.mpirunSummary());
    for (QLabel* label : { m_cpuLabel, m_gpuLabel, m_mpirunLabel })
        label->setToolTip(label->text());
    m_refreshButton->setEnabled(!m_controller->isRunning());
}

void RunPanel::updateElapsed()
{
    m_elapsed->setText(tr("%1 elapsed").arg(QString::fromStdString(dps::formatElapsed(m_controller->elapsedMs()))));
}

void RunPanel::updateHistoryTab()
{
    const int count = m_history->runCount();
    m_tabs->setTabText(m_tabs->indexOf(m_historyView), count > 0 ? tr("Runs (%1)").arg(count) : tr("Runs"));
    m_historyView->resizeColumnsToContents();
}

} // namespace dps::ui
