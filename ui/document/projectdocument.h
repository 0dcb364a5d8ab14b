#pragma once
// The open project: owns the dps::Project, its file path and the undo stack. Every change goes through
// one of the edit methods below, which pushes an undoable command holding the project before and after —
// so undo/redo covers every edit, and views only read project() and listen to changed().
#include "project/project.h"

#include <QObject>
#include <QString>
#include <QUndoStack>

#include <functional>
#include <optional>

namespace dps::ui {

/// Which per-stage cost a cost override sets.
enum class CostField { Forward, InputGrad, WeightGrad, Backward, Overlap };

class ProjectDocument : public QObject {
    Q_OBJECT
public:
    explicit ProjectDocument(QObject* parent = nullptr);

    const Project& project() const { return m_project; }
    /// The active variant (the first one when the name is stale).
    const Variant& activeVariant() const;
    QString activeName() const { return QString::fromStdString(m_project.activeVariant); }
    QString filePath() const { return m_path; }
    /// Title for the window: file name (or "untitled") with "*" when modified.
    QString displayName() const;
    bool isModified() const { return !m_undo.isClean(); }
    QUndoStack* undoStack() { return &m_undo; }

    /// Replaces the project (new, open): clears the undo history, marks the document clean.
    void reset(const Project& project, const QString& path = {});
    /// Marks the current state as saved under `path`.
    void markSaved(const QString& path);

    // Edits. Each pushes one undo command; `mergeKey` >= 0 merges consecutive edits of the same key.
    void edit(const QString& text, const std::function<void(Project&)>& change, int mergeKey = -1);
    /// Like edit(), but the changed project must pass the engine's checks (checkProject): when it does not,
    /// nothing is applied and the engine's message is returned, naming the field ("model.moe.top_k: 9 exceeds
    /// model.moe.experts 8"). A project that already failed with the same message before the change (e.g. a
    /// file opened that way) does not block it. Returns "" when the edit was applied.
    QString editChecked(const QString& text, const std::function<void(Project&)>& change, int mergeKey = -1);
    /// Replaces the model and the training state by model preset `id` (modelPreset of
    /// engine/project/presets.h) as one undoable edit; returns the engine's message ("" when applied).
    QString applyModelPreset(const QString& id);
    /// Replaces the cluster by device preset `id` (devicePreset) as one undoable edit; returns the engine's
    /// message ("" when applied).
    QString applyDevicePreset(const QString& id);
    void setActiveVariant(const QString& name);
    /// Adds a copy of the active variant under a fresh name; returns that name.
    QString addVariant();
    void removeVariant(const QString& name);
    /// Renames; refuses (returns false) an empty or duplicate name.
    bool renameVariant(const QString& from, const QString& to);
    /// Changes kind/ranks/microbatches/stages per rank of the active variant; resets its hand-edited order (and
    /// sends and receives) and, when the stage count changes, its partition.
    void setVariantShape(ScheduleKind kind, int ranks, int microbatches, int stagesPerRank);
    void setPartition(const std::vector<int>& layersPerStage);
    void setStageCost(int stage, CostField field, std::optional<double> valueUs);
    /// Moves the slot at `from` of `rank` to `to` in the active variant's order (the generated order is
    /// copied first when the variant has none). Sends and receives placed by hand (comm_order) are for the old order:
    /// the same edit drops them, and `notice` says so.
    void moveAction(int rank, int from, int to);
    /// The active variant's program in PyTorch's whole action language: its sends and receives placed by hand
    /// (Variant::commOrder), else PyTorch's lowering of its order (lowerToComms, default options, as predict() lowers
    /// it); nullopt when the order cannot be built or lowered.
    std::optional<TorchSchedule> commProgram() const;
    /// Moves the send or receive at cell `from` of `rank`'s row of commProgram() to cell `to` (the index it has
    /// afterwards) and keeps the program as the active variant's comm_order: one undoable edit, re-simulated at once.
    /// Only within its rank; a move that makes the order deadlock is applied (the validator then names the deadlock).
    /// Returns false (nothing changed) for a cell that is not a send or receive, an index out of range or from == to.
    bool moveCommAction(int rank, int from, int to);
    /// Drops the hand-edited order (unless the variant is imported, kind custom) and the sends and receives placed
    /// by hand of the active variant: back to the generated order and PyTorch's lowering.
    void regenerate();
    /// Adds an imported schedule as a new variant (kind Custom) and makes it active.
    QString addImportedVariant(const Schedule& schedule, const QString& baseName);

    /// A name not used by any variant: base, base-2, base-3, ...
    QString uniqueName(const QString& base) const;

    /// The engine's checks of a project the designer is about to hold: model::check of a transformer model,
    /// then validateProject (sizes and their products within their limits, partitions, orders, the
    /// expert-parallel group against dp). Returns the first error's message (FormatError's text, naming the
    /// field), or "" when the project passes.
    static QString checkProject(const Project& project);

signals:
    /// The project content changed (any edit, undo, redo, reset).
    void changed();
    /// The title (file name or modified state) changed.
    void titleChanged(const QString& title);
    /// Something an edit did besides what was asked, in words (e.g. the sends and receives placed by hand dropped).
    void notice(const QString& text);

private:
    friend class ProjectEditCommand;
    void assign(const Project& project);
    Variant* activeMutable(Project& project) const;

    Project m_project;
    QString m_path;
    QUndoStack m_undo;
};

} // namespace dps::ui
