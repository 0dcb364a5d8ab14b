#include "run/devicesprobe.h"

#include "run/runrequest.h"

namespace dps::ui {

DevicesProbe::DevicesProbe(QObject* parent)
    : QObject(parent)
{
    m_timeout.setSingleShot(true);
    m_timeout.setInterval(20000);
    connect(&m_timeout, &QTimer::timeout, this, &DevicesProbe::onTimeout);
}

DevicesProbe::~DevicesProbe()
{
    abandon();
}

bool DevicesProbe::isRunning() const
{
    return m_process && m_process->state() != QProcess::NotRunning;
}

void DevicesProbe::probe()
{
    abandon();
    const QString program = resolveProgram(m_program);
    if (program.isEmpty()) {
        emit failed(QStringLiteral("dpstudio was not found (looked for \"%1\").").arg(m_program));
        return;
    }
    m_process = new QProcess(this);
    connect(m_process, &QProcess::finished, this, &DevicesProbe::onFinished);
    connect(m_process, &QProcess::errorOccurred, this, &DevicesProbe::onErrorOccurred);
    m_process->start(program, { QStringLiteral("devices"), QStringLiteral("--json") });
    m_timeout.start();
}

void DevicesProbe::abandon()
{
    m_timeout.stop();
    if (!m_process)
        return;
    m_process->disconnect(this);
    if (m_process->state() != QProcess::NotRunning) {
        m_process->kill();
        m_process->waitForFinished(1000);
    }
    m_process->deleteLater();
    m_process = nullptr;
}

void DevicesProbe::onFinished(int exitCode, QProcess::ExitStatus status)
{
    m_timeout.stop();
    const QByteArray out = m_process->readAllStandardOutput();
    const QString err = QString::fromUtf8(m_process->readAllStandardError()).trimmed();
    m_process->deleteLater();
    m_process = nullptr;
    if (status != QProcess::NormalExit || exitCode != 0) {
        const QString why = err.isEmpty() ? QStringLiteral("exit code %1").arg(exitCode) : err.section('\n', -1);
        emit failed(QStringLiteral("dpstudio devices failed: %1").arg(why));
        return;
    }
    QString error;
    DeviceInfo info;
    if (!parseDevicesJson(out, info, &error)) {
        emit failed(QStringLiteral("dpstudio devices gave an answer this build cannot read: %1").arg(error));
        return;
    }
    m_devices = info;
    m_hasAnswer = true;
    emit probed(m_devices);
}

void DevicesProbe::onErrorOccurred(QProcess::ProcessError error)
{
    if (error != QProcess::FailedToStart)
        return;
    const QString why = m_process->errorString();
    abandon();
    emit failed(QStringLiteral("dpstudio devices could not be started: %1").arg(why));
}

void DevicesProbe::onTimeout()
{
    abandon();
    emit failed(QStringLiteral("dpstudio devices did not answer within %1 s.").arg(m_timeout.interval() / 1000));
}

} // namespace dps::ui
