// RunHistory: the item-model contract (QAbstractItemModelTester), persistence across reopening, the
// runs folder, and reading a measured.json into a record.
#include "offscreen.h"

#include "run/runhistory.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace dps::ui;

namespace {

const QString kFixture = QFileInfo(QStringLiteral(DPS_FAKE_DPSTUDIO))
                             .absoluteDir()
                             .filePath(QStringLiteral("fake-dpstudio-measured.json"));

RunRecord record(const QString& path, int n)
{
    RunRecord r;
    r.measuredPath = path;
    r.date = QDateTime(QDate(2025, 3, 1), QTime(14, n, 3), Qt::UTC);
    r.variant = QStringLiteral("dualpipev");
    r.ranks = 2;
    r.host = QStringLiteral("box");
    r.hardware = QStringLiteral("Fake CPU");
    r.backend = QStringLiteral("cpu");
    r.comm = QStringLiteral("mpi");
    r.steps = 3;
    r.stepTimeUs = 1000.0 + n;
    r.correctness = n % 2 ? Correctness::Failed : Correctness::Passed;
    r.maxLossError = 1e-8;
    r.maxGradError = 1e-12;
    return r;
}

} // namespace

class TestRunHistory : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString project() const { return m_dir.filePath(QStringLiteral("demo.dpstudio.json")); }

private slots:
    void init() { QDir(RunHistory::folderFor(project())).removeRecursively(); }

    void folderSitsNextToTheProject()
    {
        QCOMPARE(RunHistory::folderFor(QStringLiteral("/a/b/demo.dpstudio.json")), QStringLiteral("/a/b/demo.runs"));
        QCOMPARE(RunHistory::folderFor(QStringLiteral("/a/b/other.json")), QStringLiteral("/a/b/other.runs"));
    }

    void passesTheModelTester()
    {
        RunHistory history;
        QAbstractItemModelTester tester(&history, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(history.open(project()));
        QCOMPARE(history.rowCount(), 0);
        QCOMPARE(history.columnCount(), int(RunHistory::ColumnCount));
        for (int n = 0; n < 3; ++n)
            QVERIFY(history.addRun(record(m_dir.filePath(QStringLiteral("m%1.json").arg(n)), n)));
        QCOMPARE(history.rowCount(), 3);
        QVERIFY(history.removeRun(1));
        QVERIFY(!history.removeRun(7));
        QVERIFY(history.open(project()));
        history.clear();
        QCOMPARE(history.rowCount(), 0);
    }

    void showsNewestFirst()
    {
        RunHistory history;
        QVERIFY(history.open(project()));
        QVERIFY(history.addRun(record(m_dir.filePath(QStringLiteral("a.json")), 0)));
        QVERIFY(history.addRun(record(m_dir.filePath(QStringLiteral("b.json")), 1)));
        const QModelIndex top = history.index(0, RunHistory::CorrectnessColumn);
        QCOMPARE(top.data().toString(), QStringLiteral("FAILED"));
        QCOMPARE(history.index(0, RunHistory::StepTimeColumn).data().toString(), QStringLiteral("1 ms"));
        QCOMPARE(history.index(0, RunHistory::VariantColumn).data().toString(), QStringLiteral("dualpipev (2 ranks)"));
        QCOMPARE(history.index(0, RunHistory::BackendColumn).data().toString(), QStringLiteral("cpu/mpi"));
        QCOMPARE(top.data(RunHistory::MeasuredPathRole).toString(), m_dir.filePath(QStringLiteral("b.json")));
        QCOMPARE(
            history.headerData(RunHistory::StepTimeColumn, Qt::Horizontal).toString(), QStringLiteral("Step time"));
    }

    void survivesReopening()
    {
        const QString folder = RunHistory::folderFor(project());
        std::vector<RunRecord> added;
        {
            RunHistory history;
            QVERIFY(history.open(project()));
            const QString measured
                = history.newMeasuredPath(QStringLiteral("dual pipe/v"), QDateTime::currentDateTime());
            QVERIFY(measured.startsWith(folder + QLatin1Char('/')));
            QVERIFY(measured.endsWith(QStringLiteral("-dual_pipe_v.measured.json")));
            QVERIFY(QFileInfo(folder).isDir());
            added = { record(measured, 0), record(m_dir.filePath(QStringLiteral("elsewhere.json")), 1) };
            for (const RunRecord& r : added)
                QVERIFY(history.addRun(r));
        }
        QFile index(QDir(folder).filePath(QStringLiteral("index.json")));
        QVERIFY(index.open(QIODevice::ReadOnly));
        const QByteArray text = index.readAll();
        QVERIFY(text.contains("\"format_version\": 1"));
        QVERIFY2(text.contains("\"measured\": \"20"), "a run inside the folder is stored relative to it");
        RunHistory reopened;
        QVERIFY(reopened.open(project()));
        QCOMPARE(reopened.runCount(), 2);
        QCOMPARE(reopened.run(0), added[1]);
        QCOMPARE(reopened.run(1), added[0]);
    }

    void refusesANewerIndex()
    {
        const QString folder = RunHistory::folderFor(project());
        QVERIFY(QDir().mkpath(folder));
        QFile index(QDir(folder).filePath(QStringLiteral("index.json")));
        QVERIFY(index.open(QIODevice::WriteOnly));
        index.write(R"({"format_version": 9, "runs": [{"measured": "x.json"}]})");
        index.close();
        RunHistory history;
        QString error;
        QVERIFY(!history.open(project(), &error));
        QCOMPARE(error, QStringLiteral("the runs index has format_version 9, newer than this build reads (1)"));
        QCOMPARE(history.rowCount(), 0);
    }

    void readsAMeasuredTrace()
    {
        RunRecord r;
        QString error;
        QVERIFY2(readRunRecord(kFixture, r, &error), qPrintable(error));
        QCOMPARE(r.variant, QStringLiteral("dualpipev"));
        QCOMPARE(r.ranks, 2);
        QCOMPARE(r.backend, QStringLiteral("cpu"));
        QCOMPARE(r.comm, QStringLiteral("mpi"));
        QCOMPARE(r.hardware, QStringLiteral("Fake CPU @ 3.00GHz"));
        QCOMPARE(r.host, QStringLiteral("fakehost"));
        QCOMPARE(r.steps, 3);
        QCOMPARE(r.stepTimeUs, 1200.5);
        QCOMPARE(r.correctness, Correctness::Passed);
        QCOMPARE(r.maxLossError, 2.1e-08);
        QCOMPARE(r.problem, QString());
        const QString absent = m_dir.filePath(QStringLiteral("absent.json"));
        QVERIFY(!readRunRecord(absent, r, &error));
        QCOMPARE(error, absent + QStringLiteral(": cannot read: No such file or directory"));
    }

    void listsATraceTheReaderRefusesWithTheReason()
    {
        // measured.json without its steps: the strict reader refuses it, the history still lists the run.
        QFile fixture(kFixture);
        QVERIFY(fixture.open(QIODevice::ReadOnly));
        QJsonObject o = QJsonDocument::fromJson(fixture.readAll()).object();
        o.remove(QStringLiteral("steps"));
        const QString path = m_dir.filePath(QStringLiteral("no-steps.measured.json"));
        QFile broken(path);
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write(QJsonDocument(o).toJson());
        broken.close();
        RunRecord r;
        r.variant = QStringLiteral("left over");
        QString error = QStringLiteral("untouched");
        QVERIFY(readRunRecord(path, r, &error));
        QCOMPARE(error, QStringLiteral("untouched"));
        QCOMPARE(r.problem, path + QStringLiteral(": steps: missing"));
        QCOMPARE(r.measuredPath, path);
        QCOMPARE(r.date, QFileInfo(path).lastModified());
        QCOMPARE(r.variant, QString());
        QCOMPARE(r.correctness, Correctness::Unknown);
        QCOMPARE(r.stepTimeUs, 0.0);

        // A newer format_version is refused the same way, naming both versions.
        fixture.seek(0);
        o = QJsonDocument::fromJson(fixture.readAll()).object();
        o.insert(QStringLiteral("format_version"), 7);
        QVERIFY(broken.open(QIODevice::WriteOnly | QIODevice::Truncate));
        broken.write(QJsonDocument(o).toJson());
        broken.close();
        QVERIFY(readRunRecord(path, r, &error));
        QVERIFY2(r.problem.startsWith(path + QStringLiteral(": format_version 7 is newer than this build")),
            qPrintable(r.problem));

        // The reason survives the index, and the tooltip shows it.
        RunHistory history;
        QVERIFY(history.open(project()));
        QVERIFY(history.addRun(r));
        RunHistory reopened;
        QVERIFY(reopened.open(project()));
        QCOMPARE(reopened.run(0), r);
        QCOMPARE(reopened.index(0, RunHistory::CorrectnessColumn).data().toString(), QStringLiteral("unknown"));
        QCOMPARE(reopened.index(0, RunHistory::StepTimeColumn).data().toString(), QStringLiteral("–"));
        QCOMPARE(reopened.index(0, 0).data(Qt::ToolTipRole).toString(),
            QDir::toNativeSeparators(path) + QStringLiteral("\nnot read in full: ") + r.problem);
    }
};

DPS_OFFSCREEN_TEST_MAIN(TestRunHistory)
#include "test_runhistory.moc"
