#pragma once
// RunHistory: the runs of one project, newest first, as a table model. Kept next to the project as
// <project>.runs/index.json (written atomically) with the measured files beside it, so the history
// survives restarts and any run can be re-opened and compared.
#include "run/runrecord.h"

#include <QAbstractTableModel>
#include <QVector>

namespace dps::ui {

/// Newest runs-index format this build reads and writes.
inline constexpr int kRunsIndexVersion = 1;

class RunHistory : public QAbstractTableModel {
    Q_OBJECT
public:
    /// The most telling columns first, so a narrow dock still shows them.
    enum Column {
        DateColumn,
        StepTimeColumn,
        CorrectnessColumn,
        VariantColumn,
        BackendColumn,
        HardwareColumn,
        ColumnCount
    };
    enum Role {
        MeasuredPathRole = Qt::UserRole + 1, ///< QString: absolute path of the measured.json
        CorrectnessRole, ///< int: Correctness
        StepTimeRole, ///< double: µs
        DateRole, ///< QDateTime
    };

    explicit RunHistory(QObject* parent = nullptr);

    /// The folder of a project's runs: "dir/foo.runs" for "dir/foo.dpstudio.json".
    static QString folderFor(const QString& projectPath);

    /// Shows the runs of `projectPath` (none yet is fine). Returns false, with `error` set and the
    /// history left empty, when the index exists but cannot be read or is of a newer format.
    bool open(const QString& projectPath, QString* error = nullptr);
    /// Empties the history (no project).
    void clear();
    QString folder() const { return m_folder; }
    QString indexPath() const;

    /// A fresh path for the next run's measured trace, e.g. "…/foo.runs/20250301-141503-dualpipev.measured.json";
    /// creates the folder. Empty, with `error` set, when the folder cannot be created or no project is open.
    QString newMeasuredPath(const QString& variant, const QDateTime& when, QString* error = nullptr) const;
    /// Adds a run at the top and saves the index. Returns false, with `error` set, when saving failed
    /// (the run stays listed).
    bool addRun(const RunRecord& record, QString* error = nullptr);
    /// Removes a run from the index (its measured file is kept) and saves.
    bool removeRun(int row, QString* error = nullptr);
    const RunRecord& run(int row) const { return m_runs.at(row); }
    int runCount() const { return static_cast<int>(m_runs.size()); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

private:
    bool save(QString* error) const;
    QVariant displayData(const RunRecord& r, int column) const;
    QVariant toolTip(const RunRecord& r) const;

    QString m_folder;
    QVector<RunRecord> m_runs; ///< newest first
};

} // namespace dps::ui
