#pragma once
// The numbers of the active variant: makespan, bubble rate (with its definition), the simulated largest
// per-rank idle beside the schedule's closed form (with its validity range, or why it does not apply),
// peak memory and in-flight, parameters per device, p2p bytes; and a per-rank table.
#include "document/measuredoverlay.h"
#include "document/snapshot.h"

#include <QWidget>

class QLabel;
class QTableView;
class QTableWidget;

namespace dps::ui {

class RankMetricsModel;

class MetricsPanel : public QWidget {
    Q_OBJECT
public:
    explicit MetricsPanel(QWidget* parent = nullptr);

    void setSnapshot(const SnapshotPtr& snapshot);
    /// Predicted, measured and error of a run overlay (makespan, bubble rate, peak memory, per-rank idle
    /// and peak memory); an overlay without blocks hides the table.
    void setOverlay(const MeasuredOverlay& overlay);
    /// The overlay table's cell by row key ("makespan", "idle-0", …) and column (1 predicted, 2 measured,
    /// 3 error), for tests; empty when absent.
    QString overlayText(const QString& key, int column) const;
    RankMetricsModel* model() const { return m_model; }
    /// The text of a summary row by key ("makespan", "bubble", "largest-idle", "closed-form", ...) for tests.
    QString summaryText(const QString& key) const;

signals:
    /// The user picked a rank in the table.
    void rankActivated(int rank);

private:
    QLabel* addRow(const QString& key, const QString& title, const QString& tooltip);
    /// Right-click on the table header chooses the columns (busy, parameters and p2p start hidden).
    void setupColumnMenu();
    void setupOverlayTable();
    void showEmpty(const QString& reason);
    void showClosedForm(const SimulationSnapshot& s);

    RankMetricsModel* m_model;
    QLabel* m_overlayTitle;
    QTableWidget* m_overlayTable;
    std::vector<std::string> m_overlayKeys;
    QTableView* m_table;
    std::vector<std::pair<QString, QLabel*>> m_rows;
    QWidget* m_form;
};

} // namespace dps::ui
