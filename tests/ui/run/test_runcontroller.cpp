// RunController against the fake dpstudio: progress, log lines, exit-code messages, cancel without
// orphans; and the plain pieces under it (progress stream, exit mapping, command line).
#include "offscreen.h"

#include "run/progressstream.h"
#include "run/runcontroller.h"
#include "run/runexit.h"

#include "launch/process.h"
#include "protocol/exitcodes.h"
#include "protocol/progress.h"

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace dps::ui;
using dps::launch::processIsAlive;

class TestRunController : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

    QString projectPath() const { return m_dir.filePath(QStringLiteral("demo.dpstudio.json")); }

    dps::launch::RunOptions request(const QString& output = QStringLiteral("measured.json")) const
    {
        dps::launch::RunOptions r;
        r.project = projectPath().toStdString();
        r.variant = "dualpipev";
        r.backend = "cpu";
        r.steps = 2;
        r.warmup = 1;
        r.output = m_dir.filePath(output).toStdString();
        return r;
    }

    /// A controller running the fake with `scenario`.
    std::unique_ptr<RunController> controller(const QString& scenario) const
    {
        auto c = std::make_unique<RunController>();
        c->setProgram(QStringLiteral(DPS_FAKE_DPSTUDIO));
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("FAKE_DPSTUDIO_SCENARIO"), scenario);
        env.insert(QStringLiteral("FAKE_DPSTUDIO_ARGS_FILE"), m_dir.filePath(QStringLiteral("args.txt")));
        env.insert(QStringLiteral("FAKE_DPSTUDIO_PID_FILE"), m_dir.filePath(QStringLiteral("child.pid")));
        c->setProcessEnvironment(env);
        return c;
    }

    /// Runs `scenario` to its end and returns the failure message (empty when it did not fail).
    QString failureOf(const QString& scenario)
    {
        auto c = controller(scenario);
        QSignalSpy failed(c.get(), &RunController::failed);
        if (!c->start(request()))
            return QStringLiteral("did not start");
        if (!QTest::qWaitFor([&] { return !failed.isEmpty(); }, 5000))
            return {};
        return failed.first().first().toString();
    }

    qint64 childPid() const
    {
        QFile file(m_dir.filePath(QStringLiteral("child.pid")));
        return file.open(QIODevice::ReadOnly) ? file.readAll().trimmed().toLongLong() : 0;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QFile project(projectPath());
        QVERIFY(project.open(QIODevice::WriteOnly));
        project.write("{}\n");
    }

    void init() { QFile::remove(m_dir.filePath(QStringLiteral("child.pid"))); }

    // ---------------------------------------------------------------------------- plain pieces

    void streamFollowsRanks()
    {
        ProgressStream s;
        QCOMPARE(s.feed(R"({"event":"hello","format_version":1,"ranks":2,"steps":3,"warmup":1})").kind,
            ProgressStream::LineKind::Hello);
        QCOMPARE(s.progress().perRank.size(), 2);
        s.feed(R"({"event":"progress","rank":0,"step":1,"done":2,"total":4})");
        s.feed(R"({"event":"progress","rank":1,"step":0,"done":4,"total":4})");
        const RunProgress p = s.progress();
        QCOMPARE(p.perRank[0].fraction, (1 + 0.5) / 4);
        QCOMPARE(p.perRank[1].fraction, 1.0 / 4);
        QCOMPARE(p.overall, (1.5 / 4 + 1.0 / 4) / 2);
        QCOMPARE(p.currentStep, 0);
        QVERIFY(p.inWarmup());
    }

    void streamKeepsOtherLinesAsLog()
    {
        ProgressStream s;
        for (const char* line :
            { "plain words", "{broken json", R"({"no_event":1})", "[1,2]", R"({"event":"mystery"})" }) {
            const auto parsed = s.feed(line);
            QCOMPARE(parsed.kind, ProgressStream::LineKind::Log);
            QCOMPARE(parsed.text, QString::fromUtf8(line));
        }
        QCOMPARE(s.progress().overall, 0.0);
    }

    void streamReadsDoneAndErrors()
    {
        ProgressStream s;
        s.feed(R"({"event":"error","rank":3,"message":"out of memory"})");
        QCOMPARE(s.errors().size(), 1);
        QCOMPARE(s.errors().front().text(), QStringLiteral("rank 3: out of memory"));
        QVERIFY(s.progress().perRank[3].failed);
        const auto done
            = s.feed(R"({"event":"done","output":"m.json","correctness":{"passed":false,"max_loss_error":0.03,)"
                     R"("max_grad_error":0.5,"message":"stage 1"},"median_step":1,"step_makespan_us":[5,7,9]})");
        QCOMPARE(done.kind, ProgressStream::LineKind::Done);
        QCOMPARE(done.text, QStringLiteral("done: wrote m.json, correctness check FAILED"));
        QCOMPARE(s.done()->output, QStringLiteral("m.json"));
        QCOMPARE(s.done()->correctnessPassed, std::optional<bool>(false));
        QCOMPARE(s.done()->maxLossError, 0.03);
        QCOMPARE(s.done()->maxGradError, 0.5);
        QCOMPARE(s.done()->correctnessMessage, QStringLiteral("stage 1"));
        QCOMPARE(s.done()->medianStep, 1);
        QCOMPARE(s.done()->stepMakespanUs, QVector<double>({ 5, 7, 9 }));
        QCOMPARE(s.done()->medianMakespanUs, 7.0);
        QCOMPARE(s.progress().overall, 1.0);
    }

    void streamNotesANewerFormat()
    {
        ProgressStream s;
        const int newer = dps::protocol::kProgressFormatVersion + 1;
        const auto hello = s.feed(QStringLiteral(R"({"event":"hello","format_version":%1,"ranks":2,"steps":3,)"
                                                 R"("warmup":1,"backend":"cpu","comm":"mpi"})")
                                      .arg(newer)
                                      .toUtf8());
        QCOMPARE(hello.kind, ProgressStream::LineKind::Hello);
        QCOMPARE(hello.text,
            QStringLiteral("worker started: 2 ranks, 3 measured steps after 1 warm-up, backend cpu, comm mpi "
                           "(progress format %1 is newer than this build reads, %2)")
                .arg(newer)
                .arg(dps::protocol::kProgressFormatVersion));
        QCOMPARE(s.formatVersion(), newer);
        QCOMPARE(s.progress().perRank.size(), 2);
        ProgressStream current;
        QCOMPARE(current.feed(R"({"event":"hello","format_version":1,"ranks":2,"steps":3,"warmup":1})").text,
            QStringLiteral("worker started: 2 ranks, 3 measured steps after 1 warm-up"));
    }

    void exitCodesBecomeMessages()
    {
        ExitFacts f;
        f.exitCode = dps::kExitRunFailed;
        f.firstError = QStringLiteral("rank 1: exited on signal 11");
        QCOMPARE(describeExit(f).message, QStringLiteral("The run failed: rank 1: exited on signal 11"));
        f.exitCode = 1;
        f.lastError = QStringLiteral("rank 0: bad world size");
        QCOMPARE(describeExit(f).message,
            QStringLiteral("The correctness check failed or the project is invalid: rank 0: bad world size"));
        f.exitCode = dps::kExitCancelled;
        QCOMPARE(describeExit(f).kind, ExitReport::Kind::Cancelled);
        QCOMPARE(describeExit(f).message,
            QStringLiteral("The run was cancelled from outside the designer (exit code 130)."));
        f = ExitFacts();
        f.exitCode = 15;
        f.crashed = true;
        f.cancelRequested = true;
        QCOMPARE(describeExit(f).kind, ExitReport::Kind::Cancelled);
        f.cancelRequested = false;
        QVERIFY(describeExit(f).message.startsWith(QStringLiteral("dpstudio crashed (signal 15")));
        f = ExitFacts();
        f.exitCode = 3;
        f.firstError = QStringLiteral("rank 1: std::bad_alloc in 1F3");
        f.failedMessage = QStringLiteral("rank 1: std::bad_alloc in 1F3; mpirun: rank 1 exit code 3");
        f.lastStderrLine = QStringLiteral("mpirun: Forwarding signal 15 to job");
        QCOMPARE(describeExit(f).message,
            QStringLiteral("The run failed: rank 1: std::bad_alloc in 1F3; mpirun: rank 1 exit code 3"));
        f.exitCode = 2;
        f.failedMessage = QStringLiteral("/p.json: cannot read: No such file or directory");
        QCOMPARE(describeExit(f).message,
            QStringLiteral(
                "dpstudio refused the arguments or could not read a file: /p.json: cannot read: No such file "
                "or directory"));
        f = ExitFacts();
        f.exitCode = 42;
        f.lastStderrLine = QStringLiteral("odd");
        QCOMPARE(describeExit(f).message, QStringLiteral("dpstudio exited with unexpected code 42: odd"));
    }

    void commandLineCarriesTheRequest()
    {
        dps::launch::RunOptions r = request();
        r.hostfile = "hosts";
        r.threads = 4;
        r.timeoutS = 90;
        const QString project = QString::fromStdString(r.project), output = QString::fromStdString(r.output);
        QCOMPARE(runArguments(r),
            QStringList({ QStringLiteral("run"), project, QStringLiteral("--progress-json"), QStringLiteral("-o"),
                output, QStringLiteral("--variant"), QStringLiteral("dualpipev"), QStringLiteral("--backend"),
                QStringLiteral("cpu"), QStringLiteral("--steps"), QStringLiteral("2"), QStringLiteral("--warmup"),
                QStringLiteral("1"), QStringLiteral("--threads"), QStringLiteral("4"), QStringLiteral("--timeout"),
                QStringLiteral("90"), QStringLiteral("--hostfile"), QStringLiteral("hosts") }));
        QVERIFY2(!r.progressJson, "runArguments adds --progress-json without changing the options");
        QCOMPARE(checkRunOptions(r), QStringLiteral("The hostfile hosts does not exist."));
        r.hostfile.clear();
        QCOMPARE(checkRunOptions(r), QString());
        r.timeoutS = 0;
        QCOMPARE(checkRunOptions(r), QStringLiteral("The timeout must be a positive number of seconds (it is 0)."));
        r.timeoutS = 90;
        r.backend = "tpu";
        QCOMPARE(checkRunOptions(r), QStringLiteral("Unknown backend \"tpu\": choose auto, cpu or cuda."));
    }

    // ---------------------------------------------------------------------------- with the fake

    void refusesBadRequestsUpFront()
    {
        auto c = controller(QStringLiteral("ok"));
        QSignalSpy failed(c.get(), &RunController::failed);
        QSignalSpy started(c.get(), &RunController::started);
        dps::launch::RunOptions r = request();
        r.project = m_dir.filePath(QStringLiteral("missing.dpstudio.json")).toStdString();
        QVERIFY(!c->start(r));
        r = request();
        r.steps = 0;
        QVERIFY(!c->start(r));
        r = request();
        r.output = m_dir.filePath(QStringLiteral("no/such/folder/m.json")).toStdString();
        QVERIFY(!c->start(r));
        c->setProgram(m_dir.filePath(QStringLiteral("no-such-dpstudio")));
        QVERIFY(!c->start(request()));
        QCOMPARE(failed.size(), 4);
        QVERIFY(failed.at(0).first().toString().contains(QStringLiteral("does not exist")));
        QVERIFY(failed.at(3).first().toString().contains(QStringLiteral("dpstudio was not found")));
        QTest::qWait(50);
        QCOMPARE(started.size(), 0);
    }

    void progressReachesHundredPercent()
    {
        auto c = controller(QStringLiteral("ok"));
        QSignalSpy started(c.get(), &RunController::started);
        QSignalSpy progress(c.get(), &RunController::progressChanged);
        QSignalSpy finished(c.get(), &RunController::finished);
        QSignalSpy failed(c.get(), &RunController::failed);
        QVERIFY(c->start(request()));
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 5000);
        QCOMPARE(started.size(), 1);
        QCOMPARE(failed.size(), 0);
        const auto last = progress.last().first().value<RunProgress>();
        QCOMPARE(last.overall, 1.0);
        QCOMPARE(last.perRank.size(), 2);
        QCOMPARE(last.perRank[1].done, 4);
        QCOMPARE(last.perRank[1].total, 4);
        QCOMPARE(last.perRank[1].step, 2);
        const auto outcome = finished.first().first().value<RunOutcome>();
        QCOMPARE(outcome.measuredPath, m_dir.filePath(QStringLiteral("measured.json")));
        QVERIFY(QFile::exists(outcome.measuredPath));
        QCOMPARE(outcome.correctnessPassed, std::optional<bool>(true));
        QCOMPARE(outcome.medianStepUs, 1200.5);
        QVERIFY2(outcome.summary.startsWith(QStringLiteral("median step 1.2 ms · correctness passed · cpu backend")),
            qPrintable(outcome.summary));
        QVERIFY(!c->isRunning());
    }

    void argumentsReachTheProgram()
    {
        auto c = controller(QStringLiteral("ok"));
        QSignalSpy finished(c.get(), &RunController::finished);
        QVERIFY(c->start(request()));
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 5000);
        QFile args(m_dir.filePath(QStringLiteral("args.txt")));
        QVERIFY(args.open(QIODevice::ReadOnly));
        QCOMPARE(
            QString::fromUtf8(args.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts), runArguments(request()));
    }

    void otherLinesGoToTheLog()
    {
        auto c = controller(QStringLiteral("noise"));
        QSignalSpy output(c.get(), &RunController::outputReceived);
        QSignalSpy finished(c.get(), &RunController::finished);
        QVERIFY(c->start(request()));
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 5000);
        QHash<QString, OutputChannel> lines;
        for (const QList<QVariant>& args : output)
            lines.insert(args.at(0).toString(), args.at(1).value<OutputChannel>());
        QCOMPARE(lines.value(QStringLiteral("plain text on stdout, not an event"), OutputChannel::Event),
            OutputChannel::Stdout);
        QCOMPARE(lines.value(QStringLiteral("{not json either"), OutputChannel::Event), OutputChannel::Stdout);
        QCOMPARE(lines.value(QStringLiteral("[rank 0] a note on stderr"), OutputChannel::Event), OutputChannel::Stderr);
        QVERIFY(lines.contains(QStringLiteral("dpstudio: a message for humans")));
        for (const QString& line : lines.keys())
            QVERIFY2(!line.contains(QStringLiteral("\"event\":\"progress\"")), qPrintable(line));
    }

    void crashIsReportedWithItsMessage()
    {
        QCOMPARE(failureOf(QStringLiteral("crash")),
            QStringLiteral("The run failed: rank 1: exited on signal 11 (Segmentation fault)"));
    }

    void exitOneNamesTheError()
    {
        QCOMPARE(failureOf(QStringLiteral("error-exit1")),
            QStringLiteral("The correctness check failed or the project is invalid: rank 0: the world size is 3 but "
                           "variant dualpipev has 2 ranks"));
        QCOMPARE(failureOf(QStringLiteral("refused")),
            QStringLiteral("The correctness check failed or the project is invalid: variant 'dualpipev': the layer "
                           "partition covers 6 of 8 layers; nothing was started"));
    }

    void theFailedEventSaysWhy()
    {
        ProgressStream s;
        const ProgressStream::Line line
            = s.feed(R"({"event":"failed","format_version":2,"exit_code":3,"message":"rank 1: std::bad_alloc"})");
        QCOMPARE(line.kind, ProgressStream::LineKind::Failed);
        QVERIFY(line.text.isEmpty());
        QVERIFY(s.failed());
        QCOMPARE(s.failed()->exitCode, 3);
        QCOMPARE(s.failed()->message, QStringLiteral("rank 1: std::bad_alloc"));
        // The reason is the stream's, not whatever stderr said last (here mpirun, after dpstudio's event).
        QCOMPARE(failureOf(QStringLiteral("quiet-failure")),
            QStringLiteral("The run failed: run timed out after 5 s without progress (rank 1 at step 1, 0/4 actions): "
                           "mpirun and its ranks were ended"));
    }

    void failedCheckKeepsTheMeasurement()
    {
        auto c = controller(QStringLiteral("check-failed"));
        QSignalSpy failed(c.get(), &RunController::failed);
        QVERIFY(c->start(request(QStringLiteral("failed-check.json"))));
        QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 1, 5000);
        QVERIFY2(failed.first().first().toString().startsWith(
                     QStringLiteral("The correctness check failed: max loss error 0.03")),
            qPrintable(failed.first().first().toString()));
        QCOMPARE(c->lastOutcome().measuredPath, m_dir.filePath(QStringLiteral("failed-check.json")));
        QCOMPARE(c->lastOutcome().correctnessPassed, std::optional<bool>(false));
    }

    void otherExitsAreExplained()
    {
        QCOMPARE(failureOf(QStringLiteral("bad-args")),
            QStringLiteral("dpstudio refused the arguments or could not read a file: --steps: 0 is not in 1..1000000"));
        QVERIFY(failureOf(QStringLiteral("signal")).startsWith(QStringLiteral("dpstudio crashed (signal 11")));
    }

    void cancelEndsTheRunAndItsChildren()
    {
        auto c = controller(QStringLiteral("slow"));
        QSignalSpy progress(c.get(), &RunController::progressChanged);
        QSignalSpy cancelled(c.get(), &RunController::cancelled);
        QSignalSpy failed(c.get(), &RunController::failed);
        QVERIFY(c->start(request()));
        QTRY_VERIFY_WITH_TIMEOUT(c->progress().overall > 0.0 && childPid() > 0, 5000);
        const qint64 dpstudio = c->processId(), child = childPid();
        QVERIFY(processIsAlive(dpstudio));
        QVERIFY(processIsAlive(child));
        const std::vector<pid_t> below = dps::launch::descendantProcesses(static_cast<pid_t>(dpstudio));
        QVERIFY(std::find(below.begin(), below.end(), static_cast<pid_t>(child)) != below.end());
        c->stop();
        QVERIFY(c->isStopping());
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.size(), 1, 5000);
        QCOMPARE(failed.size(), 0);
        QCOMPARE(cancelled.first().first().toString(), QStringLiteral("The run was cancelled."));
        QVERIFY(!c->isRunning());
        QTRY_VERIFY_WITH_TIMEOUT(!processIsAlive(child), 2000);
        QVERIFY(!processIsAlive(dpstudio));
    }

    void cancelKillsWhatIgnoresTerm()
    {
        auto c = controller(QStringLiteral("ignore-term"));
        c->setGracePeriodMs(300);
        QSignalSpy cancelled(c.get(), &RunController::cancelled);
        QSignalSpy failed(c.get(), &RunController::failed);
        QVERIFY(c->start(request()));
        QTRY_VERIFY_WITH_TIMEOUT(childPid() > 0 && c->progress().overall > 0.0, 5000);
        const qint64 dpstudio = c->processId(), child = childPid();
        c->stop();
        QTest::qWait(150);
        QVERIFY(c->isRunning()); // SIGTERM alone does not end it
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.size(), 1, 5000);
        QCOMPARE(failed.size(), 0);
        QTRY_VERIFY_WITH_TIMEOUT(!processIsAlive(child), 2000);
        QVERIFY(!processIsAlive(dpstudio));
    }

    void destroyingTheControllerLeavesNoProcess()
    {
        auto c = controller(QStringLiteral("slow"));
        c->setGracePeriodMs(1000);
        QVERIFY(c->start(request()));
        QTRY_VERIFY_WITH_TIMEOUT(childPid() > 0 && c->processId() > 0, 5000);
        const qint64 dpstudio = c->processId(), child = childPid();
        c.reset();
        QTRY_VERIFY_WITH_TIMEOUT(!processIsAlive(child), 2000);
        QVERIFY(!processIsAlive(dpstudio));
    }

    void oneRunAtATime()
    {
        auto c = controller(QStringLiteral("slow"));
        QSignalSpy failed(c.get(), &RunController::failed);
        QSignalSpy cancelled(c.get(), &RunController::cancelled);
        QVERIFY(c->start(request()));
        QVERIFY(!c->start(request()));
        QCOMPARE(failed.size(), 1);
        QVERIFY(failed.first().first().toString().contains(QStringLiteral("already")));
        QTRY_VERIFY_WITH_TIMEOUT(childPid() > 0 && c->progress().overall > 0.0, 5000);
        c->stop();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.size(), 1, 5000);
    }
};

DPS_OFFSCREEN_TEST_MAIN(TestRunController)
#include "test_runcontroller.moc"
