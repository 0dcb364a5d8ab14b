#pragma once
// The one QCustomPlot plottable that draws a whole timeline lane: for each rank a row with its idle band
// and every block of the visible time range (coloured by kind, overlapped F&B as two halves of one slot,
// labelled with the microbatch), the marks of invalid blocks, the hovered block, a block being dragged,
// and, optionally, a second set of measured blocks drawn as outlines over the predicted ones. Zoomed in so
// far that an overlapped F&B slot is wider than kLaneMinWidthPx, a slot whose cost model lays it out on two
// lanes (CostModel::overlapLayout: an MoE model's expert all-to-all beside the other half's compute) is drawn
// as those lanes: compute in the upper half, communication in the lower half, each piece coloured by the half
// (forward or backward) it belongs to. With a critical path set (sim/criticalpath.h, docs/analysis.md) the
// blocks on it are outlined in the path colour and its transfers drawn as arrows from the producer's end to
// the consumer's start. Drawing and hit-testing both go through TimeMapping/RowMapping.
#include "document/blockindex.h"
#include "document/timemapping.h"
#include "widgets/theme.h"

#include "sim/costmodel.h"
#include "sim/criticalpath.h"

#include <qcustomplot.h>

#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace dps::ui {

/// A block of a lane by rank and position.
struct BlockRef {
    int rank = -1;
    int position = -1;
    bool valid() const { return rank >= 0 && position >= 0; }
    friend bool operator==(const BlockRef&, const BlockRef&) = default;
};

/// A send or receive drawn under its rank's blocks: its rank and index in SimResult::comms[rank].
struct CommRef {
    int rank = -1;
    int index = -1;
    bool valid() const { return rank >= 0 && index >= 0; }
    friend bool operator==(const CommRef&, const CommRef&) = default;
};

/// The critical path as drawn on a lane: its blocks and its transfers, by rank and index in the rank's blocks.
struct PathMarks {
    struct Link {
        int fromRank = -1;
        int fromIndex = -1; ///< the producer block
        int toRank = -1;
        int toIndex = -1; ///< the consumer block
        double fromUs = 0.0; ///< the transfer's start: the producer's end
        double toUs = 0.0; ///< its end: when the message arrived (the consumer's compute began)
    };
    std::vector<std::pair<int, int>> blocks; ///< (rank, index in BlockIndex::blocks(rank))
    std::vector<Link> links;
    bool empty() const { return blocks.empty(); }
};

/// The marks of `path` (slots = indices in the blocks of each rank, as the path's TimedRun held them): each
/// action element, and for each transfer the producer (the action before it) and the consumer (the one after).
PathMarks pathMarks(const CriticalPath& path);

class TimelinePlottable : public QCPAbstractPlottable {
    Q_OBJECT
public:
    TimelinePlottable(QCPAxis* keyAxis, QCPAxis* valueAxis);

    /// The blocks to draw; `makespanUs` ends the idle band of every row.
    void setBlocks(std::shared_ptr<const BlockIndex> blocks, double makespanUs);
    const BlockIndex* blocks() const { return m_blocks.get(); }
    /// The cost model the blocks were timed with (the snapshot's Prediction::costs), for the lanes of
    /// overlapped slots; null draws every slot flat.
    void setCosts(std::shared_ptr<const CostModel> costs);
    /// Narrowest overlapped slot, in pixels, drawn as its two lanes.
    static constexpr double kLaneMinWidthPx = 60.0;
    /// One piece of an overlapped slot's lanes on screen: its pixel rectangle and the piece.
    struct LaneRect {
        QRectF rect;
        LaneSegment segment;
    };
    /// The lanes of `block` as drawn now: empty unless it is an overlapped slot wider than kLaneMinWidthPx whose
    /// layout has segments (each segment at the block's start + its startUs; compute in the upper half of the
    /// block, communication in the lower).
    std::vector<LaneRect> laneRects(const TimelineBlock& block) const;
    /// The layout of an overlapped slot (cached per stage pair until the costs change); null without costs.
    const OverlapLayout* overlapLayout(int fStage, int bStage) const;

    /// Measured blocks (a run's timeline) drawn beside the predicted ones: with them each row's band is
    /// split, predicted blocks above, measured ones below (light fill, outlined, the wait for data hatched
    /// at the block's start); null hides them.
    void setMeasuredBlocks(std::shared_ptr<const BlockIndex> measured);
    const BlockIndex* measuredBlocks() const { return m_measured.get(); }
    /// Share of a row's band the predicted blocks take while measured blocks are shown.
    static constexpr double kPredictedShare = 0.52;
    /// Value-axis row of rank 0 (rank r sits on row rowOffset + r).
    /// The sends and receives of a prediction that timed them (SimResult::comms, stalledReceives), drawn as thin
    /// bars at the bottom of their rank's row: from when each was posted (a thin line while it waits for its turn
    /// and partner) to its end; sends and receives in two colours, a stalled receive black (white on a dark theme).
    /// Null: none.
    void setComms(std::shared_ptr<const SimResult> sim) { m_comms = std::move(sim); }
    bool hasComms() const { return m_comms && !m_comms->comms.empty(); }
    /// The send or receive drawn under a pixel position (its bar from posting to end, within 2 px), or an invalid ref.
    CommRef commAt(const QPointF& pixel) const;
    /// The timing of a send or receive drawn, nullptr when there is none.
    const CommTiming* comm(CommRef ref) const;
    /// Pixel rectangle of a send's or receive's bar: from when it was posted to its end, at the bottom of its row.
    QRectF commRect(CommRef ref) const;
    /// A send or receive being dragged, posted `offsetUs` later (drawn as an outline there); an invalid ref: none.
    void setCommDrag(CommRef ref, double offsetUs) { m_commDrag = { ref, offsetUs }; }
    void setRowOffset(int offset) { m_rowOffset = offset; }
    int rowOffset() const { return m_rowOffset; }
    /// A title drawn in the row above rank 0 (comparison view); empty draws none.
    void setTitle(const QString& title) { m_title = title; }
    void setColors(const ChartColors& colors) { m_colors = colors; }
    /// The critical path of the predicted blocks and of the measured ones (empty marks draw nothing).
    void setCriticalPath(PathMarks predicted, PathMarks measured);
    const PathMarks& predictedPath() const { return m_predictedPath; }
    const PathMarks& measuredPath() const { return m_measuredPath; }
    /// Colour of the critical path's outlines and arrows: a magenta no op kind and no invalid mark uses.
    static QColor pathColor(bool dark);
    /// Colours of the sends and receives drawn under a rank's blocks (neither a kind's nor the critical path's).
    static QColor sendColor(bool dark);
    static QColor receiveColor(bool dark);

    void setHovered(BlockRef block) { m_hovered = block; }
    void setMarked(BlockRef block) { m_marked = block; }
    BlockRef marked() const { return m_marked; }
    /// A drag in progress: block `block` moved by `offsetUs`, to land at `dropPosition`.
    void setDrag(BlockRef block, double offsetUs, int dropPosition);
    void clearDrag()
    {
        m_drag = {};
        m_commDrag = {};
    }

    TimeMapping timeMapping() const;
    RowMapping rowMapping() const;
    /// The block under a pixel position (within 2 px horizontally), or an invalid ref.
    BlockRef blockAt(const QPointF& pixel) const;
    /// Pixel rectangle of a block.
    QRectF blockRect(const TimelineBlock& block) const;

    double selectTest(const QPointF& pos, bool onlySelectable, QVariant* details = nullptr) const override;
    QCPRange getKeyRange(bool& foundRange, QCP::SignDomain inSignDomain = QCP::sdBoth) const override;
    QCPRange getValueRange(bool& foundRange, QCP::SignDomain inSignDomain = QCP::sdBoth,
        const QCPRange& inKeyRange = QCPRange()) const override;

protected:
    void draw(QCPPainter* painter) override;
    void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override;

private:
    struct Frame {
        TimeMapping time;
        RowMapping rows;
        QRectF clip;
        QFont font;
        double digitWidth = 6.0;
    };
    Frame frame(QCPPainter* painter) const;
    void drawTitle(QCPPainter* painter, const Frame& f) const;
    void drawIdle(QCPPainter* painter, const Frame& f, int rank) const;
    void drawRank(QCPPainter* painter, const Frame& f, int rank) const;
    void drawComms(QCPPainter* painter, const Frame& f, int rank) const;
    /// The bar of a send or receive on rank `rank`: from its posting to its end, at the bottom of the row.
    QRectF commRectIn(const Frame& f, int rank, double postedUs, double endUs) const;
    void drawBlock(QCPPainter* painter, const Frame& f, const TimelineBlock& block, const QRectF& rect) const;
    /// Draws the lanes of an overlapped block; false (nothing drawn) when it has none at this zoom.
    bool drawLanes(QCPPainter* painter, const Frame& f, const TimelineBlock& block, const QRectF& rect) const;
    std::vector<LaneRect> laneRectsIn(const Frame& f, const TimelineBlock& block, const QRectF& rect) const;
    void drawLabel(QCPPainter* painter, const Frame& f, const QRectF& rect, int microbatch, const QColor& fill) const;
    void drawMeasured(QCPPainter* painter, const Frame& f, int rank) const;
    void drawMeasuredBlock(QCPPainter* painter, const Frame& f, const TimelineBlock& block) const;
    /// Pixel rectangle of a measured block: the lower part of its rank's band.
    QRectF measuredRectIn(const Frame& f, const TimelineBlock& block) const;
    void drawDrag(QCPPainter* painter, const Frame& f) const;
    /// Washes out the blocks off the path, outlines the path's blocks and draws its transfers; `measured` picks
    /// the measured blocks' rectangles.
    void drawPath(QCPPainter* painter, const Frame& f, const PathMarks& marks, bool measured) const;
    QRectF rectIn(const Frame& f, const TimelineBlock& block) const;

    std::shared_ptr<const BlockIndex> m_blocks;
    std::shared_ptr<const BlockIndex> m_measured;
    std::shared_ptr<const CostModel> m_costs;
    std::shared_ptr<const SimResult> m_comms;
    mutable std::map<std::pair<int, int>, OverlapLayout> m_layouts;
    double m_makespanUs = 0.0;
    int m_rowOffset = 0;
    QString m_title;
    ChartColors m_colors;
    BlockRef m_hovered;
    BlockRef m_marked;
    PathMarks m_predictedPath;
    PathMarks m_measuredPath;
    std::set<std::pair<int, int>> m_predictedOnPath; ///< m_predictedPath's blocks, for lookups
    std::set<std::pair<int, int>> m_measuredOnPath;
    struct Drag {
        BlockRef block;
        double offsetUs = 0.0;
        int dropPosition = -1;
    } m_drag;
    struct CommDrag {
        CommRef comm;
        double offsetUs = 0.0;
    } m_commDrag;
};

} // namespace dps::ui
