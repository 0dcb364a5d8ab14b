#pragma once
// Running from the designer (issue 7): docks the Run panel and the run overlay into the main window,
// adds Run (F5), Cancel and Calibrate, gives the run what the window shows (a saved copy of unsaved
// edits), overlays each finished run (or one re-opened from the history, or --measured) on the
// prediction, fits the cost model to it on request, and hands the last run to the validated config.
#include "measuredoverlay.h"
#include "run/preflight.h"

#include <QObject>
#include <QString>

class QAction;

namespace dps::ui {

class MainWindow;
class OverlayPanel;
class RunPanel;

class RunWorkspace : public QObject {
    Q_OBJECT
public:
    explicit RunWorkspace(MainWindow* window);

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

signals:
    /// A run's measurement was overlaid (after a run, from the history or a file).
    void overlayLoaded(const QString& measuredPath);

private:
    void setupDocks();
    void setupActions();
    void setupConnections();
    void updateProject();
    void writeRunFile();
    void onRunFinished(const QString& measuredPath);
    void onRunFailed(const QString& message);
    void applyOverlay(const MeasuredOverlay& overlay);
    void updateActions();

    MainWindow* m_window;
    RunPanel* m_runPanel = nullptr;
    OverlayPanel* m_overlay = nullptr;
    QAction* m_run = nullptr;
    QAction* m_cancel = nullptr;
    QAction* m_calibrate = nullptr;
    bool m_probed = false; ///< the devices probe ran once
};

} // namespace dps::ui
