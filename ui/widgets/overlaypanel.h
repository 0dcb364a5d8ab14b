#pragma once
// The run overlay panel: which run is laid over the prediction (any run of the project's history, or a
// measured.json), which of its steps (the median by default), the run compared with another run and
// with the prediction, Calibrate, and the largest per-action start slips (click one to select its
// block on the chart). Holds the loaded trace and rebuilds the overlay whenever the prediction changes. Below
// them: the step's critical path with each rank's share (measured and predicted) and each rank's compute per
// step with the stragglers flagged (docs/analysis.md); with another run chosen in "Compare with", the
// per-action start and duration differences of the two runs and "Both Timelines", which draws them on one axis.
#include "document/measuredoverlay.h"
#include "document/snapshot.h"

#include "trace/runstats.h"

#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QPushButton;
class QTabWidget;
class QTableWidget;

namespace dps::ui {

class RunHistory;

class OverlayPanel : public QWidget {
    Q_OBJECT
public:
    explicit OverlayPanel(QWidget* parent = nullptr);

    /// The runs offered in the run choosers (the run panel's history); may be null.
    void setHistory(RunHistory* history);
    /// Loads a measured.json and overlays its median step. Returns false, with `error` set and the
    /// overlay unchanged, when the file cannot be read.
    bool loadMeasured(const QString& path, QString* error = nullptr);
    /// Hides the overlay.
    void clear();
    /// The prediction to compare with (rebuilds the overlay).
    void setSnapshot(const SnapshotPtr& snapshot);
    /// Shows step `step` of the run (-1: the median step).
    void setStep(int step);

    bool hasOverlay() const { return m_trace != nullptr && m_overlay.blocks != nullptr; }
    const MeasuredOverlay& overlay() const { return m_overlay; }
    std::shared_ptr<const MeasuredTrace> trace() const { return m_trace; }
    QString measuredPath() const { return m_path; }
    QTableWidget* slipTable() const { return m_slips; }
    /// The comparison line (run against prediction and the other run), for tests.
    QString comparisonText() const;
    /// Per rank: critical-path shares, compute per step, straggler flag (for tests).
    QTableWidget* rankTable() const { return m_ranks; }
    /// The critical path and stragglers summary line (for tests).
    QString criticalPathText() const;
    /// The run compared with ("Compare with"); null when it is the prediction only.
    std::shared_ptr<const MeasuredTrace> otherTrace() const { return m_other; }
    /// The per-action differences with the other run (empty without one).
    const RunDiff& runDiff() const { return m_diff; }
    QTableWidget* diffTable() const { return m_diffs; }
    /// Compares with the run at `path` (as choosing it in "Compare with" does; "" = the prediction only).
    /// Returns false, with `error` set, when it cannot be read.
    bool compareWith(const QString& path, QString* error = nullptr);
    /// A window with the overlaid run and the other one on one time axis (null without another run); the caller
    /// owns it.
    QWidget* createBothTimelines() const;
    /// Brings the "Critical path" tab (shares and stragglers) to the front.
    void showCriticalPathTab();

signals:
    /// The overlay was rebuilt (or cleared: overlay.blocks is null).
    void overlayChanged(const dps::ui::MeasuredOverlay& overlay);
    /// The user clicked a slip: select that block.
    void slipActivated(int rank, int position);
    void calibrateRequested();
    /// A run could not be loaded.
    void loadFailed(const QString& message);

private:
    void setupUi();
    /// The header, the run, step and other-run boxes, the buttons, the comparison line and the slips table.
    void createControls();
    /// The tabs: start slips, critical path (per-rank shares), run diff.
    QTabWidget* createTabs();
    void connectControls();
    void rebuild();
    void fillSteps();
    void fillRunChoosers();
    void fillSlips();
    void updateHeader();
    void updateComparison();
    void chooseRun(int index);
    void fillAnalysis();
    void fillDiff();

    RunHistory* m_history = nullptr;
    SnapshotPtr m_snapshot;
    std::shared_ptr<const MeasuredTrace> m_trace;
    QString m_path;
    int m_step = -1;
    MeasuredOverlay m_overlay;
    QLabel* m_header = nullptr;
    QComboBox* m_runBox = nullptr;
    QComboBox* m_stepBox = nullptr;
    QComboBox* m_otherBox = nullptr;
    QLabel* m_comparison = nullptr;
    QPushButton* m_calibrate = nullptr;
    QPushButton* m_clear = nullptr;
    QTableWidget* m_slips = nullptr;
    QTabWidget* m_tabs = nullptr;
    QLabel* m_pathLabel = nullptr;
    QTableWidget* m_ranks = nullptr;
    std::shared_ptr<const MeasuredTrace> m_other;
    QString m_otherPath;
    RunDiff m_diff;
    QLabel* m_diffLabel = nullptr;
    QTableWidget* m_diffs = nullptr;
    QPushButton* m_both = nullptr;
};

} // namespace dps::ui
