#pragma once
// The processes below a process (children, grandchildren, …), read from /proc on Linux, so a run that
// does not end on SIGTERM can be ended whole: dpstudio, mpirun (in its own process group) and the ranks.
#include <QList>

namespace dps::ui {

/// Every live descendant of `pid`, parents before their children. Empty where /proc is not available.
QList<qint64> descendantProcesses(qint64 pid);

/// Sends `signal` to each process; processes already gone are skipped.
void signalProcesses(const QList<qint64>& pids, int signal);

/// True while `pid` exists and is not a zombie (an ended process nobody reaped yet).
bool processIsAlive(qint64 pid);

} // namespace dps::ui
