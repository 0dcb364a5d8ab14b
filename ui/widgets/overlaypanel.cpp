#include "widgets/overlaypanel.h"

#include "document/formatting.h"
#include "run/runhistory.h"

#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace dps::ui {

namespace {

QString signedTime(double us)
{
    return (us >= 0 ? QStringLiteral("+") : QStringLiteral("−")) + formatTime(std::abs(us));
}

QString runLabel(const RunHistory& history, int row)
{
    const RunRecord& r = history.run(row);
    return QStringLiteral("%1 · %2 · %3")
        .arg(r.date.toString(QStringLiteral("yyyy-MM-dd hh:mm:ss")), r.variant,
            r.stepTimeUs > 0 ? formatTime(r.stepTimeUs) : QObject::tr("no step time"));
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
    layout->addWidget(new QLabel(tr("Largest start slips (measured − predicted):")));
    layout->addWidget(m_slips, 1);
    connect(m_stepBox, qOverload<int>(&QComboBox::activated), this,
        [this](int index) { setStep(m_stepBox->itemData(index).toInt()); });
    connect(m_runBox, qOverload<int>(&QComboBox::activated), this, &OverlayPanel::chooseRun);
    connect(m_otherBox, qOverload<int>(&QComboBox::activated), this, [this](int) { updateComparison(); });
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
        const QStringList cells { QString::fromStdString(s.action), QString::number(s.rank), signedTime(s.slipUs()) };
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
    QString text = tr("<b>%1</b> · %2/%3 on %4 · %5 ranks · correctness %6")
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
    const bool machine = m_snapshot && !m_snapshot->predictionFor.empty();
    QString text = (machine ? tr("Makespan: predicted <b>%1</b> for this machine · this run <b>%2</b> (%3)")
                            : tr("Makespan: predicted <b>%1</b> · this run <b>%2</b> (%3)"))
                       .arg(formatTime(makespan->predicted), formatTime(makespan->measured),
                           makespan->error() ? formatSignedPercent(*makespan->error()) : tr("n/a"));
    const QString other = m_otherBox->currentData().toString();
    const int row = m_otherBox->currentIndex() - 1;
    if (!other.isEmpty() && m_history && row >= 0 && row < m_history->runCount()) {
        const double us = m_history->run(row).stepTimeUs;
        text += tr(" · other run <b>%1</b> (%2 vs this run)")
                    .arg(formatTime(us), signedTime(us - m_trace->medianMakespanUs()));
    }
    m_comparison->setText(text);
}

} // namespace dps::ui
