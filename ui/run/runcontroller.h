#pragma once
// RunController: the designer's one handle on a `dpstudio run` process (ARCHITECTURE.md "UI"). It
// checks the request before anything starts, runs `dpstudio run PROJECT --progress-json -o FILE …`
// under QProcess, follows the JSON-lines progress stream on stdout, passes every other line to the log,
// and tells how the run ended — only through signals. stop() ends the whole process tree: SIGTERM
// (dpstudio forwards it to mpirun's process group), then after a grace period SIGKILL to dpstudio and
// everything below it.
#include "run/progressstream.h"
#include "run/runrequest.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QObject>
#include <QPointer>
#include <QProcess>
#include <QTimer>

#include <optional>

namespace dps::ui {

/// Where a log line came from.
enum class OutputChannel {
    Stdout, ///< a stdout line that is not a progress event
    Stderr, ///< dpstudio's and mpirun's messages for humans
    Event, ///< a progress event (hello, done) or the controller itself, rendered as text
    Problem, ///< an error event, or how a failed run ended
};

/// A run that ended with a measured trace.
struct RunOutcome {
    QString measuredPath; ///< the measured.json written (absolute)
    QString summary; ///< one line: median step, correctness, backend, elapsed
    std::optional<bool> correctnessPassed; ///< from the done event
    double medianStepUs = 0.0; ///< from the done event; 0 when not given
    QString backend; ///< from hello
    int exitCode = 0;
    qint64 elapsedMs = 0;
};

class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(QObject* parent = nullptr);
    /// Ends a run still going (SIGTERM, the grace period, then SIGKILL to the whole tree); blocks meanwhile.
    ~RunController() override;

    /// The dpstudio executable: a path, or a name looked up on PATH (default "dpstudio").
    void setProgram(const QString& program) { m_program = program; }
    QString program() const { return m_program; }
    /// Environment of the process (default: the designer's own).
    void setProcessEnvironment(const QProcessEnvironment& environment) { m_environment = environment; }
    /// Time between SIGTERM and SIGKILL when stopping (default 3000 ms).
    void setGracePeriodMs(int ms) { m_graceMs = ms; }
    int gracePeriodMs() const { return m_graceMs; }

    bool isRunning() const;
    /// stop() was called and the process has not ended yet.
    bool isStopping() const { return isRunning() && m_cancelRequested; }
    /// The options of the current (or last) run, output made absolute and progressJson set.
    const launch::RunOptions& options() const { return m_options; }
    /// options().output as a QString: the measured.json this run writes (absolute).
    QString outputPath() const;
    /// The progress now, elapsed time included.
    RunProgress progress() const;
    qint64 elapsedMs() const;
    /// The process id while running, else 0.
    qint64 processId() const;
    /// The last run's outcome, whichever way it ended (measuredPath is empty when nothing was written).
    const RunOutcome& lastOutcome() const { return m_outcome; }

    /// Checks the options (checkRunOptions) and starts `dpstudio run` with runArguments(options). Returns
    /// false, after emitting failed(), when they cannot run, dpstudio is not found or a run is already
    /// going; the process starting (or not) is then signalled.
    bool start(const launch::RunOptions& options);
    /// Cancels the run: SIGTERM now, SIGKILL to the whole tree after the grace period. Reported as
    /// cancelled(), never as failed(). Does nothing when no run is going.
    void stop();

signals:
    void started();
    /// At most every 50 ms while events arrive, and once more when the run ends.
    void progressChanged(const dps::ui::RunProgress& progress);
    /// One line for the live log.
    void outputReceived(const QString& line, dps::ui::OutputChannel channel);
    /// The run ended with exit code 0 and wrote its measured trace.
    void finished(const dps::ui::RunOutcome& outcome);
    /// The run could not start or ended badly; `message` says why, for the user.
    void failed(const QString& message);
    /// The user's stop() ended the run (or something outside sent it SIGINT/SIGTERM: exit code 130).
    void cancelled(const QString& message);

private:
    void onStarted();
    void onErrorOccurred(QProcess::ProcessError error);
    void onFinished(int exitCode, QProcess::ExitStatus status);
    void onGraceExpired();
    void readChannel(QProcess::ProcessChannel channel);
    void flushPartialLines();
    void handleStdoutLine(const QByteArray& line);
    void handleStderrLine(const QByteArray& line);
    void emitProgress();
    void report(int exitCode, QProcess::ExitStatus status);
    RunOutcome buildOutcome(int exitCode) const;
    QString correctnessText() const;
    void killTree();
    void reset(const launch::RunOptions& options);

    QString m_program = QStringLiteral("dpstudio");
    std::optional<QProcessEnvironment> m_environment;
    int m_graceMs = 3000;
    QPointer<QProcess> m_process;
    launch::RunOptions m_options;
    ProgressStream m_stream;
    QByteArray m_stdoutRest;
    QByteArray m_stderrRest;
    QString m_lastStderrLine; ///< the last non-empty stderr line (the reason when dpstudio gave no failed event)
    QDateTime m_outputStampBefore; ///< the output's modification time before the run (null: absent)
    QElapsedTimer m_clock;
    qint64 m_finalElapsedMs = 0;
    QTimer m_progressTimer;
    QTimer m_graceTimer;
    bool m_cancelRequested = false;
    RunOutcome m_outcome;
};

} // namespace dps::ui

Q_DECLARE_METATYPE(dps::ui::RunOutcome)
Q_DECLARE_METATYPE(dps::ui::OutputChannel)
