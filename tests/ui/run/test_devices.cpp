// DevicesProbe against the fake `dpstudio devices --json`, the tolerant parser, and the pre-flight
// check as plain data.
#include "offscreen.h"

#include "run/devicesprobe.h"
#include "run/preflight.h"

#include <QSignalSpy>
#include <QTemporaryFile>
#include <QTest>

using namespace dps::ui;

namespace {

DeviceInfo cpuMachine(int cores = 4)
{
    DeviceInfo d;
    d.cpuCores = cores;
    d.cpuModel = QStringLiteral("Fake CPU");
    d.gpuMessage = QStringLiteral("cuda: not built");
    d.mpirunReported = d.workerReported = true;
    d.mpirunPath = QStringLiteral("/usr/bin/mpirun");
    d.workerPath = QStringLiteral("/usr/libexec/dpstudio-worker");
    return d;
}

DeviceInfo gpuMachine(int gpus)
{
    DeviceInfo d = cpuMachine(16);
    d.cudaBuilt = true;
    d.gpuMessage.clear();
    for (int i = 0; i < gpus; ++i)
        d.gpus.push_back({ i, QStringLiteral("NVIDIA H200"), 141LL << 30, QStringLiteral("9.0") });
    return d;
}

PreflightInput input(const DeviceInfo& devices, const QString& backend, int ranks)
{
    PreflightInput in;
    in.project.path = QStringLiteral("/p/demo.dpstudio.json");
    in.project.variant = QStringLiteral("dualpipev");
    in.project.ranks = ranks;
    in.devices = devices;
    in.devicesKnown = true;
    in.backend = backend;
    return in;
}

/// The items' texts of one severity, joined by newlines.
QString texts(const QVector<PreflightItem>& items, PreflightSeverity severity)
{
    QStringList out;
    for (const PreflightItem& i : items)
        if (i.severity == severity)
            out << i.text;
    return out.join(QLatin1Char('\n'));
}

} // namespace

class TestDevices : public QObject {
    Q_OBJECT

private:
    /// Probes the fake with `scenario`; returns the probe's signal spies' outcome.
    std::pair<std::optional<DeviceInfo>, QString> probe(const QString& scenario)
    {
        qputenv("FAKE_DPSTUDIO_DEVICES", scenario.toUtf8());
        DevicesProbe probe;
        probe.setProgram(QStringLiteral(DPS_FAKE_DPSTUDIO));
        QSignalSpy probed(&probe, &DevicesProbe::probed);
        QSignalSpy failed(&probe, &DevicesProbe::failed);
        probe.probe();
        (void)QTest::qWaitFor([&] { return !probed.isEmpty() || !failed.isEmpty(); }, 5000);
        qunsetenv("FAKE_DPSTUDIO_DEVICES");
        if (!failed.isEmpty())
            return { std::nullopt, failed.first().first().toString() };
        if (probed.isEmpty())
            return { std::nullopt, QStringLiteral("no answer") };
        return { probed.first().first().value<DeviceInfo>(), {} };
    }

private slots:
    void probesACpuMachine()
    {
        const auto [info, error] = probe(QStringLiteral("cpu"));
        QVERIFY2(info, qPrintable(error));
        QCOMPARE(info->cpuCores, 2);
        QCOMPARE(info->cpuSummary(), QStringLiteral("2 cores · Fake CPU @ 3.00GHz"));
        QVERIFY(!info->hasGpus());
        QCOMPARE(info->gpuSummary(), QStringLiteral("none (cuda: not built)"));
        QCOMPARE(info->mpirunSummary(), QStringLiteral("mpirun (Open MPI) 4.1.4 · /usr/bin/mpirun"));
        QVERIFY(!info->mpirunMissing());
    }

    void probesAGpuMachine()
    {
        const auto [info, error] = probe(QStringLiteral("gpu"));
        QVERIFY2(info, qPrintable(error));
        QCOMPARE(info->gpus.size(), 1);
        QCOMPARE(info->gpus.front().name, QStringLiteral("NVIDIA H200"));
        QCOMPARE(info->gpus.front().memoryBytes, 150754820096LL);
        QCOMPARE(info->gpuSummary(), QStringLiteral("1 × NVIDIA H200 (140.4 GiB)"));
        QCOMPARE(autoBackend(*info), QStringLiteral("cuda"));
    }

    void missingFieldsAreTolerated()
    {
        const auto [info, error] = probe(QStringLiteral("partial"));
        QVERIFY2(info, qPrintable(error));
        QCOMPARE(info->cpuCores, 4);
        QVERIFY(!info->mpirunReported);
        QVERIFY(!info->mpirunMissing());
        QCOMPARE(info->mpirunSummary(), QStringLiteral("unknown"));
        QCOMPARE(info->gpuSummary(), QStringLiteral("none (cuda: not built)"));
    }

    void mpirunMissingIsReported()
    {
        const auto [info, error] = probe(QStringLiteral("no-mpirun"));
        QVERIFY2(info, qPrintable(error));
        QVERIFY(info->mpirunMissing());
        QVERIFY(info->mpirunSummary().startsWith(QStringLiteral("not found")));
    }

    void brokenAnswersFail()
    {
        QVERIFY(probe(QStringLiteral("garbage")).second.contains(QStringLiteral("cannot read")));
        QCOMPARE(probe(QStringLiteral("fail")).second,
            QStringLiteral("dpstudio devices failed: dpstudio: devices: something broke"));
        DevicesProbe missing;
        missing.setProgram(QStringLiteral("/nonexistent/dpstudio"));
        QSignalSpy failed(&missing, &DevicesProbe::failed);
        missing.probe();
        QCOMPARE(failed.size(), 1);
    }

    // ------------------------------------------------------------------------------- pre-flight

    void readyProjectOnCpuHasNoErrors()
    {
        const auto items = preflight(input(cpuMachine(), QStringLiteral("auto"), 2));
        QVERIFY(!preflightBlocks(items));
        QCOMPARE(texts(items, PreflightSeverity::Info), QStringLiteral("auto runs on the CPU: cuda: not built."));
        QCOMPARE(texts(items, PreflightSeverity::Warning), QString());
    }

    void mpirunMissingBlocks()
    {
        DeviceInfo d = cpuMachine();
        d.mpirunPath.clear();
        const auto items = preflight(input(d, QStringLiteral("cpu"), 2));
        QVERIFY(preflightBlocks(items));
        QCOMPARE(items.front().text,
            QStringLiteral("mpirun was not found: install Open MPI (openmpi-bin) or set DPSTUDIO_MPIRUN."));
    }

    void cudaNeedsGpus()
    {
        QCOMPARE(texts(preflight(input(cpuMachine(), QStringLiteral("cuda"), 2)), PreflightSeverity::Error),
            QStringLiteral("This dpstudio was built without the cuda backend: choose cpu or auto."));
        DeviceInfo noGpu = gpuMachine(0);
        noGpu.gpuMessage = QStringLiteral("no GPU: driver not loaded");
        QCOMPARE(texts(preflight(input(noGpu, QStringLiteral("cuda"), 2)), PreflightSeverity::Error),
            QStringLiteral("No GPU here (no GPU: driver not loaded): choose cpu or auto."));
    }

    void moreRanksThanGpus()
    {
        PreflightInput in = input(gpuMachine(1), QStringLiteral("cuda"), 4);
        auto items = preflight(in);
        QVERIFY(!preflightBlocks(items));
        QVERIFY(
            texts(items, PreflightSeverity::Warning).startsWith(QStringLiteral("4 ranks on 1 GPU: ranks share GPUs")));
        in.allowGpuSharing = false;
        items = preflight(in);
        QCOMPARE(texts(items, PreflightSeverity::Error), QStringLiteral("4 ranks need 4 GPUs; this machine has 1."));
        QVERIFY(preflight(input(gpuMachine(4), QStringLiteral("cuda"), 4)).isEmpty());
    }

    void oversubscribedCoresWarn()
    {
        PreflightInput in = input(cpuMachine(2), QStringLiteral("cpu"), 4);
        in.threads = 2;
        QVERIFY(texts(preflight(in), PreflightSeverity::Warning)
                    .startsWith(QStringLiteral("4 ranks × 2 threads on 2 cores: ranks share cores")));
    }

    void projectProblemsBlock()
    {
        PreflightInput in = input(cpuMachine(), QStringLiteral("cpu"), 2);
        in.project.validationErrors
            = QStringList { QStringLiteral("rank 0: 0I1 has no later 0W1"), QStringLiteral("x") };
        QCOMPARE(texts(preflight(in), PreflightSeverity::Error),
            QStringLiteral("The project does not validate: rank 0: 0I1 has no later 0W1 (and 1 more)"));
        in = input(cpuMachine(), QStringLiteral("cpu"), 2);
        in.project.path.clear();
        QCOMPARE(texts(preflight(in), PreflightSeverity::Error),
            QStringLiteral("Save the project first: a run reads the project file."));
        in = input(cpuMachine(), QStringLiteral("cpu"), 2);
        in.project.modified = true;
        QVERIFY(texts(preflight(in), PreflightSeverity::Warning).contains(QStringLiteral("unsaved changes")));
    }

    void hostfileSkipsLocalChecks()
    {
        QTemporaryFile hosts;
        QVERIFY(hosts.open());
        PreflightInput in = input(gpuMachine(1), QStringLiteral("cuda"), 8);
        in.allowGpuSharing = false;
        in.hostfile = hosts.fileName();
        QVERIFY(!preflightBlocks(preflight(in)));
        in.hostfile = QStringLiteral("/nonexistent/hosts");
        QVERIFY(texts(preflight(in), PreflightSeverity::Error).contains(QStringLiteral("cannot be read")));
    }

    void unknownDevicesDoNotBlock()
    {
        PreflightInput in = input(DeviceInfo(), QStringLiteral("cuda"), 4);
        in.devicesKnown = false;
        in.devicesError = QStringLiteral("dpstudio was not found");
        const auto items = preflight(in);
        QVERIFY(!preflightBlocks(items));
        QCOMPARE(texts(items, PreflightSeverity::Warning),
            QStringLiteral("What this machine has is unknown: dpstudio was not found"));
    }
};

DPS_OFFSCREEN_TEST_MAIN(TestDevices)
#include "test_devices.moc"
