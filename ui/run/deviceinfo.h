#pragma once
// What `dpstudio devices --json` says this machine can run on, as a plain struct. The parser is
// tolerant: a missing field keeps its default, and "unknown" (field absent) is kept apart from "none"
// (field present and null) where the run panel's pre-flight check cares.
#include <QByteArray>
#include <QMetaType>
#include <QString>
#include <QVector>

namespace dps::ui {

struct GpuDevice {
    int index = 0;
    QString name; ///< e.g. "NVIDIA H200"
    qint64 memoryBytes = 0;
    QString computeCapability; ///< e.g. "9.0"
};

struct DeviceInfo {
    int cpuCores = 0; ///< 0 when not reported
    QString cpuModel;
    bool cudaBuilt = false; ///< the CUDA backend is compiled into dpstudio
    QString cudaRuntime; ///< e.g. "13.0"
    QVector<GpuDevice> gpus;
    QString gpuMessage; ///< why there is no GPU ("cuda: not built", "no GPU: …"); empty when GPUs were found
    bool mpirunReported = false; ///< the "mpirun" object was present
    QString mpirunPath; ///< empty when not found
    QString mpirunVersion;
    bool workerReported = false; ///< the "worker" object was present
    QString workerPath; ///< dpstudio-worker; empty when not found
    int formatVersion = 0;

    bool hasGpus() const { return !gpus.isEmpty(); }
    /// mpirun was looked for and not found.
    bool mpirunMissing() const { return mpirunReported && mpirunPath.isEmpty(); }
    /// The worker was looked for and not found.
    bool workerMissing() const { return workerReported && workerPath.isEmpty(); }
    /// "no GPU" or "cuda: not built" when nothing better is known, else gpuMessage.
    QString whyNoGpu() const;
    /// One line about the GPUs: "2 × NVIDIA H200 (141 GiB)", or why there are none.
    QString gpuSummary() const;
    /// One line about the CPU: "16 cores · AMD EPYC 9654".
    QString cpuSummary() const;
    /// One line about mpirun: its version and path, or why it is missing.
    QString mpirunSummary() const;
};

/// Parses the JSON object `dpstudio devices --json` prints. Returns false, with `error` set, when the
/// text is not a JSON object; missing or mistyped fields keep their defaults.
bool parseDevicesJson(const QByteArray& json, DeviceInfo& info, QString* error = nullptr);

} // namespace dps::ui

Q_DECLARE_METATYPE(dps::ui::DeviceInfo)
