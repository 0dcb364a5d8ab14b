#pragma once
// The worker's progress stream (docs/worker-protocol.md) as data, a human rendering of it, and what
// mpirun's own messages say about a failed rank. The one parser of the stream: `dpstudio run` and the
// designer's run panel (ui/run/progressstream.h) both read every line through parseProgressLine.
#include "protocol/progress.h"

#include <optional>
#include <string>
#include <vector>

namespace dps::launch {

enum class EventKind { Hello, Progress, Done, Error, Failed, Other };

/// One line of the stream. Fields not carried by the event keep their defaults.
struct ProgressEvent {
    EventKind kind = EventKind::Other;
    int formatVersion = 0; ///< hello/done/failed; 0 when absent
    int rank = -1; ///< progress/error
    int ranks = 0, steps = 0, warmup = 0; ///< hello
    std::string backend, comm; ///< hello
    int step = -1, done = 0, total = 0; ///< progress: step counts warm-up steps too
    std::string message; ///< error: what the rank says; failed: why the run failed, one line for the user
    int exitCode = -1; ///< failed: dpstudio's exit code (engine/protocol/exitcodes.h); −1 when absent
    std::string output; ///< done: the measured.json written
    std::optional<bool> correctnessPassed; ///< done: correctness.passed; nullopt when absent
    double maxLossError = 0.0; ///< done: correctness.max_loss_error (relative)
    double maxGradError = 0.0; ///< done: correctness.max_grad_error (relative)
    std::string correctnessMessage; ///< done: correctness.message, when given
    std::string correctnessSummary; ///< done: the correctness object as compact JSON
    int medianStep = -1; ///< done: median_step, an index into stepMakespanUs; −1 when absent
    std::vector<double> stepMakespanUs; ///< done: step_makespan_us, one per measured step (µs)

    /// Whether format_version is newer than this build reads (protocol::kProgressFormatVersion). Such a
    /// line is still parsed; the reader says so (the launcher warns, the run panel notes it in the log).
    bool newerFormat() const { return formatVersion > protocol::kProgressFormatVersion; }
    /// Makespan of the median step (µs); 0 when the event did not carry it.
    double medianMakespanUs() const;
};

/// Parses one stdout line; nullopt when it is not a JSON object with a string "event" (a log line). An
/// unknown event name gives EventKind::Other; members of the wrong type keep their defaults. Never throws.
std::optional<ProgressEvent> parseProgressLine(const std::string& line);

/// The failed event `dpstudio run --progress-json` ends a failed run's stream with, as one line without its
/// line end: {"event":"failed","format_version":V,"exit_code":C,"message":"…"} (V = kProgressFormatVersion;
/// text that is not valid UTF-8 is replaced by U+FFFD). Never throws.
std::string failedEventLine(int exitCode, const std::string& message);

/// Follows the stream: what each rank is doing, for the human progress line and the failure messages.
class ProgressTracker {
public:
    void apply(const ProgressEvent& event);

    /// The step every rank has reached (the lowest rank's), −1 before any progress.
    int currentStep() const;
    /// Steps including warm-up, from hello; 0 before it.
    int totalSteps() const { return m_hello ? m_hello->steps + m_hello->warmup : 0; }
    /// One line, e.g. "step 2/4 (warm-up) · rank 0 40/40 · rank 1 12/40"; "starting" before hello.
    std::string render() const;
    /// Ranks named by error events, in order of arrival (one entry per event).
    const std::vector<ProgressEvent>& errors() const { return m_errors; }
    const std::optional<ProgressEvent>& hello() const { return m_hello; }
    const std::optional<ProgressEvent>& done() const { return m_done; }
    /// For a hung run: the ranks furthest behind, e.g. "rank 1 at step 2, 12/40 actions". Empty
    /// when no progress arrived at all.
    std::string laggards() const;

private:
    struct RankState {
        int step = -1;
        int done = 0;
        int total = 0;
    };
    std::optional<ProgressEvent> m_hello;
    std::optional<ProgressEvent> m_done;
    std::vector<ProgressEvent> m_errors;
    std::vector<RankState> m_ranks;
};

/// What mpirun said about a failed process.
struct RankFailure {
    int rank = -1;
    std::string cause; ///< e.g. "exited on signal 11 (Segmentation fault)", "exit code 3"
};

/// Reads mpirun's human messages (its stderr) line by line and remembers the first failed rank it
/// names: "process rank R … exited on signal N (…)", "Process name: [[J,1],R]" + "Exit code: C",
/// "MPI_ABORT was invoked on rank R".
class MpirunFailureScanner {
public:
    void feed(const std::string& line);
    const std::optional<RankFailure>& failure() const { return m_failure; }

private:
    void record(int rank, const std::string& cause);
    std::optional<RankFailure> m_failure;
    int m_pendingRank = -1; ///< from "Process name:", waiting for "Exit code:"
};

} // namespace dps::launch
