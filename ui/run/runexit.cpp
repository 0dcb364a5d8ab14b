#include "run/runexit.h"

#include "protocol/exitcodes.h"

#include <cstring>

namespace dps::ui {

namespace {

using Kind = ExitReport::Kind;

/// The most precise explanation at hand: dpstudio's failed event, the rank's error event, the correctness result,
/// the last line on stderr.
QString detailOf(const ExitFacts& f, const QString& errorEvent)
{
    if (!f.failedMessage.isEmpty())
        return f.failedMessage;
    if (!errorEvent.isEmpty())
        return errorEvent;
    if (f.correctnessPassed == false && !f.correctnessText.isEmpty())
        return f.correctnessText;
    if (!f.lastStderrLine.isEmpty())
        return f.lastStderrLine;
    return QStringLiteral("no reason was given (see the log)");
}

ExitReport contentFailure(const ExitFacts& f)
{
    if (f.correctnessPassed == false && f.lastError.isEmpty() && !f.correctnessText.isEmpty())
        return { Kind::Failed, QStringLiteral("The correctness check failed: %1").arg(f.correctnessText) };
    return { Kind::Failed,
        QStringLiteral("The correctness check failed or the project is invalid: %1").arg(detailOf(f, f.lastError)) };
}

ExitReport cancelled(const ExitFacts& f)
{
    return { Kind::Cancelled,
        f.cancelRequested
            ? QStringLiteral("The run was cancelled.")
            : QStringLiteral("The run was cancelled from outside the designer (exit code %1).").arg(kExitCancelled) };
}

} // namespace

QString signalName(int signal)
{
    const char* name = ::strsignal(signal);
    return name ? QString::fromLocal8Bit(name) : QStringLiteral("signal %1").arg(signal);
}

ExitReport describeExit(const ExitFacts& f)
{
    if (!f.crashed && f.exitCode == kExitOk)
        return { Kind::Succeeded, QStringLiteral("The run finished.") };
    if (f.cancelRequested || (!f.crashed && f.exitCode == kExitCancelled))
        return cancelled(f);
    if (f.crashed)
        return { Kind::Failed,
            QStringLiteral("dpstudio crashed (signal %1, %2): %3")
                .arg(f.exitCode)
                .arg(signalName(f.exitCode), detailOf(f, f.firstError)) };
    switch (f.exitCode) {
    case kExitContent:
        return contentFailure(f);
    case kExitUsage:
        return {
            Kind::Failed,
            QStringLiteral("dpstudio refused the arguments or could not read a file: %1").arg(detailOf(f, f.lastError))
        };
    case kExitRunFailed:
        return { Kind::Failed, QStringLiteral("The run failed: %1").arg(detailOf(f, f.firstError)) };
    default:
        return {
            Kind::Failed,
            QStringLiteral("dpstudio exited with unexpected code %1: %2").arg(f.exitCode).arg(detailOf(f, f.firstError))
        };
    }
}

} // namespace dps::ui
