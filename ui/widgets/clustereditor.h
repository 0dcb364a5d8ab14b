#pragma once
// The cluster editor: a device preset (choosing one replaces the cluster, one undoable edit), the device's
// peak FLOP/s, achievable efficiency and memory, GPUs per node and nodes, the intra-node and inter-node links
// (latency and bandwidth), the share of compute the expert all-to-all takes in an overlapped F&B slot, and the
// per-operation rates (cluster.kernels: SMs, HBM bandwidth, the GEMM, attention and memory-bound efficiencies),
// switched on and off as a whole.
// Under the fields: where the active variant's devices sit (placementOf: devices, nodes, pipeline hops that
// cross nodes, the nodes an expert-parallel group spans). Every change is a checked document edit.
#include "document/projectdocument.h"

#include <QWidget>

class QComboBox;
class QFormLayout;
class QGroupBox;
class QLabel;

namespace dps::ui {

class FieldBinder;

class ClusterEditor : public QWidget {
    Q_OBJECT
public:
    explicit ClusterEditor(ProjectDocument* document, QWidget* parent = nullptr);

    /// Chooses device preset `id` as the user would; returns the engine's message ("" when applied).
    QString choosePreset(const QString& id);
    /// The message of the last refused edit ("" when none is shown).
    QString message() const;
    /// The placement line under the fields.
    QString placementText() const;
    QComboBox* presetBox() const { return m_preset; }
    /// A field's editor by its form label without the colon ("Peak", "GPUs per node", ...); null when none.
    QWidget* field(const QString& label) const;

private:
    /// The device's fields: peak FLOP/s, FP8 peak, efficiency, memory.
    QGroupBox* setupDeviceBox();
    /// The nodes and links: GPUs per node, nodes, intra- and inter-node latency and bandwidth, all-to-all share.
    QGroupBox* setupNodesBox();
    /// The per-operation rates: the "Per-operation model" check box (cluster.kernels present) and its seven
    /// fields, shown while it is on.
    QGroupBox* setupKernelsBox();
    void refresh();
    void refreshPlacement();

    ProjectDocument* m_document;
    QLabel* m_message;
    FieldBinder* m_binder;
    QComboBox* m_preset = nullptr;
    QFormLayout* m_kernelsForm = nullptr;
    QLabel* m_placement = nullptr;
};

} // namespace dps::ui
