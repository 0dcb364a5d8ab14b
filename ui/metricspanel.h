#pragma once
// The numbers of the active variant: makespan, bubble rate (with its definition), the simulated largest
// per-rank idle beside the schedule's closed form (with its validity range, or why it does not apply),
// peak memory and in-flight, parameters per device, p2p bytes; and a per-rank table.
#include "snapshot.h"

#include <QWidget>

class QLabel;
class QTableView;

namespace dps::ui {

class RankMetricsModel;

class MetricsPanel : public QWidget {
    Q_OBJECT
public:
    explicit MetricsPanel(QWidget* parent = nullptr);

    void setSnapshot(const SnapshotPtr& snapshot);
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
    void showEmpty(const QString& reason);
    void showClosedForm(const SimulationSnapshot& s);

    RankMetricsModel* m_model;
    QTableView* m_table;
    std::vector<std::pair<QString, QLabel*>> m_rows;
    QWidget* m_form;
};

} // namespace dps::ui
