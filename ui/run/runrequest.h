#pragma once
// What the designer asks `dpstudio run` to do: a dps::launch::RunOptions (the one run-options type, shared
// with the CLI), checked before anything starts and turned into the command line by the engine's
// dps::launch::runCommandArguments, so the GUI and `dpstudio run` read the same flags the same way.
#include "launch/launcher.h"

#include <QString>
#include <QStringList>

namespace dps::ui {

/// Why the run cannot start (one sentence for the user), or an empty string when it can. Checks the
/// values (backend auto/cpu/cuda, steps ≥ 1, warm-up ≥ 0, threads ≥ 1, timeout > 0 s) and that the
/// project (and hostfile) can be read and the output's folder written; does not look at the project's
/// content (dpstudio does).
QString checkRunOptions(const launch::RunOptions& options);

/// The arguments after the program: dps::launch::runCommandArguments of `options` with progressJson set
/// (the controller follows the JSON-lines stream), e.g. `run PROJECT --progress-json -o OUTPUT …`.
QStringList runArguments(const launch::RunOptions& options);

/// The program to start: `program` itself when it contains a '/', else its match on PATH; empty when
/// it is not an executable file.
QString resolveProgram(const QString& program);

} // namespace dps::ui
