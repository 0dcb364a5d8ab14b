#include "widgets/timelineplottable.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace dps::ui {

TimelinePlottable::TimelinePlottable(QCPAxis* keyAxis, QCPAxis* valueAxis)
    : QCPAbstractPlottable(keyAxis, valueAxis)
{
    setSelectable(QCP::stNone);
    setAntialiased(false);
}

void TimelinePlottable::setBlocks(std::shared_ptr<const BlockIndex> blocks, double makespanUs)
{
    m_blocks = std::move(blocks);
    m_makespanUs = makespanUs;
    m_hovered = {};
    m_marked = {};
    m_drag = {};
}

void TimelinePlottable::setCosts(std::shared_ptr<const CostModel> costs)
{
    m_costs = std::move(costs);
    m_layouts.clear();
}

const OverlapLayout* TimelinePlottable::overlapLayout(int fStage, int bStage) const
{
    if (!m_costs)
        return nullptr;
    const auto key = std::make_pair(fStage, bStage);
    auto it = m_layouts.find(key);
    if (it == m_layouts.end()) {
        OverlapLayout layout;
        try {
            layout = m_costs->overlapLayout(fStage, bStage);
        } catch (const std::exception&) { // a stage the cost model does not list (an invalid order): flat
        }
        it = m_layouts.emplace(key, std::move(layout)).first;
    }
    return &it->second;
}

std::vector<TimelinePlottable::LaneRect> TimelinePlottable::laneRects(const TimelineBlock& block) const
{
    Frame f { timeMapping(), rowMapping(), {}, {}, 6.0 };
    return laneRectsIn(f, block, rectIn(f, block));
}

std::vector<TimelinePlottable::LaneRect> TimelinePlottable::laneRectsIn(
    const Frame& f, const TimelineBlock& block, const QRectF& rect) const
{
    std::vector<LaneRect> result;
    if (!block.action.overlapped || rect.width() < kLaneMinWidthPx)
        return result;
    const OverlapLayout* layout = overlapLayout(block.action.op.stage, block.action.backward.stage);
    if (!layout || layout->segments.empty())
        return result;
    const double middle = rect.center().y();
    for (const LaneSegment& seg : layout->segments) {
        const double x0 = std::max(f.time.toPixel(block.startUs + seg.startUs), rect.left());
        const double x1 = std::min(f.time.toPixel(block.startUs + seg.endUs), rect.right());
        if (x1 <= x0)
            continue;
        const bool compute = seg.lane == Chunk::Compute;
        result.push_back(
            { QRectF(QPointF(x0, compute ? rect.top() : middle), QPointF(x1, compute ? middle : rect.bottom())), seg });
    }
    return result;
}

void TimelinePlottable::setMeasuredBlocks(std::shared_ptr<const BlockIndex> measured)
{
    m_measured = std::move(measured);
}

void TimelinePlottable::setDrag(BlockRef block, double offsetUs, int dropPosition)
{
    m_drag = { block, offsetUs, dropPosition };
}

TimeMapping TimelinePlottable::timeMapping() const
{
    const QCPAxis* key = keyAxis();
    if (!key)
        return {};
    const QCPRange range = key->range();
    return { range.lower, range.upper, key->coordToPixel(range.lower), key->coordToPixel(range.upper) };
}

RowMapping TimelinePlottable::rowMapping() const
{
    const QCPAxis* value = valueAxis();
    const int rows = m_rowOffset + (m_blocks ? m_blocks->rankCount() : 0);
    if (!value || rows <= 0)
        return {};
    const double top = value->coordToPixel(-0.5);
    const double bottom = value->coordToPixel(rows - 0.5);
    return { rows, std::min(top, bottom), std::max(top, bottom) };
}

QRectF TimelinePlottable::blockRect(const TimelineBlock& block) const
{
    Frame f { timeMapping(), rowMapping(), {}, {}, 6.0 };
    return rectIn(f, block);
}

QRectF TimelinePlottable::rectIn(const Frame& f, const TimelineBlock& block) const
{
    const int row = block.rank + m_rowOffset;
    const double x0 = f.time.toPixel(block.startUs);
    const double x1 = std::max(f.time.toPixel(block.endUs), x0 + 1.0);
    const double top = f.rows.bandTop(row);
    const double bottom = f.rows.bandBottom(row);
    // With a measurement the predicted blocks take the upper part of the band, the measured ones the lower.
    const double split = m_measured ? top + (bottom - top) * kPredictedShare : bottom;
    return QRectF(QPointF(x0, top), QPointF(x1, split));
}

QRectF TimelinePlottable::measuredRectIn(const Frame& f, const TimelineBlock& block) const
{
    const int row = block.rank + m_rowOffset;
    const double x0 = f.time.toPixel(block.startUs);
    const double x1 = std::max(f.time.toPixel(block.endUs), x0 + 1.0);
    const double top = f.rows.bandTop(row);
    const double bottom = f.rows.bandBottom(row);
    return QRectF(QPointF(x0, top + (bottom - top) * (kPredictedShare + 0.04)), QPointF(x1, bottom));
}

BlockRef TimelinePlottable::blockAt(const QPointF& pixel) const
{
    if (!m_blocks)
        return {};
    const RowMapping rows = rowMapping();
    const int rank = rows.rowAt(pixel.y()) - m_rowOffset;
    if (rank < 0 || rank >= m_blocks->rankCount())
        return {};
    const TimeMapping time = timeMapping();
    const double tolerance = time.scale() > 0 ? 2.0 / time.scale() : 0.0;
    const TimelineBlock* b = m_blocks->hit(rank, time.toTime(pixel.x()), tolerance);
    return b ? BlockRef { b->rank, b->position } : BlockRef {};
}

double TimelinePlottable::selectTest(const QPointF& pos, bool onlySelectable, QVariant* details) const
{
    if ((onlySelectable && mSelectable == QCP::stNone) || !mKeyAxis || !mValueAxis)
        return -1;
    const BlockRef ref = blockAt(pos);
    if (!ref.valid())
        return -1;
    if (details)
        details->setValue(QPoint(ref.rank, ref.position));
    return 0;
}

QCPRange TimelinePlottable::getKeyRange(bool& foundRange, QCP::SignDomain) const
{
    foundRange = m_blocks && m_blocks->size() > 0;
    const double end = std::max(m_makespanUs, m_blocks ? m_blocks->endUs() : 0.0);
    return QCPRange(0.0, std::max(end, m_measured ? m_measured->endUs() : 0.0));
}

QCPRange TimelinePlottable::getValueRange(bool& foundRange, QCP::SignDomain, const QCPRange&) const
{
    const int ranks = m_blocks ? m_blocks->rankCount() : 0;
    foundRange = ranks > 0;
    return QCPRange(m_rowOffset - (m_title.isEmpty() ? 0.5 : 1.5), m_rowOffset + ranks - 0.5);
}

TimelinePlottable::Frame TimelinePlottable::frame(QCPPainter* painter) const
{
    Frame f { timeMapping(), rowMapping(), clipRect(), painter->font(), 6.0 };
    const double band = f.rows.bandHeight();
    f.font.setPointSizeF(std::clamp(band * 0.36, 6.5, 9.0));
    f.digitWidth = QFontMetricsF(f.font).horizontalAdvance(QLatin1Char('0'));
    return f;
}

void TimelinePlottable::draw(QCPPainter* painter)
{
    if (!m_blocks || !mKeyAxis || !mValueAxis)
        return;
    const Frame f = frame(painter);
    painter->save();
    painter->setClipRect(f.clip);
    painter->setFont(f.font);
    drawTitle(painter, f);
    for (int r = 0; r < m_blocks->rankCount(); ++r) {
        drawIdle(painter, f, r);
        drawRank(painter, f, r);
        drawComms(painter, f, r);
        drawMeasured(painter, f, r);
    }
    drawPath(painter, f, m_predictedPath, false);
    if (m_measured)
        drawPath(painter, f, m_measuredPath, true);
    drawDrag(painter, f);
    painter->restore();
}

PathMarks pathMarks(const CriticalPath& path)
{
    PathMarks marks;
    const std::vector<PathElement>& e = path.elements;
    for (std::size_t i = 0; i < e.size(); ++i) {
        if (e[i].kind == PathElementKind::Action) {
            marks.blocks.emplace_back(e[i].rank, e[i].slot);
            continue;
        }
        if (e[i].kind != PathElementKind::Transfer || i == 0)
            continue;
        // The producer is the action before the transfer; the consumer is the slot the transfer leads to.
        std::size_t p = i;
        while (p > 0 && e[p - 1].kind != PathElementKind::Action)
            --p;
        if (p == 0)
            continue;
        marks.links.push_back({ e[p - 1].rank, e[p - 1].slot, e[i].rank, e[i].slot, e[i].startUs, e[i].endUs });
    }
    return marks;
}

void TimelinePlottable::setCriticalPath(PathMarks predicted, PathMarks measured)
{
    m_predictedPath = std::move(predicted);
    m_measuredPath = std::move(measured);
    m_predictedOnPath = { m_predictedPath.blocks.begin(), m_predictedPath.blocks.end() };
    m_measuredOnPath = { m_measuredPath.blocks.begin(), m_measuredPath.blocks.end() };
}

QColor TimelinePlottable::sendColor(bool dark)
{
    return dark ? QColor(0x90, 0xa4, 0xae) : QColor(0x54, 0x6e, 0x7a); // slate
}

QColor TimelinePlottable::receiveColor(bool dark)
{
    return dark ? QColor(0x4d, 0xd0, 0xe1) : QColor(0x00, 0x89, 0x7b); // teal
}

QColor TimelinePlottable::pathColor(bool dark)
{
    return dark ? QColor(0xff, 0x5c, 0xff) : QColor(0xb0, 0x00, 0xc0);
}

void TimelinePlottable::drawPath(QCPPainter* painter, const Frame& f, const PathMarks& marks, bool measured) const
{
    const BlockIndex* index = measured ? m_measured.get() : m_blocks.get();
    if (!index || marks.empty())
        return;
    const auto rectOf = [&](int rank, int i) -> std::optional<QRectF> {
        if (rank < 0 || rank >= index->rankCount() || i < 0
            || static_cast<std::size_t>(i) >= index->blocks(rank).size())
            return std::nullopt;
        const TimelineBlock& b = index->blocks(rank)[static_cast<std::size_t>(i)];
        return measured ? measuredRectIn(f, b) : rectIn(f, b);
    };
    // Blocks off the path fade towards the background, so the path reads at a glance.
    const std::set<std::pair<int, int>>& onPath = measured ? m_measuredOnPath : m_predictedOnPath;
    QColor wash = m_colors.background;
    wash.setAlpha(150);
    for (int rank = 0; rank < index->rankCount(); ++rank) {
        const auto [first, last] = index->visible(rank, f.time.startUs(), f.time.endUs());
        for (int i = first; i < last; ++i)
            if (!onPath.count({ rank, i })) {
                const TimelineBlock& b = index->blocks(rank)[static_cast<std::size_t>(i)];
                painter->fillRect(measured ? measuredRectIn(f, b) : rectIn(f, b), wash);
            }
    }
    painter->setBrush(Qt::NoBrush);
    const QColor color = pathColor(m_colors.dark);
    QPen pen(color, 2.5);
    pen.setJoinStyle(Qt::MiterJoin);
    painter->setPen(pen);
    for (const auto& [rank, i] : marks.blocks)
        if (const auto r = rectOf(rank, i); r && r->right() >= f.clip.left() && r->left() <= f.clip.right())
            painter->drawRect(r->adjusted(1.0, 1.0, -1.0, -1.0));
    // Transfers: from the producer's edge at the transfer's start to the consumer's edge at its end (the
    // message's arrival), with a small head.
    pen.setWidthF(1.8);
    if (measured)
        pen.setStyle(Qt::DashLine); // the measured path's arrows are dashed, the prediction's solid
    painter->setBrush(color);
    for (const PathMarks::Link& l : marks.links) {
        const auto from = rectOf(l.fromRank, l.fromIndex);
        const auto to = rectOf(l.toRank, l.toIndex);
        if (!from || !to)
            continue;
        const bool down = l.toRank > l.fromRank;
        const QPointF a(f.time.toPixel(l.fromUs), down ? from->bottom() : from->top());
        const QPointF b(std::max(f.time.toPixel(l.toUs), a.x()), down ? to->top() : to->bottom());
        painter->setPen(pen);
        painter->drawLine(a, b);
        painter->setPen(QPen(color, 1.0));
        const double dir = b.y() > a.y() ? 1.0 : -1.0;
        const QPointF head[3] = { b, b + QPointF(-3.5, -6.0 * dir), b + QPointF(3.5, -6.0 * dir) };
        painter->drawPolygon(head, 3);
    }
}

void TimelinePlottable::drawTitle(QCPPainter* painter, const Frame& f) const
{
    if (m_title.isEmpty())
        return;
    const double h = f.rows.rowHeight();
    const double y = mValueAxis->coordToPixel(m_rowOffset - 1.0);
    QFont bold = f.font;
    bold.setBold(true);
    bold.setPointSizeF(9.0);
    painter->setFont(bold);
    painter->setPen(m_colors.text);
    painter->drawText(
        QRectF(f.clip.left() + 6, y - h / 2, f.clip.width() - 12, h), Qt::AlignLeft | Qt::AlignBottom, m_title);
    painter->setFont(f.font);
}

void TimelinePlottable::drawIdle(QCPPainter* painter, const Frame& f, int rank) const
{
    const int row = rank + m_rowOffset;
    const double x0 = f.time.toPixel(0.0);
    const double x1 = f.time.toPixel(m_makespanUs);
    const QRectF band(QPointF(x0, f.rows.bandTop(row)), QPointF(x1, f.rows.bandBottom(row)));
    painter->fillRect(band, m_colors.idle);
    painter->fillRect(band, QBrush(m_colors.idleHatch, Qt::BDiagPattern));
}

void TimelinePlottable::drawRank(QCPPainter* painter, const Frame& f, int rank) const
{
    const auto [first, last] = m_blocks->visible(rank, f.time.startUs(), f.time.endUs());
    const auto& list = m_blocks->blocks(rank);
    for (int i = first; i < last; ++i) {
        const TimelineBlock& b = list[i];
        const bool dragged = m_drag.block.valid() && m_drag.block == BlockRef { b.rank, b.position };
        painter->setOpacity(dragged ? 0.3 : 1.0);
        drawBlock(painter, f, b, rectIn(f, b));
    }
    painter->setOpacity(1.0);
}

QRectF TimelinePlottable::commRectIn(const Frame& f, int rank, double postedUs, double endUs) const
{
    const int row = rank + m_rowOffset;
    const double bottom = f.rows.bandBottom(row);
    const double h = std::max(3.0, (bottom - f.rows.bandTop(row)) * 0.22);
    const double x0 = f.time.toPixel(postedUs);
    return QRectF(QPointF(x0, bottom - h), QPointF(std::max(f.time.toPixel(endUs), x0 + 2.0), bottom));
}

const CommTiming* TimelinePlottable::comm(CommRef ref) const
{
    if (!hasComms() || !ref.valid() || static_cast<std::size_t>(ref.rank) >= m_comms->comms.size())
        return nullptr;
    const auto& list = m_comms->comms[static_cast<std::size_t>(ref.rank)];
    return static_cast<std::size_t>(ref.index) < list.size() ? &list[static_cast<std::size_t>(ref.index)] : nullptr;
}

QRectF TimelinePlottable::commRect(CommRef ref) const
{
    const CommTiming* c = comm(ref);
    const Frame f { timeMapping(), rowMapping(), {}, {}, 6.0 };
    return c ? commRectIn(f, ref.rank, c->postedUs, c->endUs) : QRectF();
}

CommRef TimelinePlottable::commAt(const QPointF& pixel) const
{
    if (!hasComms())
        return {};
    const Frame f { timeMapping(), rowMapping(), {}, {}, 6.0 };
    const int rank = f.rows.rowAt(pixel.y()) - m_rowOffset;
    if (rank < 0 || static_cast<std::size_t>(rank) >= m_comms->comms.size())
        return {};
    const auto& list = m_comms->comms[static_cast<std::size_t>(rank)];
    // A transfer (the solid part) before a wait for one's turn (the dotted part, which may run under later ones).
    for (const bool solid : { true, false })
        for (int i = static_cast<int>(list.size()) - 1; i >= 0; --i) {
            const CommTiming& c = list[static_cast<std::size_t>(i)];
            if (commRectIn(f, rank, solid ? c.startUs : c.postedUs, c.endUs)
                    .adjusted(-2.0, -1.0, 2.0, 0.0)
                    .contains(pixel))
                return { rank, i };
        }
    return {};
}

void TimelinePlottable::drawComms(QCPPainter* painter, const Frame& f, int rank) const
{
    if (!hasComms() || static_cast<std::size_t>(rank) >= m_comms->comms.size())
        return;
    // Neither the kinds' colours nor the critical path's: slate sends, teal receives, a stalled receive black (white
    // on a dark theme).
    const QColor send = sendColor(m_colors.dark);
    const QColor receive = receiveColor(m_colors.dark);
    const QColor stalled = m_colors.dark ? QColor(Qt::white) : QColor(Qt::black);
    for (const CommTiming& c : m_comms->comms[static_cast<std::size_t>(rank)]) {
        if (c.endUs < f.time.startUs() || c.postedUs > f.time.endUs())
            continue;
        const bool isReceive = c.op.kind == CommKind::RecvF || c.op.kind == CommKind::RecvB;
        bool late = false;
        for (const StalledReceive& s : m_comms->stalledReceives)
            late = late || (s.rank == rank && s.position == c.position);
        const QColor color = late ? stalled : isReceive ? receive : send;
        const QRectF bar = commRectIn(f, rank, c.postedUs, c.endUs);
        const double xs = f.time.toPixel(c.startUs);
        if (xs > bar.left() + 1.0) { // posted, waiting for its turn and its partner
            painter->setPen(QPen(color, late ? 2.0 : 1.0, Qt::DotLine));
            painter->drawLine(QPointF(bar.left(), bar.center().y()), QPointF(xs, bar.center().y()));
        }
        const double x1 = std::max(f.time.toPixel(c.endUs), xs + 2.0);
        painter->fillRect(QRectF(QPointF(xs, bar.top()), QPointF(x1, bar.bottom())), color);
    }
    if (const CommTiming* c = m_commDrag.comm.rank == rank ? comm(m_commDrag.comm) : nullptr) {
        painter->setPen(QPen(m_colors.highlight, 2.0));
        painter->setBrush(Qt::NoBrush);
        painter->drawRect(commRectIn(f, rank, c->postedUs + m_commDrag.offsetUs, c->endUs + m_commDrag.offsetUs));
    }
}

bool TimelinePlottable::drawLanes(QCPPainter* painter, const Frame& f, const TimelineBlock& b, const QRectF& rect) const
{
    const std::vector<LaneRect> lanes = laneRectsIn(f, b, rect);
    if (lanes.empty())
        return false;
    // The lanes' own idle time stays visible: the block's background is the idle colour, unhatched.
    painter->fillRect(rect, m_colors.idle);
    const QColor forward = kindColor(b.action.op.kind);
    const QColor backward = kindColor(b.action.backward.kind);
    // Each half's microbatch is written once, in its widest compute piece.
    const LaneRect* widest[2] = { nullptr, nullptr };
    for (const LaneRect& lane : lanes) {
        const LaneRect*& w = widest[lane.segment.backwardHalf ? 1 : 0];
        if (lane.segment.lane == Chunk::Compute && (!w || lane.rect.width() > w->rect.width()))
            w = &lane;
    }
    for (const LaneRect& lane : lanes) {
        const QColor kind = lane.segment.backwardHalf ? backward : forward;
        const int microbatch = lane.segment.backwardHalf ? b.action.backward.microbatch : b.action.op.microbatch;
        if (lane.segment.lane == Chunk::Compute) {
            painter->fillRect(lane.rect, kind);
            if (&lane == widest[lane.segment.backwardHalf ? 1 : 0])
                drawLabel(painter, f, lane.rect, microbatch, kind);
        } else {
            // Communication: a light tint of the half's colour, cross-hatched in the colour itself.
            const double share = m_colors.dark ? 0.5 : 0.4;
            const auto mix = [&](int a, int c) { return static_cast<int>(a * share + c * (1.0 - share)); };
            const QColor tint(mix(kind.red(), m_colors.background.red()),
                mix(kind.green(), m_colors.background.green()), mix(kind.blue(), m_colors.background.blue()));
            painter->fillRect(lane.rect, tint);
            painter->fillRect(lane.rect, QBrush(kind.darker(120), Qt::DiagCrossPattern));
        }
        if (lane.rect.width() >= 4.0) {
            painter->setBrush(Qt::NoBrush);
            painter->setPen(QPen(kind.darker(150), 1.0));
            painter->drawRect(lane.rect.adjusted(0, 0, -1, -1));
        }
    }
    painter->setPen(QPen(m_colors.axis, 1.0, Qt::DotLine));
    painter->drawLine(QPointF(rect.left(), rect.center().y()), QPointF(rect.right(), rect.center().y()));
    return true;
}

void TimelinePlottable::drawBlock(QCPPainter* painter, const Frame& f, const TimelineBlock& b, const QRectF& rect) const
{
    const QColor first = kindColor(b.action.op.kind);
    const QColor second = b.action.overlapped ? kindColor(b.action.backward.kind) : first;
    const QRectF top(rect.topLeft(), QPointF(rect.right(), rect.center().y()));
    const QRectF bottom(QPointF(rect.left(), rect.center().y()), rect.bottomRight());
    // Zoomed in far enough, an overlapped slot with a two-lane layout is drawn (and labelled) piece by piece.
    const bool lanes = b.action.overlapped && drawLanes(painter, f, b, rect);
    if (!lanes && b.action.overlapped) {
        painter->fillRect(top, first);
        painter->fillRect(bottom, second);
    } else if (!lanes) {
        painter->fillRect(rect, first);
    }
    if (b.invalid) {
        QColor hatch = m_colors.invalid;
        hatch.setAlpha(150);
        painter->fillRect(rect, QBrush(hatch, Qt::BDiagPattern));
    }
    if (!lanes && b.action.overlapped) {
        drawLabel(painter, f, top, b.action.op.microbatch, first);
        drawLabel(painter, f, bottom, b.action.backward.microbatch, second);
    } else if (!lanes) {
        drawLabel(painter, f, rect, b.action.op.microbatch, first);
    }
    painter->setBrush(Qt::NoBrush);
    if (rect.width() >= 4.0) {
        painter->setPen(QPen(first.darker(150), 1.0));
        painter->drawRect(rect.adjusted(0, 0, -1, -1));
    }
    if (b.invalid) {
        painter->setPen(QPen(m_colors.invalid, 3.0));
        painter->drawRect(rect.adjusted(1, 1, -1, -1));
    }
    const BlockRef ref { b.rank, b.position };
    if (ref == m_hovered || ref == m_marked) {
        painter->setPen(QPen(ref == m_marked ? m_colors.invalid : m_colors.highlight, 2.0));
        painter->drawRect(rect.adjusted(-1, -1, 0, 0));
    }
}

void TimelinePlottable::drawLabel(
    QCPPainter* painter, const Frame& f, const QRectF& rect, int microbatch, const QColor& fill) const
{
    const QString text = QString::number(microbatch);
    const double width = f.digitWidth * text.size() + 3.0;
    if (rect.width() < width || rect.height() < f.digitWidth * 1.4)
        return;
    painter->setPen(textColorOn(fill));
    painter->drawText(rect, Qt::AlignCenter, text);
}

void TimelinePlottable::drawMeasured(QCPPainter* painter, const Frame& f, int rank) const
{
    if (!m_measured || rank >= m_measured->rankCount())
        return;
    const auto& list = m_measured->blocks(rank);
    if (!list.empty()) { // the measured row's idle band, as the predicted row has one
        TimelineBlock whole = list.back();
        whole.startUs = 0.0;
        const QRectF band = measuredRectIn(f, whole);
        painter->fillRect(band, m_colors.idle);
        painter->fillRect(band, QBrush(m_colors.idleHatch, Qt::BDiagPattern));
    }
    const auto [first, last] = m_measured->visible(rank, f.time.startUs(), f.time.endUs());
    for (int i = first; i < last; ++i)
        drawMeasuredBlock(painter, f, list[i]);
}

void TimelinePlottable::drawMeasuredBlock(QCPPainter* painter, const Frame& f, const TimelineBlock& b) const
{
    const QRectF rect = measuredRectIn(f, b);
    const double waitEnd = std::min(f.time.toPixel(b.startUs + b.waitUs), rect.right());
    const QRectF wait(rect.topLeft(), QPointF(waitEnd, rect.bottom()));
    const QRectF busy(QPointF(waitEnd, rect.top()), rect.bottomRight());
    const QColor kind = kindColor(b.action.op.kind);
    // Opaque, a light (or, dark: deep) tint of the kind's colour, so the idle hatching never shows through.
    const QColor base = b.action.overlapped ? kindColor(b.action.backward.kind) : kind;
    const double share = m_colors.dark ? 0.45 : 0.35;
    const auto mix = [&](int a, int c) { return static_cast<int>(a * share + c * (1.0 - share)); };
    const QColor fill(mix(base.red(), m_colors.background.red()), mix(base.green(), m_colors.background.green()),
        mix(base.blue(), m_colors.background.blue()));
    painter->fillRect(busy, fill);
    if (wait.width() >= 1.0) {
        painter->fillRect(wait, m_colors.background);
        painter->fillRect(wait, QBrush(m_colors.measured, Qt::Dense6Pattern));
        painter->setPen(QPen(m_colors.measured, 1.0));
        painter->drawLine(QPointF(wait.left(), wait.center().y()), QPointF(wait.right(), wait.center().y()));
    }
    painter->setBrush(Qt::NoBrush);
    painter->setPen(QPen(kind.darker(140), 1.5));
    painter->drawRect(rect.adjusted(0.5, 0.5, -0.5, -0.5));
    if (b.action.overlapped)
        drawLabel(painter, f, busy, b.action.backward.microbatch, fill);
    else
        drawLabel(painter, f, busy, b.action.op.microbatch, fill);
    const BlockRef ref { b.rank, b.position };
    if (ref.valid() && ref == m_marked) {
        painter->setPen(QPen(m_colors.invalid, 2.0));
        painter->drawRect(rect.adjusted(-1, -1, 0, 0));
    }
}

void TimelinePlottable::drawDrag(QCPPainter* painter, const Frame& f) const
{
    const TimelineBlock* b = m_drag.block.valid() ? m_blocks->block(m_drag.block.rank, m_drag.block.position) : nullptr;
    if (!b)
        return;
    TimelineBlock moved = *b;
    moved.startUs += m_drag.offsetUs;
    moved.endUs += m_drag.offsetUs;
    const QRectF rect = rectIn(f, moved);
    painter->setOpacity(0.85);
    drawBlock(painter, f, moved, rect);
    painter->setOpacity(1.0);
    painter->setPen(QPen(m_colors.highlight, 2.0));
    painter->drawRect(rect);
    const auto& list = m_blocks->blocks(b->rank);
    std::vector<const TimelineBlock*> others;
    for (const auto& o : list)
        if (o.position != b->position)
            others.push_back(&o);
    const int drop = std::clamp(m_drag.dropPosition, 0, static_cast<int>(others.size()));
    const double x = drop < static_cast<int>(others.size()) ? f.time.toPixel(others[drop]->startUs)
                                                            : f.time.toPixel(others.empty() ? 0 : others.back()->endUs);
    const int row = b->rank + m_rowOffset;
    painter->setPen(QPen(m_colors.highlight, 3.0));
    painter->drawLine(QPointF(x, f.rows.bandTop(row) - 4), QPointF(x, f.rows.bandBottom(row) + 4));
}

void TimelinePlottable::drawLegendIcon(QCPPainter* painter, const QRectF& rect) const
{
    painter->fillRect(rect, kindColor(OpKind::F));
}

} // namespace dps::ui
