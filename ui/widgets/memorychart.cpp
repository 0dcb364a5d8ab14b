#include "widgets/memorychart.h"

#include "document/formatting.h"
#include "document/memorybreakdown.h"
#include "widgets/timelineview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <algorithm>

namespace dps::ui {

namespace {

/// Divisor and unit name for a byte range.
std::pair<double, QString> byteUnit(double maxBytes)
{
    if (maxBytes >= 1024.0 * 1024.0 * 1024.0)
        return { 1024.0 * 1024.0 * 1024.0, QStringLiteral("GiB") };
    if (maxBytes >= 1024.0 * 1024.0)
        return { 1024.0 * 1024.0, QStringLiteral("MiB") };
    if (maxBytes >= 1024.0)
        return { 1024.0, QStringLiteral("KiB") };
    return { 1.0, QStringLiteral("B") };
}

/// The peak of one rank, or of the busiest rank when `rank` is negative (bytes).
double peakOver(const SimulationSnapshot& s, int rank)
{
    if (rank < 0) // every rank: the highest peak
        return s.peakMemoryBytes;
    return rank < static_cast<int>(s.sim.ranks.size()) ? s.sim.ranks[rank].peakMemoryBytes : 0.0;
}

} // namespace

MemoryChart::MemoryChart(QWidget* parent)
    : QWidget(parent)
    , m_rankBox(new QComboBox(this))
    , m_summary(new QLabel(this))
    , m_plot(new QCustomPlot(this))
{
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Show:"), this));
    top->addWidget(m_rankBox);
    top->addWidget(m_summary, 1);
    // A long summary wraps (and is repeated in its tooltip) rather than widening the dock.
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_summary->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(m_plot, 1);
    m_rankBox->setToolTip(tr("One rank as stacked areas over time, every rank's total as lines, or every rank's parts "
                             "at its peak as stacked bars with the heaviest rank named"));
    m_plot->setMinimumHeight(120);
    m_plot->legend->setFont(QFont(font().family(), 8));
    // The legend goes in a row above the plot so it never hides a curve.
    m_plot->plotLayout()->insertRow(0);
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    m_plot->plotLayout()->addElement(0, 0, m_plot->legend);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    m_plot->plotLayout()->setRowSpacing(0);
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setMargins(QMargins(4, 2, 4, 0));
    m_colors = ChartColors::fromPalette(palette());
    connect(m_rankBox, qOverload<int>(&QComboBox::activated), this,
        [this](int index) { setRank(m_rankBox->itemData(index).toInt()); });
    fillRankCombo();
}

void MemoryChart::setSnapshot(const SnapshotPtr& snapshot)
{
    m_snapshot = snapshot && snapshot->timed ? snapshot : nullptr;
    if (m_snapshot && m_rank >= m_snapshot->ranks())
        m_rank = -1;

    fillRankCombo();
    rebuild();
}

void MemoryChart::setMeasuredMemory(const std::vector<std::vector<MeasuredMemoryPoint>>& memory)
{
    m_measured = memory;
    if (!m_measured.empty() && m_rank == kPerRankParts) // the measurement is a curve over time
        setRank(-1);
    else
        rebuild();
}

QString MemoryChart::summaryText() const
{
    return m_summary->text();
}

double MemoryChart::measuredPeak() const
{
    double peak = 0.0;
    for (int r = 0; r < static_cast<int>(m_measured.size()); ++r)
        if (m_rank < 0 || m_rank == r)
            for (const auto& p : m_measured[r])
                peak = std::max(peak, p.bytes);
    return peak;
}

void MemoryChart::drawMeasured(double divisor)
{
    bool named = false;
    for (int r = 0; r < static_cast<int>(m_measured.size()); ++r) {
        if ((m_rank >= 0 && m_rank != r) || m_measured[r].empty())
            continue;
        QVector<double> t { 0.0 }, v { m_measured[r].front().bytes / divisor };
        for (const auto& p : m_measured[r]) {
            t << p.timeUs;
            v << p.bytes / divisor;
        }
        QCPGraph* g = m_plot->addGraph();
        g->setLineStyle(QCPGraph::lsStepLeft);
        g->setPen(QPen(m_rank >= 0 ? m_colors.measured : seriesColor(r), 2.0, Qt::DashLine));
        g->setData(t, v, true);
        g->setName(tr("measured (dashed)"));
        if (named)
            g->removeFromLegend();
        named = true;
    }
}

bool MemoryChart::setRank(int rank)
{
    const int index = m_rankBox->findData(rank);
    if (index < 0 && m_rankBox->count() > 0)
        return false; // not a view of this snapshot (e.g. rank 8 of 8 ranks): keep the current one
    m_rank = rank;
    if (index >= 0)
        m_rankBox->setCurrentIndex(index);
    rebuild();
    return true;
}

void MemoryChart::fillRankCombo()
{
    const QSignalBlocker block(m_rankBox);
    m_rankBox->clear();
    m_rankBox->addItem(tr("All ranks"), -1);
    m_rankBox->addItem(tr("Per rank: parts at the peak"), kPerRankParts);
    const int ranks = m_snapshot ? m_snapshot->ranks() : 0;
    for (int r = 0; r < ranks; ++r)
        m_rankBox->addItem(tr("Rank %1").arg(r), r);
    m_rankBox->setCurrentIndex(std::max(0, m_rankBox->findData(m_rank)));
}

void MemoryChart::setTimeRange(const QCPRange& range)
{
    m_timeRange = range;
    m_hasTimeRange = true;
    if (m_rank == kPerRankParts)
        return; // ranks on x, not time
    m_plot->xAxis->setRange(range);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void MemoryChart::alignTimeAxis(int globalLeft, int globalRight)
{
    const int left = globalLeft - m_plot->mapToGlobal(QPoint(0, 0)).x();
    const int right = m_plot->mapToGlobal(QPoint(m_plot->width(), 0)).x() - globalRight;
    if (left < 40 || right < 0)
        return; // too narrow to align: keep the automatic margins
    const QMargins before = m_plot->axisRect()->margins();
    m_plot->axisRect()->setAutoMargins(QCP::msTop | QCP::msBottom);
    m_plot->axisRect()->setMargins(QMargins(left, before.top(), right, before.bottom()));
    if (before.left() != left || before.right() != right)
        m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void MemoryChart::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::PaletteChange) {
        m_colors = ChartColors::fromPalette(palette());
        rebuild();
    }
    QWidget::changeEvent(event);
}

void MemoryChart::styleAxes()
{
    m_plot->setBackground(m_colors.background);
    styleChartAxes(*m_plot, m_colors);
    m_plot->legend->setBrush(Qt::NoBrush);
    m_plot->legend->setTextColor(m_colors.text);
    m_plot->legend->setBorderPen(Qt::NoPen);
}

void MemoryChart::rebuild()
{
    m_plot->clearPlottables(); // graphs, and the bars of the per-rank view
    m_plot->clearItems();
    styleAxes();
    m_plot->xAxis->setVisible(m_snapshot != nullptr);
    m_plot->yAxis->setVisible(m_snapshot != nullptr);
    m_plot->legend->setVisible(m_snapshot != nullptr);
    if (!m_snapshot) {
        m_summary->clear();
        auto* note = new QCPItemText(m_plot);
        note->setClipToAxisRect(false);
        note->position->setType(QCPItemPosition::ptViewportRatio);
        note->position->setCoords(0.5, 0.5);
        note->setColor(m_colors.axis);
        note->setText(tr("No memory curve: the order is invalid or the variant cannot be built.\n"
                         "Fix it (see the list under the chart) or undo."));
        m_plot->replot();
        return;
    }
    if (m_rank == kPerRankParts) {
        drawParts();
        return;
    }
    if (m_hasTimeRange)
        m_plot->xAxis->setRange(m_timeRange); // back from the bars' rank axis
    m_plot->xAxis->grid()->setVisible(true);
    const double peak = std::max(peakOver(*m_snapshot, m_rank), measuredPeak());
    const auto [divisor, unit] = byteUnit(std::max(peak, 1.0));
    m_plot->yAxis->setLabel(tr("memory (%1)").arg(unit));
    if (m_rank >= 0)
        drawStacked(m_rank, divisor);
    else
        drawAllRanks(divisor);
    drawMeasured(divisor);
    const int peakRank = m_rank >= 0 ? m_rank : m_snapshot->peakMemoryRank;
    markPeak(peakRank, divisor);
    const double top = peak / divisor * 1.25;
    m_plot->yAxis->setRange(0, top > 0 ? top : 1);
    drawLimit(divisor, top);
    m_summary->setToolTip(m_summary->text());
    setTimeAxisUnit(m_plot->xAxis, m_snapshot->sim.makespanUs);
    m_plot->legend->setVisible(true);
    m_plot->legend->setWrap(9);
    m_plot->legend->setColumnSpacing(10);
    m_plot->replot();
}

void MemoryChart::drawParts()
{
    const SimulationSnapshot& s = *m_snapshot;
    const std::vector<RankMemoryParts> parts = memoryParts(s);
    const HeaviestRank heaviest = heaviestRank(parts);
    const int ranks = static_cast<int>(parts.size());
    const double peak = std::max(heaviest.peakBytes, 1.0);
    const auto [divisor, unit] = byteUnit(peak);
    m_plot->yAxis->setLabel(tr("memory at the peak (%1)").arg(unit));
    auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    const int step = std::max(1, ranks / 24); // labels stay apart on many ranks
    for (int r = 0; r < ranks; r += step)
        ticker->addTick(r, ranks > 12 ? QString::number(r) : tr("rank %1").arg(r));
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setLabel(tr("rank"));
    m_plot->xAxis->grid()->setVisible(false);
    m_plot->xAxis->setRange(-0.6, ranks - 0.4);
    static const int colorOf[RankMemoryParts::PartCount] = { 0, 3, 6, 2, 5 }; // as the stacked view over time
    QCPBars* below = nullptr;
    for (int part = 0; part < RankMemoryParts::PartCount; ++part) {
        auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(QString::fromUtf8(memoryPartName(static_cast<RankMemoryParts::Part>(part))));
        bars->setWidth(0.7);
        QColor fill = seriesColor(colorOf[part]);
        fill.setAlpha(m_colors.dark ? 200 : 170);
        bars->setBrush(fill);
        bars->setPen(QPen(seriesColor(colorOf[part]).darker(120), 1.0));
        QVector<double> keys, values;
        for (int r = 0; r < ranks; ++r) {
            keys << r;
            values << parts[r].bytes[part] / divisor;
        }
        bars->setData(keys, values, true);
        if (below)
            bars->moveAbove(below);
        below = bars;
    }
    const double top = peak / divisor * 1.25;
    m_plot->yAxis->setRange(0, top);
    if (heaviest.rank >= 0) {
        auto* outline = new QCPItemRect(m_plot);
        outline->topLeft->setCoords(heaviest.rank - 0.42, heaviest.peakBytes / divisor);
        outline->bottomRight->setCoords(heaviest.rank + 0.42, 0);
        outline->setPen(QPen(m_colors.invalid, 2.0));
        outline->setBrush(Qt::NoBrush);
        auto* label = new QCPItemText(m_plot);
        label->position->setCoords(heaviest.rank, heaviest.peakBytes / divisor);
        const double share = ranks > 1 ? static_cast<double>(heaviest.rank) / (ranks - 1) : 0.5;
        label->setPositionAlignment(
            Qt::AlignBottom | (share < 0.15 ? Qt::AlignLeft : (share > 0.85 ? Qt::AlignRight : Qt::AlignHCenter)));
        label->setPadding(QMargins(0, 0, 0, 4));
        label->setColor(m_colors.text);
        label->setText(tr("heaviest: %1").arg(formatBytes(heaviest.peakBytes)));
    }
    m_summary->setText(QString::fromStdString(describeHeaviest(heaviest)));
    const double limit = m_snapshot->deviceMemoryBytes;
    if (limit > 0) {
        m_summary->setText(m_summary->text()
            + tr(" · device limit %1 (%2 used by the heaviest)").arg(formatBytes(limit), formatPercent(peak / limit)));
        if (limit / divisor <= top) {
            auto* line = new QCPItemStraightLine(m_plot);
            line->point1->setCoords(0, limit / divisor);
            line->point2->setCoords(1, limit / divisor);
            line->setPen(QPen(m_colors.invalid, 1.5, Qt::DashLine));
            auto* text = new QCPItemText(m_plot);
            text->setColor(m_colors.invalid);
            text->setFont(QFont(font().family(), 8));
            text->position->setCoords(ranks - 0.45, limit / divisor);
            text->setPositionAlignment(Qt::AlignBottom | Qt::AlignRight);
            text->setBrush(m_colors.background); // readable over the bars
            text->setPadding(QMargins(3, 1, 3, 1));
            text->setText(tr("device limit %1").arg(formatBytes(limit)));
        }
    }
    m_summary->setToolTip(m_summary->text());
    m_plot->legend->setVisible(true);
    m_plot->legend->setWrap(9);
    m_plot->legend->setColumnSpacing(10);
    m_plot->replot();
}

void MemoryChart::addStep(
    const QVector<double>& t, const QVector<double>& v, const QColor& color, const QString& name, bool filled)
{
    QCPGraph* g = m_plot->addGraph();
    g->setName(name);
    g->setLineStyle(QCPGraph::lsStepLeft);
    g->setPen(QPen(color.darker(filled ? 115 : 100), filled ? 1.0 : 1.6));
    if (filled) {
        QColor fill = color;
        fill.setAlpha(m_colors.dark ? 150 : 120);
        g->setBrush(fill);
        if (m_plot->graphCount() > 1)
            g->setChannelFillGraph(m_plot->graph(m_plot->graphCount() - 2));
    }
    g->setData(t, v, true);
}

void MemoryChart::drawStacked(int rank, double divisor)
{
    const SimulationSnapshot& s = *m_snapshot;
    const StaticMemory sm = rank < static_cast<int>(s.staticMemory.size()) ? s.staticMemory[rank] : StaticMemory {};
    const auto& points = s.sim.ranks[rank].memory;
    QVector<double> t { 0.0 };
    QVector<double> act { 0.0 };
    for (const auto& p : points) {
        t << p.timeUs;
        act << p.activationBytes;
    }
    t << s.sim.makespanUs;
    act << act.back();
    const auto level = [&](double bytes) { return QVector<double>(t.size(), bytes / divisor); };
    addStep(t, level(sm.parameters), seriesColor(0), tr("parameters"), true);
    addStep(t, level(sm.parameters + sm.gradients), seriesColor(3), tr("gradients"), true);
    addStep(t, level(sm.total()), seriesColor(6), tr("optimizer state"), true);
    QVector<double> total(t.size());
    for (int i = 0; i < t.size(); ++i)
        total[i] = (sm.total() + act[i]) / divisor;
    addStep(t, total, seriesColor(2), tr("live activations"), true);
    const RankResult& rr = s.sim.ranks[rank];
    if (rr.peakMemoryBytes > sm.total() + rr.peakActivationBytes) {
        // A run of our engine: its buffers on top (each point holds its slot's high-water mark, docs/memory.md).
        QVector<double> all { total.front() };
        for (const auto& p : points)
            all << std::max(p.totalBytes, sm.total() + p.activationBytes) / divisor;
        all << all.back();
        addStep(t, all, seriesColor(5), tr("buffers"), true);
    }
    m_summary->setText(tr("rank %1: peak %2 · parameters %3 · peak in-flight %4")
                           .arg(rank)
                           .arg(formatBytes(s.sim.ranks[rank].peakMemoryBytes), formatBytes(sm.parameters))
                           .arg(s.sim.ranks[rank].peakInflight));
}

void MemoryChart::drawAllRanks(double divisor)
{
    const SimulationSnapshot& s = *m_snapshot;
    for (int r = 0; r < s.ranks(); ++r) {
        QVector<double> t { 0.0 }, v { s.sim.ranks[r].staticBytes / divisor };
        for (const auto& p : s.sim.ranks[r].memory) {
            t << p.timeUs;
            v << p.totalBytes / divisor;
        }
        t << s.sim.makespanUs;
        v << v.back();
        addStep(t, v, seriesColor(r), tr("rank %1").arg(r), false);
    }
    m_summary->setText(s.peakMemoryRank >= 0
            ? tr("total per rank; highest peak %1 on rank %2").arg(formatBytes(s.peakMemoryBytes)).arg(s.peakMemoryRank)
            : QString());
}

void MemoryChart::markPeak(int rank, double divisor)
{
    if (rank < 0)
        return;
    const RankResult& r = m_snapshot->sim.ranks[rank];
    double when = 0.0;
    for (const auto& p : r.memory)
        if (p.totalBytes >= r.peakMemoryBytes - 1e-6) {
            when = p.timeUs;
            break;
        }
    QCPGraph* g = m_plot->addGraph();
    g->setName(tr("peak"));
    g->setLineStyle(QCPGraph::lsNone);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, m_colors.invalid, m_colors.invalid, 7));
    g->setData(QVector<double> { when }, QVector<double> { r.peakMemoryBytes / divisor });
    auto* label = new QCPItemText(m_plot);
    label->position->setCoords(when, r.peakMemoryBytes / divisor);
    const double share = m_snapshot->sim.makespanUs > 0 ? when / m_snapshot->sim.makespanUs : 0.5;
    label->setPositionAlignment(
        Qt::AlignBottom | (share < 0.15 ? Qt::AlignLeft : (share > 0.85 ? Qt::AlignRight : Qt::AlignHCenter)));
    label->setPadding(QMargins(0, 0, 0, 6));
    label->setColor(m_colors.text);
    label->setText(tr("peak %1 (rank %2)").arg(formatBytes(r.peakMemoryBytes)).arg(rank));
}

void MemoryChart::drawLimit(double divisor, double top)
{
    const double limit = m_snapshot->deviceMemoryBytes;
    if (limit <= 0)
        return;
    const double peak = std::max(peakOver(*m_snapshot, m_rank), measuredPeak());
    m_summary->setText(m_summary->text()
        + tr(" · device limit %1 (%2 used at the peak)").arg(formatBytes(limit), formatPercent(peak / limit)));
    if (limit / divisor > top)
        return; // far above the curves: named in the summary, not drawn, so the curves stay readable
    auto* line = new QCPItemStraightLine(m_plot);
    line->point1->setCoords(0, limit / divisor);
    line->point2->setCoords(1, limit / divisor);
    line->setPen(QPen(m_colors.invalid, 1.5, Qt::DashLine));
    auto* text = new QCPItemText(m_plot);
    text->setColor(m_colors.invalid);
    text->setFont(QFont(font().family(), 8));
    text->position->setCoords(m_snapshot->sim.makespanUs, limit / divisor);
    text->setPositionAlignment(Qt::AlignBottom | Qt::AlignRight);
    text->setText(tr("device limit %1").arg(formatBytes(limit)));
}

} // namespace dps::ui
