#include "run/runcontroller.h"

#include "run/runexit.h"

#include "base/format.h"
#include "launch/process.h"

#include <QFileInfo>

#include <csignal>

namespace dps::ui {

namespace {

constexpr int kProgressIntervalMs = 50;

/// Splits `buffer` at line ends; what follows the last one stays in `buffer`.
QList<QByteArray> takeLines(QByteArray& buffer)
{
    QList<QByteArray> lines;
    qsizetype start = 0;
    for (qsizetype end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n', start)) {
        QByteArray line = buffer.mid(start, end - start);
        if (line.endsWith('\r'))
            line.chop(1);
        lines.push_back(line);
        start = end + 1;
    }
    buffer.remove(0, start);
    return lines;
}

} // namespace

RunController::RunController(QObject* parent)
    : QObject(parent)
{
    m_progressTimer.setSingleShot(true);
    m_progressTimer.setInterval(kProgressIntervalMs);
    connect(&m_progressTimer, &QTimer::timeout, this, &RunController::emitProgress);
    m_graceTimer.setSingleShot(true);
    connect(&m_graceTimer, &QTimer::timeout, this, &RunController::onGraceExpired);
}

RunController::~RunController()
{
    if (!isRunning())
        return;
    m_process->disconnect(this);
    m_process->terminate();
    if (!m_process->waitForFinished(m_graceMs)) {
        killTree();
        m_process->waitForFinished(1000);
    }
}

bool RunController::isRunning() const
{
    return m_process && m_process->state() != QProcess::NotRunning;
}

qint64 RunController::elapsedMs() const
{
    if (isRunning() && m_clock.isValid())
        return m_clock.elapsed();
    return m_finalElapsedMs;
}

qint64 RunController::processId() const
{
    return isRunning() ? m_process->processId() : 0;
}

QString RunController::outputPath() const
{
    return QString::fromStdString(m_options.output);
}

RunProgress RunController::progress() const
{
    RunProgress p = m_stream.progress();
    p.elapsedMs = elapsedMs();
    return p;
}

bool RunController::start(const launch::RunOptions& options)
{
    if (isRunning()) {
        emit failed(QStringLiteral("A run is already going: cancel it or wait for it to end."));
        return false;
    }
    const QString program = resolveProgram(m_program);
    QString why = program.isEmpty()
        ? QStringLiteral("dpstudio was not found (looked for \"%1\"): set its path in the settings.").arg(m_program)
        : checkRunOptions(options);
    if (!why.isEmpty()) {
        emit failed(why);
        return false;
    }
    reset(options);
    m_process = new QProcess(this);
    if (m_environment)
        m_process->setProcessEnvironment(*m_environment);
    connect(m_process, &QProcess::started, this, &RunController::onStarted);
    connect(m_process, &QProcess::errorOccurred, this, &RunController::onErrorOccurred);
    connect(m_process, &QProcess::finished, this, &RunController::onFinished);
    connect(m_process, &QProcess::readyReadStandardOutput, this, [this] { readChannel(QProcess::StandardOutput); });
    connect(m_process, &QProcess::readyReadStandardError, this, [this] { readChannel(QProcess::StandardError); });
    const QStringList args = runArguments(m_options);
    emit outputReceived(QStringLiteral("$ %1 %2").arg(program, args.join(QLatin1Char(' '))), OutputChannel::Event);
    m_process->start(program, args);
    return true;
}

void RunController::reset(const launch::RunOptions& options)
{
    if (m_process)
        m_process->deleteLater();
    m_options = options;
    m_options.progressJson = true;
    m_options.output = QFileInfo(QString::fromStdString(options.output)).absoluteFilePath().toStdString();
    m_stream = ProgressStream();
    m_stdoutRest.clear();
    m_stderrRest.clear();
    m_lastStderrLine.clear();
    const QFileInfo output(outputPath());
    m_outputStampBefore = output.exists() ? output.lastModified() : QDateTime();
    m_cancelRequested = false;
    m_finalElapsedMs = 0;
    m_clock.invalidate();
    m_outcome = RunOutcome();
}

void RunController::stop()
{
    if (!isRunning() || m_cancelRequested)
        return;
    m_cancelRequested = true;
    emit outputReceived(
        QStringLiteral("cancelling: asking dpstudio to stop (forced after %1 s)").arg(m_graceMs / 1000.0, 0, 'g', 3),
        OutputChannel::Event);
    m_process->terminate();
    m_graceTimer.start(m_graceMs);
}

void RunController::onGraceExpired()
{
    if (!isRunning())
        return;
    emit outputReceived(QStringLiteral("dpstudio did not stop within the grace period: killing it and its processes"),
        OutputChannel::Event);
    killTree();
}

void RunController::killTree()
{
    for (const pid_t pid : launch::descendantProcesses(static_cast<pid_t>(m_process->processId())))
        if (pid > 1)
            ::kill(pid, SIGKILL);
    m_process->kill();
}

void RunController::onStarted()
{
    m_clock.start();
    emit started();
    emitProgress();
}

void RunController::onErrorOccurred(QProcess::ProcessError error)
{
    if (error != QProcess::FailedToStart)
        return; // crashes arrive with finished()
    m_graceTimer.stop();
    emit failed(
        QStringLiteral("dpstudio could not be started (%1): %2").arg(m_process->program(), m_process->errorString()));
}

void RunController::readChannel(QProcess::ProcessChannel channel)
{
    const bool isStdout = channel == QProcess::StandardOutput;
    QByteArray& rest = isStdout ? m_stdoutRest : m_stderrRest;
    rest += isStdout ? m_process->readAllStandardOutput() : m_process->readAllStandardError();
    for (const QByteArray& line : takeLines(rest))
        isStdout ? handleStdoutLine(line) : handleStderrLine(line);
}

void RunController::flushPartialLines()
{
    readChannel(QProcess::StandardOutput);
    readChannel(QProcess::StandardError);
    if (!m_stdoutRest.isEmpty())
        handleStdoutLine(std::exchange(m_stdoutRest, {}));
    if (!m_stderrRest.isEmpty())
        handleStderrLine(std::exchange(m_stderrRest, {}));
}

void RunController::handleStdoutLine(const QByteArray& line)
{
    const ProgressStream::Line parsed = m_stream.feed(line);
    switch (parsed.kind) {
    case ProgressStream::LineKind::Log:
        emit outputReceived(parsed.text, OutputChannel::Stdout);
        return;
    case ProgressStream::LineKind::Progress:
        if (!m_progressTimer.isActive())
            m_progressTimer.start();
        return;
    case ProgressStream::LineKind::Failed:
        return; // dpstudio says it on stderr too; report() tells it
    default:
        emit outputReceived(parsed.text,
            parsed.kind == ProgressStream::LineKind::Error ? OutputChannel::Problem : OutputChannel::Event);
        emitProgress();
    }
}

void RunController::handleStderrLine(const QByteArray& line)
{
    const QString text = QString::fromUtf8(line);
    if (!text.trimmed().isEmpty())
        m_lastStderrLine = text.trimmed();
    emit outputReceived(text, OutputChannel::Stderr);
}

void RunController::emitProgress()
{
    m_progressTimer.stop();
    emit progressChanged(progress());
}

void RunController::onFinished(int exitCode, QProcess::ExitStatus status)
{
    m_finalElapsedMs = m_clock.isValid() ? m_clock.elapsed() : 0;
    m_graceTimer.stop();
    flushPartialLines();
    emitProgress();
    report(exitCode, status);
}

QString RunController::correctnessText() const
{
    const auto& done = m_stream.done();
    if (!done)
        return {};
    QString text = QStringLiteral("max loss error %1, max gradient error %2")
                       .arg(done->maxLossError, 0, 'g', 3)
                       .arg(done->maxGradError, 0, 'g', 3);
    return done->correctnessMessage.isEmpty() ? text : done->correctnessMessage + QStringLiteral(" (") + text + ')';
}

RunOutcome RunController::buildOutcome(int exitCode) const
{
    RunOutcome o;
    o.exitCode = exitCode;
    o.elapsedMs = m_finalElapsedMs;
    o.backend = m_stream.progress().backend;
    if (const QFileInfo output(outputPath()); output.exists() && output.lastModified() != m_outputStampBefore)
        o.measuredPath = outputPath();
    if (const auto& done = m_stream.done()) {
        o.correctnessPassed = done->correctnessPassed;
        o.medianStepUs = done->medianMakespanUs;
    }
    QStringList parts;
    if (o.medianStepUs > 0)
        parts << QStringLiteral("median step %1").arg(QString::fromStdString(dps::formatTime(o.medianStepUs)));
    if (o.correctnessPassed)
        parts << (*o.correctnessPassed ? QStringLiteral("correctness passed") : QStringLiteral("correctness FAILED"));
    if (!o.backend.isEmpty())
        parts << QStringLiteral("%1 backend").arg(o.backend);
    parts << QStringLiteral("took %1").arg(QString::fromStdString(dps::formatElapsed(o.elapsedMs)));
    o.summary = parts.join(QStringLiteral(" · "));
    return o;
}

void RunController::report(int exitCode, QProcess::ExitStatus status)
{
    ExitFacts facts;
    facts.exitCode = exitCode;
    facts.crashed = status == QProcess::CrashExit;
    facts.cancelRequested = m_cancelRequested;
    const QVector<RunErrorEvent>& errors = m_stream.errors();
    facts.firstError = errors.isEmpty() ? QString() : errors.front().text();
    facts.lastError = errors.isEmpty() ? QString() : errors.back().text();
    if (const auto& done = m_stream.done())
        facts.correctnessPassed = done->correctnessPassed;
    facts.correctnessText = correctnessText();
    if (const auto& failed = m_stream.failed())
        facts.failedMessage = failed->message;
    facts.lastStderrLine = m_lastStderrLine;
    const ExitReport exit = describeExit(facts);
    m_outcome = buildOutcome(facts.crashed ? -1 : exitCode);
    emit outputReceived(
        exit.message, exit.kind == ExitReport::Kind::Failed ? OutputChannel::Problem : OutputChannel::Event);
    if (exit.kind == ExitReport::Kind::Cancelled)
        emit cancelled(exit.message);
    else if (exit.kind == ExitReport::Kind::Failed)
        emit failed(exit.message);
    else if (m_outcome.measuredPath.isEmpty())
        emit failed(
            QStringLiteral("dpstudio ended without error but wrote no measured trace at %1.").arg(outputPath()));
    else
        emit finished(m_outcome);
}

} // namespace dps::ui
