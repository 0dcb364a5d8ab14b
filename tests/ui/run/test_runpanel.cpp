// RunPanel: pre-flight messages, a run from the panel into the history, failure and cancel shown in
// the banner; screenshots mid-run and after a failure (written to DPS_SCREENSHOT_DIR to be looked at).
#include "offscreen.h"

#include "run/devicesprobe.h"
#include "run/runhistory.h"
#include "run/runpanel.h"

#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

using namespace dps::ui;

namespace {

DeviceInfo machine(bool mpirun, int gpus)
{
    DeviceInfo d;
    d.cpuCores = 2;
    d.cpuModel = QStringLiteral("Intel(R) Xeon(R) CPU @ 2.20GHz");
    d.cudaBuilt = gpus > 0;
    d.gpuMessage = gpus > 0 ? QString() : QStringLiteral("cuda: not built");
    for (int i = 0; i < gpus; ++i)
        d.gpus.push_back({ i, QStringLiteral("NVIDIA H200"), 141LL << 30, QStringLiteral("9.0") });
    d.mpirunReported = d.workerReported = true;
    d.mpirunPath = mpirun ? QStringLiteral("/usr/bin/mpirun") : QString();
    d.mpirunVersion = mpirun ? QStringLiteral("mpirun (Open MPI) 4.1.4") : QString();
    d.workerPath = QStringLiteral("/usr/libexec/dpstudio-worker");
    return d;
}

QString errorsOf(const RunPanel& panel)
{
    QStringList out;
    for (const PreflightItem& i : panel.preflightItems())
        if (i.severity == PreflightSeverity::Error)
            out << i.text;
    return out.join(QLatin1Char('\n'));
}

} // namespace

class TestRunPanel : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

    RunProjectInfo project(int ranks = 2) const
    {
        return { m_dir.filePath(QStringLiteral("demo.dpstudio.json")), QStringLiteral("dualpipev"), ranks, false, {},
            {} };
    }

    /// A panel on the fake dpstudio running `scenario`, with a known CPU machine.
    std::unique_ptr<RunPanel> panel(const QString& scenario, int ranks = 2)
    {
        auto p = std::make_unique<RunPanel>();
        p->setProgram(QStringLiteral(DPS_FAKE_DPSTUDIO));
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("FAKE_DPSTUDIO_SCENARIO"), scenario);
        env.insert(QStringLiteral("FAKE_DPSTUDIO_RANKS"), QString::number(ranks));
        env.insert(QStringLiteral("FAKE_DPSTUDIO_ACTIONS"), QStringLiteral("40"));
        p->controller()->setProcessEnvironment(env);
        p->controller()->setGracePeriodMs(1000);
        p->setDevices(machine(true, 0));
        p->setProject(project(ranks));
        p->resize(400, 820);
        return p;
    }

    void saveScreenshot(QWidget& widget, const QString& name)
    {
        QTest::qWait(50); // let the layout follow the banner's new text
        QDir().mkpath(QStringLiteral(DPS_SCREENSHOT_DIR));
        const QPixmap shot = widget.grab();
        QVERIFY(!shot.isNull());
        QVERIFY(shot.save(QDir(QStringLiteral(DPS_SCREENSHOT_DIR)).filePath(name)));
    }

private slots:
    void initTestCase()
    {
        QFile file(project().path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("{}\n");
    }

    void mpirunMissingDisablesRun()
    {
        RunPanel p;
        p.setDevices(machine(false, 0));
        p.setProject(project());
        QCOMPARE(errorsOf(p),
            QStringLiteral("mpirun was not found: install Open MPI (openmpi-bin) or set DPSTUDIO_MPIRUN."));
        QVERIFY(!p.canRun());
        QVERIFY(!p.findChild<QPushButton*>(QStringLiteral("runButton"))->isEnabled());
        p.startRun();
        QVERIFY(p.statusText().startsWith(QStringLiteral("The project cannot run here: mpirun was not found")));
        QVERIFY(!p.controller()->isRunning());
    }

    void cudaWithTooFewGpus()
    {
        RunPanel p;
        p.setDevices(machine(true, 1));
        p.setProject(project(4));
        auto* backend = p.findChild<QComboBox*>();
        QVERIFY(backend);
        backend->setCurrentIndex(backend->findData(QStringLiteral("cuda")));
        QVERIFY(p.canRun());
        p.setGpuSharingAllowed(false);
        QCOMPARE(errorsOf(p), QStringLiteral("4 ranks need 4 GPUs; this machine has 1."));
        QVERIFY(!p.canRun());
    }

    void projectThatDoesNotValidate()
    {
        RunPanel p;
        p.setDevices(machine(true, 0));
        RunProjectInfo info = project();
        info.validationErrors << QStringLiteral("rank 0 waits at 0B0 for a gradient that needs 1B0 (deadlock)");
        p.setProject(info);
        QCOMPARE(errorsOf(p),
            QStringLiteral(
                "The project does not validate: rank 0 waits at 0B0 for a gradient that needs 1B0 (deadlock)"));
        info.validationErrors.clear();
        p.setProject(info);
        QCOMPARE(errorsOf(p), QString());
        QVERIFY(p.canRun());
    }

    void devicesComeFromTheProbe()
    {
        RunPanel p;
        p.setProgram(QStringLiteral(DPS_FAKE_DPSTUDIO));
        p.setProject(project());
        QSignalSpy probed(p.devicesProbe(), &DevicesProbe::probed);
        p.refreshDevices();
        QTRY_COMPARE_WITH_TIMEOUT(probed.size(), 1, 5000);
        QVERIFY(p.canRun());
        bool shown = false;
        for (const QLabel* label : p.findChildren<QLabel*>())
            shown = shown || label->text() == QStringLiteral("2 cores · Fake CPU @ 3.00GHz");
        QVERIFY(shown);
    }

    void timeoutIsASettingKeptForTheNextSession()
    {
        QSettings().remove(QStringLiteral("run/timeoutS"));
        {
            RunPanel p;
            QCOMPARE(p.currentOptions().timeoutS, dps::launch::RunOptions {}.timeoutS); // dpstudio run's default
            auto* timeout = p.findChild<QSpinBox*>(QStringLiteral("timeout"));
            QVERIFY(timeout);
            timeout->setValue(5400); // 1000 steps of a large model
            QCOMPARE(p.currentOptions().timeoutS, 5400.0);
        }
        RunPanel next; // a later session: the panel starts with the user's choice
        QCOMPARE(next.currentOptions().timeoutS, 5400.0);
        QSettings().remove(QStringLiteral("run/timeoutS"));
    }

    void runGoesIntoTheHistory()
    {
        auto p = panel(QStringLiteral("ok"));
        QSignalSpy finished(p.get(), &RunPanel::runFinished);
        QSignalSpy started(p.get(), &RunPanel::runStarted);
        p->startRun();
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 5000);
        QCOMPARE(started.size(), 1);
        const QString measured = finished.first().first().toString();
        QVERIFY(measured.startsWith(RunHistory::folderFor(project().path)));
        QVERIFY(QFile::exists(measured));
        QCOMPARE(p->history()->runCount(), 1);
        QCOMPARE(p->history()->run(0).measuredPath, measured);
        QVERIFY(QFile::exists(p->history()->indexPath()));
        QVERIFY2(p->statusText().startsWith(QStringLiteral("Run finished: median step 1.2 ms")),
            qPrintable(p->statusText()));
        QVERIFY(p->canRun());
    }

    void staysResponsiveUnderAFloodOfOutput()
    {
        auto p = panel(QStringLiteral("chatty"));
        p->show();
        QSignalSpy finished(p.get(), &RunPanel::runFinished);
        QElapsedTimer clock;
        qint64 last = 0, longest = 0;
        QTimer tick;
        QObject::connect(&tick, &QTimer::timeout, [&] {
            longest = std::max(longest, clock.elapsed() - last);
            last = clock.elapsed();
        });
        clock.start();
        tick.start(10);
        p->startRun();
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 20000);
        QVERIFY2(longest < 300, qPrintable(QStringLiteral("the event loop stalled for %1 ms").arg(longest)));
        auto* log = p->findChild<QPlainTextEdit*>();
        QVERIFY(log);
        QVERIFY(log->blockCount() <= 5000);
        QVERIFY(log->blockCount() > 1000);
    }

    void failureShowsInTheBanner()
    {
        auto p = panel(QStringLiteral("crash"), 4);
        QSignalSpy failed(p.get(), &RunPanel::runFailed);
        p->startRun();
        QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 1, 5000);
        QCOMPARE(p->statusText(), QStringLiteral("The run failed: rank 1: exited on signal 11 (Segmentation fault)"));
        QVERIFY(p->canRun());
        p->show();
        saveScreenshot(*p, QStringLiteral("runpanel-failed.png"));
    }

    void cancelShowsAsCancelled()
    {
        auto p = panel(QStringLiteral("slow"), 4);
        QSignalSpy cancelled(p.get(), &RunPanel::runCancelled);
        QSignalSpy failed(p.get(), &RunPanel::runFailed);
        const int runsBefore = p->history()->runCount();
        p->show();
        p->startRun();
        QTRY_VERIFY_WITH_TIMEOUT(p->controller()->progress().overall > 0.3, 8000);
        QTest::qWait(120);
        saveScreenshot(*p, QStringLiteral("runpanel-running.png"));
        p->cancelRun();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.size(), 1, 5000);
        QCOMPARE(failed.size(), 0);
        QCOMPARE(p->statusText(), QStringLiteral("The run was cancelled."));
        QCOMPARE(p->history()->runCount(), runsBefore); // a cancelled run leaves no measurement
    }
};

DPS_OFFSCREEN_TEST_MAIN(TestRunPanel)
#include "test_runpanel.moc"
