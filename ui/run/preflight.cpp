#include "run/preflight.h"

#include "protocol/backends.h"

#include <QFileInfo>

#include <algorithm>

namespace dps::ui {

namespace {

using Items = QVector<PreflightItem>;

void add(Items& items, PreflightSeverity severity, const QString& text)
{
    items.push_back({ severity, text });
}

void checkProject(const RunProjectInfo& p, Items& items)
{
    if (p.path.isEmpty() && p.runPath.isEmpty())
        add(items, PreflightSeverity::Error, QStringLiteral("Save the project first: a run reads the project file."));
    else if (p.modified && p.runPath.isEmpty())
        add(items, PreflightSeverity::Warning,
            QStringLiteral("The project has unsaved changes: the run uses the saved file."));
    if (p.ranks < 1)
        add(items, PreflightSeverity::Error, QStringLiteral("The active variant has no ranks."));
    if (p.validationErrors.isEmpty())
        return;
    QString text = QStringLiteral("The project does not validate: %1").arg(p.validationErrors.front());
    if (p.validationErrors.size() > 1)
        text += QStringLiteral(" (and %1 more)").arg(p.validationErrors.size() - 1);
    add(items, PreflightSeverity::Error, text);
}

void checkTools(const PreflightInput& in, Items& items)
{
    if (!in.devicesKnown) {
        if (!in.devicesError.isEmpty())
            add(items, PreflightSeverity::Warning,
                QStringLiteral("What this machine has is unknown: %1").arg(in.devicesError));
        return;
    }
    if (in.devices.mpirunMissing())
        add(items, PreflightSeverity::Error,
            QStringLiteral("mpirun was not found: install Open MPI (openmpi-bin) or set DPSTUDIO_MPIRUN."));
    if (in.devices.workerMissing())
        add(items, PreflightSeverity::Error,
            QStringLiteral("dpstudio-worker was not found next to dpstudio: reinstall, or set DPSTUDIO_WORKER."));
}

void checkCuda(const PreflightInput& in, Items& items)
{
    const int ranks = in.project.ranks, gpus = static_cast<int>(in.devices.gpus.size());
    if (!in.devices.cudaBuilt) {
        add(items, PreflightSeverity::Error,
            QStringLiteral("This dpstudio was built without the cuda backend: choose cpu or auto."));
        return;
    }
    if (gpus == 0) {
        add(items, PreflightSeverity::Error,
            QStringLiteral("No GPU here (%1): choose cpu or auto.").arg(in.devices.whyNoGpu()));
        return;
    }
    if (ranks <= gpus)
        return;
    if (!in.allowGpuSharing)
        add(items, PreflightSeverity::Error,
            QStringLiteral("%1 ranks need %1 GPUs; this machine has %2.").arg(ranks).arg(gpus));
    else
        add(items, PreflightSeverity::Warning,
            QStringLiteral("%1 ranks on %2 GPU%3: ranks share GPUs and exchange data through MPI (host "
                           "buffers), slower than one GPU per rank.")
                .arg(ranks)
                .arg(gpus)
                .arg(gpus == 1 ? QString() : QStringLiteral("s")));
}

void checkCpu(const PreflightInput& in, Items& items)
{
    const int cores = in.devices.cpuCores;
    const int wanted = in.project.ranks * std::max(1, in.threads);
    if (cores <= 0 || wanted <= cores)
        return;
    add(items, PreflightSeverity::Warning,
        QStringLiteral("%1 ranks × %2 thread%3 on %4 cores: ranks share cores, so measured times are longer "
                       "than on dedicated cores.")
            .arg(in.project.ranks)
            .arg(in.threads)
            .arg(in.threads == 1 ? QString() : QStringLiteral("s"))
            .arg(cores));
}

void checkBackend(const PreflightInput& in, Items& items)
{
    if (!in.hostfile.isEmpty()) {
        if (!QFileInfo(in.hostfile).isReadable())
            add(items, PreflightSeverity::Error, QStringLiteral("The hostfile %1 cannot be read.").arg(in.hostfile));
        else
            add(items, PreflightSeverity::Info,
                QStringLiteral("Runs on the machines listed in the hostfile; only this machine was checked."));
        return;
    }
    if (!in.devicesKnown)
        return;
    const QString backend = in.backend == QLatin1String("auto") ? autoBackend(in.devices) : in.backend;
    if (in.backend == QLatin1String("auto"))
        add(items, PreflightSeverity::Info,
            backend == QLatin1String("cuda") ? QStringLiteral("auto runs on the GPUs (cuda).")
                                             : QStringLiteral("auto runs on the CPU: %1.").arg(in.devices.whyNoGpu()));
    if (backend == QLatin1String("cuda"))
        checkCuda(in, items);
    else
        checkCpu(in, items);
}

} // namespace

QString autoBackend(const DeviceInfo& devices)
{
    const std::string_view backend = dps::autoBackend(devices.cudaBuilt, devices.hasGpus());
    return QString::fromLatin1(backend.data(), static_cast<qsizetype>(backend.size()));
}

QVector<PreflightItem> preflight(const PreflightInput& input)
{
    Items items;
    checkProject(input.project, items);
    checkTools(input, items);
    checkBackend(input, items);
    std::stable_sort(items.begin(), items.end(),
        [](const PreflightItem& a, const PreflightItem& b) { return a.severity > b.severity; });
    return items;
}

bool preflightBlocks(const QVector<PreflightItem>& items)
{
    return std::any_of(
        items.begin(), items.end(), [](const PreflightItem& i) { return i.severity == PreflightSeverity::Error; });
}

} // namespace dps::ui
