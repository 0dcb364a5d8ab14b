#include "run/deviceinfo.h"

#include "base/format.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace dps::ui {

namespace {

void readCpu(const QJsonObject& cpu, DeviceInfo& info)
{
    info.cpuCores = cpu.value(QStringLiteral("cores")).toInt();
    info.cpuModel = cpu.value(QStringLiteral("model")).toString();
}

void readCuda(const QJsonObject& cuda, DeviceInfo& info)
{
    info.cudaBuilt = cuda.value(QStringLiteral("built")).toBool();
    info.cudaRuntime = cuda.value(QStringLiteral("runtime_version")).toString();
    info.gpuMessage = cuda.value(QStringLiteral("message")).toString();
}

GpuDevice readGpu(const QJsonObject& g, int position)
{
    GpuDevice gpu;
    gpu.index = g.value(QStringLiteral("index")).toInt(position);
    gpu.name = g.value(QStringLiteral("name")).toString(QStringLiteral("GPU %1").arg(gpu.index));
    gpu.memoryBytes = g.value(QStringLiteral("memory_bytes")).toInteger();
    gpu.computeCapability = g.value(QStringLiteral("compute_capability")).toString();
    return gpu;
}

} // namespace

bool parseDevicesJson(const QByteArray& json, DeviceInfo& info, QString* error)
{
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
    if (parseError.error != QJsonParseError::NoError || !doc.isObject()) {
        if (error)
            *error = parseError.error != QJsonParseError::NoError
                ? QStringLiteral("not JSON (%1 at offset %2)").arg(parseError.errorString()).arg(parseError.offset)
                : QStringLiteral("not a JSON object");
        return false;
    }
    const QJsonObject o = doc.object();
    info = DeviceInfo();
    info.formatVersion = o.value(QStringLiteral("format_version")).toInt();
    readCpu(o.value(QStringLiteral("cpu")).toObject(), info);
    readCuda(o.value(QStringLiteral("cuda")).toObject(), info);
    const QJsonArray gpus = o.value(QStringLiteral("gpus")).toArray();
    for (qsizetype i = 0; i < gpus.size(); ++i)
        if (gpus.at(i).isObject())
            info.gpus.push_back(readGpu(gpus.at(i).toObject(), static_cast<int>(i)));
    info.mpirunReported = o.contains(QStringLiteral("mpirun"));
    const QJsonObject mpirun = o.value(QStringLiteral("mpirun")).toObject();
    info.mpirunPath = mpirun.value(QStringLiteral("path")).toString();
    info.mpirunVersion = mpirun.value(QStringLiteral("version")).toString();
    info.workerReported = o.contains(QStringLiteral("worker"));
    info.workerPath = o.value(QStringLiteral("worker")).toObject().value(QStringLiteral("path")).toString();
    return true;
}

QString DeviceInfo::whyNoGpu() const
{
    if (!gpuMessage.isEmpty())
        return gpuMessage;
    return cudaBuilt ? QStringLiteral("no GPU") : QStringLiteral("cuda: not built");
}

QString DeviceInfo::gpuSummary() const
{
    if (gpus.isEmpty())
        return whyNoGpu().startsWith(QLatin1String("no GPU")) ? whyNoGpu()
                                                              : QStringLiteral("none (%1)").arg(whyNoGpu());
    const GpuDevice& first = gpus.front();
    bool alike = true;
    for (const GpuDevice& g : gpus)
        alike = alike && g.name == first.name && g.memoryBytes == first.memoryBytes;
    const QString memory = first.memoryBytes > 0
        ? QStringLiteral(" (%1)").arg(QString::fromStdString(dps::formatBytes(static_cast<double>(first.memoryBytes))))
        : QString();
    if (alike)
        return QStringLiteral("%1 × %2%3").arg(gpus.size()).arg(first.name, memory);
    QStringList names;
    for (const GpuDevice& g : gpus)
        names << g.name;
    return names.join(QStringLiteral(", "));
}

QString DeviceInfo::cpuSummary() const
{
    const QString cores = cpuCores > 0 ? QStringLiteral("%1 cores").arg(cpuCores) : QStringLiteral("cores unknown");
    return cpuModel.isEmpty() ? cores : cores + QStringLiteral(" · ") + cpuModel;
}

QString DeviceInfo::mpirunSummary() const
{
    if (!mpirunReported)
        return QStringLiteral("unknown");
    if (mpirunPath.isEmpty())
        return QStringLiteral("not found (install openmpi-bin or set DPSTUDIO_MPIRUN)");
    const QString version = mpirunVersion.isEmpty() ? QStringLiteral("version unknown") : mpirunVersion;
    return QStringLiteral("%1 · %2").arg(version, mpirunPath);
}

} // namespace dps::ui
