#include "widgets/timelineview.h"

#include "document/formatting.h"

#include <QAction>
#include <QHelpEvent>
#include <QPainter>
#include <QSvgGenerator>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace dps::ui {

namespace {

/// Tick labels in the unit that suits the span shown (µs, ms or s).
class TimeTicker : public QCPAxisTicker {
public:
    void setDivisor(double divisor) { m_divisor = divisor; }

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override
    {
        return QCPAxisTicker::getTickLabel(tick / m_divisor, locale, formatChar, precision);
    }

private:
    double m_divisor = 1.0;
};

/// The unit of a time span: divisor and axis label.
std::pair<double, QString> timeUnit(double spanUs)
{
    if (spanUs >= 5e6)
        return { 1e6, QObject::tr("time (s)") };
    if (spanUs >= 5e3)
        return { 1e3, QObject::tr("time (ms)") };
    return { 1.0, QObject::tr("time (µs)") };
}

double laneMakespan(const SimulationSnapshot& s)
{
    return s.timed ? s.sim.makespanUs : s.blocks.endUs();
}

} // namespace

TimelineView::TimelineView(QWidget* parent)
    : QCustomPlot(parent)
{
    setupAxes();
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setMinimumHeight(160);
    applyColors(ChartColors::fromPalette(palette()));
    connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &TimelineView::clampRange);
    m_pathAction = new QAction(tr("&Critical Path"), this);
    m_pathAction->setCheckable(true);
    m_pathAction->setToolTip(tr("Outline the chain of actions and transfers that sets the step's end"));
    connect(m_pathAction, &QAction::toggled, this, [this] {
        updatePaths();
        replot(rpQueuedReplot);
    });
    addAction(m_pathAction);
    m_commsAction = new QAction(tr("Sends and &Receives"), this);
    m_commsAction->setCheckable(true);
    m_commsAction->setToolTip(tr("Add the sends and receives PyTorch's runtime adds, time them where they sit and draw "
                                 "them under each rank's blocks (a stalled receive in black)"));
    connect(m_commsAction, &QAction::toggled, this, &TimelineView::commsToggled);
    addAction(m_commsAction);
    setContextMenuPolicy(Qt::ActionsContextMenu);
}

void TimelineView::setCriticalPathShown(bool shown)
{
    m_pathAction->setChecked(shown);
}

bool TimelineView::criticalPathShown() const
{
    return m_pathAction->isChecked();
}

CriticalPath TimelineView::predictedCriticalPath(int index) const
{
    const SnapshotPtr s = laneSnapshot(index);
    if (!s || !s->valid() || !s->schedule)
        return {};
    return criticalPath(*s->schedule, s->sim, s->costs);
}

void TimelineView::setLaneCriticalPath(int index, std::shared_ptr<const CriticalPath> path)
{
    if (index < 0 || index >= laneCount())
        return;
    m_lanePaths.resize(m_lanes.size());
    m_lanePaths[static_cast<std::size_t>(index)] = std::move(path);
    updatePaths();
    replot(rpQueuedReplot);
}

void TimelineView::updatePaths()
{
    const bool shown = criticalPathShown();
    m_lanePaths.resize(m_lanes.size());
    for (int i = 0; i < laneCount(); ++i) {
        const auto& own = m_lanePaths[static_cast<std::size_t>(i)];
        PathMarks predicted = !shown ? PathMarks {} : own ? pathMarks(*own) : pathMarks(predictedCriticalPath(i));
        PathMarks measured = shown && i == 0 && m_measuredPath ? pathMarks(*m_measuredPath) : PathMarks {};
        m_lanes[static_cast<std::size_t>(i)].plottable->setCriticalPath(std::move(predicted), std::move(measured));
    }
}

void TimelineView::setupAxes()
{
    setTimeAxisUnit(xAxis, 1.0);
    yAxis->setTicker(QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText));
    yAxis->setRangeReversed(true);
    yAxis->grid()->setVisible(false);
    yAxis->setSubTicks(false);
    yAxis->setTickLength(0, 0);
    xAxis->setSubTicks(false);
    axisRect()->setRangeDrag(Qt::Horizontal);
    axisRect()->setRangeZoom(Qt::Horizontal);
    axisRect()->setRangeZoomFactor(0.8);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    setNoAntialiasingOnDrag(true);
    setPlottingHints(QCP::phCacheLabels | QCP::phImmediateRefresh);
}

void styleChartAxes(QCustomPlot& plot, const ChartColors& colors)
{
    for (QCPAxis* axis : { plot.xAxis, plot.yAxis }) {
        axis->setBasePen(QPen(colors.axis));
        axis->setTickPen(QPen(colors.axis));
        axis->setSubTickPen(QPen(colors.axis));
        axis->setTickLabelColor(colors.text);
        axis->setLabelColor(colors.text);
        axis->grid()->setPen(QPen(colors.grid, 1, Qt::DotLine));
    }
}

void TimelineView::applyColors(const ChartColors& colors)
{
    m_colors = colors;
    setBackground(colors.background);
    axisRect()->setBackground(colors.background);
    styleChartAxes(*this, colors);
    for (auto& lane : m_lanes)
        lane.plottable->setColors(colors);
    replot(rpQueuedReplot);
}

TimelinePlottable* TimelineView::lane(int index) const
{
    return index >= 0 && index < laneCount() ? m_lanes[index].plottable : nullptr;
}

SnapshotPtr TimelineView::laneSnapshot(int index) const
{
    return index >= 0 && index < laneCount() ? m_lanes[index].snapshot : nullptr;
}

bool TimelineView::sameShape(const std::vector<SnapshotPtr>& lanes) const
{
    if (lanes.size() != m_lanes.size())
        return false;
    for (std::size_t i = 0; i < lanes.size(); ++i) {
        const auto& before = m_lanes[i].snapshot;
        if (!before || before->variantName != lanes[i]->variantName || before->ranks() != lanes[i]->ranks())
            return false;
    }
    return true;
}

void TimelineView::setSnapshot(const SnapshotPtr& snapshot)
{
    rebuildLanes(snapshot ? std::vector<SnapshotPtr> { snapshot } : std::vector<SnapshotPtr> {}, false);
}

void TimelineView::setLanes(const std::vector<SnapshotPtr>& lanes)
{
    rebuildLanes(lanes, true);
}

void TimelineView::rebuildLanes(const std::vector<SnapshotPtr>& lanes, bool titled)
{
    const QCPRange before = xAxis->range();
    const bool keepZoom = sameShape(lanes) && m_makespanUs > 0
        && (before.lower > -0.015 * m_makespanUs || before.upper < 1.015 * m_makespanUs);
    clearPlottables();
    m_lanes.clear();
    m_hovered = {};
    m_drag = {};
    m_makespanUs = 0.0;
    int row = 0;
    for (const auto& s : lanes) {
        auto* p = new TimelinePlottable(xAxis, yAxis);
        p->setColors(m_colors);
        p->setBlocks(std::shared_ptr<const BlockIndex>(s, &s->blocks), laneMakespan(*s));
        p->setCosts(std::shared_ptr<const CostModel>(s, &s->costs));
        if (s->sim.commsTimed)
            p->setComms(std::shared_ptr<const SimResult>(s, &s->sim));
        if (titled) {
            p->setTitle(QStringLiteral("%1 — %2, %3 ranks, %4 microbatches")
                            .arg(QString::fromStdString(s->variantName),
                                s->schedule ? QString::fromUtf8(kindDisplayName(s->schedule->kind).data()) : tr("?"))
                            .arg(s->ranks())
                            .arg(s->schedule ? s->schedule->microbatches : 0));
            ++row;
        }
        p->setRowOffset(row);
        row += std::max(1, s->ranks());
        m_makespanUs = std::max(m_makespanUs, laneMakespan(*s));
        m_lanes.push_back({ p, s });
    }
    m_measuredPath.reset(); // the measured blocks went with the old lane 0
    m_lanePaths.clear();
    updatePaths();
    updateTicks(titled);
    yAxis->setRange(-0.5, std::max(row, 1) - 0.5);
    if (keepZoom)
        clampRange(before);
    else
        fitAll();
    replot();
}

void TimelineView::updateTicks(bool titled)
{
    auto ticker = qSharedPointerCast<QCPAxisTickerText>(yAxis->ticker());
    ticker->clear();
    for (const auto& lane : m_lanes)
        for (int r = 0; r < lane.snapshot->ranks(); ++r)
            ticker->addTick(lane.plottable->rowOffset() + r, titled ? tr("r%1").arg(r) : tr("rank %1").arg(r));
    setTimeAxisUnit(xAxis, m_makespanUs);
}

void setTimeAxisUnit(QCPAxis* axis, double spanUs)
{
    auto ticker = axis->ticker().dynamicCast<TimeTicker>();
    if (!ticker) {
        ticker.reset(new TimeTicker);
        axis->setTicker(ticker);
    }
    const auto [divisor, label] = timeUnit(spanUs);
    ticker->setDivisor(divisor);
    axis->setLabel(label);
}

void TimelineView::fitAll()
{
    const double span = m_makespanUs > 0 ? m_makespanUs : 1.0;
    xAxis->setRange(-0.01 * span, 1.01 * span);
    replot(rpQueuedReplot);
}

void TimelineView::clampRange(const QCPRange& range)
{
    if (m_clamping || m_makespanUs <= 0)
        return;
    const TimeMapping m = TimeMapping(range.lower, range.upper, 0, 1)
                              .clamped(-0.02 * m_makespanUs, 1.02 * m_makespanUs, std::max(1e-3, m_makespanUs * 1e-4));
    if (std::abs(m.startUs() - range.lower) < 1e-12 && std::abs(m.endUs() - range.upper) < 1e-12)
        return;
    m_clamping = true;
    xAxis->setRange(m.startUs(), m.endUs());
    m_clamping = false;
}

void TimelineView::zoomBy(double factor)
{
    const QCPRange r = xAxis->range();
    const TimeMapping m = TimeMapping(r.lower, r.upper, 0, 1).zoomed(factor, r.center());
    xAxis->setRange(m.startUs(), m.endUs());
    replot(rpQueuedReplot);
}

void TimelineView::zoomToBlock(int rank, int position, double share)
{
    const TimelinePlottable* p = lane(0);
    const TimelineBlock* b = p && p->blocks() ? p->blocks()->block(rank, position) : nullptr;
    if (!b || share <= 0.0)
        return;
    const double width = std::max(b->endUs - b->startUs, 1e-3) / std::min(share, 1.0);
    const double centre = (b->startUs + b->endUs) / 2.0;
    m_userZoomed = true;
    xAxis->setRange(centre - width / 2.0, centre + width / 2.0);
    replot(rpQueuedReplot);
}

void TimelineView::panBy(double fraction)
{
    const QCPRange r = xAxis->range();
    const TimeMapping m = TimeMapping(r.lower, r.upper, 0, 1).panned(fraction);
    xAxis->setRange(m.startUs(), m.endUs());
    replot(rpQueuedReplot);
}

void TimelineView::setMeasuredBlocks(
    std::shared_ptr<const BlockIndex> measured, std::shared_ptr<const CriticalPath> measuredPath)
{
    TimelinePlottable* p = lane(0);
    if (!p)
        return;
    const double end = measured ? measured->endUs() : 0.0;
    m_measuredPath = measured ? std::move(measuredPath) : nullptr;
    p->setMeasuredBlocks(std::move(measured));
    updatePaths();
    double span = 0.0;
    for (const auto& l : m_lanes)
        span = std::max(span, laneMakespan(*l.snapshot));
    m_makespanUs = std::max(span, end);
    setTimeAxisUnit(xAxis, m_makespanUs);
    if (!m_userZoomed)
        fitAll();
    replot(rpQueuedReplot);
}

const BlockIndex* TimelineView::measuredBlocks() const
{
    const TimelinePlottable* p = lane(0);
    return p ? p->measuredBlocks() : nullptr;
}

QString TimelineView::measuredTooltip(const TimelineBlock& predicted) const
{
    const BlockIndex* measured = measuredBlocks();
    if (!measured || predicted.rank >= measured->rankCount())
        return {};
    for (const auto& m : measured->blocks(predicted.rank))
        if (m.position == predicted.position) {
            QString text = tr("<br><b>measured</b>: start %1 (%2%3) · end %4 · %5, of which waiting %6")
                               .arg(formatTime(m.startUs),
                                   m.startUs >= predicted.startUs ? QStringLiteral("+") : QStringLiteral("−"),
                                   formatTime(std::abs(m.startUs - predicted.startUs)), formatTime(m.endUs),
                                   formatTime(m.endUs - m.startUs), formatTime(m.waitUs));
            if (m.a2aUs > 0.0)
                text += tr("<br>all-to-all %1, of which %2 hidden behind the other half")
                            .arg(formatTime(m.a2aUs), formatTime(m.a2aHiddenUs));
            return text;
        }
    return tr("<br><b>measured</b>: not in the run");
}

void TimelineView::markBlock(BlockRef block)
{
    if (auto* p = lane(0)) {
        p->setMarked(block);
        replot(rpQueuedReplot);
    }
}

QPointF TimelineView::blockCenter(int rank, int position) const
{
    const TimelinePlottable* p = lane(0);
    const TimelineBlock* b = p && p->blocks() ? p->blocks()->block(rank, position) : nullptr;
    return b ? p->blockRect(*b).center() : QPointF(-1, -1);
}

double TimelineView::timeToPixel(double us) const
{
    return lane(0) ? lane(0)->timeMapping().toPixel(us) : 0.0;
}

TimelineView::Hit TimelineView::hitAt(const QPointF& pos) const
{
    for (int i = 0; i < laneCount(); ++i) {
        const CommRef comm = m_lanes[i].plottable->commAt(pos); // drawn over the blocks
        if (comm.valid())
            return { i, {}, comm };
        const BlockRef ref = m_lanes[i].plottable->blockAt(pos);
        if (ref.valid())
            return { i, ref, {} };
    }
    return {};
}

QString TimelineView::commTooltip(const Hit& hit) const
{
    const CommTiming* c = m_lanes[hit.lane].plottable->comm(hit.comm);
    if (!c)
        return {};
    QString text = tr("<b>%1</b> &nbsp;rank %2, position %3 in the program<br>posted %4 · start %5 · end %6")
                       .arg(QString::fromStdString(toString(c->op)))
                       .arg(hit.comm.rank)
                       .arg(c->position)
                       .arg(formatTime(c->postedUs), formatTime(c->startUs), formatTime(c->endUs));
    for (const StalledReceive& r : m_lanes[hit.lane].snapshot->sim.stalledReceives)
        if (r.rank == hit.comm.rank && r.position == c->position)
            text += tr("<br><b>late</b>: %1 waited %2 for it; %3")
                        .arg(QString::fromStdString(r.consumer), formatTime(r.stallUs),
                            QString::fromStdString(r.cause).toHtmlEscaped());
    if (m_editable && hit.lane == 0 && isPointToPoint(c->op.kind))
        text += tr("<br><i>drag along the row to move it among the rank's actions</i>");
    return text;
}

QString TimelineView::tooltipFor(const Hit& hit) const
{
    if (hit.comm.valid())
        return commTooltip(hit);
    const SimulationSnapshot& s = *m_lanes[hit.lane].snapshot;
    const TimelineBlock* b = s.blocks.block(hit.block.rank, hit.block.position);
    if (!b)
        return {};
    const auto opLine = [](const Op& op) {
        static const char* const kinds[]
            = { "forward", "backward for inputs", "backward for weights", "full backward" };
        return QObject::tr("%1 of stage %2, microbatch %3")
            .arg(QLatin1String(kinds[static_cast<int>(op.kind)]))
            .arg(op.stage)
            .arg(op.microbatch);
    };
    QString text = QStringLiteral("<b>%1</b> &nbsp;rank %2, position %3<br>")
                       .arg(QString::fromStdString(toString(b->action)).toHtmlEscaped())
                       .arg(b->rank)
                       .arg(b->position);
    text += opLine(b->action.op);
    if (b->action.overlapped)
        text += tr("<br>overlapped with ") + opLine(b->action.backward);
    text += tr("<br>start %1 · end %2 · %3")
                .arg(formatTime(b->startUs), formatTime(b->endUs), formatTime(b->endUs - b->startUs));
    text += communicationLine(s, *b);
    text += tr("<br>waited for: %1").arg(QString::fromStdString(describeWait(s, b->rank, b->position)).toHtmlEscaped());
    if (hit.lane == 0)
        text += measuredTooltip(*b);
    if (b->invalid)
        text += tr("<br><b>named by the validator</b> (see the list under the chart)");
    if (m_editable)
        text += tr("<br><i>drag along the row to move it in the order</i>");
    return text;
}

QString TimelineView::communicationLine(const SimulationSnapshot& s, const TimelineBlock& b) const
{
    const auto stageCount = static_cast<int>(s.costs.stages.size());
    if (b.action.overlapped) {
        const int fStage = b.action.op.stage;
        const int bStage = b.action.backward.stage;
        if (fStage < 0 || fStage >= stageCount || bStage < 0 || bStage >= stageCount)
            return {};
        const OverlapLayout layout = s.costs.overlapLayout(fStage, bStage);
        if (layout.commUs <= 0.0)
            return {};
        return tr("<br>expert all-to-all %1, of which hidden under compute %2 (%3); exposed %4")
            .arg(formatTime(layout.commUs), formatTime(layout.hiddenCommUs),
                formatPercent(layout.hiddenCommUs / layout.commUs), formatTime(layout.commUs - layout.hiddenCommUs));
    }
    const int stage = b.action.op.stage;
    if (stage < 0 || stage >= stageCount || s.costs.stages[stage].a2aBytes <= 0.0 || b.action.op.kind == OpKind::W)
        return {};
    return tr("<br>expert all-to-all: %1 leave the device per forward (dispatch + combine; the backward sends them "
              "back), waited for in this slot")
        .arg(formatBytes(s.costs.stages[stage].a2aBytes));
}

QString TimelineView::tooltipAt(const QPointF& pos) const
{
    const Hit hit = hitAt(pos);
    return hit.lane >= 0 ? tooltipFor(hit) : QString();
}

void TimelineView::updateHover(const QPointF& pos)
{
    const Hit hit = hitAt(pos);
    if (hit.lane == m_hovered.lane && hit.block == m_hovered.block && hit.comm == m_hovered.comm)
        return;
    if (auto* p = lane(m_hovered.lane))
        p->setHovered({});
    m_hovered = hit;
    if (auto* p = lane(hit.lane))
        p->setHovered(hit.block);
    setCursor(hit.lane >= 0 && m_editable ? Qt::OpenHandCursor : Qt::ArrowCursor);
    emit blockHovered(hit.block.rank, hit.block.position);
    replot(rpQueuedReplot);
}

void TimelineView::mousePressEvent(QMouseEvent* event)
{
    const Hit hit = m_editable && event->button() == Qt::LeftButton ? hitAt(event->position()) : Hit {};
    const double pressUs = hit.lane == 0 ? lane(0)->timeMapping().toTime(event->position().x()) : 0.0;
    if (hit.lane != 0 || (hit.comm.valid() && !startCommDrag(hit, pressUs))) {
        QCustomPlot::mousePressEvent(event);
        return;
    }
    if (!hit.comm.valid()) {
        const TimelineBlock* b = m_lanes[0].snapshot->blocks.block(hit.block.rank, hit.block.position);
        m_drag = { hit, pressUs, (b->startUs + b->endUs) / 2.0, b->position };
    }
    setCursor(Qt::ClosedHandCursor);
    event->accept();
}

bool TimelineView::startCommDrag(const Hit& hit, double pressUs)
{
    const CommTiming* c = lane(0)->comm(hit.comm);
    const auto& program = m_lanes[0].snapshot->program;
    if (!c || !isPointToPoint(c->op.kind) || !program
        || static_cast<std::size_t>(hit.comm.rank) >= program->rows.size())
        return false;
    // The bar's left end is when it is posted: where it is dropped decides the compute steps it follows.
    m_drag = { hit, pressUs, c->postedUs, c->position };
    return true;
}

void TimelineView::updateDrag(const QPointF& pos)
{
    const double offset = lane(0)->timeMapping().toTime(pos.x()) - m_drag.pressTimeUs;
    const BlockIndex& blocks = m_lanes[0].snapshot->blocks;
    if (const CommRef comm = m_drag.hit.comm; comm.valid()) {
        const auto& row = m_lanes[0].snapshot->program->rows[static_cast<std::size_t>(comm.rank)];
        m_drag.drop
            = commDropCell(row, blocks.blocks(comm.rank), lane(0)->comm(comm)->position, m_drag.centreUs + offset);
        lane(0)->setCommDrag(comm, offset);
        replot(rpQueuedReplot);
        return;
    }
    m_drag.drop = blocks.dropPosition(m_drag.hit.block.rank, m_drag.hit.block.position, m_drag.centreUs + offset);
    lane(0)->setDrag(m_drag.hit.block, offset, m_drag.drop);
    replot(rpQueuedReplot);
}

void TimelineView::mouseMoveEvent(QMouseEvent* event)
{
    if (m_drag.hit.lane == 0) {
        updateDrag(event->position());
        event->accept();
        return;
    }
    QCustomPlot::mouseMoveEvent(event);
    if (event->buttons() == Qt::NoButton)
        updateHover(event->position());
}

void TimelineView::finishDrag(const QPointF& pos)
{
    updateDrag(pos);
    const BlockRef block = m_drag.hit.block;
    const CommTiming* comm = lane(0)->comm(m_drag.hit.comm);
    const int rank = m_drag.hit.comm.rank;
    const int cell = comm ? comm->position : -1;
    const int drop = m_drag.drop;
    m_drag = {};
    lane(0)->clearDrag();
    setCursor(Qt::ArrowCursor);
    replot(rpQueuedReplot);
    if (comm && drop != cell && drop >= 0)
        emit commMoveRequested(rank, cell, drop);
    else if (!comm && drop != block.position && drop >= 0)
        emit blockMoveRequested(block.rank, block.position, drop);
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event)
{
    if (m_drag.hit.lane == 0 && event->button() == Qt::LeftButton) {
        finishDrag(event->position());
        event->accept();
        return;
    }
    QCustomPlot::mouseReleaseEvent(event);
}

void TimelineView::keyPressEvent(QKeyEvent* event)
{
    switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
        zoomBy(1.5);
        break;
    case Qt::Key_Minus:
        zoomBy(1.0 / 1.5);
        break;
    case Qt::Key_Left:
        panBy(-0.1);
        break;
    case Qt::Key_Right:
        panBy(0.1);
        break;
    case Qt::Key_Home:
    case Qt::Key_0:
        fitAll();
        break;
    case Qt::Key_Escape:
        if (m_drag.hit.lane == 0) {
            m_drag = {};
            lane(0)->clearDrag();
            replot(rpQueuedReplot);
        }
        break;
    default:
        QCustomPlot::keyPressEvent(event);
        return;
    }
    event->accept();
}

void TimelineView::leaveEvent(QEvent* event)
{
    updateHover(QPointF(-1, -1));
    QCustomPlot::leaveEvent(event);
}

void TimelineView::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::PaletteChange)
        applyColors(ChartColors::fromPalette(palette()));
    QCustomPlot::changeEvent(event);
}

bool TimelineView::event(QEvent* event)
{
    if (event->type() != QEvent::ToolTip)
        return QCustomPlot::event(event);
    auto* help = static_cast<QHelpEvent*>(event);
    const Hit hit = hitAt(help->pos());
    if (hit.lane < 0) {
        QToolTip::hideText();
        event->ignore();
        return true;
    }
    const TimelineBlock* b = m_lanes[hit.lane].snapshot->blocks.block(hit.block.rank, hit.block.position);
    QToolTip::showText(help->globalPos(), tooltipFor(hit), this, lane(hit.lane)->blockRect(*b).toAlignedRect());
    return true;
}

TimelineLegend::TimelineLegend(QWidget* parent)
    : QWidget(parent)
{
    m_entries = { { tr("F forward"), 0 }, { tr("I backward (inputs)"), 1 }, { tr("W backward (weights)"), 2 },
        { tr("B full backward"), 3 }, { tr("F&B overlapped"), 4 }, { tr("all-to-all (zoomed F&B: lower lane)"), 7 },
        { tr("idle"), 5 }, { tr("invalid"), 6 }, { tr("critical path"), 8 } };
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
    setToolTip(tr("An overlapped F&B slot runs a forward (upper half) and a backward (lower half) at once. Zoomed in, "
                  "a slot of an expert-parallel model shows its two lanes: compute above, the all-to-all below (blue: "
                  "the forward half's, red: the backward half's). Numbers are microbatches; hover a block for its "
                  "stage, times and what it waited for. View → Critical Path outlines the chain of actions and "
                  "transfers that sets the step's end (the measured one's arrows dashed); the rest fades."));
}

void TimelineLegend::setCommsShown(bool shown)
{
    std::erase_if(m_entries, [](const Entry& e) { return e.kind >= 9; });
    if (shown)
        m_entries.insert(m_entries.end(), { { tr("send"), 9 }, { tr("receive"), 10 }, { tr("stalled receive"), 11 } });
    updateGeometry();
    update();
}

int TimelineLegend::entryWidth(const Entry& entry) const
{
    return fontMetrics().horizontalAdvance(entry.label) + 36;
}

std::vector<QPoint> TimelineLegend::layoutEntries(int width) const
{
    std::vector<QPoint> positions;
    const int rowHeight = fontMetrics().height() + 8;
    int x = 4, y = 0;
    for (const auto& e : m_entries) {
        if (x > 4 && x + entryWidth(e) > width) {
            x = 4;
            y += rowHeight;
        }
        positions.emplace_back(x, y);
        x += entryWidth(e);
    }
    return positions;
}

QSize TimelineLegend::sizeHint() const
{
    int width = 8;
    for (const auto& e : m_entries)
        width += entryWidth(e);
    return { width, fontMetrics().height() + 8 };
}

QSize TimelineLegend::minimumSizeHint() const
{
    return { 160, fontMetrics().height() + 8 };
}

int TimelineLegend::heightForWidth(int width) const
{
    const auto positions = layoutEntries(width);
    return (positions.empty() ? 0 : positions.back().y()) + fontMetrics().height() + 8;
}

void TimelineLegend::paintSwatch(QPainter& p, const QRect& swatch, int kind) const
{
    const ChartColors colors = ChartColors::fromPalette(palette());
    if (kind < 4) {
        p.fillRect(swatch, kindColor(static_cast<OpKind>(kind)));
    } else if (kind == 4) {
        p.fillRect(swatch.adjusted(0, 0, 0, -swatch.height() / 2), kindColor(OpKind::F));
        p.fillRect(swatch.adjusted(0, swatch.height() / 2, 0, 0), kindColor(OpKind::B));
    } else if (kind == 7) {
        const QColor f = kindColor(OpKind::F);
        p.fillRect(swatch,
            QColor((f.red() * 2 + colors.background.red() * 3) / 5, (f.green() * 2 + colors.background.green() * 3) / 5,
                (f.blue() * 2 + colors.background.blue() * 3) / 5));
        p.fillRect(swatch, QBrush(f.darker(120), Qt::DiagCrossPattern));
    } else if (kind >= 9) {
        const QColor color = kind == 9 ? TimelinePlottable::sendColor(colors.dark)
            : kind == 10               ? TimelinePlottable::receiveColor(colors.dark)
                                       : QColor(colors.dark ? Qt::white : Qt::black);
        p.fillRect(swatch.adjusted(0, swatch.height() * 2 / 3, 0, 0), color);
    } else if (kind == 8) {
        p.fillRect(swatch, kindColor(OpKind::F));
        p.setPen(QPen(TimelinePlottable::pathColor(colors.dark), 2.5));
        p.drawRect(swatch.adjusted(1, 1, -1, -1));
    } else if (kind == 5) {
        p.fillRect(swatch, colors.idle);
        p.fillRect(swatch, QBrush(colors.idleHatch, Qt::BDiagPattern));
    } else {
        p.fillRect(swatch, kindColor(OpKind::F));
        p.fillRect(swatch, QBrush(colors.invalid, Qt::DiagCrossPattern));
        p.setPen(QPen(colors.invalid, 2));
        p.drawRect(swatch.adjusted(1, 1, -1, -1));
    }
}

void TimelineLegend::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    const QFontMetrics fm(fontMetrics());
    const int h = fm.height() + 8;
    const auto positions = layoutEntries(width());
    for (std::size_t i = 0; i < m_entries.size(); ++i) {
        const QPoint at = positions[i];
        paintSwatch(p, QRect(at.x(), at.y() + 5, 20, h - 10), m_entries[i].kind);
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QRect(at.x() + 25, at.y(), entryWidth(m_entries[i]), h), Qt::AlignVCenter, m_entries[i].label);
    }
}

QString saveChart(QCustomPlot* plot, const QString& path, int width, int height)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    const int w = width > 0 ? width : plot->width();
    const int h = height > 0 ? height : plot->height();
    bool ok = false;
    if (suffix == QLatin1String("png")) {
        ok = plot->savePng(path, w, h, 2.0);
    } else if (suffix == QLatin1String("pdf")) {
        ok = plot->savePdf(path, w, h);
    } else if (suffix == QLatin1String("svg")) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(QSize(w, h));
        svg.setViewBox(QRect(0, 0, w, h));
        svg.setTitle(QObject::tr("DualPipe Studio chart"));
        QCPPainter painter;
        ok = painter.begin(&svg);
        if (ok) {
            plot->toPainter(&painter, w, h);
            painter.end();
        }
    } else {
        return QObject::tr("unknown chart format '%1' (use .png, .svg or .pdf)").arg(suffix);
    }
    return ok ? QString() : QObject::tr("could not write %1").arg(path);
}

} // namespace dps::ui
