#pragma once
// The run panel's pre-flight check: before anything starts, says whether the project can run here and
// what to expect. Plain data in, plain data out, so it is tested without a window.
#include "run/deviceinfo.h"

#include <QString>
#include <QStringList>
#include <QVector>

namespace dps::ui {

/// What the caller (the main window) knows about the project to run.
struct RunProjectInfo {
    QString path; ///< the project file (the runs history lives next to it); empty when never saved
    QString variant; ///< the active variant's name
    int ranks = 0; ///< the active variant's ranks
    bool modified = false; ///< unsaved edits (the run uses the file)
    QStringList validationErrors; ///< the validator's diagnostics for the active variant; empty = valid
    QString runPath; ///< the file the run reads when not `path` (a saved copy of unsaved edits); empty = path
};

enum class PreflightSeverity {
    Info, ///< what will happen
    Warning, ///< it runs, but not as one might expect
    Error, ///< it cannot run: the Run button is disabled
};

struct PreflightItem {
    PreflightSeverity severity = PreflightSeverity::Info;
    QString text;
};

struct PreflightInput {
    RunProjectInfo project;
    DeviceInfo devices;
    bool devicesKnown = false; ///< `dpstudio devices` answered
    QString devicesError; ///< why it did not, when it failed
    QString backend = QStringLiteral("auto"); ///< auto | cpu | cuda
    int threads = 1;
    QString hostfile; ///< empty: this machine only
    /// With the cuda backend, more ranks than GPUs is allowed (ranks share GPUs and talk through MPI
    /// with host buffers, ARCHITECTURE.md); false makes it an error.
    bool allowGpuSharing = true;
};

/// The findings, errors first.
QVector<PreflightItem> preflight(const PreflightInput& input);

/// True when one of the items is an error.
bool preflightBlocks(const QVector<PreflightItem>& items);

/// The backend `auto` picks on these devices (dps::autoBackend): "cuda" when it is built and a GPU is present,
/// else "cpu".
QString autoBackend(const DeviceInfo& devices);

} // namespace dps::ui
