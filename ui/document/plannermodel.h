#pragma once
// The Planner panel's data side: the search (dps::plan of engine/project/planner.h) run off the GUI thread
// with progress and cancel, and a sortable table model of the candidates it found. No widgets here.
#include "document/latestjobrunner.h"
#include "project/planner.h"

#include <QAbstractTableModel>
#include <QObject>

#include <atomic>
#include <memory>
#include <vector>

namespace dps::ui {

using PlanResultPtr = std::shared_ptr<const PlanResult>;

/// Runs dps::plan on a worker thread (LatestJobRunner: a new search replaces one still waiting and cancels the
/// one running). Progress and the result arrive on the GUI thread through the signals.
class PlannerService : public QObject {
    Q_OBJECT
public:
    explicit PlannerService(QObject* parent = nullptr);
    /// Cancels a search still running and waits for its thread.
    ~PlannerService() override;

    /// Searches `project` (copied) with `request` (its progress callback is replaced by the service's).
    /// Errors of the engine (ConstraintError naming "--devices", "--global-batch", "--memory-limit"; a
    /// FormatError of a model that cannot be costed) arrive through failed(), never as exceptions.
    void start(const Project& project, PlanRequest request);
    /// Asks the running search to stop (PlanRequest::progress returns false); the partial result then arrives
    /// through finished() with PlanResult::cancelled set.
    void cancel();
    bool isRunning() const { return !m_runner.isIdle(); }
    /// Processes events until the search ended or `timeoutMs` passed; true when it ended (tests, screenshots).
    bool waitUntilIdle(int timeoutMs = 60000) { return m_runner.waitUntilIdle(timeoutMs); }
    /// The newest result delivered (null before the first).
    PlanResultPtr current() const { return m_current; }

signals:
    /// `done` of `total` candidates handled (sent when the whole percentage changes, and at the end).
    void progressed(int done, int total);
    /// The search ended (completed or cancelled).
    void finished(const dps::ui::PlanResultPtr& result);
    /// The search could not start: the engine's message, naming the field at fault.
    void failed(const QString& message);

private:
    LatestJobRunner m_runner;
    std::shared_ptr<std::atomic<bool>> m_cancel; ///< the flag of the newest search
    PlanResultPtr m_current;
};

/// The candidates of a PlanResult, one row each, best step time first until sorted by a column (sort()).
class PlannerModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Kind,
        Tp, ///< tensor-parallel size
        Cp, ///< context-parallel size
        Pp,
        Dp,
        Zero, ///< ZeRO stage
        Microbatches, ///< "30 × 2": count × size (sequences)
        Partition, ///< layers per model stage, runs shortened ("2×2,1×2,2×27,1")
        Recompute,
        Step, ///< step time, µs
        Bubble,
        PeakMemory, ///< largest over ranks, bytes
        TokensPerSecond,
        TokensPerSecondPerDevice,
        Mfu, ///< model FLOPs utilisation, fraction
        Pareto,
        ColumnCount
    };
    /// The number behind a cell (Step: µs, PeakMemory: bytes, Bubble and Mfu: fraction, Pareto: 0/1); the text for
    /// Kind, Partition and Recompute. What sort() orders by.
    static constexpr int ValueRole = Qt::UserRole;
    /// The candidate's index in PlanResult::candidates (int), whatever the sort order.
    static constexpr int CandidateRole = Qt::UserRole + 1;

    explicit PlannerModel(QObject* parent = nullptr);

    /// Shows `result`'s candidates in its order (best step time first); null clears. `transformer`: the project's
    /// model is a transformer (else the recompute column reads "—", as in `dpstudio plan`).
    void setResult(const PlanResultPtr& result, bool transformer = true);
    PlanResultPtr result() const { return m_result; }
    /// The candidate shown in `row` (its index in PlanResult::candidates); −1 outside.
    int candidateAt(int row) const;
    /// The row showing candidate `candidate`; −1 when none.
    int rowOf(int candidate) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    /// Orders the rows by ValueRole of `column` (stable: equal values keep the planner's order).
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

    static QString columnName(int column);

private:
    QVariant value(const PlanCandidate& c, int column) const;
    QString text(const PlanCandidate& c, int column) const;

    PlanResultPtr m_result;
    bool m_transformer = true;
    std::vector<int> m_rows; ///< candidate index of each row
};

/// Layers per stage with runs of equal stages shortened: {1,5,5,5,2} → "1,5×3,2" (dps::partitionText of
/// project/partitioning.h, as `dpstudio plan` prints it).
QString partitionText(const std::vector<int>& layersPerStage);

/// The kind's name as the designer shows it ("Interleaved 1F1B"), with "(v = 4)" for more than one stage per
/// rank of an interleaved kind.
QString planKindText(const PlanCandidate& candidate);

} // namespace dps::ui
