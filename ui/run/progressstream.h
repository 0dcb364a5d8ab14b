#pragma once
// The worker's progress stream as `dpstudio run --progress-json` forwards it on stdout (JSON lines,
// docs/worker-protocol.md): hello, progress, done, error, and dpstudio's own failed. ProgressStream follows it line by
// line and gives the state the run panel draws. Lines that are not events are log lines. Every line is parsed by the
// engine's one parser (dps::launch::parseProgressLine); this file only turns events into Qt values.
#include <QByteArray>
#include <QMetaType>
#include <QString>
#include <QVector>

#include <optional>

namespace dps::launch {
struct ProgressEvent;
}

namespace dps::ui {

/// One rank's position: `step` counts warm-up steps too; `done`/`total` are its actions in that step.
struct RankProgress {
    int rank = 0;
    int step = -1; ///< −1 before its first progress event
    int done = 0;
    int total = 0;
    double fraction = 0.0; ///< of the whole run (warm-up included), 0…1
    bool failed = false; ///< an error event named this rank
};

/// Where a run stands, as one value (emitted by RunController::progressChanged).
struct RunProgress {
    int ranks = 0; ///< from hello; 0 before it
    int steps = 0; ///< measured steps, from hello
    int warmup = 0; ///< warm-up steps, from hello
    QString backend; ///< from hello, e.g. "cpu"
    QString comm; ///< from hello, e.g. "mpi"
    QVector<RankProgress> perRank;
    double overall = 0.0; ///< mean of the ranks' fractions; 1 once done arrived
    int currentStep = -1; ///< the step every rank has reached (the slowest rank's); −1 before any
    qint64 elapsedMs = 0; ///< since the process started
    bool done = false; ///< the done event arrived

    int totalSteps() const { return steps + warmup; }
    bool inWarmup() const { return currentStep >= 0 && currentStep < warmup; }
};

/// The worker's done event (dps::launch::ProgressEvent's done fields as Qt values).
struct RunDoneEvent {
    QString output; ///< the measured.json written
    std::optional<bool> correctnessPassed;
    double maxLossError = 0.0; ///< relative
    double maxGradError = 0.0; ///< relative
    QString correctnessMessage; ///< "message" of the correctness object, when given
    int medianStep = -1; ///< index into stepMakespanUs; −1 when not given
    QVector<double> stepMakespanUs; ///< one per measured step (µs)
    double medianMakespanUs = 0.0; ///< makespan of the median step (µs); 0 when the event did not carry it
};

/// An error event: which rank and why.
struct RunErrorEvent {
    int rank = -1;
    QString message;

    /// "rank 1: out of memory" (or the message alone when no rank was named).
    QString text() const;
};

/// dpstudio's failed event, the stream's last line when the run exits non-zero: why, in dpstudio's words.
struct RunFailedEvent {
    int exitCode = -1; ///< dpstudio's exit code (engine/protocol/exitcodes.h)
    QString message; ///< e.g. "rank 1: exited on signal 11 (Segmentation fault)"
};

class ProgressStream {
public:
    enum class LineKind { Log, Hello, Progress, Done, Error, Failed };

    /// What a line was and how it reads in the log (empty for progress and failed events, which are not logged:
    /// dpstudio says the same on stderr).
    struct Line {
        LineKind kind = LineKind::Log;
        QString text;
    };

    /// Reads one stdout line (without its line end) and updates the state. A hello whose format_version is
    /// newer than this build reads (dps::protocol::kProgressFormatVersion) is followed anyway and its log
    /// text says so. Never throws.
    Line feed(const QByteArray& line);

    /// The state now (elapsedMs left at 0: the caller knows the clock).
    RunProgress progress() const;
    const std::optional<RunDoneEvent>& done() const { return m_done; }
    const QVector<RunErrorEvent>& errors() const { return m_errors; }
    const std::optional<RunFailedEvent>& failed() const { return m_failed; }
    /// format_version of hello (0 before it).
    int formatVersion() const { return m_formatVersion; }

private:
    Line applyHello(const launch::ProgressEvent& e);
    Line applyProgress(const launch::ProgressEvent& e);
    Line applyDone(const launch::ProgressEvent& e);
    Line applyError(const launch::ProgressEvent& e);
    Line applyFailed(const launch::ProgressEvent& e);
    RankProgress& rankAt(int rank);
    double fractionOf(const RankProgress& r) const;

    RunProgress m_state;
    std::optional<RunDoneEvent> m_done;
    QVector<RunErrorEvent> m_errors;
    std::optional<RunFailedEvent> m_failed;
    int m_formatVersion = 0;
};

} // namespace dps::ui

Q_DECLARE_METATYPE(dps::ui::RunProgress)
