// The run overlay in the window, offscreen: a real measured.json of the tiny DualPipeV project gives a
// measured block for every predicted one, the metrics show measured and error, a slip click selects its
// block, Calibrate moves the prediction towards the run, the validated config records the run (and is not
// validated when the run failed its check), `--screenshot --measured` writes a PNG, and a real run
// started from the window's run panel ends overlaid; and RunWorkspace does all that through a stub RunHost,
// without a window.
#include "document/projectdocument.h"
#include "document/simulationservice.h"
#include "run/runhistory.h"
#include "run/runpanel.h"
#include "widgets/filecontroller.h"
#include "widgets/mainwindow.h"
#include "widgets/memorychart.h"
#include "widgets/metricspanel.h"
#include "widgets/overlaypanel.h"
#include "widgets/runhost.h"
#include "widgets/runworkspace.h"
#include "widgets/timelineview.h"

#include "base/fileio.h"
#include "base/format.h"
#include "base/hostinfo.h"
#include "launch/report.h"
#include "machine/costsource.h"
#include "project/predict.h"
#include "trace/measured.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

using namespace dps::ui;

namespace {

const QString kProject = QStringLiteral(DPS_TEST_DATA "/launch/tiny.dpstudio.json");
const QString kMeasured = QStringLiteral(DPS_TEST_DATA "/measured/tiny-dualpipev.measured.json");

/// A window on the tiny DualPipeV project with its prediction delivered.
struct OverlayFixture {
    MainWindow window;
    OverlayFixture()
    {
        window.setThemeMode(ThemeMode::Light);
        window.resize(1600, 1000);
        window.show();
        EXPECT_TRUE(window.files()->openFile(kProject));
        settle();
    }
    void settle()
    {
        QApplication::processEvents();
        window.waitUntilIdle();
        QApplication::processEvents();
    }
    OverlayPanel* overlay() { return window.runs()->overlayPanel(); }
    bool load(const QString& path = kMeasured)
    {
        QString error;
        const bool ok = window.runs()->loadMeasured(path, &error);
        EXPECT_TRUE(ok) << error.toStdString();
        QApplication::processEvents();
        return ok;
    }
};

/// Every predicted block has a measured block at the same rank and position.
void expectEveryBlockMeasured(MainWindow& window)
{
    const BlockIndex& predicted = window.snapshot()->blocks;
    const BlockIndex* measured = window.timeline()->measuredBlocks();
    ASSERT_NE(measured, nullptr);
    ASSERT_EQ(measured->rankCount(), predicted.rankCount());
    for (int r = 0; r < predicted.rankCount(); ++r) {
        ASSERT_EQ(measured->blocks(r).size(), predicted.blocks(r).size()) << "rank " << r;
        for (const auto& m : measured->blocks(r)) {
            ASSERT_GE(m.position, 0) << "rank " << r;
            EXPECT_EQ(m.action, predicted.blocks(r)[m.position].action);
        }
    }
}

/// A RunHost without a window: a document and a simulation, recording what the workspace asks for.
class StubHost : public RunHost {
public:
    StubHost()
    {
        m_document.reset(dps::loadProject(kProject.toStdString()), kProject);
        m_simulation.request(m_document.project(), m_document.activeVariant().name);
        m_simulation.waitUntilIdle();
        QApplication::processEvents();
    }

    ProjectDocument* document() const override { return &m_document; }
    SimulationService* simulation() override { return &m_simulation; }
    void showMessage(MessageBanner::Kind kind, const QString& text) override { messages.emplace_back(kind, text); }
    void raiseRunPanel() override { ++runPanelRaised; }
    void raiseOverlayPanel() override { ++overlayPanelRaised; }
    void showOverlay(const MeasuredOverlay& overlay) override { overlays.push_back(overlay); }
    void markBlock(int rank, int position) override { marked = { rank, position }; }
    void setLastRun(const std::optional<dps::ValidatedRun>& run) override { lastRun = run; }

    std::vector<std::pair<MessageBanner::Kind, QString>> messages;
    int runPanelRaised = 0;
    int overlayPanelRaised = 0;
    std::vector<MeasuredOverlay> overlays;
    std::pair<int, int> marked { -1, -1 };
    std::optional<dps::ValidatedRun> lastRun;

private:
    mutable ProjectDocument m_document;
    SimulationService m_simulation;
};

QJsonObject readJson(const QString& path)
{
    QFile file(path);
    EXPECT_TRUE(file.open(QIODevice::ReadOnly)) << path.toStdString();
    return QJsonDocument::fromJson(file.readAll()).object();
}

} // namespace

TEST(Overlay, AMeasuredFileGivesAMeasuredBlockForEveryPredictedOne)
{
    OverlayFixture f;
    ASSERT_TRUE(f.load());
    expectEveryBlockMeasured(f.window);
    EXPECT_EQ(f.overlay()->overlay().unmatched, 0);
    EXPECT_EQ(static_cast<std::size_t>(f.overlay()->overlay().matched), f.window.snapshot()->blocks.size());
    EXPECT_TRUE(f.window.memoryChart()->hasMeasuredMemory());
    // The time axis spans the longer (measured) timeline.
    EXPECT_GE(f.window.timeline()->makespan(), f.overlay()->overlay().blocks->endUs());
}

TEST(Overlay, MetricsShowPredictedMeasuredAndError)
{
    OverlayFixture f;
    ASSERT_TRUE(f.load());
    MetricsPanel* m = f.window.metrics();
    for (const QString& key : { QStringLiteral("makespan"), QStringLiteral("bubble"), QStringLiteral("peak-memory"),
             QStringLiteral("idle-0"), QStringLiteral("idle-1"), QStringLiteral("peak-memory-1") }) {
        EXPECT_FALSE(m->overlayText(key, 1).isEmpty()) << key.toStdString();
        EXPECT_FALSE(m->overlayText(key, 2).isEmpty()) << key.toStdString();
        EXPECT_TRUE(m->overlayText(key, 3).contains(QLatin1Char('%'))) << key.toStdString();
    }
    const auto* row = f.overlay()->overlay().row("makespan");
    ASSERT_NE(row, nullptr);
    EXPECT_NEAR(row->measured, f.overlay()->trace()->medianMakespanUs(), 1e-9);
    EXPECT_TRUE(f.overlay()->comparisonText().contains(QStringLiteral("this run")));
}

TEST(Overlay, AnyStepCanBeShown)
{
    OverlayFixture f;
    ASSERT_TRUE(f.load());
    const auto steps = dps::ui::measuredSteps(*f.overlay()->trace());
    ASSERT_GE(steps.size(), 2u);
    const int other = steps.back() == f.overlay()->trace()->medianStep ? steps.front() : steps.back();
    f.overlay()->setStep(other);
    QApplication::processEvents();
    EXPECT_EQ(f.overlay()->overlay().step, other);
    expectEveryBlockMeasured(f.window);
}

// A real run of tiny DeepSeek-V3 with expert parallelism (DualPipe 2 ranks × dp 2, ep 2: `dpstudio init --model
// deepseek-v3 --scale tiny --schedule dualpipe --ranks 2 --microbatches 4`, then `dpstudio run --steps 1 --warmup
// 1`, tests/data/measured/tiny-deepseek-dualpipe.measured.json): the overlay adds each rank's share of the
// all-to-all hidden behind the other half of an F&B slot, measured beside predicted, and the tooltip of the
// overlapped block says how much of its all-to-all was hidden. The measured shares are the file's sums:
// rank 0 1183.259 of 19994.101 µs, rank 1 1533.396 of 26082.174 µs.
TEST(Overlay, AnExpertParallelRunShowsTheHiddenAllToAll)
{
    MainWindow window;
    window.resize(1600, 1000);
    window.show();
    ASSERT_TRUE(
        window.files()->openFile(QStringLiteral(DPS_TEST_DATA "/projects/tiny-deepseek-dualpipe.dpstudio.json")));
    QApplication::processEvents();
    window.waitUntilIdle();
    QApplication::processEvents();
    QString error;
    ASSERT_TRUE(window.runs()->loadMeasured(
        QStringLiteral(DPS_TEST_DATA "/measured/tiny-deepseek-dualpipe.measured.json"), &error))
        << error.toStdString();
    QApplication::processEvents();
    const MeasuredOverlay& o = window.runs()->overlayPanel()->overlay();
    const auto predicted = dps::allToAllPerRank(*window.snapshot()->schedule, window.snapshot()->costs);
    const double measured[] = { 1183.259 / 19994.101, 1533.396 / 26082.174 };
    for (int r = 0; r < 2; ++r) {
        const auto* row = o.row("a2a-hidden-" + std::to_string(r));
        ASSERT_NE(row, nullptr) << "rank " << r;
        EXPECT_NEAR(row->measured, measured[r], 1e-12) << "rank " << r;
        EXPECT_DOUBLE_EQ(row->predicted, predicted[static_cast<std::size_t>(r)].hiddenShare()) << "rank " << r;
        EXPECT_GT(row->predicted, 0.0) << "rank " << r;
        EXPECT_LT(row->predicted, 1.0) << "rank " << r;
    }
    // Rank 0's overlapped slot (1F3;0B0): 6197.65 µs of all-to-all, 1183.259 µs hidden.
    for (const TimelineBlock& b : window.snapshot()->blocks.blocks(0))
        if (b.action.overlapped) {
            const QString tip = window.timeline()->measuredTooltip(b);
            EXPECT_TRUE(tip.contains(QStringLiteral("all-to-all 6.2 ms, of which 1.18 ms hidden")))
                << tip.toStdString();
        }
}

TEST(Overlay, ClickingASlipSelectsItsBlock)
{
    OverlayFixture f;
    ASSERT_TRUE(f.load());
    QTableWidget* table = f.overlay()->slipTable();
    ASSERT_GT(table->rowCount(), 0);
    f.window.findChild<QWidget*>(QStringLiteral("overlayDock"))->show();
    QApplication::processEvents();
    const QRect cell = table->visualItemRect(table->item(1, 0));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
    const StartSlip& slip = f.overlay()->overlay().slips[1];
    const BlockRef marked = f.window.timeline()->lane(0)->marked();
    EXPECT_EQ(marked.rank, slip.rank);
    EXPECT_EQ(marked.position, slip.position);
}

TEST(Overlay, CalibrateMovesThePredictionTowardsTheRunAndUndoes)
{
    OverlayFixture f;
    ASSERT_TRUE(f.load());
    const double measured = f.overlay()->overlay().row("makespan")->measured;
    const double before = f.window.snapshot()->sim.makespanUs;
    QString error;
    ASSERT_TRUE(f.window.runs()->calibrate(&error)) << error.toStdString();
    f.settle();
    const double after = f.window.snapshot()->sim.makespanUs;
    EXPECT_LT(std::abs(after - measured), std::abs(before - measured));
    // The metrics follow the new prediction.
    EXPECT_NEAR(f.overlay()->overlay().row("makespan")->predicted, after, 1e-9);
    expectEveryBlockMeasured(f.window);
    f.window.document()->undoStack()->undo();
    f.settle();
    EXPECT_NEAR(f.window.snapshot()->sim.makespanUs, before, 1e-9);
}

TEST(Overlay, ValidatedConfigRecordsTheRunAndRefusesAFailedCheck)
{
    OverlayFixture f;
    QTemporaryDir dir;
    ASSERT_TRUE(f.load());
    const QString good = dir.filePath(QStringLiteral("good.json"));
    ASSERT_TRUE(f.window.files()->exportConfigTo(good));
    QJsonObject config = readJson(good);
    EXPECT_TRUE(config.value(QStringLiteral("validated")).toBool());
    const QJsonObject run = config.value(QStringLiteral("measured")).toObject();
    EXPECT_EQ(run.value(QStringLiteral("backend")).toString(), QStringLiteral("cpu"));
    EXPECT_GT(run.value(QStringLiteral("median_step_makespan_us")).toDouble(), 0.0);
    EXPECT_TRUE(run.value(QStringLiteral("hardware")).toObject().contains(QStringLiteral("cpu")));
    EXPECT_TRUE(run.value(QStringLiteral("correctness")).toObject().value(QStringLiteral("passed")).toBool());

    QFile in(kMeasured);
    ASSERT_TRUE(in.open(QIODevice::ReadOnly));
    QJsonObject failed = QJsonDocument::fromJson(in.readAll()).object();
    QJsonObject check = failed.value(QStringLiteral("correctness")).toObject();
    check.insert(QStringLiteral("passed"), false);
    failed.insert(QStringLiteral("correctness"), check);
    const QString failedPath = dir.filePath(QStringLiteral("failed.measured.json"));
    QFile out(failedPath);
    ASSERT_TRUE(out.open(QIODevice::WriteOnly));
    out.write(QJsonDocument(failed).toJson());
    out.close();
    ASSERT_TRUE(f.load(failedPath));
    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    ASSERT_TRUE(f.window.files()->exportConfigTo(bad));
    config = readJson(bad);
    EXPECT_FALSE(config.value(QStringLiteral("validated")).toBool());
    EXPECT_TRUE(config.value(QStringLiteral("not_validated_because"))
                    .toArray()
                    .first()
                    .toString()
                    .contains(QStringLiteral("correctness")));
}

TEST(Overlay, ScreenshotWithMeasuredWritesAPng)
{
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("overlay.png"));
    QProcess studio;
    studio.start(QStringLiteral(DPS_STUDIO_EXE),
        { QStringLiteral("--screenshot"), png, QStringLiteral("--measured"), kMeasured, kProject });
    ASSERT_TRUE(studio.waitForFinished(60000));
    EXPECT_EQ(studio.exitCode(), 0) << studio.readAllStandardError().toStdString();
    const QImage image(png);
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.size(), QSize(1600, 1000));

    QProcess broken;
    broken.start(QStringLiteral(DPS_STUDIO_EXE),
        { QStringLiteral("--screenshot"), png, QStringLiteral("--measured"),
            dir.filePath(QStringLiteral("missing.json")), kProject });
    ASSERT_TRUE(broken.waitForFinished(60000));
    EXPECT_EQ(broken.exitCode(), 1);
}

TEST(Overlay, ARealRunFromTheWindowEndsOverlaid)
{
    const QString program = QStringLiteral(DPS_REAL_DPSTUDIO);
    const QString worker = QFileInfo(program).dir().filePath(QStringLiteral("dpstudio-worker"));
    if (!QFileInfo(program).isExecutable() || !QFileInfo(worker).isExecutable()
        || QStandardPaths::findExecutable(QStringLiteral("mpirun")).isEmpty())
        GTEST_SKIP() << "dpstudio, dpstudio-worker or mpirun is not available";
    QTemporaryDir dir;
    const QString project = dir.filePath(QStringLiteral("tiny.dpstudio.json"));
    ASSERT_TRUE(QFile::copy(kProject, project));
    OverlayFixture f;
    ASSERT_TRUE(f.window.files()->openFile(project));
    f.settle();
    RunPanel* panel = f.window.runs()->runPanel();
    panel->setProgram(program);
    QSignalSpy overlaid(f.window.runs(), &RunWorkspace::overlayLoaded);
    QSignalSpy failed(panel, &RunPanel::runFailed);
    f.window.runs()->runAction()->trigger();
    for (int i = 0; i < 1200 && overlaid.isEmpty() && failed.isEmpty(); ++i)
        QTest::qWait(100);
    ASSERT_TRUE(failed.isEmpty()) << failed.value(0).value(0).toString().toStdString();
    ASSERT_EQ(overlaid.size(), 1);
    expectEveryBlockMeasured(f.window);
    EXPECT_EQ(panel->history()->runCount(), 1);
    ASSERT_TRUE(f.window.files()->lastRun().has_value());
    EXPECT_TRUE(f.window.files()->lastRun()->correctnessPassed);
}

TEST(RunWorkspace, WorksThroughItsHostAlone)
{
    StubHost host;
    ASSERT_NE(host.simulation()->current(), nullptr);
    RunWorkspace runs(host);
    EXPECT_EQ(runs.projectInfo().path, QFileInfo(kProject).absoluteFilePath());
    EXPECT_EQ(runs.projectInfo().variant, QStringLiteral("dualpipev"));
    EXPECT_EQ(runs.projectInfo().ranks, 2);
    EXPECT_FALSE(runs.calibrateAction()->isEnabled());

    QString error;
    EXPECT_FALSE(runs.calibrate(&error));
    EXPECT_EQ(error, QStringLiteral("Nothing to calibrate from: overlay a run first"));
    ASSERT_EQ(host.messages.size(), 1u);
    EXPECT_EQ(host.messages.back().first, MessageBanner::Kind::Error);
    EXPECT_EQ(host.messages.back().second, error);

    ASSERT_TRUE(runs.loadMeasured(kMeasured, &error)) << error.toStdString();
    QApplication::processEvents();
    EXPECT_EQ(host.overlayPanelRaised, 1);
    EXPECT_EQ(host.runPanelRaised, 0);
    ASSERT_TRUE(host.lastRun.has_value());
    EXPECT_EQ(host.lastRun->file, kMeasured.toStdString());
    EXPECT_EQ(host.lastRun->ranks, 2);
    EXPECT_EQ(host.lastRun->variant, "dualpipev");
    ASSERT_FALSE(host.overlays.empty());
    ASSERT_NE(host.overlays.back().blocks, nullptr);
    EXPECT_EQ(static_cast<std::size_t>(host.overlays.back().matched), host.simulation()->current()->blocks.size());
    EXPECT_TRUE(runs.calibrateAction()->isEnabled());

    emit runs.overlayPanel()->slipActivated(1, 3);
    EXPECT_EQ(host.marked, std::make_pair(1, 3));

    const std::size_t edits = static_cast<std::size_t>(host.document()->undoStack()->count());
    ASSERT_TRUE(runs.calibrate(&error)) << error.toStdString();
    EXPECT_EQ(static_cast<std::size_t>(host.document()->undoStack()->count()), edits + 1);
    EXPECT_EQ(host.document()->undoStack()->undoText(),
        QStringLiteral("Calibrate from %1").arg(QFileInfo(kMeasured).fileName()));
    EXPECT_EQ(host.messages.back().first, MessageBanner::Kind::Info);
}

TEST(Overlay, ACpuRunOfThisHostIsComparedWithThePredictionForThisMachine)
{
    // This machine's profile in the tests' cache (testmain.cpp), at the tiny project's 8×64×256: every GEMM
    // 10 µs, every other call 1 µs.
    dps::machine::CpuProfile profile;
    profile.machine.cpuModel = dps::cpuModelName();
    profile.machine.cores = dps::cpuCoreCount();
    profile.machine.cpuFlagsHash = dps::machine::cpuFlagsHash(dps::cpuInfoField("flags"));
    profile.machine.blasCore = "Test";
    profile.machine.blasThreads = 1;
    profile.probedAt = "2026-01-01T00:00:00Z";
    dps::machine::ShapeMeasure shape;
    shape.shape = { 8, 64, 256 };
    shape.repetitions = 3;
    shape.gemms = { { "F", false, true, 8, 256, 64, 0.0, 10.0 }, { "F", false, true, 8, 64, 256, 0.0, 10.0 },
        { "I", false, false, 8, 256, 64, 0.0, 10.0 }, { "I", false, false, 8, 64, 256, 0.0, 10.0 },
        { "W", true, false, 64, 256, 8, 1.0, 10.0 }, { "W", true, false, 256, 64, 8, 1.0, 10.0 } };
    shape.elementwise = { { "gelu_forward", 2048, 16384, 1.0 }, { "gelu_backward", 2048, 24576, 1.0 },
        { "mse_loss", 512, 6144, 1.0 }, { "grad_accumulate", 32768, 393216, 1.0 } };
    profile.shapes = { shape };
    std::error_code ec;
    std::filesystem::remove_all(dps::machine::cpuProfileCacheDir(), ec); // e.g. a real run's probe: only ours
    const std::filesystem::path cached = dps::machine::saveCpuProfileToCache(profile);

    // The tiny run, as if it had run here.
    QTemporaryDir dir;
    QFile in(kMeasured);
    ASSERT_TRUE(in.open(QIODevice::ReadOnly));
    QJsonObject measured = QJsonDocument::fromJson(in.readAll()).object();
    measured[QStringLiteral("host")] = QString::fromStdString(dps::hostName());
    measured[QStringLiteral("cpu")] = QString::fromStdString(dps::cpuModelName());
    const QString here = dir.filePath(QStringLiteral("here.measured.json"));
    QFile out(here);
    ASSERT_TRUE(out.open(QIODevice::WriteOnly));
    out.write(QJsonDocument(measured).toJson());
    out.close();

    OverlayFixture f;
    const double nominal = f.window.snapshot()->makespanUs;
    ASSERT_TRUE(f.load(here));
    f.settle();
    const dps::Project project = dps::loadProject(kProject.toStdString());
    const dps::machine::MachineCosts costs = dps::machine::machineCosts(profile, project, project.active(), "p");
    const dps::Prediction machine
        = dps::predict(project, "dualpipev", dps::machine::machinePredictOptions(costs, project.costs, true));
    ASSERT_TRUE(machine.valid()) << machine.error;
    EXPECT_NE(machine.makespanUs, nominal);
    EXPECT_DOUBLE_EQ(f.window.snapshot()->makespanUs, machine.makespanUs);
    EXPECT_EQ(f.window.snapshot()->predictionFor,
        "this machine (probed CPU profile, " + cached.string() + "; "
            + dps::formatCountOf(std::size_t(dps::cpuCoreCount()), "core") + " shared by the ranks)");
    // dpstudio run's report predicts the same run the same way.
    const dps::MeasuredTrace ran = dps::loadMeasured(here.toStdString());
    std::string label;
    const dps::Prediction reported = dps::launch::predictMeasuredRun(project, "dualpipev", ran,
        dps::machine::CostSource::thisMachine(*dps::machine::cachedMachineProfile(1)), &label);
    EXPECT_DOUBLE_EQ(f.window.snapshot()->makespanUs, reported.makespanUs);
    EXPECT_DOUBLE_EQ(f.window.snapshot()->peakMemoryBytes, reported.peakMemoryBytes);
    EXPECT_EQ(f.window.snapshot()->predictionFor, label);
    EXPECT_TRUE(f.overlay()->comparisonText().contains(QStringLiteral("for this machine")))
        << f.overlay()->comparisonText().toStdString();
    const auto* row = f.overlay()->overlay().row("makespan");
    ASSERT_NE(row, nullptr);
    EXPECT_DOUBLE_EQ(row->predicted, machine.makespanUs);

    // Hidden: the project's devices again.
    f.overlay()->clear();
    f.settle();
    EXPECT_TRUE(f.window.snapshot()->predictionFor.empty());
    EXPECT_DOUBLE_EQ(f.window.snapshot()->makespanUs, nominal);
    std::filesystem::remove(cached);
}

TEST(Overlay, ARunOfAnotherMachineIsPredictedAsTheRunReportPredictsIt)
{
    // A bf16 project whose run (on another host, the cpu backend) moved fp32 tensors: the overlay and dpstudio
    // run's report both predict that run (fp32 tensors, the engine's rules), not the bf16 design.
    QTemporaryDir dir;
    dps::Project project = dps::loadProject(kProject.toStdString());
    project.model.dtype = dps::DType::BF16;
    const QString file = dir.filePath(QStringLiteral("bf16.dpstudio.json"));
    dps::writeFileAtomic(file.toStdString(), dps::serializeProject(project));
    dps::MeasuredTrace ran = dps::loadMeasured(kMeasured.toStdString());
    ran.host = dps::hostName() + "-elsewhere";
    ASSERT_EQ(ran.backend, "cpu");
    const QString elsewhere = dir.filePath(QStringLiteral("elsewhere.measured.json"));
    dps::writeFileAtomic(elsewhere.toStdString(), dps::serializeMeasured(ran));

    OverlayFixture f;
    ASSERT_TRUE(f.window.files()->openFile(file));
    f.settle();
    const double design = f.window.snapshot()->peakActivationBytes;
    ASSERT_TRUE(f.load(elsewhere));
    f.settle();
    std::string label;
    const dps::Prediction reported = dps::launch::predictMeasuredRun(
        project, "dualpipev", ran, dps::machine::CostSource::projectRun("cpu"), &label);
    EXPECT_DOUBLE_EQ(reported.peakActivationBytes, 2.0 * design); // fp32 activations of the run
    EXPECT_DOUBLE_EQ(f.window.snapshot()->makespanUs, reported.makespanUs);
    EXPECT_DOUBLE_EQ(f.window.snapshot()->peakMemoryBytes, reported.peakMemoryBytes);
    EXPECT_DOUBLE_EQ(f.window.snapshot()->peakActivationBytes, reported.peakActivationBytes);
    EXPECT_EQ(f.window.snapshot()->predictionFor, label);
    const auto* row = f.overlay()->overlay().row("makespan");
    ASSERT_NE(row, nullptr);
    EXPECT_DOUBLE_EQ(row->predicted, reported.makespanUs);
}
