#pragma once
// RunPanel: runs the open project on this machine's GPUs or CPUs from the designer. Shows what
// `dpstudio devices` found, the run's settings (backend, steps, warm-up, threads, hostfile, the timeout
// without progress, which QSettings keeps for the next sessions; ranks come from the active variant), a
// pre-flight check that says before starting when the project cannot run here, progress per rank and
// overall with the elapsed time, a live log, the project's runs history, and one inline banner for how
// things went. Made to be docked into the main window.
#include "run/deviceinfo.h"
#include "run/preflight.h"
#include "run/runcontroller.h"

#include <QTextCharFormat>
#include <QWidget>

#include <deque>
#include <utility>

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QTabWidget;
class QTableView;
class QTimer;

namespace dps::ui {

class DevicesProbe;
class PreflightView;
class RankProgressWidget;
class RunHistory;
class MessageBanner;

class RunPanel : public QWidget {
    Q_OBJECT
public:
    explicit RunPanel(QWidget* parent = nullptr);
    ~RunPanel() override;

    /// The dpstudio executable for runs and for the devices probe (a path, or a name on PATH).
    void setProgram(const QString& program);
    /// The project to run, as the window knows it (path, active variant, ranks, unsaved edits, the
    /// validator's diagnostics). Call again whenever one of these changes; opens the project's history.
    void setProject(const RunProjectInfo& project);
    const RunProjectInfo& project() const { return m_project; }
    /// Asks `dpstudio devices --json` again (asynchronously).
    void refreshDevices();
    /// Uses a known answer instead of asking (tests, or a window that probed already).
    void setDevices(const DeviceInfo& devices);
    /// With the cuda backend, whether more ranks than GPUs is acceptable (default true: ranks share GPUs).
    void setGpuSharingAllowed(bool allowed);

    RunController* controller() const { return m_controller; }
    DevicesProbe* devicesProbe() const { return m_probe; }
    RunHistory* history() const { return m_history; }

    /// The options the Run button would start (output path not yet chosen).
    launch::RunOptions currentOptions() const;
    const QVector<PreflightItem>& preflightItems() const;
    /// True when Run would start now: no run going and no pre-flight error.
    bool canRun() const;
    /// The banner's text ("" when hidden), for tests.
    QString statusText() const;

public slots:
    /// Starts a run of the project with the panel's settings (as the Run button does).
    void startRun();
    /// Cancels the run going (as the Cancel button does).
    void cancelRun();

signals:
    /// Run was pressed and the pre-flight passed: the last moment to write the project's run file
    /// (connect directly; setProject() may be called from the slot).
    void aboutToRun();
    void runStarted();
    /// A run ended well; its measured trace is at `measuredPath`, ready to overlay.
    void runFinished(const QString& measuredPath);
    /// A run could not start or ended badly (a failed correctness check included).
    void runFailed(const QString& message);
    void runCancelled();
    /// The user opened a run from the history (double click).
    void runActivated(const QString& measuredPath);

private:
    void setupUi();
    QWidget* createMachineBox();
    QWidget* createSettingsBox();
    QWidget* createHostfileRow(QWidget* parent);
    QWidget* createProgressBox();
    QWidget* createTabs();
    void setupConnections();
    void onStarted();
    void onProgress(const RunProgress& progress);
    void onOutput(const QString& line, OutputChannel channel);
    void flushLog();
    QTextCharFormat logFormat(OutputChannel channel) const;
    void onFinished(const RunOutcome& outcome);
    void onFailed(const QString& message);
    void onCancelled(const QString& message);
    void onDevicesProbed(const DeviceInfo& devices);
    void onDevicesFailed(const QString& message);
    void recordRun(const QString& measuredPath);
    void openHistory();
    void updatePreflight();
    void updateControls();
    void updateMachineLabels();
    void updateElapsed();
    void updateHistoryTab();
    void chooseHostfile();
    void openHistoryRun(const QModelIndex& index);
    QString overallText(const RunProgress& progress) const;
    QString runningText(const RunProgress& progress) const;

    RunController* m_controller = nullptr;
    DevicesProbe* m_probe = nullptr;
    RunHistory* m_history = nullptr;
    RunProjectInfo m_project;
    DeviceInfo m_devices;
    bool m_devicesKnown = false;
    QString m_devicesError;
    bool m_allowGpuSharing = true;
    bool m_runStarted = false; ///< the current run's process started (so its outcome is this run's)

    MessageBanner* m_banner = nullptr;
    QLabel* m_cpuLabel = nullptr;
    QLabel* m_gpuLabel = nullptr;
    QLabel* m_mpirunLabel = nullptr;
    QPushButton* m_refreshButton = nullptr;
    QLabel* m_projectLabel = nullptr;
    QLabel* m_ranksLabel = nullptr;
    QComboBox* m_backend = nullptr;
    QLabel* m_backendHint = nullptr;
    QSpinBox* m_steps = nullptr;
    QSpinBox* m_warmup = nullptr;
    QSpinBox* m_threads = nullptr;
    QSpinBox* m_timeout = nullptr; ///< seconds without progress before dpstudio ends the run; saved in QSettings
    QLineEdit* m_hostfile = nullptr;
    QWidget* m_settingsBox = nullptr;
    PreflightView* m_preflight = nullptr;
    QPushButton* m_runButton = nullptr;
    QPushButton* m_cancelButton = nullptr;
    QProgressBar* m_overall = nullptr;
    QLabel* m_elapsed = nullptr;
    RankProgressWidget* m_ranks = nullptr;
    QScrollArea* m_ranksScroll = nullptr;
    QTabWidget* m_tabs = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QTableView* m_historyView = nullptr;
    QTimer* m_elapsedTimer = nullptr;
    QTimer* m_logTimer = nullptr;
    std::deque<std::pair<QString, OutputChannel>> m_pendingLog; ///< lines waiting for the next flushLog()
};

} // namespace dps::ui
