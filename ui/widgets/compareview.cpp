#include "widgets/compareview.h"

#include "document/comparemodel.h"
#include "widgets/timelineview.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

namespace dps::ui {

CompareView::CompareView(QWidget* parent)
    : QWidget(parent)
    , m_timeline(new TimelineView)
    , m_model(new CompareModel(this))
    , m_table(new QTableView)
    , m_sameDevices(new QCheckBox(tr("Same devices")))
    , m_sameDevicesNote(new QLabel)
    , m_currentX(std::numeric_limits<double>::quiet_NaN())
    , m_colors(ChartColors::fromPalette(palette()))
{
    m_table->setModel(m_model);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->horizontalHeader()->setMinimumSectionSize(90);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    auto* top = new QWidget;
    auto* topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->addWidget(new TimelineLegend);
    topLayout->addWidget(m_timeline, 1);
    m_sameDevices->setToolTip(tr("Put every variant on the largest device count any of them uses, at the same global "
                                 "batch: k times the data-parallel replicas and 1/k of the microbatches each"));
    m_sameDevicesNote->setWordWrap(true);
    connect(m_sameDevices, &QCheckBox::toggled, this, &CompareView::sameDevicesChanged);
    auto* tableControls = new QHBoxLayout;
    tableControls->addWidget(m_sameDevices);
    tableControls->addWidget(m_sameDevicesNote, 1);
    auto* tableBox = new QWidget;
    auto* tableLayout = new QVBoxLayout(tableBox);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tableLayout->addLayout(tableControls);
    tableLayout->addWidget(m_table, 1);
    auto* bottom = new QSplitter(Qt::Horizontal);
    bottom->addWidget(tableBox);
    bottom->addWidget(setupSweep());
    bottom->setStretchFactor(0, 1);
    bottom->setStretchFactor(1, 1);
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(top);
    split->addWidget(bottom);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(split);
}

QWidget* CompareView::setupSweep()
{
    m_parameter = new QComboBox;
    m_parameter->addItem(tr("microbatch count"), static_cast<int>(SweepParameter::Microbatches));
    m_parameter->addItem(tr("F&B / (F + B)"), static_cast<int>(SweepParameter::OverlapRatio));
    m_metric = new QComboBox;
    m_metric->addItem(tr("makespan"));
    m_metric->addItem(tr("bubble rate"));
    m_sweepPlot = new QCustomPlot;
    m_sweepPlot->setMinimumHeight(160);
    m_sweepNote = new QLabel;
    m_sweepNote->setWordWrap(true);
    connect(m_parameter, qOverload<int>(&QComboBox::activated), this,
        [this] { emit sweepParameterChanged(sweepParameter()); });
    connect(m_metric, qOverload<int>(&QComboBox::activated), this, &CompareView::drawSweep);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Sweep:")));
    controls->addWidget(m_parameter);
    controls->addWidget(new QLabel(tr("plot:")));
    controls->addWidget(m_metric);
    controls->addStretch(1);
    auto* box = new QWidget;
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(controls);
    layout->addWidget(m_sweepPlot, 1);
    layout->addWidget(m_sweepNote);
    return box;
}

double CompareView::addSweepSeries(bool bubble)
{
    double top = 0.0;
    for (std::size_t i = 0; i < m_sweep->series.size(); ++i) {
        const auto& series = m_sweep->series[i];
        QVector<double> x, y;
        for (const auto& p : series.points) {
            x << p.x;
            y << (bubble ? p.bubbleRate * 100.0 : p.makespanUs);
            top = std::max(top, y.back());
        }
        QCPGraph* g = m_sweepPlot->addGraph();
        g->setName(QString::fromStdString(series.variant));
        g->setPen(QPen(seriesColor(static_cast<int>(i)), 2));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
        g->setData(x, y, true);
    }
    return top;
}

void CompareView::markCurrentValue(double top)
{
    if (std::isnan(m_currentX) || m_sweep->parameter != sweepParameter())
        return;
    auto* line = new QCPItemStraightLine(m_sweepPlot);
    line->point1->setCoords(m_currentX, 0);
    line->point2->setCoords(m_currentX, 1);
    line->setPen(QPen(m_colors.axis, 1, Qt::DashLine));
    auto* label = new QCPItemText(m_sweepPlot);
    label->position->setCoords(m_currentX, top * 1.05);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    label->setPadding(QMargins(4, 0, 0, 0));
    label->setColor(m_colors.text);
    label->setText(tr("project: %1").arg(m_currentX));
}

bool CompareView::sameDevices() const
{
    return m_sameDevices->isChecked();
}

void CompareView::setSameDevicesNotes(const QStringList& notes)
{
    m_sameDevicesNote->setText(notes.join(QStringLiteral("; ")));
}

SweepParameter CompareView::sweepParameter() const
{
    return static_cast<SweepParameter>(m_parameter->currentData().toInt());
}

void CompareView::setSnapshot(const CompareSnapshotPtr& snapshot)
{
    m_model->setSnapshot(snapshot);
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_timeline->setLanes(snapshot ? snapshot->variants : std::vector<SnapshotPtr> {});
}

void CompareView::setSweep(const SweepResultPtr& sweep)
{
    m_sweep = sweep;
    drawSweep();
}

void CompareView::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    emit shown();
}

void CompareView::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::PaletteChange) {
        m_colors = ChartColors::fromPalette(palette());
        drawSweep();
    }
    QWidget::changeEvent(event);
}

void CompareView::styleSweep()
{
    m_sweepPlot->setBackground(m_colors.background);
    styleChartAxes(*m_sweepPlot, m_colors);
    m_sweepPlot->legend->setBrush(m_colors.background);
    m_sweepPlot->legend->setTextColor(m_colors.text);
    m_sweepPlot->legend->setBorderPen(QPen(m_colors.grid));
    m_sweepPlot->legend->setFont(QFont(font().family(), 8));
}

void CompareView::drawSweep()
{
    m_sweepPlot->clearGraphs();
    m_sweepPlot->clearItems();
    styleSweep();
    if (!m_sweep) {
        m_sweepPlot->replot();
        return;
    }
    const bool bubble = m_metric->currentIndex() == 1;
    const double top = addSweepSeries(bubble);
    m_sweepPlot->xAxis->setLabel(QString::fromStdString(sweepParameterName(m_sweep->parameter)));
    if (bubble) {
        m_sweepPlot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        m_sweepPlot->yAxis->setLabel(tr("bubble rate (%)"));
    } else {
        setTimeAxisUnit(m_sweepPlot->yAxis, top);
    }
    m_sweepPlot->rescaleAxes();
    m_sweepPlot->yAxis->setRangeLower(0);
    m_sweepPlot->yAxis->setRangeUpper(top * 1.1 + (top > 0 ? 0 : 1));
    markCurrentValue(top);
    m_sweepPlot->legend->setVisible(true);
    m_sweepPlot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    m_sweepNote->setText(m_sweep->parameter == SweepParameter::Microbatches
            ? tr("Each variant at the microbatch counts its kind accepts (DualPipe: even, ≥ 2 × ranks).")
            : tr("F&B slot time as a fraction of F + B (the overlap factor); typed F&B times are ignored here."));
    m_sweepPlot->replot();
}

} // namespace dps::ui
