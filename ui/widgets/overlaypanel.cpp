#include "widgets/overlaypanel.h"

#include "document/formatting.h"
#include "run/runhistory.h"

#include <QComboBox>
#include <QDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include "widgets/timelineview.h"

#include <algorithm>
#include <cmath>

namespace dps::ui {

namespace {

QString runLabel(const RunHistory& history, int row)
{
    const RunRecord& r = history.run(row);
    return QStringLiteral("%1 · %2 · %3")
        .arg(r.date.toString(QStringLiteral("yyyy-MM-dd hh:mm:ss")), r.variant,
            r.stepTimeUs > 0 ? formatTime(r.stepTimeUs) : QObject::tr("no step time"));
}

/// A read-only table with the panel's look.
QTableWidget* makeTable(const QStringList& headers)
{
    auto* t = new QTableWidget(0, static_cast<int>(headers.size()));
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 6);
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    t->horizontalHeader()->setStretchLastSection(true);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setSelectionMode(QAbstractItemView::SingleSelection);
    return t;
}

/// Sets a row of `table` (right-aligned after the first column), each cell with `tip`.
void setRow(QTableWidget* table, int row, const QStringList& cells, const QString& tip = {}, const QColor& color = {})
{
    for (int column = 0; column < cells.size(); ++column) {
        auto* item = new QTableWidgetItem(cells[column]);
        item->setToolTip(tip);
        if (column > 0)
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        if (color.isValid())
            item->setForeground(color);
        table->setItem(row, column, item);
    }
}

QString spreadText(const Spread& s)
{
    if (s.count == 0)
        return QStringLiteral("–");
    return QStringLiteral("%1 (%2–%3)").arg(formatTime(s.medianUs), formatTime(s.p10Us), formatTime(s.p90Us));
}

/// A lane of the "Both Timelines" window: a measured step laid out as a snapshot (not timed: no prediction).
SnapshotPtr measuredLane(const MeasuredTrace& trace, int step)
{
    auto s = std::make_shared<SimulationSnapshot>();
    const TimedRun run = measuredTimedRun(trace, step);
    const int ranks = static_cast<int>(run.ranks.size());
    Schedule schedule;
    schedule.ranks = ranks;
    schedule.order.resize(static_cast<std::size_t>(ranks));
    s->blocks.reset(ranks);
    for (int r = 0; r < ranks; ++r) {
        double lastEnd = 0.0;
        const auto& row = run.ranks[static_cast<std::size_t>(r)];
        for (int i = 0; i < static_cast<int>(row.size()); ++i) {
            const TimedSlot& t = row[static_cast<std::size_t>(i)];
            schedule.order[static_cast<std::size_t>(r)].push_back(t.action);
            s->blocks.add(measuredBlock(t.action, r, i, t.startUs, t.endUs, t.waitUs, lastEnd));
        }
    }
    s->schedule = std::move(schedule);
    s->error = "a measured run";
    return s;
}

} // namespace

OverlayPanel::OverlayPanel(QWidget* parent)
    : QWidget(parent)
{
    setupUi();
    updateHeader();
}

void OverlayPanel::setupUi()
{
    createControls();
    auto* choose = new QHBoxLayout;
    choose->addWidget(new QLabel(tr("Run:")));
    choose->addWidget(m_runBox, 1);
    auto* step = new QHBoxLayout;
    step->addWidget(new QLabel(tr("Step:")));
    step->addWidget(m_stepBox, 1);
    auto* compare = new QHBoxLayout;
    compare->addWidget(new QLabel(tr("Compare with:")));
    compare->addWidget(m_otherBox, 1);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_calibrate);
    buttons->addWidget(m_clear);
    buttons->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_header);
    layout->addLayout(choose);
    layout->addLayout(step);
    layout->addLayout(compare);
    layout->addLayout(buttons);
    layout->addWidget(m_comparison);
    layout->addWidget(createTabs(), 1);
    connectControls();
}

void OverlayPanel::createControls()
{
    m_header = new QLabel;
    m_header->setWordWrap(true);
    m_header->setTextFormat(Qt::RichText);
    m_runBox = new QComboBox;
    m_runBox->setToolTip(tr("The run laid over the prediction (the project's runs history)"));
    m_stepBox = new QComboBox;
    m_stepBox->setToolTip(tr("The measured step drawn (the median step by default)"));
    m_otherBox = new QComboBox;
    m_otherBox->setToolTip(tr("Another run to compare the overlaid run with"));
    for (QComboBox* box : { m_runBox, m_stepBox, m_otherBox }) {
        box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        box->setMinimumContentsLength(10);
    }
    m_calibrate = new QPushButton(tr("Calibrate"));
    m_calibrate->setToolTip(tr("Fit the cost model to this run (per-stage F, I, W, B, the overlap factor and p2p) "
                               "and predict again; undo with Ctrl+Z"));
    m_clear = new QPushButton(tr("Hide"));
    m_clear->setToolTip(tr("Hide the measured overlay"));
    m_comparison = new QLabel;
    m_comparison->setWordWrap(true);
    m_comparison->setTextFormat(Qt::RichText);
    m_slips = new QTableWidget(0, 3);
    m_slips->setHorizontalHeaderLabels({ tr("Action"), tr("Rank"), tr("Start slip") });
    m_slips->verticalHeader()->hide();
    m_slips->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_slips->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_slips->horizontalHeader()->setStretchLastSection(true);
    m_slips->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_slips->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_slips->setSelectionMode(QAbstractItemView::SingleSelection);
    m_slips->setToolTip(tr("The actions that started furthest from their predicted start; click one to select it"));
}

QTabWidget* OverlayPanel::createTabs()
{
    m_pathLabel = new QLabel;
    m_pathLabel->setWordWrap(true);
    m_pathLabel->setTextFormat(Qt::RichText);
    m_ranks = makeTable({ tr("Rank"), tr("Critical path"), tr("Predicted"), tr("Compute/step"), tr("vs others") });
    m_ranks->setToolTip(tr("Per rank: its share of the measured step's critical path and of the predicted one, its "
                           "compute per step over the measured steps (median, p10–p90) and how far that is above "
                           "the median of the other ranks (a straggler above %1)")
                            .arg(formatPercent(kStragglerThreshold)));
    m_diffLabel = new QLabel;
    m_diffLabel->setWordWrap(true);
    m_diffLabel->setTextFormat(Qt::RichText);
    m_both = new QPushButton(tr("Both Timelines…"));
    m_both->setToolTip(tr("Draw this run and the other one on one time axis"));
    m_diffs = makeTable({ tr("Action"), tr("Rank"), tr("Δ start"), tr("Δ duration") });
    m_diffs->setToolTip(tr("The other run against this one, per action (largest start difference first)"));
    auto* tabs = new QTabWidget;
    m_tabs = tabs;
    auto* slipsPage = new QWidget;
    auto* slipsLayout = new QVBoxLayout(slipsPage);
    slipsLayout->setContentsMargins(0, 4, 0, 0);
    slipsLayout->addWidget(new QLabel(tr("Largest start slips (measured − predicted):")));
    slipsLayout->addWidget(m_slips, 1);
    tabs->addTab(slipsPage, tr("Start slips"));
    auto* pathPage = new QWidget;
    auto* pathLayout = new QVBoxLayout(pathPage);
    pathLayout->setContentsMargins(0, 4, 0, 0);
    pathLayout->addWidget(m_pathLabel);
    pathLayout->addWidget(m_ranks, 1);
    tabs->addTab(pathPage, tr("Critical path"));
    auto* diffPage = new QWidget;
    auto* diffLayout = new QVBoxLayout(diffPage);
    diffLayout->setContentsMargins(0, 4, 0, 0);
    auto* diffTop = new QHBoxLayout;
    diffTop->addWidget(m_diffLabel, 1);
    diffTop->addWidget(m_both);
    diffLayout->addLayout(diffTop);
    diffLayout->addWidget(m_diffs, 1);
    tabs->addTab(diffPage, tr("Run diff"));
    return tabs;
}

void OverlayPanel::connectControls()
{
    connect(m_stepBox, qOverload<int>(&QComboBox::activated), this,
        [this](int index) { setStep(m_stepBox->itemData(index).toInt()); });
    connect(m_runBox, qOverload<int>(&QComboBox::activated), this, &OverlayPanel::chooseRun);
    connect(m_otherBox, qOverload<int>(&QComboBox::activated), this,
        [this](int index) { compareWith(m_otherBox->itemData(index).toString()); });
    connect(m_both, &QPushButton::clicked, this, [this] {
        if (QWidget* w = createBothTimelines()) {
            w->setAttribute(Qt::WA_DeleteOnClose);
            w->show();
        }
    });
    connect(m_calibrate, &QPushButton::clicked, this, &OverlayPanel::calibrateRequested);
    connect(m_clear, &QPushButton::clicked, this, &OverlayPanel::clear);
    connect(m_slips, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (row >= 0 && row < static_cast<int>(m_overlay.slips.size()))
            emit slipActivated(m_overlay.slips[row].rank, m_overlay.slips[row].position);
    });
}

void OverlayPanel::setHistory(RunHistory* history)
{
    if (m_history)
        disconnect(m_history, nullptr, this, nullptr);
    m_history = history;
    if (m_history) {
        connect(m_history, &QAbstractItemModel::modelReset, this, &OverlayPanel::fillRunChoosers);
        connect(m_history, &QAbstractItemModel::rowsInserted, this, &OverlayPanel::fillRunChoosers);
        connect(m_history, &QAbstractItemModel::rowsRemoved, this, &OverlayPanel::fillRunChoosers);
    }
    fillRunChoosers();
}

bool OverlayPanel::loadMeasured(const QString& path, QString* error)
{
    try {
        auto trace = std::make_shared<const MeasuredTrace>(dps::loadMeasured(path.toStdString()));
        m_trace = std::move(trace);
    } catch (const std::exception& e) {
        const QString message = tr("Cannot overlay %1: %2").arg(path, QString::fromUtf8(e.what()));
        if (error)
            *error = message;
        emit loadFailed(message);
        return false;
    }
    m_path = QFileInfo(path).absoluteFilePath();
    m_step = -1;
    fillSteps();
    fillRunChoosers();
    rebuild();
    return true;
}

void OverlayPanel::clear()
{
    m_trace.reset();
    m_path.clear();
    m_step = -1;
    fillSteps();
    fillRunChoosers();
    rebuild();
}

void OverlayPanel::setSnapshot(const SnapshotPtr& snapshot)
{
    m_snapshot = snapshot;
    rebuild();
}

void OverlayPanel::setStep(int step)
{
    m_step = step;
    rebuild();
}

void OverlayPanel::rebuild()
{
    if (m_trace && m_snapshot)
        m_overlay = buildOverlay(m_trace, m_path.toStdString(), m_step, *m_snapshot);
    else
        m_overlay = {};
    fillSlips();
    fillAnalysis();
    fillDiff();
    updateHeader();
    updateComparison();
    emit overlayChanged(m_overlay);
}

void OverlayPanel::fillSteps()
{
    const QSignalBlocker block(m_stepBox);
    m_stepBox->clear();
    if (!m_trace)
        return;
    m_stepBox->addItem(tr("median (step %1)").arg(m_trace->medianStep), -1);
    for (const auto& s : m_trace->steps)
        m_stepBox->addItem(tr("step %1 · %2").arg(s.step).arg(formatTime(s.makespanUs)), s.step);
}

void OverlayPanel::fillRunChoosers()
{
    const QSignalBlocker blockRun(m_runBox);
    const QSignalBlocker blockOther(m_otherBox);
    const QString other = m_otherBox->currentData().toString();
    m_runBox->clear();
    m_otherBox->clear();
    m_otherBox->addItem(tr("the prediction only"), QString());
    if (!m_path.isEmpty())
        m_runBox->addItem(QFileInfo(m_path).fileName(), m_path);
    for (int row = 0; m_history && row < m_history->runCount(); ++row) {
        const QString path = m_history->run(row).measuredPath;
        if (QFileInfo(path) != QFileInfo(m_path))
            m_runBox->addItem(runLabel(*m_history, row), path);
        else
            m_runBox->setItemText(0, runLabel(*m_history, row));
        m_otherBox->addItem(runLabel(*m_history, row), path);
    }
    if (m_runBox->count() == 0)
        m_runBox->addItem(tr("no run yet: press Run (F5)"), QString());
    m_otherBox->setCurrentIndex(std::max(0, m_otherBox->findData(other)));
    m_runBox->setEnabled(m_runBox->count() > 1 || !m_path.isEmpty());
}

void OverlayPanel::chooseRun(int index)
{
    const QString path = m_runBox->itemData(index).toString();
    if (!path.isEmpty() && QFileInfo(path) != QFileInfo(m_path))
        loadMeasured(path);
}

void OverlayPanel::fillSlips()
{
    m_slips->setRowCount(static_cast<int>(m_overlay.slips.size()));
    for (int row = 0; row < m_slips->rowCount(); ++row) {
        const StartSlip& s = m_overlay.slips[row];
        const QStringList cells { QString::fromStdString(s.action), QString::number(s.rank),
            formatSignedTime(s.slipUs()) };
        const QString tip = tr("predicted start %1, measured start %2")
                                .arg(formatTime(s.predictedStartUs), formatTime(s.measuredStartUs));
        for (int column = 0; column < cells.size(); ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            item->setToolTip(tip);
            if (column > 0)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_slips->setItem(row, column, item);
        }
    }
}

void OverlayPanel::updateHeader()
{
    const bool shown = hasOverlay();
    m_calibrate->setEnabled(shown);
    m_clear->setEnabled(shown);
    m_stepBox->setEnabled(shown);
    if (!m_trace) {
        m_header->setText(tr("No run overlaid. Run the project (F5), double-click a run in the history, or start "
                             "with <tt>--measured FILE</tt>."));
        return;
    }
    const MeasuredTrace& t = *m_trace;
    const QString check = t.correctness.passed ? tr("<span style='color:#2e7d32'>passed</span>")
                                               : tr("<span style='color:#c62828'><b>FAILED</b></span>");
    QString text = !t.correctness.checked // an imported profile (File → Open Profile…, dpstudio import-trace)
        ? tr("<b>%1</b> · %2 · %3 ranks · measured externally, not checked")
              .arg(QFileInfo(m_path).fileName().toHtmlEscaped(),
                  QString::fromStdString(describeSource(t.source)).toHtmlEscaped())
              .arg(t.ranks.size())
        : tr("<b>%1</b> · %2/%3 on %4 · %5 ranks · correctness %6")
              .arg(QFileInfo(m_path).fileName().toHtmlEscaped(), QString::fromStdString(t.backend),
                  QString::fromStdString(t.comm), QString::fromStdString(t.host).toHtmlEscaped())
              .arg(t.ranks.size())
              .arg(check);
    text += tr("<br>Each rank's row: prediction above, <b>measured below</b>; hatched = waiting for data.");
    if (m_snapshot && !m_snapshot->predictionFor.empty())
        text += tr("<br>Predicted for %1, as <tt>dpstudio run</tt> does.")
                    .arg(QString::fromStdString(m_snapshot->predictionFor).toHtmlEscaped());
    if (m_overlay.unmatched > 0)
        text += tr("<br><span style='color:#c62828'>%1 measured actions have no predicted block (another order "
                   "or variant ran)</span>")
                    .arg(m_overlay.unmatched);
    m_header->setText(text);
}

QString OverlayPanel::comparisonText() const
{
    return m_comparison->text();
}

void OverlayPanel::updateComparison()
{
    const OverlayRow* makespan = m_overlay.row("makespan");
    if (!makespan) {
        m_comparison->clear();
        return;
    }
    const bool machine = m_snapshot && m_snapshot->predictionFor.starts_with("this machine");
    QString text = (machine ? tr("Makespan: predicted <b>%1</b> for this machine · this run <b>%2</b> (%3)")
                            : tr("Makespan: predicted <b>%1</b> · this run <b>%2</b> (%3)"))
                       .arg(formatTime(makespan->predicted), formatTime(makespan->measured),
                           makespan->error() ? formatSignedPercent(*makespan->error()) : tr("n/a"));
    if (m_other) {
        const double us = m_other->medianMakespanUs();
        text += tr(" · other run <b>%1</b> (%2 vs this run)")
                    .arg(formatTime(us), formatSignedTime(us - m_trace->medianMakespanUs()));
    }
    m_comparison->setText(text);
}

void OverlayPanel::showCriticalPathTab()
{
    m_tabs->setCurrentIndex(1);
}

QString OverlayPanel::criticalPathText() const
{
    return m_pathLabel->text();
}

void OverlayPanel::fillAnalysis()
{
    m_ranks->setRowCount(0);
    if (!m_overlay.criticalPath || !m_overlay.blocks) {
        m_pathLabel->setText(tr("No run overlaid."));
        return;
    }
    const CriticalPath& measured = *m_overlay.criticalPath;
    CriticalPath predicted;
    if (m_snapshot && m_snapshot->valid() && m_snapshot->schedule)
        predicted = criticalPath(*m_snapshot->schedule, m_snapshot->sim, m_snapshot->costs);
    const RunStats& stats = m_overlay.stats;
    QString text = tr("Critical path of step %1: <b>%2</b> (transfers and waits %3)")
                       .arg(m_overlay.step)
                       .arg(formatTime(measured.lengthUs), formatPercent(measured.transferShare()));
    if (predicted.lengthUs > 0)
        text += tr(" · predicted <b>%1</b> (transfers %2)")
                    .arg(formatTime(predicted.lengthUs), formatPercent(predicted.transferShare()));
    const std::vector<std::string> names = stats.stragglerNames();
    QStringList flagged;
    for (const std::string& n : names)
        flagged << QString::fromStdString(n);
    text += tr("<br>Stragglers (median compute per step more than %1 above the other ranks' median, over %2 steps): %3")
                .arg(formatPercent(stats.threshold))
                .arg(stats.steps)
                .arg(flagged.isEmpty() ? tr("none")
                                       : QStringLiteral("<span style='color:#c62828'><b>%1</b></span>")
                                             .arg(flagged.join(QStringLiteral(", "))));
    m_pathLabel->setText(text);
    const int ranks = static_cast<int>(std::max(measured.rankUs.size(), stats.ranks.size()));
    m_ranks->setRowCount(ranks);
    for (int r = 0; r < ranks; ++r) {
        const RankStats* rs = nullptr;
        for (const RankStats& x : stats.ranks)
            if (x.rank == r)
                rs = &x;
        const bool straggler = rs && rs->straggler;
        const QString share = formatPercent(measured.rankShare(r));
        const QString predictedShare = predicted.lengthUs > 0 ? formatPercent(predicted.rankShare(r)) : tr("–");
        const QString excess = rs && stats.ranks.size() > 1 ? formatSignedPercent(rs->excess) : tr("–");
        const QString tip
            = tr("rank %1: %2 of the measured critical path, %3 of the predicted one")
                  .arg(r)
                  .arg(formatTime(r < static_cast<int>(measured.rankUs.size()) ? measured.rankUs[r] : 0.0),
                      predicted.lengthUs > 0 && r < static_cast<int>(predicted.rankUs.size())
                          ? formatTime(predicted.rankUs[r])
                          : tr("nothing"));
        setRow(m_ranks, r,
            { straggler ? tr("%1 · straggler").arg(r) : QString::number(r), share, predictedShare,
                rs ? spreadText(rs->stepCompute) : tr("–"), excess },
            tip, straggler ? QColor(198, 40, 40) : QColor());
    }
}

bool OverlayPanel::compareWith(const QString& path, QString* error)
{
    if (path.isEmpty()) {
        m_other.reset();
        m_otherPath.clear();
    } else {
        try {
            m_other = std::make_shared<const MeasuredTrace>(dps::loadMeasured(path.toStdString()));
            m_otherPath = QFileInfo(path).absoluteFilePath();
        } catch (const std::exception& e) {
            const QString message = tr("Cannot compare with %1: %2").arg(path, QString::fromUtf8(e.what()));
            if (error)
                *error = message;
            emit loadFailed(message);
            return false;
        }
        const QSignalBlocker block(m_otherBox);
        if (m_otherBox->findData(path) < 0)
            m_otherBox->addItem(QFileInfo(path).fileName(), path);
        m_otherBox->setCurrentIndex(m_otherBox->findData(path));
    }
    fillDiff();
    updateComparison();
    return true;
}

void OverlayPanel::fillDiff()
{
    constexpr std::size_t kMaxRows = 200;
    m_diffs->setRowCount(0);
    m_diff = {};
    m_both->setEnabled(m_other && m_trace);
    if (!m_other || !m_trace) {
        m_diffLabel->setText(tr("Choose another run in <i>Compare with</i> to see, per action, how its start and "
                                "duration differ from this run's."));
        return;
    }
    m_diff = diffRuns(*m_trace, m_overlay.step, *m_other, m_other->medianStep);
    QString text = tr("<b>%1</b> step %2 (%3) against this run's step %4 (%5): %6")
                       .arg(QFileInfo(m_otherPath).fileName().toHtmlEscaped())
                       .arg(m_diff.stepB)
                       .arg(formatTime(m_diff.makespanB))
                       .arg(m_diff.stepA)
                       .arg(formatTime(m_diff.makespanA), formatSignedTime(m_diff.makespanB - m_diff.makespanA));
    if (m_diff.onlyInA + m_diff.onlyInB > 0)
        text += tr("<br>%1 actions only in this run, %2 only in the other").arg(m_diff.onlyInA).arg(m_diff.onlyInB);
    m_diffLabel->setText(text);
    const int rows = static_cast<int>(std::min(m_diff.actions.size(), kMaxRows));
    m_diffs->setRowCount(rows);
    for (int row = 0; row < rows; ++row) {
        const ActionDiff& d = m_diff.actions[static_cast<std::size_t>(row)];
        const QString tip
            = tr("this run: start %1, %2 · other run: start %3, %4")
                  .arg(formatTime(d.startA), formatTime(d.durationA), formatTime(d.startB), formatTime(d.durationB));
        setRow(m_diffs, row,
            { QString::fromStdString(toString(d.action)), QString::number(d.rank), formatSignedTime(d.startDeltaUs()),
                formatSignedTime(d.durationDeltaUs()) },
            tip);
    }
}

QWidget* OverlayPanel::createBothTimelines() const
{
    if (!m_trace || !m_other)
        return nullptr;
    auto* dialog = new QDialog(const_cast<OverlayPanel*>(this));
    dialog->setWindowTitle(tr("Both runs on one time axis"));
    auto* view = new TimelineView;
    view->setObjectName(QStringLiteral("bothTimelines"));
    view->setLanes({ measuredLane(*m_trace, m_overlay.step), measuredLane(*m_other, m_other->medianStep) });
    const QString titles[2] = { tr("this run: %1, step %2").arg(QFileInfo(m_path).fileName()).arg(m_overlay.step),
        tr("other run: %1, step %2").arg(QFileInfo(m_otherPath).fileName()).arg(m_other->medianStep) };
    const int steps[2] = { m_overlay.step, m_other->medianStep };
    const MeasuredTrace* traces[2] = { m_trace.get(), m_other.get() };
    for (int i = 0; i < 2 && i < view->laneCount(); ++i) {
        view->lane(i)->setTitle(titles[i]);
        view->setLaneCriticalPath(i, std::make_shared<const CriticalPath>(measuredCriticalPath(*traces[i], steps[i])));
    }
    view->setCriticalPathShown(true);
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(new TimelineLegend);
    layout->addWidget(view, 1);
    dialog->resize(1100, 200 + 40 * (m_trace->ranks.size() + m_other->ranks.size()));
    view->replot();
    return dialog;
}

} // namespace dps::ui
