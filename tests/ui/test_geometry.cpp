// The plain pieces of the timeline: time↔pixel mapping, row mapping, hit-testing and drop positions. No Qt.
#include "document/blockindex.h"
#include "document/timemapping.h"

#include <gtest/gtest.h>

using namespace dps::ui;

TEST(TimeMapping, MapsBothWays)
{
    const TimeMapping m(100.0, 300.0, 50.0, 450.0);
    EXPECT_DOUBLE_EQ(m.scale(), 2.0);
    EXPECT_DOUBLE_EQ(m.toPixel(100.0), 50.0);
    EXPECT_DOUBLE_EQ(m.toPixel(300.0), 450.0);
    EXPECT_DOUBLE_EQ(m.toPixel(200.0), 250.0);
    EXPECT_DOUBLE_EQ(m.toTime(250.0), 200.0);
    EXPECT_DOUBLE_EQ(m.toPixel(0.0), -150.0) << "outside the range maps outside the span";
    EXPECT_DOUBLE_EQ(m.toWidth(10.0), 20.0);
    for (double t : { 100.0, 123.4, 299.9 })
        EXPECT_NEAR(m.toTime(m.toPixel(t)), t, 1e-9);
}

TEST(TimeMapping, EmptyRangeDoesNotDivideByZero)
{
    const TimeMapping m(5.0, 5.0, 0.0, 100.0);
    EXPECT_DOUBLE_EQ(m.scale(), 0.0);
    EXPECT_DOUBLE_EQ(m.toTime(42.0), 5.0);
}

TEST(TimeMapping, ZoomKeepsTheAnchorInPlace)
{
    const TimeMapping m(0.0, 1000.0, 0.0, 500.0);
    const TimeMapping z = m.zoomed(4.0, 400.0);
    EXPECT_DOUBLE_EQ(z.spanUs(), 250.0);
    EXPECT_NEAR(z.toPixel(400.0), m.toPixel(400.0), 1e-9);
    const TimeMapping back = z.zoomed(0.25, 400.0);
    EXPECT_NEAR(back.startUs(), 0.0, 1e-9);
    EXPECT_NEAR(back.endUs(), 1000.0, 1e-9);
    EXPECT_DOUBLE_EQ(m.zoomed(0.0, 1.0).spanUs(), 1000.0) << "a non-positive factor is ignored";
}

TEST(TimeMapping, PanMovesByPixels)
{
    const TimeMapping m(0.0, 1000.0, 0.0, 500.0);
    const TimeMapping p = m.panned(50.0);
    EXPECT_DOUBLE_EQ(p.startUs(), 100.0);
    EXPECT_DOUBLE_EQ(p.endUs(), 1100.0);
}

TEST(TimeMapping, ClampKeepsTheViewInsideTheData)
{
    const TimeMapping m(-500.0, 500.0, 0.0, 100.0);
    const TimeMapping c = m.clamped(0.0, 2000.0, 1.0);
    EXPECT_DOUBLE_EQ(c.startUs(), 0.0);
    EXPECT_DOUBLE_EQ(c.spanUs(), 1000.0);
    const TimeMapping tooWide = TimeMapping(-10.0, 5000.0, 0, 100).clamped(0.0, 2000.0, 1.0);
    EXPECT_DOUBLE_EQ(tooWide.startUs(), 0.0);
    EXPECT_DOUBLE_EQ(tooWide.endUs(), 2000.0);
    const TimeMapping tooNarrow = TimeMapping(100.0, 100.001, 0, 100).clamped(0.0, 2000.0, 1.0);
    EXPECT_NEAR(tooNarrow.spanUs(), 1.0, 1e-9);
}

TEST(RowMapping, RowsBandsAndGaps)
{
    const RowMapping rows(8, 0.0, 400.0, 0.8);
    EXPECT_DOUBLE_EQ(rows.rowHeight(), 50.0);
    EXPECT_DOUBLE_EQ(rows.rowCenter(0), 25.0);
    EXPECT_DOUBLE_EQ(rows.rowCenter(7), 375.0);
    EXPECT_DOUBLE_EQ(rows.bandTop(1), 55.0);
    EXPECT_DOUBLE_EQ(rows.bandBottom(1), 95.0);
    EXPECT_EQ(rows.rowAt(75.0), 1);
    EXPECT_EQ(rows.rowAt(52.0), -1) << "the gap between rows hits nothing";
    EXPECT_EQ(rows.nearestRow(52.0), 1);
    EXPECT_EQ(rows.rowAt(-1.0), -1);
    EXPECT_EQ(rows.rowAt(400.0), -1);
    EXPECT_EQ(RowMapping().rowAt(10.0), -1);
}

namespace {

BlockIndex threeBlocks()
{
    BlockIndex index(2);
    const auto a = dps::Action::single(0, dps::OpKind::F, 0);
    const auto b = dps::Action::single(0, dps::OpKind::F, 1);
    const auto c = dps::Action::single(0, dps::OpKind::B, 0);
    index.add({ 0.0, 10.0, a, 0, 0 });
    index.add({ 10.0, 20.0, b, 0, 1 });
    index.add({ 30.0, 50.0, c, 0, 2 });
    index.add({ 5.0, 15.0, a, 1, 0 });
    return index;
}

} // namespace

TEST(BlockIndex, VisibleRangeIsABinarySearch)
{
    const BlockIndex index = threeBlocks();
    EXPECT_EQ(index.size(), 4u);
    EXPECT_DOUBLE_EQ(index.endUs(), 50.0);
    EXPECT_EQ(index.visible(0, 0.0, 100.0), std::make_pair(0, 3));
    EXPECT_EQ(index.visible(0, 12.0, 25.0), std::make_pair(1, 2));
    EXPECT_EQ(index.visible(0, 21.0, 29.0), std::make_pair(2, 2)) << "idle gap: nothing visible";
    EXPECT_EQ(index.visible(0, 60.0, 70.0), std::make_pair(3, 3));
    EXPECT_EQ(index.visible(5, 0.0, 1.0), std::make_pair(0, 0)) << "unknown rank";
}

TEST(BlockIndex, HitTestFindsTheBlockUnderATime)
{
    const BlockIndex index = threeBlocks();
    ASSERT_NE(index.hit(0, 15.0), nullptr);
    EXPECT_EQ(index.hit(0, 15.0)->position, 1);
    EXPECT_EQ(index.hit(0, 25.0), nullptr) << "idle";
    ASSERT_NE(index.hit(0, 29.0, 2.0), nullptr) << "within tolerance of the next block";
    EXPECT_EQ(index.hit(0, 29.0, 2.0)->position, 2);
    EXPECT_EQ(index.hit(1, 0.0), nullptr);
    EXPECT_EQ(index.hit(1, 7.0)->rank, 1);
    EXPECT_EQ(index.block(0, 3), nullptr);
    EXPECT_EQ(index.block(0, 2)->action.op.kind, dps::OpKind::B);
}

TEST(BlockIndex, DropPositionCountsCentresBefore)
{
    const BlockIndex index = threeBlocks();
    EXPECT_EQ(index.dropPosition(0, 0, 100.0), 2) << "dragged past everything";
    EXPECT_EQ(index.dropPosition(0, 2, -5.0), 0) << "dragged before everything";
    EXPECT_EQ(index.dropPosition(0, 0, 16.0), 1) << "past the centre of block 1";
    EXPECT_EQ(index.dropPosition(0, 0, 14.0), 0) << "not past the centre of block 1";
    EXPECT_EQ(index.dropPosition(0, 1, 15.0), 1) << "dropped where it was";
}

// A receive dragged along rank 1's program row 1RECV_F0,1F0,1SEND_F0,1RECV_F1,1F1,1SEND_F1,1B0 whose compute blocks
// are 1F0 [0,10] (centre 5), 1F1 [10,20] (15), 1B0 [20,40] (30): it lands next to the last compute it passed.
TEST(CommDropCell, LandsNextToTheLastComputeItPassed)
{
    std::vector<dps::Step> row;
    for (const char* cell : { "1RECV_F0", "1F0", "1SEND_F0", "1RECV_F1", "1F1", "1SEND_F1", "1B0" })
        row.push_back(dps::parseStep(cell));
    std::vector<TimelineBlock> blocks;
    const double spans[3][2] = { { 0, 10 }, { 10, 20 }, { 20, 40 } };
    const int cells[3] = { 1, 4, 6 };
    for (int i = 0; i < 3; ++i)
        blocks.push_back({ spans[i][0], spans[i][1], row[static_cast<std::size_t>(cells[i])].compute, 1, i });
    EXPECT_EQ(commDropCell(row, blocks, 3, 16.0), 4) << "1RECV_F1 past 1F1's centre: right after 1F1, before 1SEND_F1";
    EXPECT_EQ(commDropCell(row, blocks, 3, 100.0), 6) << "past everything: after 1B0, the row's end";
    EXPECT_EQ(commDropCell(row, blocks, 3, -1.0), 1) << "before everything: right before 1F0, after 1RECV_F0";
    EXPECT_EQ(commDropCell(row, blocks, 3, 12.0), 3) << "between 1F0 and 1F1 still: left where it was";
    EXPECT_EQ(commDropCell(row, blocks, 3, 15.0), 3) << "at 1F1's centre: not past it";
    EXPECT_EQ(commDropCell(row, blocks, 0, 12.0), 1) << "1RECV_F0 past 1F0: right after it, before 1SEND_F0";
    EXPECT_EQ(commDropCell(row, blocks, 7, 12.0), 7) << "no such cell";
}

TEST(MoveElement, MovesAndIgnoresBadIndices)
{
    std::vector<int> v { 0, 1, 2, 3 };
    moveElement(v, 0, 2);
    EXPECT_EQ(v, (std::vector<int> { 1, 2, 0, 3 }));
    moveElement(v, 3, 0);
    EXPECT_EQ(v, (std::vector<int> { 3, 1, 2, 0 }));
    moveElement(v, 4, 0);
    moveElement(v, 1, -1);
    EXPECT_EQ(v, (std::vector<int> { 3, 1, 2, 0 }));
}
