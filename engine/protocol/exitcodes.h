#pragma once
// The exit codes of every dpstudio command and of dpstudio-worker (docs/worker-protocol.md). The launcher,
// the CLI and the designer's run controller all read them from here.

namespace dps {

enum ExitCode : int {
    kExitOk = 0, ///< success
    kExitContent = 1, ///< the content is wrong (malformed cell, newer format, invalid schedule) or a check failed
    kExitUsage = 2, ///< bad flags, or a file that cannot be read at all
    kExitRunFailed = 3, ///< a run failed: a rank crashed, the run timed out, mpirun or the worker is missing
    kExitCancelled = 130, ///< cancelled (Ctrl-C, SIGTERM, the designer's Cancel)
};

} // namespace dps
