#pragma once
// The run overlay panel: which run is laid over the prediction (any run of the project's history, or a
// measured.json), which of its steps (the median by default), the run compared with another run and
// with the prediction, Calibrate, and the largest per-action start slips (click one to select its
// block on the chart). Holds the loaded trace and rebuilds the overlay whenever the prediction changes.
#include "document/measuredoverlay.h"
#include "document/snapshot.h"

#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QPushButton;
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
    void rebuild();
    void fillSteps();
    void fillRunChoosers();
    void fillSlips();
    void updateHeader();
    void updateComparison();
    void chooseRun(int index);

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
};

} // namespace dps::ui
