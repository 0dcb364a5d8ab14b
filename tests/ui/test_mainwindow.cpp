// The designer as a user drives it, offscreen: dragging a block into an invalid order shows a diagnostic
// and undo restores the valid order; a broken file leaves the open project untouched; the screenshot of
// the default project has one row per rank with blocks where they belong; files, import, exports.
#include "document/comparemodel.h"
#include "document/diagnosticsmodel.h"
#include "document/projectdocument.h"
#include "run/messagebanner.h"
#include "widgets/compareview.h"
#include "widgets/filecontroller.h"
#include "widgets/mainwindow.h"
#include "widgets/memorychart.h"
#include "widgets/metricspanel.h"
#include "widgets/partitioneditor.h"
#include "widgets/studio.h"
#include "widgets/timelineview.h"

#include <QApplication>
#include <QFile>
#include <QMouseEvent>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

using namespace dps::ui;

namespace {

/// A window on the default project with its first simulation delivered.
struct Fixture {
    MainWindow window;
    Fixture()
    {
        window.setThemeMode(ThemeMode::Light);
        window.resize(1600, 1000);
        window.show();
        QApplication::processEvents();
        window.waitUntilIdle();
        QApplication::processEvents();
    }
    TimelineView* timeline() { return window.timeline(); }
};

void drag(QWidget* widget, QPointF from, QPointF to)
{
    QTest::mousePress(widget, Qt::LeftButton, {}, from.toPoint());
    for (int i = 1; i <= 4; ++i) {
        const QPointF p = from + (to - from) * (i / 4.0);
        QMouseEvent move(QEvent::MouseMove, p, widget->mapToGlobal(p), Qt::NoButton, Qt::LeftButton, {});
        QApplication::sendEvent(widget, &move);
    }
    QTest::mouseRelease(widget, Qt::LeftButton, {}, to.toPoint());
}

std::vector<dps::Action> rankOrder(MainWindow& window, int rank)
{
    return dps::buildSchedule(window.document()->project(), window.document()->activeVariant()).order[rank];
}

void writeFile(const QString& path, const QByteArray& bytes)
{
    QFile f(path);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

/// Fraction of pixels along a horizontal line whose colour differs from `background`.
double coveredFraction(const QImage& image, int y, int x0, int x1, QRgb background)
{
    int hits = 0;
    for (int x = x0; x < x1; ++x)
        hits += image.pixel(x, y) != background ? 1 : 0;
    return x1 > x0 ? static_cast<double>(hits) / (x1 - x0) : 0.0;
}

} // namespace

TEST(MainWindow, StartsOnTheDefaultProject)
{
    Fixture f;
    ASSERT_TRUE(f.window.snapshot());
    EXPECT_TRUE(f.window.snapshot()->valid());
    EXPECT_EQ(f.window.snapshot()->variantName, "dualpipe");
    EXPECT_EQ(f.timeline()->laneCount(), 1);
    EXPECT_EQ(f.timeline()->lane(0)->blocks()->rankCount(), 8);
    EXPECT_FALSE(f.window.metrics()->summaryText(QStringLiteral("makespan")).isEmpty());
    EXPECT_TRUE(f.window.metrics()->summaryText(QStringLiteral("closed-form")).contains(QStringLiteral("PP/2")))
        << f.window.metrics()->summaryText(QStringLiteral("closed-form")).toStdString();
    EXPECT_FALSE(f.window.document()->isModified());
    EXPECT_TRUE(f.window.windowTitle().contains(QStringLiteral("untitled")));
}

TEST(MainWindow, DragIntoAnInvalidOrderShowsADiagnosticAndUndoRestores)
{
    Fixture f;
    const auto valid = rankOrder(f.window, 0);
    const auto& blocks = f.window.snapshot()->blocks.blocks(0);
    const QPointF from = f.timeline()->blockCenter(0, 0);
    const QPointF to(f.timeline()->timeToPixel(blocks.back().endUs) + 4, from.y());
    drag(f.timeline(), from, to);
    f.window.waitUntilIdle();
    ASSERT_TRUE(f.window.snapshot());
    EXPECT_FALSE(f.window.snapshot()->valid()) << "the first forward moved after its own backward";
    EXPECT_GT(f.window.diagnostics()->rowCount(), 0);
    EXPECT_GT(f.window.diagnostics()->errorCount(), 0);
    bool marked = false;
    for (const auto& b : f.window.snapshot()->blocks.blocks(0))
        marked = marked || b.invalid;
    EXPECT_TRUE(marked) << "the offending block is marked in place";
    EXPECT_EQ(rankOrder(f.window, 0).back(), valid.front());
    EXPECT_TRUE(f.window.document()->isModified());

    f.window.document()->undoStack()->undo();
    f.window.waitUntilIdle();
    EXPECT_TRUE(f.window.snapshot()->valid());
    EXPECT_EQ(f.window.diagnostics()->rowCount(), 0);
    EXPECT_EQ(rankOrder(f.window, 0), valid);
    EXPECT_FALSE(f.window.document()->activeVariant().order.has_value());
    EXPECT_FALSE(f.window.document()->isModified());
}

TEST(MainWindow, AValidDragReordersAndResimulates)
{
    Fixture f;
    // Rank 0 starts with forwards of microbatches 0, 1, 2...: swapping the first two keeps the order valid.
    const auto before = rankOrder(f.window, 0);
    const auto& blocks = f.window.snapshot()->blocks.blocks(0);
    const QPointF from = f.timeline()->blockCenter(0, 0);
    const QPointF to(f.timeline()->timeToPixel((blocks[1].startUs + blocks[1].endUs) / 2 + 1e-3) + 2, from.y());
    drag(f.timeline(), from, to);
    f.window.waitUntilIdle();
    const auto after = rankOrder(f.window, 0);
    EXPECT_EQ(after[0], before[1]);
    EXPECT_EQ(after[1], before[0]);
    EXPECT_TRUE(f.window.document()->activeVariant().order.has_value());
    EXPECT_TRUE(f.window.snapshot()->handEdited);
    f.window.document()->regenerate();
    f.window.waitUntilIdle();
    EXPECT_EQ(rankOrder(f.window, 0), before) << "regenerate resets the order";
}

TEST(MainWindow, ABrokenFileLeavesTheProjectUntouched)
{
    Fixture f;
    f.window.document()->setActiveVariant(QStringLiteral("dualpipev"));
    f.window.waitUntilIdle();
    const std::string before = dps::serializeProject(f.window.document()->project());
    const int undoCount = f.window.document()->undoStack()->count();
    QTemporaryDir dir;
    const QString notJson = dir.filePath(QStringLiteral("broken.dpstudio.json"));
    writeFile(notJson, "{ \"format_version\": 1, \"variants\": [ ");
    const QString newer = dir.filePath(QStringLiteral("newer.dpstudio.json"));
    writeFile(newer, "{ \"format_version\": 99, \"variants\": [] }");
    for (const QString& path : { notJson, newer, dir.filePath(QStringLiteral("missing.dpstudio.json")) }) {
        EXPECT_FALSE(f.window.files()->openFile(path));
        EXPECT_EQ(dps::serializeProject(f.window.document()->project()), before);
        EXPECT_EQ(f.window.document()->undoStack()->count(), undoCount);
        EXPECT_EQ(f.window.banner()->kind(), MessageBanner::Kind::Error);
        EXPECT_TRUE(f.window.banner()->text().contains(QFileInfo(path).fileName()))
            << f.window.banner()->text().toStdString();
        if (path == newer) {
            EXPECT_TRUE(f.window.banner()->text().contains(QStringLiteral("99")))
                << "a newer version is refused by name";
        }
    }
    f.window.waitUntilIdle();
    EXPECT_EQ(f.window.snapshot()->variantName, "dualpipev");
}

TEST(MainWindow, SaveOpenAndRecentFiles)
{
    Fixture f;
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("mine.dpstudio.json"));
    f.window.document()->setVariantShape(dps::ScheduleKind::DualPipe, 8, 24, 0);
    EXPECT_TRUE(f.window.files()->saveTo(path));
    EXPECT_FALSE(f.window.document()->isModified());
    EXPECT_TRUE(f.window.windowTitle().contains(QStringLiteral("mine.dpstudio.json")));
    EXPECT_EQ(f.window.files()->recentFiles().value(0), QFileInfo(path).absoluteFilePath());
    f.window.document()->setVariantShape(dps::ScheduleKind::DualPipe, 8, 32, 0);
    int asked = 0;
    f.window.files()->setPrompt([&](const QString&) {
        ++asked;
        return FileController::SaveChoice::Cancel;
    });
    f.window.files()->newProject();
    EXPECT_EQ(asked, 1) << "unsaved changes are asked about";
    EXPECT_EQ(f.window.document()->activeVariant().microbatches, 32) << "cancel keeps the project";
    EXPECT_TRUE(f.window.files()->openFile(path));
    EXPECT_EQ(f.window.document()->activeVariant().microbatches, 24);
    EXPECT_FALSE(f.window.document()->isModified());
    f.window.files()->clearRecentFiles();
    EXPECT_TRUE(f.window.files()->recentFiles().isEmpty());
}

TEST(MainWindow, ImportsACsvAndExportsEverything)
{
    Fixture f;
    QTemporaryDir dir;
    ASSERT_TRUE(f.window.files()->importCsvFile(QStringLiteral(DPS_TEST_DATA "/golden/dualpipev_pp4_mb10.csv")));
    f.window.waitUntilIdle();
    EXPECT_EQ(f.window.snapshot()->variantName, "dualpipev_pp4_mb10");
    EXPECT_EQ(f.window.snapshot()->schedule->kind, dps::ScheduleKind::Custom);
    EXPECT_TRUE(f.window.snapshot()->valid()) << f.window.snapshot()->error;
    EXPECT_FALSE(f.window.files()->importCsvFile(QStringLiteral(DPS_TEST_DATA "/cases/README.md")));
    EXPECT_EQ(f.window.banner()->kind(), MessageBanner::Kind::Error);

    EXPECT_TRUE(f.window.files()->exportCsvTo(dir.filePath(QStringLiteral("s.csv"))));
    EXPECT_TRUE(f.window.files()->exportTraceTo(dir.filePath(QStringLiteral("t.json"))));
    EXPECT_TRUE(f.window.files()->exportConfigTo(dir.filePath(QStringLiteral("c.json"))));
    QFile config(dir.filePath(QStringLiteral("c.json")));
    ASSERT_TRUE(config.open(QIODevice::ReadOnly));
    const QByteArray text = config.readAll();
    EXPECT_TRUE(text.contains("\"validated\": true"));
    EXPECT_TRUE(text.contains("dpstudio-validated-config"));
    for (const char* suffix : { "png", "svg", "pdf" }) {
        const QString chart = dir.filePath(QStringLiteral("chart.") + QLatin1String(suffix));
        EXPECT_TRUE(saveChart(f.timeline(), chart, 800, 400).isEmpty()) << suffix;
        EXPECT_GT(QFileInfo(chart).size(), 1000) << suffix;
    }
}

// Export → PyTorch CSV with Comms, torchtitan, Megatron-Core: what `dpstudio export --format` writes; Megatron's
// refusal of DualPipe is shown with its reason and writes nothing.
TEST(MainWindow, ExportsTheFrameworkFormats)
{
    Fixture f;
    QTemporaryDir dir;
    f.window.document()->setVariantShape(dps::ScheduleKind::OneFOneB, 4, 8, 0);
    f.window.waitUntilIdle();
    const QString comms = dir.filePath(QStringLiteral("comms.csv"));
    ASSERT_TRUE(f.window.files()->exportFrameworkTo(QStringLiteral("torch-comms-csv"), comms));
    QFile csv(comms);
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    const QByteArray text = csv.readAll();
    EXPECT_TRUE(text.startsWith("0UNSHARD,0F0,0SEND_F0,")) << text.left(60).toStdString();
    EXPECT_TRUE(text.contains("3RECV_F0")) << "the last rank receives its activations";
    EXPECT_TRUE(f.window.files()->exportFrameworkTo(QStringLiteral("megatron"), dir.filePath(QStringLiteral("m.txt"))));
    ASSERT_TRUE(
        f.window.files()->exportFrameworkTo(QStringLiteral("torchtitan"), dir.filePath(QStringLiteral("t.toml"))));
    EXPECT_TRUE(QFileInfo::exists(dir.filePath(QStringLiteral("t.csv")))) << "the schedule CSV beside the config";

    f.window.document()->setVariantShape(dps::ScheduleKind::DualPipe, 4, 8, 0);
    f.window.waitUntilIdle();
    const QString refused = dir.filePath(QStringLiteral("d.txt"));
    EXPECT_FALSE(f.window.files()->exportFrameworkTo(QStringLiteral("megatron"), refused));
    EXPECT_EQ(f.window.banner()->kind(), MessageBanner::Kind::Error);
    EXPECT_TRUE(f.window.banner()->text().contains(QStringLiteral("Megatron-Core cannot run this schedule")))
        << f.window.banner()->text().toStdString();
    EXPECT_TRUE(f.window.banner()->text().contains(QStringLiteral("Megatron-Core has no DualPipe schedule")))
        << f.window.banner()->text().toStdString();
    EXPECT_FALSE(QFileInfo::exists(refused));
}

// View → Sends and Receives: the active variant is predicted lowered to PyTorch's sends and receives, which the
// timeline then holds; switched off, the compute-only prediction comes back.
TEST(MainWindow, TimesAndShowsTheSendsAndReceivesOnRequest)
{
    Fixture f;
    f.window.document()->setVariantShape(dps::ScheduleKind::OneFOneB, 4, 8, 0);
    f.window.waitUntilIdle();
    const double computeOnly = f.window.snapshot()->makespanUs;
    EXPECT_FALSE(f.window.snapshot()->sim.commsTimed);
    f.timeline()->commsAction()->setChecked(true);
    f.window.waitUntilIdle();
    ASSERT_TRUE(f.window.snapshot()->sim.commsTimed) << f.window.snapshot()->error;
    ASSERT_EQ(f.window.snapshot()->sim.comms.size(), 4u);
    EXPECT_EQ(f.window.snapshot()->sim.comms[0].size(), 16u) << "rank 0: 8 activations sent, 8 gradients received";
    EXPECT_EQ(f.window.snapshot()->sim.computeOnlyMakespanUs, computeOnly);
    f.timeline()->commsAction()->setChecked(false);
    f.window.waitUntilIdle();
    EXPECT_FALSE(f.window.snapshot()->sim.commsTimed);
    EXPECT_EQ(f.window.snapshot()->makespanUs, computeOnly);
}

namespace {

/// The first RECV_F of `rank`'s program row with compute steps and no other send or receive between it and the
/// compute step before its consumer (so moving it there keeps its communicator's order: no deadlock): its cell, the
/// cell of that compute step and the compute position of the consumer; -1s when there is none.
struct LateCandidate {
    int cell = -1;
    int previousCell = -1;
    int consumerPosition = -1;
};

LateCandidate receiveToDelay(const dps::TorchSchedule& program, int rank)
{
    const auto& row = program.rows[static_cast<std::size_t>(rank)];
    const auto at = [&row](int k) -> const dps::Step& { return row[static_cast<std::size_t>(k)]; };
    for (int c = 0; c < static_cast<int>(row.size()); ++c) {
        if (!at(c).isComm() || at(c).comm.kind != dps::CommKind::RecvF)
            continue;
        const dps::Op consumer { at(c).comm.stage, at(c).comm.microbatch, dps::OpKind::F };
        int position = 0; // compute steps before the consumer
        int previous = -1; // the last of them
        int k = 0;
        for (; k < static_cast<int>(row.size()) && !(at(k).isCompute() && at(k).compute.op == consumer); ++k)
            if (at(k).isCompute()) {
                previous = k;
                ++position;
            }
        bool commBetween = false;
        for (int j = c + 1; j < previous; ++j)
            commBetween = commBetween || at(j).isComm();
        if (k < static_cast<int>(row.size()) && previous > c && !commBetween)
            return { c, previous, position };
    }
    return {};
}

int commIndexOf(const dps::SimResult& sim, int rank, int cell)
{
    const auto& list = sim.comms[static_cast<std::size_t>(rank)];
    for (int i = 0; i < static_cast<int>(list.size()); ++i)
        if (list[static_cast<std::size_t>(i)].position == cell)
            return i;
    return -1;
}

} // namespace

// With Sends and Receives shown, a receive dragged along its rank's row to just before its consumer is posted only
// when the compute before it ends: the rank stalls and the makespan grows; the variant keeps the program as its
// comm_order; undo gives back the exact makespan. Moving a compute block afterwards drops the placed program, with a
// notice. A receive moved where the order deadlocks shows the validator's deadlock.
TEST(MainWindow, AReceiveDraggedLateStallsItsRankAndUndoRestores)
{
    Fixture f;
    f.window.document()->setVariantShape(dps::ScheduleKind::OneFOneB, 4, 8, 0);
    f.timeline()->commsAction()->setChecked(true);
    f.window.waitUntilIdle();
    const SnapshotPtr before = f.window.snapshot();
    ASSERT_TRUE(before->valid() && before->sim.commsTimed && before->program) << before->error;
    const int rank = 2;
    const LateCandidate late = receiveToDelay(*before->program, rank);
    ASSERT_GE(late.cell, 0) << "rank 2 posts some RECV_F ahead of compute steps before its consumer";
    const std::string moved = dps::toString(before->program->rows[rank][static_cast<std::size_t>(late.cell)]);

    // Drag the receive's bar (its transfer) so it is posted just after the compute before its consumer.
    f.timeline()->zoomToBlock(rank, late.consumerPosition, 0.15);
    QApplication::processEvents();
    const CommRef bar { rank, commIndexOf(before->sim, rank, late.cell) };
    const dps::CommTiming* timing = f.timeline()->lane(0)->comm(bar);
    ASSERT_NE(timing, nullptr);
    const QPointF from(f.timeline()->timeToPixel((timing->startUs + timing->endUs) / 2.0),
        f.timeline()->lane(0)->commRect(bar).center().y());
    ASSERT_EQ(f.timeline()->lane(0)->commAt(from), bar) << "the bar is under the pointer";
    const TimelineBlock& previous = before->blocks.blocks(rank)[static_cast<std::size_t>(late.consumerPosition - 1)];
    const TimelineBlock& consumer = before->blocks.blocks(rank)[static_cast<std::size_t>(late.consumerPosition)];
    // Posted between the centres of the compute before the consumer and of the consumer: it lands right after that
    // compute step.
    const double postAt = ((previous.startUs + previous.endUs) / 2.0 + (consumer.startUs + consumer.endUs) / 2.0) / 2.0;
    const double shift = f.timeline()->timeToPixel(postAt) - f.timeline()->timeToPixel(timing->postedUs);
    drag(f.timeline(), from, from + QPointF(shift, 0));
    f.window.waitUntilIdle();

    const auto& placed = f.window.document()->activeVariant().commOrder;
    ASSERT_TRUE(placed.has_value()) << "the move is kept as the variant's comm_order";
    EXPECT_EQ(dps::toString((*placed)[rank][static_cast<std::size_t>(late.previousCell)]), moved)
        << "right after the compute step before its consumer";
    const SnapshotPtr after = f.window.snapshot();
    ASSERT_TRUE(after->valid()) << after->error;
    EXPECT_TRUE(after->handEdited);
    EXPECT_GT(after->makespanUs, before->makespanUs) << "the late receive stalls rank 2";
    bool stalled = false;
    for (const dps::StalledReceive& r : after->sim.stalledReceives)
        stalled = stalled || (r.rank == rank && r.action == moved && r.stallUs > 0.0);
    EXPECT_TRUE(stalled) << moved << " is shown stalled";
    EXPECT_TRUE(f.window.document()->isModified());

    f.window.document()->undoStack()->undo();
    f.window.waitUntilIdle();
    EXPECT_FALSE(f.window.document()->activeVariant().commOrder.has_value());
    EXPECT_EQ(f.window.snapshot()->makespanUs, before->makespanUs) << "undo gives back the lowered program's makespan";

    // Redo, then reorder the compute: the placed sends and receives were for the old order and go, with a notice.
    f.window.document()->undoStack()->redo();
    f.window.waitUntilIdle();
    ASSERT_TRUE(f.window.document()->activeVariant().commOrder.has_value());
    f.window.document()->moveAction(0, 0, 1);
    f.window.waitUntilIdle();
    EXPECT_FALSE(f.window.document()->activeVariant().commOrder.has_value());
    EXPECT_TRUE(f.window.banner()->text().contains(QStringLiteral("dropped the sends and receives placed by hand")))
        << f.window.banner()->text().toStdString();
    f.window.document()->undoStack()->undo();
    f.window.waitUntilIdle();
    EXPECT_TRUE(f.window.document()->activeVariant().commOrder.has_value()) << "undo brings them back";
}

// Rank 0 serving 0RECV_B0 on its one communicator before it sends microbatch 1's activation: rank 1 cannot reach
// 1B0 without that activation, so neither goes on. The document applies the move; the diagnostics name the deadlock.
TEST(MainWindow, AReceiveMovedIntoADeadlockIsNamedByTheValidator)
{
    Fixture f;
    f.window.document()->setVariantShape(dps::ScheduleKind::OneFOneB, 4, 8, 0);
    f.timeline()->commsAction()->setChecked(true);
    f.window.waitUntilIdle();
    const auto program = f.window.document()->commProgram();
    ASSERT_TRUE(program.has_value());
    const auto& row = program->rows[0];
    int receive = -1;
    int firstSend = -1;
    for (int c = 0; c < static_cast<int>(row.size()); ++c) {
        const std::string text = dps::toString(row[static_cast<std::size_t>(c)]);
        receive = text == "0RECV_B0" ? c : receive;
        firstSend = firstSend < 0 && text == "0SEND_F0" ? c : firstSend;
    }
    ASSERT_GT(receive, firstSend);
    ASSERT_GE(firstSend, 0);
    EXPECT_FALSE(f.window.document()->moveCommAction(0, firstSend - 1, firstSend)) << "1F0 is compute: not moved";
    ASSERT_TRUE(f.window.document()->moveCommAction(0, receive, firstSend));
    f.window.waitUntilIdle();
    const SnapshotPtr s = f.window.snapshot();
    EXPECT_FALSE(s->valid());
    bool named = false;
    for (const dps::Diagnostic& d : s->report.diagnostics)
        named = named || (d.rule == "deadlock.comm-order" && d.rank == 0 && d.action == "0RECV_B0");
    EXPECT_TRUE(named) << s->error;
    EXPECT_GT(f.window.diagnostics()->errorCount(), 0);
    f.window.document()->undoStack()->undo();
    f.window.waitUntilIdle();
    EXPECT_TRUE(f.window.snapshot()->valid());
}

// An empty or blank CSV has no rank: the import refuses it with the CLI's message (dps::readScheduleCsv) and
// adds no variant, so Save cannot write a project of 0 ranks.
TEST(MainWindow, RefusesAnEmptyOrBlankCsv)
{
    Fixture f;
    QTemporaryDir dir;
    const std::size_t variants = f.window.document()->project().variants.size();
    const std::string active = f.window.document()->project().activeVariant;
    const std::pair<const char*, const char*> cases[]
        = { { "empty.csv", "" }, { "blank.csv", " , \r\n\n,,\n" }, { "quoted.csv", "\"\"\n" } };
    for (const auto& [name, bytes] : cases) {
        const QString path = dir.filePath(QLatin1String(name));
        writeFile(path, QByteArray(bytes));
        EXPECT_FALSE(f.window.files()->importCsvFile(path)) << name;
        EXPECT_EQ(f.window.banner()->kind(), MessageBanner::Kind::Error) << name;
        const QString why = QLatin1String(name) + (std::string_view(name) == "quoted.csv" ? ": no actions" : ": empty")
            + QStringLiteral(": a schedule CSV has one row of actions per rank, e.g. 0F0,0B0");
        EXPECT_TRUE(f.window.banner()->text().contains(why)) << f.window.banner()->text().toStdString();
        EXPECT_EQ(f.window.document()->project().variants.size(), variants) << name;
        EXPECT_EQ(f.window.document()->project().activeVariant, active) << name;
    }
}

TEST(MainWindow, ScreenshotHasOneRowPerRankWithBlocksInPlace)
{
    Fixture f;
    const QImage image = renderMainWindow(f.window, QSize(1600, 1000));
    ASSERT_EQ(image.size(), QSize(1600, 1000) * image.devicePixelRatio());
    TimelinePlottable* lane = f.timeline()->lane(0);
    const RowMapping rows = lane->rowMapping();
    ASSERT_EQ(rows.rows(), 8) << "one row per rank of the active variant";
    const QPoint origin = f.timeline()->mapTo(&f.window, QPoint(0, 0));
    const auto& s = *f.window.snapshot();
    const QRgb background = f.timeline()->lane(0) ? image.pixel(origin.x() + 2, origin.y() + 2) : 0;
    const int x0 = origin.x() + static_cast<int>(f.timeline()->timeToPixel(0.0)) + 1;
    const int x1 = origin.x() + static_cast<int>(f.timeline()->timeToPixel(s.sim.makespanUs)) - 1;
    ASSERT_GT(x1 - x0, 300) << "the timeline is wide enough to read";
    for (int r = 0; r < 8; ++r) {
        const int y = origin.y() + static_cast<int>(rows.rowCenter(r));
        EXPECT_GT(coveredFraction(image, y, x0, x1, background), 0.95) << "rank " << r << " has its row drawn";
        // Blocks of the rank's busy time are coloured (not idle grey): sample each block above its label.
        int coloured = 0;
        const int top = origin.y() + static_cast<int>(rows.bandTop(r)) + 3;
        for (const auto& b : s.blocks.blocks(r)) {
            const int x = origin.x() + static_cast<int>(f.timeline()->timeToPixel((b.startUs + b.endUs) / 2));
            const QColor c = image.pixelColor(x, top);
            coloured += c.saturation() > 60 ? 1 : 0;
        }
        EXPECT_GT(coloured, static_cast<int>(s.blocks.blocks(r).size()) * 9 / 10) << "rank " << r;
    }
    const int gapY = origin.y() + static_cast<int>((rows.bandBottom(0) + rows.bandTop(1)) / 2);
    EXPECT_LT(coveredFraction(image, gapY, x0, x1, background), 0.05) << "rows are separated by background";
    const auto ticks = qSharedPointerCast<QCPAxisTickerText>(f.timeline()->yAxis->ticker());
    EXPECT_EQ(ticks->ticks().size(), 8) << "one rank label per row";
    f.window.memoryChart()->setRank(0);
    const QImage memory = f.window.memoryChart()->plot()->grab().toImage();
    EXPECT_GT(coveredFraction(memory, memory.height() * 3 / 5, memory.width() * 3 / 10, memory.width() * 7 / 10,
                  memory.pixel(2, 2)),
        0.9)
        << "the memory chart's stacked areas are drawn";
}

TEST(MainWindow, CompareViewStacksEveryVariantWithASweep)
{
    Fixture f;
    const QImage image = renderCompareView(f.window, QSize(1400, 900));
    EXPECT_FALSE(image.isNull());
    CompareView* view = f.window.compareView();
    EXPECT_EQ(view->timeline()->laneCount(), 2);
    EXPECT_EQ(view->model()->columnCount(), 3);
    EXPECT_GE(view->sweepPlot()->graphCount(), 2);
    EXPECT_GT(view->sweepPlot()->graph(0)->dataCount(), 3);
    f.window.document()->addVariant();
    f.window.waitUntilIdle();
    EXPECT_EQ(view->timeline()->laneCount(), 3) << "the comparison follows the project while shown";
    view->close();
}

TEST(MainWindow, PartitionBoundaryDragIsOneUndoableEdit)
{
    Fixture f;
    PartitionBar* bar = f.window.partitionEditor()->bar();
    const int y = bar->height() / 2;
    const QPointF from(bar->boundaryX(0), y);
    const QPointF to(bar->boundaryX(1) - 2, y);
    drag(bar, from, to);
    EXPECT_EQ(f.window.document()->activeVariant().layerPartition[0], 3);
    EXPECT_EQ(f.window.document()->activeVariant().layerPartition[1], 1);
    f.window.document()->undoStack()->undo();
    EXPECT_EQ(f.window.document()->activeVariant().layerPartition, std::vector<int>(8, 2));
    f.window.partitionEditor()->balanceByCost();
    EXPECT_EQ(f.window.document()->activeVariant().layerPartition, std::vector<int>(8, 2)) << "equal stages: unchanged";
}

TEST(MainWindow, DarkPaletteKeepsChartsReadable)
{
    Fixture f;
    f.window.setThemeMode(ThemeMode::Dark);
    QApplication::processEvents();
    const ChartColors dark = ChartColors::fromPalette(f.timeline()->palette());
    EXPECT_TRUE(dark.dark);
    EXPECT_LT(f.timeline()->grab().toImage().pixelColor(2, 2).lightness(), 80);
    EXPECT_GT(qAbs(dark.text.lightness() - dark.background.lightness()), 150);
    EXPECT_GT(qAbs(dark.idle.lightness() - dark.background.lightness()), 8) << "idle time stays visible";
    f.window.setThemeMode(ThemeMode::Light);
    QApplication::processEvents();
    EXPECT_GT(f.timeline()->grab().toImage().pixelColor(2, 2).lightness(), 200);
}

TEST(MainWindow, HoverNamesTheActionItsTimesAndWhatItWaitedFor)
{
    Fixture f;
    const QString text = f.timeline()->tooltipAt(f.timeline()->blockCenter(3, 0));
    EXPECT_TRUE(text.contains(QStringLiteral("3F0"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("stage 3"))) << "the stage shows on hover";
    EXPECT_TRUE(text.contains(QStringLiteral("start"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("waited for: the activation of stage 2, microbatch 0 from rank 2")))
        << text.toStdString();
    const QPointF idle(f.timeline()->timeToPixel(-1.0), f.timeline()->blockCenter(3, 0).y());
    EXPECT_TRUE(f.timeline()->tooltipAt(idle).isEmpty());
}

TEST(MainWindow, KeyboardZoomAndFit)
{
    Fixture f;
    const QCPRange fitted = f.timeline()->xAxis->range();
    f.timeline()->setFocus();
    QTest::keyClick(f.timeline(), Qt::Key_Plus);
    EXPECT_LT(f.timeline()->xAxis->range().size(), fitted.size() * 0.8);
    QTest::keyClick(f.timeline(), Qt::Key_Right);
    EXPECT_GT(f.timeline()->xAxis->range().center(), fitted.center());
    QTest::keyClick(f.timeline(), Qt::Key_Home);
    EXPECT_NEAR(f.timeline()->xAxis->range().size(), fitted.size(), 1e-6 * fitted.size());
}

TEST(StudioOptions, ParsesTheCommandLine)
{
    StudioOptions options;
    QString error;
    ASSERT_TRUE(parseStudioOptions({ QStringLiteral("dualpipe-studio"), QStringLiteral("--screenshot"),
                                       QStringLiteral("out.png"), QStringLiteral("p.json") },
        options, error))
        << error.toStdString();
    EXPECT_EQ(options.screenshot, QStringLiteral("out.png"));
    EXPECT_EQ(options.project, QStringLiteral("p.json"));
    EXPECT_TRUE(options.headless());
    StudioOptions bad;
    EXPECT_FALSE(
        parseStudioOptions({ QStringLiteral("x"), QStringLiteral("--size"), QStringLiteral("10x10") }, bad, error));
    EXPECT_FALSE(parseStudioOptions({ QStringLiteral("x"), QStringLiteral("--bogus") }, bad, error));
}
