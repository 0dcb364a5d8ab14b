// The critical path, stragglers and run diff in the window, offscreen: View → Critical Path outlines
// the prediction's path and, with a run overlaid, the measured step's (the marks are the engine's path,
// sim/criticalpath.h, and are drawn in the path colour); the overlay panel lists each rank's share of both paths
// and flags the straggler of the real tiny DualPipeV run; "Compare with" another run lists the per-action
// differences and draws both runs on one axis.
#include "document/formatting.h"
#include "widgets/filecontroller.h"
#include "widgets/mainwindow.h"
#include "widgets/overlaypanel.h"
#include "widgets/runworkspace.h"
#include "widgets/timelineview.h"

#include "base/fileio.h"
#include "sim/criticalpath.h"
#include "trace/runstats.h"

#include <QAction>
#include <QApplication>
#include <QImage>
#include <QTableWidget>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using namespace dps::ui;

namespace {

const QString kProject = QStringLiteral(DPS_TEST_DATA "/launch/tiny.dpstudio.json");
const QString kMeasured = QStringLiteral(DPS_TEST_DATA "/measured/tiny-dualpipev.measured.json");

struct Fixture {
    MainWindow window;
    Fixture()
    {
        window.setThemeMode(ThemeMode::Light);
        window.resize(1600, 1000);
        window.show();
        EXPECT_TRUE(window.files()->openFile(kProject));
        QApplication::processEvents();
        window.waitUntilIdle();
        QApplication::processEvents();
    }
    OverlayPanel* overlay() { return window.runs()->overlayPanel(); }
    TimelineView* timeline() { return window.timeline(); }
};

/// How many pixels of `image` inside `rect` have exactly `color`.
int pixelsOf(const QImage& image, const QRect& rect, const QColor& color)
{
    int n = 0;
    for (int y = std::max(0, rect.top()); y <= std::min(image.height() - 1, rect.bottom()); ++y)
        for (int x = std::max(0, rect.left()); x <= std::min(image.width() - 1, rect.right()); ++x)
            n += image.pixelColor(x, y).rgb() == color.rgb() ? 1 : 0;
    return n;
}

} // namespace

TEST(CriticalPathUi, ToggleMarksThePredictedPath)
{
    Fixture f;
    const SnapshotPtr s = f.window.snapshot();
    ASSERT_TRUE(s && s->valid());
    EXPECT_FALSE(f.timeline()->criticalPathShown());
    EXPECT_TRUE(f.timeline()->lane(0)->predictedPath().empty());
    f.timeline()->criticalPathAction()->trigger();
    EXPECT_TRUE(f.timeline()->criticalPathShown());
    const dps::CriticalPath path = dps::criticalPath(*s->schedule, s->sim, s->costs);
    ASSERT_FALSE(path.elements.empty());
    EXPECT_EQ(path.lengthUs, s->makespanUs);
    const PathMarks& marks = f.timeline()->lane(0)->predictedPath();
    ASSERT_EQ(marks.blocks, pathMarks(path).blocks);
    // Every mark is a block of the prediction with the path's action; the last one ends the step.
    std::size_t k = 0;
    for (const dps::PathElement& e : path.elements)
        if (e.kind == dps::PathElementKind::Action) {
            const TimelineBlock* b = s->blocks.block(marks.blocks[k].first, marks.blocks[k].second);
            ASSERT_NE(b, nullptr);
            EXPECT_EQ(b->action, e.action);
            ++k;
        }
    const TimelineBlock* last = s->blocks.block(marks.blocks.back().first, marks.blocks.back().second);
    EXPECT_EQ(last->endUs, s->makespanUs);
    // Drawn: the last block's outline is in the path colour; hidden again, it is not.
    f.timeline()->replot();
    const QColor color = TimelinePlottable::pathColor(false);
    const QRect box = f.timeline()->lane(0)->blockRect(*last).toAlignedRect().adjusted(-1, -1, 1, 1);
    EXPECT_GT(pixelsOf(f.timeline()->grab().toImage(), box, color), 10);
    f.timeline()->setCriticalPathShown(false);
    EXPECT_TRUE(f.timeline()->lane(0)->predictedPath().empty());
    f.timeline()->replot();
    EXPECT_EQ(pixelsOf(f.timeline()->grab().toImage(), box, color), 0);
}

TEST(CriticalPathUi, MeasuredPathIsDrawnAndSharedPerRank)
{
    Fixture f;
    f.timeline()->setCriticalPathShown(true);
    QString error;
    ASSERT_TRUE(f.window.runs()->loadMeasured(kMeasured, &error)) << error.toStdString();
    QApplication::processEvents();
    const MeasuredOverlay& o = f.overlay()->overlay();
    ASSERT_TRUE(o.criticalPath);
    const dps::CriticalPath expected = dps::measuredCriticalPath(*o.trace, o.step);
    EXPECT_EQ(o.criticalPath->lengthUs, expected.lengthUs);
    const PathMarks& marks = f.timeline()->lane(0)->measuredPath();
    ASSERT_EQ(marks.blocks, pathMarks(expected).blocks);
    ASSERT_FALSE(marks.blocks.empty());
    const BlockIndex* measured = f.timeline()->measuredBlocks();
    ASSERT_NE(measured, nullptr);
    std::size_t k = 0;
    for (const dps::PathElement& e : expected.elements)
        if (e.kind == dps::PathElementKind::Action) {
            const auto [rank, index] = marks.blocks[k++];
            ASSERT_LT(static_cast<std::size_t>(index), measured->blocks(rank).size());
            EXPECT_EQ(measured->blocks(rank)[static_cast<std::size_t>(index)].action, e.action);
        }
    // The measured path's last block is outlined at the bottom of its rank's band (the measured half).
    f.timeline()->replot();
    const TimelinePlottable* lane = f.timeline()->lane(0);
    const TimelineBlock& b = measured->blocks(marks.blocks.back().first)[marks.blocks.back().second];
    const double x0 = lane->timeMapping().toPixel(b.startUs);
    const double x1 = lane->timeMapping().toPixel(b.endUs);
    const double bottom = lane->rowMapping().bandBottom(b.rank + lane->rowOffset());
    const QRect edge(
        static_cast<int>(x0) + 3, static_cast<int>(bottom) - 5, std::max(1, static_cast<int>(x1 - x0) - 6), 6);
    EXPECT_GT(pixelsOf(f.timeline()->grab().toImage(), edge, TimelinePlottable::pathColor(false)), 0);

    // The panel: each rank's share of the measured path and the predicted one.
    QTableWidget* table = f.overlay()->rankTable();
    ASSERT_EQ(table->rowCount(), 2);
    const SnapshotPtr s = f.window.snapshot();
    const dps::CriticalPath predicted = dps::criticalPath(*s->schedule, s->sim, s->costs);
    for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(table->item(r, 1)->text(), formatPercent(expected.rankShare(r))) << r;
        EXPECT_EQ(table->item(r, 2)->text(), formatPercent(predicted.rankShare(r))) << r;
    }
    EXPECT_TRUE(f.overlay()->criticalPathText().contains(formatTime(expected.lengthUs)));
    // Rank 1 of this real run computed 72.6 % more a step than rank 0 (660.949 µs against 382.949 µs, the
    // medians over its 3 steps): flagged by name.
    const dps::RunStats stats = dps::runStats(*o.trace);
    ASSERT_EQ(stats.stragglerNames(), std::vector<std::string> { "rank 1" });
    EXPECT_NEAR(stats.ranks[1].stepCompute.medianUs, 660.949, 1e-3);
    EXPECT_TRUE(table->item(1, 0)->text().contains(QStringLiteral("straggler")));
    EXPECT_FALSE(table->item(0, 0)->text().contains(QStringLiteral("straggler")));
    EXPECT_TRUE(f.overlay()->criticalPathText().contains(QStringLiteral("rank 1")));
}

TEST(CriticalPathUi, CompareWithAnotherRunDiffsEachAction)
{
    Fixture f;
    ASSERT_TRUE(f.window.runs()->loadMeasured(kMeasured));
    QApplication::processEvents();
    // The other run: the same file with rank 0's first action of every step 10 µs longer (its later actions
    // unchanged).
    dps::MeasuredTrace other = dps::loadMeasured(kMeasured.toStdString());
    for (dps::MeasuredAction& a : other.ranks[0].actions)
        if (a.action == dps::parseAction("0F0"))
            a.endUs += 10.0;
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("other.measured.json"));
    dps::writeFileAtomic(path.toStdString(), dps::serializeMeasured(other));
    QString error;
    ASSERT_TRUE(f.overlay()->compareWith(path, &error)) << error.toStdString();
    const dps::RunDiff& d = f.overlay()->runDiff();
    const int step = f.overlay()->overlay().step;
    EXPECT_EQ(d.stepA, step);
    EXPECT_EQ(d.onlyInA, 0);
    EXPECT_EQ(d.onlyInB, 0);
    ASSERT_EQ(d.actions.size(),
        f.overlay()->trace()->actionsOf(0, step).size() + f.overlay()->trace()->actionsOf(1, step).size());
    int changed = 0;
    for (const dps::ActionDiff& x : d.actions) {
        EXPECT_EQ(x.startDeltaUs(), 0.0);
        if (x.durationDeltaUs() != 0.0) {
            ++changed;
            EXPECT_EQ(dps::toString(x.action), "0F0");
            EXPECT_NEAR(x.durationDeltaUs(), 10.0, 1e-9);
        }
    }
    EXPECT_EQ(changed, 1);
    EXPECT_EQ(f.overlay()->diffTable()->rowCount(), static_cast<int>(d.actions.size()));
    EXPECT_TRUE(f.overlay()->comparisonText().contains(QStringLiteral("other run")));
    // Both runs on one time axis: one lane each, the other run's 0F0 10 µs longer.
    std::unique_ptr<QWidget> both(f.overlay()->createBothTimelines());
    ASSERT_NE(both, nullptr);
    auto* view = both->findChild<TimelineView*>(QStringLiteral("bothTimelines"));
    ASSERT_NE(view, nullptr);
    ASSERT_EQ(view->laneCount(), 2);
    const BlockIndex* a = view->lane(0)->blocks();
    const BlockIndex* b = view->lane(1)->blocks();
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->size(), b->size());
    // Each lane shows its own run's critical path.
    EXPECT_TRUE(view->criticalPathShown());
    const dps::MeasuredTrace& mine = *f.overlay()->trace();
    EXPECT_EQ(view->lane(0)->predictedPath().blocks, pathMarks(dps::measuredCriticalPath(mine, step)).blocks);
    EXPECT_EQ(view->lane(1)->predictedPath().blocks,
        pathMarks(dps::measuredCriticalPath(*f.overlay()->otherTrace(), other.medianStep)).blocks);
    EXPECT_FALSE(view->lane(1)->predictedPath().empty());
    EXPECT_NEAR((b->blocks(0)[0].endUs - b->blocks(0)[0].startUs) - (a->blocks(0)[0].endUs - a->blocks(0)[0].startUs),
        10.0, 1e-9);
    // Back to the prediction only: no diff.
    ASSERT_TRUE(f.overlay()->compareWith(QString()));
    EXPECT_TRUE(f.overlay()->runDiff().actions.empty());
    EXPECT_EQ(f.overlay()->diffTable()->rowCount(), 0);
}
