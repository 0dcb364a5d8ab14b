#pragma once
// DevicesProbe: asks `dpstudio devices --json` what this machine has (CPU, GPUs, mpirun) without
// blocking the window, and reports it through signals.
#include "run/deviceinfo.h"

#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QTimer>

namespace dps::ui {

class DevicesProbe : public QObject {
    Q_OBJECT
public:
    explicit DevicesProbe(QObject* parent = nullptr);
    ~DevicesProbe() override;

    /// The dpstudio executable: a path, or a name looked up on PATH (default "dpstudio").
    void setProgram(const QString& program) { m_program = program; }
    QString program() const { return m_program; }
    /// Longest wait for an answer (default 20 s; `dpstudio devices` itself waits up to 10 s for mpirun).
    void setTimeoutMs(int ms) { m_timeout.setInterval(ms); }

    bool isRunning() const;
    /// The last answer (meaningful once hasAnswer()).
    const DeviceInfo& devices() const { return m_devices; }
    bool hasAnswer() const { return m_hasAnswer; }

    /// Starts asking; an ask already going is abandoned. Answers with probed() or failed().
    void probe();

signals:
    void probed(const dps::ui::DeviceInfo& devices);
    void failed(const QString& message);

private:
    void onFinished(int exitCode, QProcess::ExitStatus status);
    void onErrorOccurred(QProcess::ProcessError error);
    void onTimeout();
    void abandon();

    QString m_program = QStringLiteral("dpstudio");
    QPointer<QProcess> m_process;
    QTimer m_timeout;
    DeviceInfo m_devices;
    bool m_hasAnswer = false;
};

} // namespace dps::ui
