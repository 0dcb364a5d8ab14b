#include "widgets/metricspanel.h"

#include "document/formatting.h"
#include "document/rankmetricsmodel.h"

#include <QAction>
#include <QEvent>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace dps::ui {

namespace {

/// A word-wrapped value label that asks for the height its text needs at its current width: the form
/// layout alone sizes it for a wider column and clips a third line (e.g. a long closed-form reason).
class WrappedLabel : public QLabel {
public:
    using QLabel::QLabel;

protected:
    void resizeEvent(QResizeEvent* event) override
    {
        QLabel::resizeEvent(event);
        fitHeight();
    }
    void changeEvent(QEvent* event) override
    {
        QLabel::changeEvent(event);
        if (event->type() == QEvent::FontChange)
            fitHeight();
    }

public:
    void fitHeight()
    {
        const int needed = heightForWidth(width());
        if (needed > 0 && needed != minimumHeight())
            setMinimumHeight(needed);
    }
};

} // namespace

MetricsPanel::MetricsPanel(QWidget* parent)
    : QWidget(parent)
    , m_model(new RankMetricsModel(this))
    , m_overlayTitle(new QLabel(this))
    , m_overlayTable(new QTableWidget(0, 4, this))
    , m_table(new QTableView(this))
    , m_form(new QWidget(this))
{
    auto* form = new QFormLayout(m_form);
    form->setContentsMargins(0, 0, 0, 0);
    form->setLabelAlignment(Qt::AlignLeft);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    addRow(QStringLiteral("makespan"), tr("Makespan"), tr("Time from the first action to the last, over all ranks"));
    addRow(QStringLiteral("bubble"), tr("Bubble rate"), tr("Σ idle ÷ (ranks × makespan)"));
    addRow(QStringLiteral("largest-idle"), tr("Largest idle, simulated"),
        tr("The most idle time of any rank (makespan − busy, before the first and after the last action included)"));
    addRow(QStringLiteral("closed-form"), tr("Largest idle, closed form"),
        tr("The schedule's formula for the largest per-rank idle, from stage 0's costs, where it applies"));
    addRow(QStringLiteral("peak-memory"), tr("Peak memory"), tr("Highest over ranks"));
    addRow(QStringLiteral("peak-inflight"), tr("Peak in-flight"),
        tr("Most activations live at once on a rank: made by F, not yet consumed by I or B"));
    addRow(QStringLiteral("parameters"), tr("Parameters per device"),
        tr("Parameters of the stages each rank holds (a DualPipe or V rank holds two), and their bytes"));
    addRow(QStringLiteral("p2p"), tr("P2P bytes"), tr("Bytes sent between ranks in one step"));
    m_table->setModel(m_model);
    m_table->verticalHeader()->hide();
    m_table->setAlternatingRowColors(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    setupColumnMenu();
    m_table->setToolTip(tr("Click a rank to show its memory breakdown; right-click the header to choose columns"));
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_form);
    layout->addWidget(m_table, 1);
    setupOverlayTable();
    layout->addWidget(m_overlayTitle);
    layout->addWidget(m_overlayTable, 1);
    connect(m_table, &QTableView::clicked, this, [this](const QModelIndex& index) { emit rankActivated(index.row()); });
}

void MetricsPanel::setupOverlayTable()
{
    m_overlayTitle->setText(tr("<b>Predicted vs measured</b>"));
    m_overlayTable->setHorizontalHeaderLabels({ tr("Metric"), tr("Predicted"), tr("Measured"), tr("Error") });
    m_overlayTable->verticalHeader()->hide();
    m_overlayTable->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_overlayTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_overlayTable->horizontalHeader()->setStretchLastSection(true);
    m_overlayTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_overlayTable->setAlternatingRowColors(true);
    m_overlayTable->setToolTip(tr("error = (measured − predicted) ÷ predicted"));
    m_overlayTitle->hide();
    m_overlayTable->hide();
}

namespace {

QString overlayValue(const OverlayRow& row, double value)
{
    switch (row.unit) {
    case OverlayRow::Unit::Bytes:
        return formatBytes(value);
    case OverlayRow::Unit::Ratio:
        return formatPercent(value);
    case OverlayRow::Unit::Microseconds:
        break;
    }
    return formatTime(value);
}

} // namespace

void MetricsPanel::setOverlay(const MeasuredOverlay& overlay)
{
    const bool shown = overlay.blocks != nullptr;
    m_overlayTitle->setVisible(shown);
    m_overlayTable->setVisible(shown);
    m_overlayKeys.clear();
    m_overlayTable->setRowCount(shown ? static_cast<int>(overlay.rows.size()) : 0);
    if (!shown)
        return;
    m_overlayTitle->setText(tr("<b>Predicted vs measured</b> (step %1)").arg(overlay.step));
    for (int i = 0; i < m_overlayTable->rowCount(); ++i) {
        const OverlayRow& row = overlay.rows[i];
        m_overlayKeys.push_back(row.key);
        const auto error = row.error();
        const QStringList cells { QString::fromStdString(row.label), overlayValue(row, row.predicted),
            overlayValue(row, row.measured), error ? formatSignedPercent(*error) : tr("n/a") };
        for (int column = 0; column < cells.size(); ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            if (column > 0)
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_overlayTable->setItem(i, column, item);
        }
    }
}

QString MetricsPanel::overlayText(const QString& key, int column) const
{
    for (int i = 0; i < static_cast<int>(m_overlayKeys.size()); ++i)
        if (QString::fromStdString(m_overlayKeys[i]) == key && m_overlayTable->item(i, column))
            return m_overlayTable->item(i, column)->text();
    return {};
}

void MetricsPanel::setupColumnMenu()
{
    QHeaderView* header = m_table->horizontalHeader();
    header->setContextMenuPolicy(Qt::ActionsContextMenu);
    for (int column = RankMetricsModel::Busy; column < RankMetricsModel::ColumnCount; ++column) {
        auto* action = new QAction(m_model->headerData(column, Qt::Horizontal).toString(), header);
        action->setCheckable(true);
        const bool shown = column != RankMetricsModel::Busy && column != RankMetricsModel::Parameters
            && column != RankMetricsModel::P2pSent;
        action->setChecked(shown);
        m_table->setColumnHidden(column, !shown);
        connect(action, &QAction::toggled, this, [this, column](bool on) { m_table->setColumnHidden(column, !on); });
        header->addAction(action);
    }
}

QLabel* MetricsPanel::addRow(const QString& key, const QString& title, const QString& tooltip)
{
    auto* value = new WrappedLabel(m_form);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    value->setWordWrap(true);
    value->setAlignment(Qt::AlignLeft | Qt::AlignTop); // a wrapped value starts beside its name, not below it
    auto* name = new QLabel(title + QLatin1Char(':'), m_form);
    name->setToolTip(tooltip);
    value->setToolTip(tooltip);
    static_cast<QFormLayout*>(m_form->layout())->addRow(name, value);
    m_rows.emplace_back(key, value);
    return value;
}

QString MetricsPanel::summaryText(const QString& key) const
{
    for (const auto& [k, label] : m_rows)
        if (k == key)
            return label->text();
    return {};
}

void MetricsPanel::showEmpty(const QString& reason)
{
    for (const auto& [key, label] : m_rows)
        label->setText(key == QLatin1String("makespan") ? reason : QStringLiteral("—"));
}

void MetricsPanel::showClosedForm(const SimulationSnapshot& s)
{
    QLabel* label = m_rows[3].second;
    const ClosedForm& c = s.closedForm;
    const QString formula = QString::fromStdString(c.formula);
    const QString reason = QString::fromStdString(c.reason);
    if (!c.available)
        label->setText(tr("none for this kind (simulated value only)"));
    else if (c.applicable)
        label->setText(
            tr("<b>%1</b> from %2<br><small>valid for %3</small>").arg(formatTime(c.valueUs), formula, reason));
    else
        label->setText(tr("%1: not applicable<br><small>%2</small>").arg(formula, reason.toHtmlEscaped()));
    label->setToolTip(tr("The schedule's closed form of the largest per-rank idle, beside the simulated value. %1")
                          .arg(reason.toHtmlEscaped()));
    static_cast<WrappedLabel*>(label)->fitHeight();
}

void MetricsPanel::setSnapshot(const SnapshotPtr& snapshot)
{
    m_model->setSnapshot(snapshot);
    if (!snapshot || !snapshot->timed) {
        showEmpty(snapshot && !snapshot->built() ? tr("cannot build: see the list under the chart")
                                                 : tr("not simulated: the order is invalid"));
        return;
    }
    const SimulationSnapshot& s = *snapshot;
    int inflight = 0;
    double paramsMin = 1e300, paramsMax = 0.0, bytesMax = 0.0;
    for (const auto& r : s.sim.ranks)
        inflight = std::max(inflight, r.peakInflight);
    for (const auto& m : s.staticMemory) {
        paramsMin = std::min(paramsMin, m.parameterCount);
        paramsMax = std::max(paramsMax, m.parameterCount);
        bytesMax = std::max(bytesMax, m.parameters);
    }
    m_rows[0].second->setText(s.drawn
            ? tr("%1 <small>(median of %2 drawn steps)</small>").arg(formatTime(s.makespanUs)).arg(s.drawn->draws)
            : formatTime(s.makespanUs));
    m_rows[0].second->setToolTip(s.drawn ? QString::fromStdString("Makespan: " + describeDrawn(*s.drawn)) : QString());
    m_rows[1].second->setText(
        tr("<b>%1</b> <small>= Σ idle ÷ (ranks × makespan)</small>").arg(formatPercent(s.bubbleRate)));
    m_rows[2].second->setText(tr("%1 on rank %2").arg(formatTime(s.largestIdleUs)).arg(s.largestIdleRank));
    showClosedForm(s);
    m_rows[4].second->setText(s.peakMemoryRank >= 0
            ? tr("%1 on rank %2").arg(formatBytes(s.peakMemoryBytes)).arg(s.peakMemoryRank)
            : QString());
    m_rows[5].second->setText(tr("%1 microbatches").arg(inflight));
    const QString count = paramsMax - paramsMin < 0.5
        ? formatCount(paramsMax)
        : tr("%1 – %2").arg(formatCount(paramsMin), formatCount(paramsMax));
    m_rows[6].second->setText(tr("%1 (%2)").arg(count, formatBytes(bytesMax)));
    m_rows[7].second->setText(formatBytes(s.p2pBytes));
}

} // namespace dps::ui
