#include "widgets/clustereditor.h"

#include "widgets/fieldbinder.h"
#include "widgets/presetbox.h"

#include "project/presets.h"
#include "project/transformercost.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QScrollArea>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <set>

namespace dps::ui {

namespace {

/// The rates the "Per-operation model" check box starts from: those of the device preset the cluster was made
/// from, or the H100 SXM preset's where that preset has none (a CPU, a cluster typed by hand).
KernelModel startingKernels(const ClusterDesc& cluster)
{
    try {
        if (auto kernels = devicePreset(cluster.device).kernels)
            return *kernels;
    } catch (const std::exception&) { // not a preset this build ships
    }
    return *devicePreset("h100-sxm").kernels;
}

/// The cluster's rates for a getter; the fields are hidden while there are none.
KernelModel kernelsOf(const Project& p)
{
    return p.cluster.kernels.value_or(KernelModel {});
}

/// The cluster's rates for a setter, starting them (startingKernels) when there are none.
KernelModel& kernelsOf(Project& p)
{
    if (!p.cluster.kernels)
        p.cluster.kernels = startingKernels(p.cluster);
    return *p.cluster.kernels;
}

/// A per-operation efficiency row: the fraction `member` of cluster.kernels, shown in %. The range reaches past
/// 100 % so that the engine, not the spin box, refuses a value above 1 (with the field's name).
void addEfficiency(
    FieldBinder* binder, QFormLayout* form, const QString& label, double KernelModel::*member, const QString& tip)
{
    binder
        ->addDouble(
            form, label, 0, 200, 1, QStringLiteral(" %"),
            [member](const Project& p) { return kernelsOf(p).*member * 100; },
            [member](Project& p, double v) { kernelsOf(p).*member = v / 100; })
        ->setToolTip(tip);
}

/// A per-operation rate of the expert all-to-all: bytes/µs of cluster.kernels shown in GB/s, 0 = the inter-node
/// link's bandwidth.
void addA2aRate(
    FieldBinder* binder, QFormLayout* form, const QString& label, double KernelModel::*member, const QString& tip)
{
    QDoubleSpinBox* box = binder->addDouble(
        form, label, 0, 1e5, 3, QObject::tr(" GB/s"), [member](const Project& p) { return kernelsOf(p).*member / 1e3; },
        [member](Project& p, double v) { kernelsOf(p).*member = v * 1e3; });
    box->setSpecialValueText(QObject::tr("the inter-node link's"));
    box->setToolTip(tip);
}

} // namespace

ClusterEditor::ClusterEditor(ProjectDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_message(createMessageLabel())
    , m_binder(new FieldBinder(document, m_message, this))
{
    auto* header = new QFormLayout;
    m_preset = newPresetBox(
        devicePresets(), tr("Choosing a device preset replaces the cluster (undo with Ctrl+Z)"), this,
        [this](const QString& id) { choosePreset(id); }, [this] { refresh(); });
    header->addRow(tr("Device preset:"), m_preset);

    QGroupBox* deviceBox = setupDeviceBox();
    QGroupBox* nodesBox = setupNodesBox();
    QGroupBox* kernelsBox = setupKernelsBox();

    m_placement = new QLabel;
    m_placement->setWordWrap(true);
    m_placement->setTextFormat(Qt::RichText);

    auto* content = new QWidget;
    auto* column = new QVBoxLayout(content);
    column->setContentsMargins(6, 0, 6, 6);
    column->addWidget(deviceBox);
    column->addWidget(nodesBox);
    column->addWidget(kernelsBox);
    column->addWidget(m_placement);
    column->addStretch(1);
    auto* scroll = new QScrollArea;
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 6, 0, 0);
    auto* top = new QVBoxLayout;
    top->setContentsMargins(6, 0, 6, 0);
    top->addLayout(header);
    top->addWidget(m_message);
    layout->addLayout(top);
    layout->addWidget(scroll, 1);
    m_binder->onRefresh([this] { refresh(); });
    refresh();
}

QGroupBox* ClusterEditor::setupDeviceBox()
{
    auto* device = new QFormLayout;
    device->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_binder
        ->addDouble(
            device, tr("Peak:"), 0.001, 1e5, 3, tr(" TFLOP/s"),
            [](const Project& p) { return p.cluster.deviceFlops / 1e12; },
            [](Project& p, double v) { p.cluster.deviceFlops = v * 1e12; })
        ->setToolTip(tr("Dense peak FLOP/s of one device at the model's dtype"));
    QDoubleSpinBox* fp8 = m_binder->addDouble(
        device, tr("FP8 peak:"), 0, 1e5, 3, tr(" TFLOP/s"),
        [](const Project& p) { return p.cluster.deviceFlopsFp8 / 1e12; },
        [](Project& p, double v) { p.cluster.deviceFlopsFp8 = v * 1e12; });
    fp8->setSpecialValueText(tr("none"));
    fp8->setToolTip(tr("Dense FP8 peak: the weight GEMMs' peak when the training section's GEMM dtype is fp8"));
    m_binder
        ->addDouble(
            device, tr("Efficiency:"), 1, 100, 1, tr(" %"), [](const Project& p) { return p.cluster.efficiency * 100; },
            [](Project& p, double v) { p.cluster.efficiency = v / 100; })
        ->setToolTip(tr("Fraction of the peak every FLOP runs at, where the cluster has no per-operation rates "
                        "(Per-operation rates below: the GPU presets time GEMMs by shape, attention and "
                        "memory-bound work at their own rates)"));
    m_binder->addDouble(
        device, tr("Memory:"), 0.001, 1e5, 3, tr(" GB"),
        [](const Project& p) { return p.cluster.memoryPerDeviceBytes / 1e9; },
        [](Project& p, double v) { p.cluster.memoryPerDeviceBytes = v * 1e9; });
    auto* deviceBox = new QGroupBox(tr("Device"));
    deviceBox->setLayout(device);
    return deviceBox;
}

QGroupBox* ClusterEditor::setupNodesBox()
{
    auto* nodes = new QFormLayout;
    nodes->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_binder
        ->addInt(
            nodes, tr("GPUs per node:"), 0, 1 << 16, [](const Project& p) { return p.cluster.gpusPerNode; },
            [](Project& p, int v) { p.cluster.gpusPerNode = v; })
        ->setSpecialValueText(tr("all on one node"));
    m_binder
        ->addInt(
            nodes, tr("Nodes:"), 0, 1 << 20, [](const Project& p) { return p.cluster.nodes; },
            [](Project& p, int v) { p.cluster.nodes = v; })
        ->setSpecialValueText(tr("as many as needed"));
    m_binder->addDouble(
        nodes, tr("Intra-node latency:"), 0, 1e6, 2, tr(" µs"), [](const Project& p) { return p.cluster.latencyUs; },
        [](Project& p, double v) { p.cluster.latencyUs = v; });
    m_binder
        ->addDouble(
            nodes, tr("Intra-node bandwidth:"), 0, 1e5, 3, tr(" GB/s"),
            [](const Project& p) { return p.cluster.bandwidthBytesPerUs / 1e3; },
            [](Project& p, double v) { p.cluster.bandwidthBytesPerUs = v * 1e3; })
        ->setSpecialValueText(tr("unlimited"));
    m_binder->addDouble(
        nodes, tr("Inter-node latency:"), 0, 1e6, 2, tr(" µs"),
        [](const Project& p) { return p.cluster.interNodeLatencyUs; },
        [](Project& p, double v) { p.cluster.interNodeLatencyUs = v; });
    m_binder
        ->addDouble(
            nodes, tr("Inter-node bandwidth:"), 0, 1e5, 3, tr(" GB/s"),
            [](const Project& p) { return p.cluster.interNodeBandwidthBytesPerUs / 1e3; },
            [](Project& p, double v) { p.cluster.interNodeBandwidthBytesPerUs = v * 1e3; })
        ->setSpecialValueText(tr("unlimited"));
    m_binder
        ->addDouble(
            nodes, tr("All-to-all compute share:"), 0, 99, 1, tr(" %"),
            [](const Project& p) { return p.cluster.commComputeShare * 100; },
            [](Project& p, double v) { p.cluster.commComputeShare = v / 100; })
        ->setToolTip(tr("Share of the device's compute the expert all-to-all takes while it runs beside compute in an "
                        "overlapped F&B slot (DeepSeek-V3 report §3.2.2: 20 of 132 SMs = 15.2 %)"));
    auto* nodesBox = new QGroupBox(tr("Nodes and links"));
    nodesBox->setLayout(nodes);
    nodesBox->setToolTip(tr("Devices are numbered node by node; a pipeline hop or an expert-parallel exchange between "
                            "nodes takes the inter-node link (bandwidth per device)"));
    return nodesBox;
}

QGroupBox* ClusterEditor::setupKernelsBox()
{
    m_kernelsForm = new QFormLayout;
    m_kernelsForm->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_binder
        ->addCheck(
            m_kernelsForm, tr("Per-operation model"), [](const Project& p) { return p.cluster.kernels.has_value(); },
            [](Project& p, bool on) {
                p.cluster.kernels = on ? std::optional(startingKernels(p.cluster)) : std::nullopt;
            })
        ->setToolTip(tr("On: each operation of a transformer runs at its own rate (GEMMs by shape, flash attention, "
                        "memory-bound work), starting from the device preset's rates. Off: every FLOP runs at the "
                        "device's Efficiency, as in projects without cluster.kernels"));
    m_binder
        ->addInt(
            m_kernelsForm, tr("SMs:"), 0, 1 << 20, [](const Project& p) { return kernelsOf(p).smCount; },
            [](Project& p, int v) { kernelsOf(p).smCount = v; })
        ->setToolTip(tr("Streaming multiprocessors (compute units): one wave of a GEMM computes this many 128 × 128 "
                        "output tiles, so a GEMM of a few tiles more than a wave runs a nearly empty second wave"));
    m_binder
        ->addDouble(
            m_kernelsForm, tr("HBM bandwidth:"), 0, 1e6, 1, tr(" GB/s"),
            [](const Project& p) { return kernelsOf(p).hbmBandwidthBytesPerUs / 1e3; },
            [](Project& p, double v) { kernelsOf(p).hbmBandwidthBytesPerUs = v * 1e3; })
        ->setToolTip(tr(
            "Device memory bandwidth: memory-bound operations (norms, residual adds, the SwiGLU, MoE "
            "permutes) run at it × the memory efficiency, and no GEMM runs faster than its operands move through it"));
    addEfficiency(m_binder, m_kernelsForm, tr("GEMM efficiency:"), &KernelModel::gemmEfficiency,
        tr("Of the peak: the rate of a large weight GEMM of the best shape (smaller ones lose to wave quantization)"));
    addEfficiency(m_binder, m_kernelsForm, tr("FP8 GEMM efficiency:"), &KernelModel::gemmEfficiencyFp8,
        tr("Of the FP8 peak: a large FP8 GEMM's rate, when the training section's GEMM dtype is fp8"));
    addEfficiency(m_binder, m_kernelsForm, tr("Attention forward efficiency:"),
        &KernelModel::attentionForwardEfficiency, tr("Of the peak: the flash-attention forward's rate"));
    addEfficiency(m_binder, m_kernelsForm, tr("Attention backward efficiency:"),
        &KernelModel::attentionBackwardEfficiency, tr("Of the peak: the flash-attention backward's rate (in I)"));
    addEfficiency(m_binder, m_kernelsForm, tr("Memory efficiency:"), &KernelModel::memoryEfficiency,
        tr("Of the HBM bandwidth: what a memory-bound kernel reaches"));
    addA2aRate(m_binder, m_kernelsForm, tr("Dispatch inter-node rate:"), &KernelModel::dispatchInterNodeBytesPerUs,
        tr("The expert dispatch's measured rate on the bytes it sends to other nodes (and the combine's backward, a "
           "dispatch too); the pipeline hops and the other collectives keep the inter-node link's bandwidth"));
    addA2aRate(m_binder, m_kernelsForm, tr("Combine inter-node rate:"), &KernelModel::combineInterNodeBytesPerUs,
        tr("The expert combine's measured rate on the bytes it exchanges with other nodes (and the dispatch's "
           "backward, a combine too)"));
    auto* box = new QGroupBox(tr("Per-operation rates"));
    box->setLayout(m_kernelsForm);
    box->setToolTip(tr("cluster.kernels: a transformer's compute timed per operation (docs/model-library.md, "
                       "\"Device efficiency per operation\"); the block model always runs at Efficiency"));
    return box;
}

QString ClusterEditor::choosePreset(const QString& id)
{
    return m_binder->report(m_document->applyDevicePreset(id));
}

QString ClusterEditor::message() const
{
    return m_binder->message();
}

QWidget* ClusterEditor::field(const QString& label) const
{
    return m_binder->field(label);
}

QString ClusterEditor::placementText() const
{
    return m_placement->text();
}

void ClusterEditor::refresh()
{
    const Project& p = m_document->project();
    {
        const QSignalBlocker block(m_preset);
        int index = m_preset->findData(QString::fromStdString(p.cluster.device));
        if (index < 0) {
            m_preset->addItem(QString::fromStdString(p.cluster.device), QString::fromStdString(p.cluster.device));
            index = m_preset->count() - 1;
        }
        m_preset->setCurrentIndex(index);
    }
    for (const QString& name : { tr("SMs"), tr("HBM bandwidth"), tr("GEMM efficiency"), tr("FP8 GEMM efficiency"),
             tr("Attention forward efficiency"), tr("Attention backward efficiency"), tr("Memory efficiency"),
             tr("Dispatch inter-node rate"), tr("Combine inter-node rate") })
        m_kernelsForm->setRowVisible(field(name), p.cluster.kernels.has_value());
    refreshPlacement();
}

void ClusterEditor::refreshPlacement()
{
    const Project& p = m_document->project();
    const Variant& v = m_document->activeVariant();
    const QString name = QString::fromStdString(v.name).toHtmlEscaped();
    DevicePlacement placement;
    try {
        placement = placementOf(p, v);
    } catch (const std::exception& e) {
        m_placement->setText(tr("<b>%1</b>: %2").arg(name, QString::fromUtf8(e.what()).toHtmlEscaped()));
        return;
    }
    // The job's devices are ranks × dp; the placement lays each rank's replicas (at least its EP group) on
    // consecutive devices, which decides the nodes the pipeline and the EP group cross.
    const int devices = v.ranks * v.dp;
    const int laidOut = v.ranks * placement.replicas;
    const std::set<int> nodes(placement.rankNode.begin(), placement.rankNode.end());
    int crossing = 0;
    for (std::size_t r = 1; r < placement.rankNode.size(); ++r)
        crossing += placement.rankNode[r] != placement.rankNode[r - 1] ? 1 : 0;
    const int gpn = p.cluster.gpusPerNode;
    const int usedNodes = std::max(gpn > 0 ? (laidOut + gpn - 1) / gpn : 1, static_cast<int>(nodes.size()));
    QString text = tr("<b>%1</b>: dp %2 × pp %3 = %4 devices").arg(name).arg(v.dp).arg(v.ranks).arg(devices);
    if (placement.replicas > v.dp)
        text += tr(", laid out as %1 replicas per rank (the expert-parallel group)").arg(placement.replicas);
    text += gpn > 0 ? tr(", over %1 node(s) of %2").arg(usedNodes).arg(gpn) : tr(", on one node");
    if (p.cluster.nodes > 0 && usedNodes > p.cluster.nodes)
        text += tr(" — <b>more than the %1 available</b>").arg(p.cluster.nodes);
    text += tr("; %1 of %2 pipeline hops cross nodes").arg(crossing).arg(std::max(0, v.ranks - 1));
    const model::Moe& moe = p.model.transformer.moe;
    if (p.model.kind == ModelKind::Transformer && moe.experts > 0 && moe.ep > 1)
        text += tr("; an expert-parallel group of %1 spans %2 node(s), %3 of a device's %4 peers in its node")
                    .arg(moe.ep)
                    .arg(placement.ep.nodesSpanned)
                    .arg(placement.ep.peersInNode)
                    .arg(moe.ep - 1);
    m_placement->setText(text + QLatin1Char('.'));
}

} // namespace dps::ui
