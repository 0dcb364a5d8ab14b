// RunController and RunPanel against the real `dpstudio run` on CPU (mpirun, DualPipeV on 2 ranks):
// the run finishes with a measured trace, and a cancel leaves no mpirun or worker behind. Skipped when
// dpstudio is not built or `dpstudio devices` finds no mpirun. $DPS_REAL_DPSTUDIO overrides the path.
#include "offscreen.h"

#include "run/devicesprobe.h"
#include "run/runcontroller.h"
#include "run/runhistory.h"
#include "run/runpanel.h"
#include "run/runrecord.h"

#include "launch/process.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

using namespace dps::ui;
using dps::launch::descendantProcesses;
using dps::launch::processIsAlive;

namespace {

QString realDpstudio()
{
    if (!qEnvironmentVariableIsEmpty("DPS_REAL_DPSTUDIO"))
        return qEnvironmentVariable("DPS_REAL_DPSTUDIO");
#ifdef DPS_REAL_DPSTUDIO
    return QStringLiteral(DPS_REAL_DPSTUDIO);
#else
    return {};
#endif
}

/// Copies a project with hidden 256, FFN 1024 and sequence 32.
bool writeLargerModel(const QString& from, const QString& to)
{
    QFile in(from);
    QFile out(to);
    if (!in.open(QIODevice::ReadOnly) || !out.open(QIODevice::WriteOnly))
        return false;
    QJsonObject project = QJsonDocument::fromJson(in.readAll()).object();
    QJsonObject model = project.value(QStringLiteral("model")).toObject();
    model.insert(QStringLiteral("hidden"), 256);
    model.insert(QStringLiteral("ffn"), 1024);
    model.insert(QStringLiteral("seq_len"), 32);
    project.insert(QStringLiteral("model"), model);
    return out.write(QJsonDocument(project).toJson()) > 0;
}

const QString kSourceProject = QStringLiteral(DPS_TEST_DATA "/launch/tiny.dpstudio.json");

} // namespace

class TestRealRun : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_program;
    QString m_project; ///< a copy in m_dir, so its runs folder lands there
    /// The same with a larger model: steps of some ms, not 0.5 ms. Open MPI hands each rank's stdout to
    /// mpirun through a pty, and thousands of progress lines a second there get lines mangled or stall mpirun.
    QString m_slowProject;

    dps::launch::RunOptions request(int steps) const
    {
        dps::launch::RunOptions r;
        r.project = m_project.toStdString();
        r.variant = "dualpipev";
        r.backend = "cpu";
        r.steps = steps;
        r.warmup = 1;
        r.output = m_dir.filePath(QStringLiteral("measured-%1.json").arg(steps)).toStdString();
        return r;
    }

private slots:
    void initTestCase()
    {
        m_program = realDpstudio();
        if (m_program.isEmpty() || !QFile::exists(m_program))
            QSKIP("dpstudio is not built");
        if (!QFile::exists(kSourceProject))
            QSKIP("the tiny DualPipeV project is not in tests/data/launch");
        m_project = m_dir.filePath(QStringLiteral("tiny.dpstudio.json"));
        QVERIFY(QFile::copy(kSourceProject, m_project));
        m_slowProject = m_dir.filePath(QStringLiteral("slower.dpstudio.json"));
        QVERIFY(writeLargerModel(m_project, m_slowProject));
        DevicesProbe probe;
        probe.setProgram(m_program);
        QSignalSpy probed(&probe, &DevicesProbe::probed);
        probe.probe();
        QTRY_VERIFY_WITH_TIMEOUT(!probe.isRunning(), 20000);
        QCOMPARE(probed.size(), 1);
        if (probe.devices().mpirunMissing() || probe.devices().workerMissing())
            QSKIP("mpirun or dpstudio-worker is missing here");
    }

    void runFinishesWithAMeasurement()
    {
        RunController c;
        c.setProgram(m_program);
        QSignalSpy finished(&c, &RunController::finished);
        QSignalSpy failed(&c, &RunController::failed);
        QSignalSpy progress(&c, &RunController::progressChanged);
        QVERIFY(c.start(request(3)));
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty() || !failed.isEmpty(), 20000);
        const QString why = failed.isEmpty() ? QString() : failed.first().first().toString();
        QVERIFY2(failed.isEmpty(), qPrintable(why));
        const auto outcome = finished.first().first().value<RunOutcome>();
        QCOMPARE(outcome.correctnessPassed, std::optional<bool>(true));
        QVERIFY(outcome.medianStepUs > 0.0);
        QCOMPARE(outcome.backend, QStringLiteral("cpu"));
        const auto last = progress.last().first().value<RunProgress>();
        QCOMPARE(last.overall, 1.0);
        QCOMPARE(last.perRank.size(), 2);
        RunRecord record;
        QString error;
        QVERIFY2(readRunRecord(outcome.measuredPath, record, &error), qPrintable(error));
        QCOMPARE(record.ranks, 2);
        QCOMPARE(record.steps, 3);
        QCOMPARE(record.correctness, Correctness::Passed);
        QCOMPARE(record.stepTimeUs, outcome.medianStepUs);
        QCOMPARE(record.problem, QString());
    }

    void badProjectIsRefusedWithItsReason()
    {
        const QString bad = m_dir.filePath(QStringLiteral("bad.dpstudio.json"));
        QVERIFY(QFile::copy(QStringLiteral(DPS_TEST_DATA "/launch/bad_partition.dpstudio.json"), bad));
        RunController c;
        c.setProgram(m_program);
        QSignalSpy failed(&c, &RunController::failed);
        dps::launch::RunOptions r = request(3);
        r.project = bad.toStdString();
        r.variant.clear();
        QVERIFY(c.start(r));
        QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 1, 20000);
        const QString message = failed.first().first().toString();
        QVERIFY2(message.startsWith(QStringLiteral("The correctness check failed or the project is invalid: ")),
            qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("layer_partition")), qPrintable(message));
        QVERIFY(c.lastOutcome().measuredPath.isEmpty());
    }

    void cancelLeavesNoProcess()
    {
        RunController c;
        c.setProgram(m_program);
        QSignalSpy cancelled(&c, &RunController::cancelled);
        QSignalSpy failed(&c, &RunController::failed);
        dps::launch::RunOptions r = request(100000);
        r.project = m_slowProject.toStdString();
        QVERIFY(c.start(r));
        QTRY_VERIFY_WITH_TIMEOUT(c.progress().currentStep >= 1, 20000);
        const qint64 dpstudio = c.processId();
        const std::vector<pid_t> below = descendantProcesses(static_cast<pid_t>(dpstudio));
        QVERIFY2(below.size() >= 3, "mpirun and two ranks run below dpstudio");
        c.stop();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.size(), 1, 10000);
        QCOMPARE(failed.size(), 0);
        QVERIFY(!processIsAlive(dpstudio));
        for (const pid_t pid : below)
            QTRY_VERIFY_WITH_TIMEOUT(!processIsAlive(pid), 3000);
    }

    void panelRunsAndRecords()
    {
        RunPanel panel;
        panel.setProgram(m_program);
        panel.resize(400, 820);
        panel.show();
        QSignalSpy probed(panel.devicesProbe(), &DevicesProbe::probed);
        panel.refreshDevices();
        panel.setProject({ m_project, QStringLiteral("dualpipev"), 2, false, {}, {} });
        QTRY_COMPARE_WITH_TIMEOUT(probed.size(), 1, 20000);
        QVERIFY(panel.canRun());
        QSignalSpy finished(&panel, &RunPanel::runFinished);
        QSignalSpy failed(&panel, &RunPanel::runFailed);
        panel.startRun();
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty() || !failed.isEmpty(), 20000);
        QVERIFY2(failed.isEmpty(), qPrintable(failed.isEmpty() ? QString() : failed.first().first().toString()));
        QCOMPARE(panel.history()->runCount(), 1);
        QCOMPARE(panel.history()->run(0).correctness, Correctness::Passed);
        QTest::qWait(50); // let the layout follow the banner's new text
        QDir().mkpath(QStringLiteral(DPS_SCREENSHOT_DIR));
        QVERIFY(panel.grab().save(QStringLiteral(DPS_SCREENSHOT_DIR "/runpanel-finished-real.png")));
        auto* tabs = panel.findChild<QTabWidget*>();
        QVERIFY(tabs);
        tabs->setCurrentIndex(1);
        QTest::qWait(20);
        QVERIFY(panel.grab().save(QStringLiteral(DPS_SCREENSHOT_DIR "/runpanel-history-real.png")));
    }
};

DPS_OFFSCREEN_TEST_MAIN(TestRealRun)
#include "test_realrun.moc"
