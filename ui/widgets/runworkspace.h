#pragma once
// Running from the designer: the Run panel and the run overlay panel with Run (F5), Cancel and Calibrate.
// It gives the run what the window shows (a saved copy of unsaved edits), overlays each finished run (or
// one re-opened from the history, or --measured) on the prediction, fits the cost model to it on request,
// and hands the last run to the validated config. It works through a RunHost (the main window), which docks
// runPanel() and overlayPanel() and offers the actions in its menu and tool bar. While a run is overlaid, the
// designer predicts it as `dpstudio run`'s report does (machine/costsource.h costSourceOfRun: for this machine
// from the cached CPU profile when it was a CPU run here), and says so; hiding the run predicts for the
// project's devices again.
#include "document/measuredoverlay.h"
#include "run/preflight.h"
#include "run/runpanel.h"
#include "widgets/overlaypanel.h"

#include <QObject>
#include <QPointer>
#include <QString>

class QAction;

namespace dps::ui {

class RunHost;

class RunWorkspace : public QObject {
    Q_OBJECT
public:
    /// Creates the two panels (without a parent: the host docks them) and the actions, and follows the
    /// host's document and simulation. `host` must outlive the workspace.
    explicit RunWorkspace(RunHost& host, QObject* parent = nullptr);
    /// Deletes the panels the host never docked.
    ~RunWorkspace() override;

    RunPanel* runPanel() const { return m_runPanel; }
    OverlayPanel* overlayPanel() const { return m_overlay; }
    QAction* runAction() const { return m_run; }
    QAction* cancelAction() const { return m_cancel; }
    QAction* calibrateAction() const { return m_calibrate; }

    /// The dpstudio next to this executable, or $DPSTUDIO_PROGRAM when set, else "dpstudio" on PATH.
    static QString defaultProgram();
    /// What the run panel is told about the open project.
    RunProjectInfo projectInfo() const;
    /// The file a run of unsaved (or never saved) edits reads.
    QString runFilePath() const;

    /// Overlays a measured.json and records it as the last run; false (and a banner) when unreadable.
    bool loadMeasured(const QString& path, QString* error = nullptr);
    /// Fits the cost model to the overlaid run and applies the costs to the project as one undoable edit.
    /// False, with `error` set, when nothing is overlaid or the fit failed.
    bool calibrate(QString* error = nullptr);
    /// Tells the workspace whether the Run panel is on screen: the first time it is, the devices are
    /// probed (`dpstudio devices`), not for every window that is never looked at (tests, screenshots).
    void setRunPanelVisible(bool visible);

signals:
    /// A run's measurement was overlaid (after a run, from the history or a file).
    void overlayLoaded(const QString& measuredPath);

private:
    void setupActions();
    void setupConnections();
    void updateProject();
    void writeRunFile();
    void onRunFinished(const QString& measuredPath);
    void onRunFailed(const QString& message);
    void applyOverlay(const MeasuredOverlay& overlay);
    void updateActions();
    void predictAsRun(const MeasuredTrace& trace);
    void predictForProject();
    void resimulate();

    RunHost& m_host;
    QPointer<RunPanel> m_runPanel;
    QPointer<OverlayPanel> m_overlay;
    QAction* m_run = nullptr;
    QAction* m_cancel = nullptr;
    QAction* m_calibrate = nullptr;
    bool m_probed = false; ///< the devices probe ran once
    std::shared_ptr<const MeasuredTrace> m_decidedFor; ///< the overlaid run the prediction was chosen for
    QString m_predictionLabel; ///< what the prediction is for while a run is overlaid; "" = the project's devices
};

} // namespace dps::ui
