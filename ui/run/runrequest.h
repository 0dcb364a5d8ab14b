#pragma once
// What the designer asks `dpstudio run` to do: a value type built by the run panel (or a test), checked
// before anything starts and turned into the command line. Mirrors dps::launch::RunOptions.
#include <QString>
#include <QStringList>

namespace dps::ui {

struct RunRequest {
    QString project; ///< project file (*.dpstudio.json)
    QString variant; ///< empty = the project's active variant
    QString backend = QStringLiteral("auto"); ///< auto | cpu | cuda
    int steps = 3; ///< measured steps
    int warmup = 1; ///< warm-up steps (not measured)
    QString hostfile; ///< Open MPI hostfile; empty = this machine only
    int threads = 1; ///< BLAS threads per rank
    int timeoutS = 0; ///< seconds before dpstudio ends a hung run; 0 = dpstudio's default
    QString output; ///< measured.json to write
};

/// Why the request cannot run (one sentence for the user), or an empty string when it can. Checks the
/// values and that the project (and hostfile) can be read; does not look at the project's content.
QString checkRunRequest(const RunRequest& request);

/// The arguments after the program: `run PROJECT --progress-json -o OUTPUT [--variant …] …`.
QStringList runArguments(const RunRequest& request);

/// The program to start: `program` itself when it contains a '/', else its match on PATH; empty when
/// it is not an executable file.
QString resolveProgram(const QString& program);

} // namespace dps::ui
