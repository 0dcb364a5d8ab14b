#pragma once
// The model editor: a preset (choosing one replaces the model and the training state, one undoable edit), the
// model kind, and for a transformer its shape (layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied
// embeddings, attention MHA/GQA/MLA with MLA's low-rank dimensions, sequence length, microbatch size, dtype,
// recompute), its mixture of experts (experts, top-k, expert ffn, shared experts, dense layers, dense ffn,
// expert-parallel group, dispatch and combine dtypes, nodes per token) and the training state (Adam's master
// weights and moments, gradient dtype, ZeRO-1). Above the fields: the whole model's parameters (total and
// active) and training FLOPs per token; below them the active variant's stages (both from modelInfo,
// computed off the GUI thread: it builds the variant's schedule). Every change is a checked document edit
// (FieldBinder): a value the engine refuses shows its message and is not applied.
#include "document/latestjobrunner.h"
#include "document/projectdocument.h"

#include <QWidget>

class QComboBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QTableWidget;

namespace dps::ui {

class FieldBinder;

class ModelEditor : public QWidget {
    Q_OBJECT
public:
    explicit ModelEditor(ProjectDocument* document, QWidget* parent = nullptr);

    /// Chooses model preset `id` as the user would in the preset box; returns the engine's message ("" when
    /// applied).
    QString choosePreset(const QString& id);
    /// The message of the last refused edit ("" when none is shown).
    QString message() const;
    /// The totals line ("671.03 G parameters, 37.55 G active · 1.1 T FLOP per token in training").
    QString totalsText() const;
    /// A field's editor by its form label without the colon ("Heads", "Top-k", ...), for tests; null when none.
    QWidget* field(const QString& label) const;
    QComboBox* presetBox() const { return m_preset; }
    QTableWidget* stageTable() const { return m_stages; }
    /// Waits until the totals and the stage table follow the project (tests, screenshots); true when they do.
    bool waitUntilIdle(int timeoutMs = 10000) { return m_info.waitUntilIdle(timeoutMs); }
    bool isIdle() const { return m_info.isIdle(); }

private:
    QWidget* setupHeader();
    QGroupBox* setupShape();
    QGroupBox* setupAttention();
    QGroupBox* setupMoe();
    QGroupBox* setupTraining();
    void refresh();
    /// Asks for the totals and the stage table of the project as it is now (newest request wins).
    void requestInfo();

    ProjectDocument* m_document;
    QLabel* m_message;
    FieldBinder* m_binder;
    LatestJobRunner m_info;
    QComboBox* m_preset = nullptr;
    QLabel* m_totals = nullptr;
    QLabel* m_stagesTitle = nullptr;
    QTableWidget* m_stages = nullptr;
    QFormLayout* m_shapeForm = nullptr;
    QFormLayout* m_attentionForm = nullptr;
    QFormLayout* m_moeForm = nullptr;
    QGroupBox* m_attentionGroup = nullptr;
    QGroupBox* m_moeGroup = nullptr;
};

} // namespace dps::ui
