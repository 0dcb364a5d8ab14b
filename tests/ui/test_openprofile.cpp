// File → Open Profile… in the window, offscreen: the committed torch 1.13 traces of the DualPipeV variant
// (tests/data/traces) import against the open project, are written into its runs folder, listed in the
// runs history and overlaid exactly like an opened measured.json (a measured block for every predicted
// one); the validated config records the run as "measured externally, not checked"; a broken profile is
// reported with the file and the reason and changes nothing.
#include "document/projectdocument.h"
#include "run/runhistory.h"
#include "run/runpanel.h"
#include "widgets/filecontroller.h"
#include "widgets/mainwindow.h"
#include "widgets/memorychart.h"
#include "widgets/overlaypanel.h"
#include "widgets/runworkspace.h"
#include "widgets/timelineview.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using namespace dps::ui;

namespace {

const QString kTraces = QStringLiteral(DPS_TEST_DATA "/traces");

struct ProfileFixture {
    QTemporaryDir dir;
    QString project;
    MainWindow window;
    ProfileFixture()
    {
        project = dir.filePath(QStringLiteral("torch.dpstudio.json"));
        EXPECT_TRUE(QFile::copy(kTraces + QStringLiteral("/torch-block.dpstudio.json"), project));
        window.files()->setRemembersRecent(false);
        window.resize(1600, 1000);
        window.show();
        EXPECT_TRUE(window.files()->openFile(project));
        settle();
    }
    void settle()
    {
        QApplication::processEvents();
        window.waitUntilIdle();
        QApplication::processEvents();
    }
    /// Triggers File → Open Profile… with `path` as the dialog's answer.
    void openProfile(const QString& path)
    {
        window.files()->setPathChooser([path](const QString& kind, const QString&, const QString&) {
            EXPECT_EQ(kind, QStringLiteral("profile"));
            return path;
        });
        auto* action = window.findChild<QAction*>(QStringLiteral("openProfileAction"));
        ASSERT_NE(action, nullptr);
        action->trigger();
        settle();
    }
};

} // namespace

TEST(OpenProfile, ImportsIntoTheRunsFolderAndOverlaysEveryBlock)
{
    ProfileFixture f;
    QSignalSpy imported(f.window.files(), &FileController::profileImported);
    f.openProfile(kTraces + QStringLiteral("/torch113-dualpipev"));
    ASSERT_EQ(imported.count(), 1);
    const QString measured = imported.at(0).at(0).toString();
    EXPECT_EQ(QFileInfo(measured).absolutePath(), QFileInfo(RunHistory::folderFor(f.project)).absoluteFilePath());
    EXPECT_TRUE(measured.endsWith(QStringLiteral("-dualpipev.profile.measured.json"))) << measured.toStdString();

    OverlayPanel* overlay = f.window.runs()->overlayPanel();
    ASSERT_TRUE(overlay->hasOverlay());
    EXPECT_EQ(QFileInfo(overlay->measuredPath()), QFileInfo(measured));
    EXPECT_EQ(overlay->overlay().unmatched, 0);
    EXPECT_EQ(static_cast<std::size_t>(overlay->overlay().matched), f.window.snapshot()->blocks.size());
    EXPECT_EQ(overlay->overlay().step, 1); // the median of the two steps (42.59 ms < 47.32 ms)
    EXPECT_DOUBLE_EQ(overlay->overlay().makespanUs, 42588.0);
    EXPECT_FALSE(f.window.memoryChart()->hasMeasuredMemory()); // torch 1.13 wrote no [memory] events
    bool said = false; // the overlay's header
    for (const QLabel* label : overlay->findChildren<QLabel*>())
        said = said || label->text().contains(QStringLiteral("measured externally, not checked"));
    EXPECT_TRUE(said);

    // Listed in the runs history, its correctness unknown (not "FAILED").
    RunHistory* history = f.window.runs()->runPanel()->history();
    ASSERT_EQ(history->runCount(), 1);
    EXPECT_EQ(QFileInfo(history->run(0).measuredPath), QFileInfo(measured));
    EXPECT_EQ(history->run(0).correctness, Correctness::Unknown);

    // The validated config says so.
    ASSERT_TRUE(f.window.files()->lastRun().has_value());
    EXPECT_FALSE(f.window.files()->lastRun()->correctnessChecked);
    const QString config = f.dir.filePath(QStringLiteral("validated.json"));
    QSignalSpy warned(f.window.files(), &FileController::warned);
    EXPECT_TRUE(f.window.files()->exportConfigTo(config));
    ASSERT_EQ(warned.count(), 1); // written, marked not validated: no correctness check
    EXPECT_TRUE(warned.at(0).at(0).toString().contains(QStringLiteral("the run was measured externally, not checked")));
    QFile file(config);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QJsonObject json = QJsonDocument::fromJson(file.readAll()).object();
    EXPECT_EQ(json[QStringLiteral("measured")].toObject()[QStringLiteral("note")].toString(),
        QStringLiteral("measured externally, not checked"));
}

TEST(OpenProfile, ABrokenProfileNamesTheFileAndChangesNothing)
{
    ProfileFixture f;
    QSignalSpy failed(f.window.files(), &FileController::failed);
    QSignalSpy imported(f.window.files(), &FileController::profileImported);
    f.openProfile(kTraces + QStringLiteral("/torch113-1f1b")); // the 1F1B run against the DualPipeV variant
    EXPECT_EQ(imported.count(), 0);
    ASSERT_EQ(failed.count(), 1);
    const QString message = failed.at(0).at(0).toString();
    EXPECT_TRUE(message.contains(QStringLiteral("torch113-1f1b/rank0.json.gz (rank 0), step 0: 0B0, 0B1, 0F3, 0B2, "
                                                "0B3 are not in the schedule of rank 0 (variant 'dualpipev')")))
        << message.toStdString();
    EXPECT_FALSE(f.window.runs()->overlayPanel()->hasOverlay());
    EXPECT_FALSE(QFileInfo::exists(RunHistory::folderFor(f.project)));
}
