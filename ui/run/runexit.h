#pragma once
// How a `dpstudio run` process ended, told as one message for the user: exit codes of every dpstudio
// command (dps::kExit* of engine/protocol/exitcodes.h: 0 ok, 1 content or check, 2 flags or unreadable
// file, 3 run failed, 130 cancelled), a crash, or something else.
#include <QString>

#include <optional>

namespace dps::ui {

/// What is known when the process has ended.
struct ExitFacts {
    int exitCode = 0; ///< the exit code, or the signal number when crashed
    bool crashed = false; ///< ended by a signal (QProcess::CrashExit)
    bool cancelRequested = false; ///< the user pressed Cancel
    QString firstError; ///< the first error event as "rank R: message" (empty when none)
    QString lastError; ///< the last error event, likewise
    std::optional<bool> correctnessPassed; ///< from the done event
    QString correctnessText; ///< e.g. "max loss error 3e-2, max gradient error 1e-1"
    QString failedMessage; ///< why, from dpstudio's failed event (empty when it sent none)
    QString lastStderrLine; ///< the last stderr line: the reason only when dpstudio sent no failed event (it refused
                            ///< its flags, or crashed)
};

struct ExitReport {
    enum class Kind { Succeeded, Cancelled, Failed };
    Kind kind = Kind::Failed;
    QString message; ///< one or two sentences for the banner
};

/// Maps the facts to a report. A user's cancel is Cancelled whatever the code, unless the run finished
/// anyway (exit 0).
ExitReport describeExit(const ExitFacts& facts);

/// The name of a signal, e.g. "Segmentation fault" for 11.
QString signalName(int signal);

} // namespace dps::ui
