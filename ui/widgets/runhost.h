#pragma once
// RunHost: what RunWorkspace needs from the window it works in, and nothing more — the open project, its
// simulation, the message banner, bringing the run's two panels to the front, drawing a run over the
// prediction in the views, and where the last run is recorded for the validated config. MainWindow
// implements it; a test can implement it with a document and a few stubs.
#include "document/measuredoverlay.h"
#include "project/validatedconfig.h"
#include "run/messagebanner.h"

#include <QString>

#include <optional>

namespace dps::ui {

class ProjectDocument;
class SimulationService;

class RunHost {
public:
    virtual ~RunHost() = default;

    /// The open project; never null, owned by the host.
    virtual ProjectDocument* document() const = 0;
    /// The simulation of the active variant (its newest snapshot and snapshotChanged); never null.
    virtual SimulationService* simulation() = 0;
    /// Shows `text` (plain text) in the host's message banner.
    virtual void showMessage(MessageBanner::Kind kind, const QString& text) = 0;
    /// Brings the Run panel to the front (a run was started from an action).
    virtual void raiseRunPanel() = 0;
    /// Shows the run overlay's panel and brings it to the front (a run was overlaid).
    virtual void raiseOverlayPanel() = 0;
    /// Draws a run's measured blocks and memory over the prediction and its metrics beside the predicted
    /// ones; an overlay without blocks removes what was drawn.
    virtual void showOverlay(const MeasuredOverlay& overlay) = 0;
    /// Selects the block at `position` (0-based) in `rank`'s order on the timeline.
    virtual void markBlock(int rank, int position) = 0;
    /// Records the run that the validated config describes (nullopt: no run).
    virtual void setLastRun(const std::optional<ValidatedRun>& run) = 0;

protected:
    RunHost() = default;
    RunHost(const RunHost&) = default;
    RunHost& operator=(const RunHost&) = default;
};

} // namespace dps::ui
