#include "widgets/projectpanel.h"

#include "document/stagecostmodel.h"
#include "document/variantlistmodel.h"

#include "schedule/generator.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>

namespace dps::ui {

namespace {

QGroupBox* group(const QString& title, QLayout* layout)
{
    auto* box = new QGroupBox(title);
    box->setLayout(layout);
    return box;
}

void compactTable(QTableView* view)
{
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
    view->horizontalHeader()->setStretchLastSection(true);
    view->setAlternatingRowColors(true);
}

} // namespace

ProjectPanel::ProjectPanel(ProjectDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_variants(new VariantListModel(document, this))
    , m_costs(new StageCostModel(document, this))
{
    auto* content = new QWidget;
    auto* column = new QVBoxLayout(content);
    column->setContentsMargins(6, 6, 6, 6);
    column->addWidget(setupVariants());
    column->addWidget(setupShape());
    column->addWidget(setupModel());
    column->addWidget(setupCluster());
    column->addWidget(setupCosts());
    column->addStretch(1);
    content->setMinimumWidth(280);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);
    connect(document, &ProjectDocument::changed, this, &ProjectPanel::refresh);
    refresh();
}

QWidget* ProjectPanel::setupVariants()
{
    m_variantView = new QTableView;
    m_variantView->setModel(m_variants);
    compactTable(m_variantView);
    m_variantView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_variantView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_variantView->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
    m_variantView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_variantView->horizontalHeader()->setSectionResizeMode(VariantListModel::Name, QHeaderView::Stretch);
    m_variantView->horizontalHeader()->setStretchLastSection(false);
    m_variantView->setColumnHidden(VariantListModel::Order, true);
    m_variantView->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_variantView->setMaximumHeight(m_variantView->fontMetrics().height() * 7);
    m_variantView->setToolTip(tr("Click a variant to make it active; double-click its name (or F2) to rename it"));
    connect(m_variantView, &QTableView::clicked, this,
        [this](const QModelIndex& index) { m_document->setActiveVariant(m_variants->nameAt(index.row())); });
    auto* add = new QPushButton(tr("Add"));
    add->setToolTip(tr("Add a copy of the active variant"));
    m_removeButton = new QPushButton(tr("Remove"));
    auto* rename = new QPushButton(tr("Rename"));
    connect(add, &QPushButton::clicked, m_document, &ProjectDocument::addVariant);
    connect(
        m_removeButton, &QPushButton::clicked, this, [this] { m_document->removeVariant(m_document->activeName()); });
    connect(rename, &QPushButton::clicked, this, [this] {
        m_variantView->edit(m_variants->index(m_variants->rowOf(m_document->activeName()), VariantListModel::Name));
    });
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(add);
    buttons->addWidget(rename);
    buttons->addWidget(m_removeButton);
    buttons->addStretch(1);
    auto* layout = new QVBoxLayout;
    layout->addWidget(m_variantView);
    layout->addLayout(buttons);
    return group(tr("Schedule variants"), layout);
}

QWidget* ProjectPanel::setupShape()
{
    auto* form = new QFormLayout;
    m_kind = new QComboBox;
    for (ScheduleKind kind : generatedKinds())
        m_kind->addItem(QString::fromUtf8(kindDisplayName(kind).data()), static_cast<int>(kind));
    m_kind->addItem(tr("Custom (imported)"), static_cast<int>(ScheduleKind::Custom));
    m_ranks = new QSpinBox;
    m_ranks->setRange(1, 1024);
    m_microbatches = new QSpinBox;
    m_microbatches->setRange(1, 8192);
    m_stagesPerRank = new QSpinBox;
    m_stagesPerRank->setRange(1, 16);
    for (QSpinBox* box : { m_ranks, m_microbatches, m_stagesPerRank }) {
        box->setKeyboardTracking(false);
        box->setMinimumWidth(90);
        connect(box, qOverload<int>(&QSpinBox::valueChanged), this, &ProjectPanel::applyShape);
    }
    connect(m_kind, qOverload<int>(&QComboBox::activated), this, &ProjectPanel::applyShape);
    form->addRow(tr("Kind:"), m_kind);
    form->addRow(tr("Ranks (devices):"), m_ranks);
    form->addRow(tr("Microbatches:"), m_microbatches);
    form->addRow(tr("Stages per rank:"), m_stagesPerRank);
    m_orderState = new QLabel;
    m_regenerate = new QPushButton(tr("Regenerate"));
    m_regenerate->setToolTip(tr("Drop the hand-edited order and generate it from the kind again"));
    connect(m_regenerate, &QPushButton::clicked, this, &ProjectPanel::regenerate);
    auto* order = new QHBoxLayout;
    order->addWidget(m_orderState, 1);
    order->addWidget(m_regenerate);
    form->addRow(tr("Order:"), order);
    return group(tr("Active variant"), form);
}

template <typename Box, typename T>
Box* ProjectPanel::bindSpinBox(QFormLayout* form, const QString& label, Box* box, std::function<T(const Project&)> get,
    std::function<void(Project&, T)> set)
{
    box->setKeyboardTracking(false);
    box->setMinimumWidth(90); // the range's widest text would otherwise set the panel's width
    const int key = m_nextKey++;
    const QString name = QString(label).remove(QLatin1Char(':'));
    connect(box, qOverload<T>(&Box::valueChanged), this, [this, set, key, name](T value) {
        m_document->edit(
            tr("Set %1 to %2").arg(name).arg(value), [&](Project& p) { set(p, value); }, key);
    });
    m_refreshers.push_back([this, box, get] {
        const QSignalBlocker block(box);
        box->setValue(get(m_document->project()));
    });
    form->addRow(label, box);
    return box;
}

QSpinBox* ProjectPanel::addInt(QFormLayout* form, const QString& label, int min, int max,
    std::function<int(const Project&)> get, std::function<void(Project&, int)> set)
{
    auto* box = new QSpinBox;
    box->setRange(min, max);
    return bindSpinBox<QSpinBox, int>(form, label, box, std::move(get), std::move(set));
}

QDoubleSpinBox* ProjectPanel::addDouble(QFormLayout* form, const QString& label, double min, double max, int decimals,
    const QString& suffix, std::function<double(const Project&)> get, std::function<void(Project&, double)> set)
{
    auto* box = new QDoubleSpinBox;
    box->setRange(min, max);
    box->setDecimals(decimals);
    box->setSuffix(suffix);
    return bindSpinBox<QDoubleSpinBox, double>(form, label, box, std::move(get), std::move(set));
}

QWidget* ProjectPanel::setupModel()
{
    auto* form = new QFormLayout;
    addInt(
        form, tr("Layers:"), 1, 4096, [](const Project& p) { return p.model.layers; },
        [](Project& p, int v) { p.model.layers = v; });
    addInt(
        form, tr("Hidden:"), 1, 1 << 20, [](const Project& p) { return p.model.hidden; },
        [](Project& p, int v) { p.model.hidden = v; });
    addInt(
        form, tr("FFN:"), 1, 1 << 22, [](const Project& p) { return p.model.ffn; },
        [](Project& p, int v) { p.model.ffn = v; });
    addInt(
        form, tr("Sequence length:"), 1, 1 << 20, [](const Project& p) { return p.model.seqLen; },
        [](Project& p, int v) { p.model.seqLen = v; });
    addInt(
        form, tr("Microbatch size:"), 1, 1 << 16, [](const Project& p) { return p.model.microbatchSize; },
        [](Project& p, int v) { p.model.microbatchSize = v; });
    m_dtype = new QComboBox;
    m_dtype->addItem(QStringLiteral("fp32"), static_cast<int>(DType::FP32));
    m_dtype->addItem(QStringLiteral("bf16"), static_cast<int>(DType::BF16));
    connect(m_dtype, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        const auto dtype = static_cast<DType>(m_dtype->itemData(index).toInt());
        m_document->edit(tr("Set dtype"), [dtype](Project& p) { p.model.dtype = dtype; });
    });
    m_refreshers.push_back(
        [this] { m_dtype->setCurrentIndex(m_dtype->findData(static_cast<int>(m_document->project().model.dtype))); });
    form->addRow(tr("Dtype:"), m_dtype);
    return group(tr("Model (Linear–GELU–Linear blocks)"), form);
}

QWidget* ProjectPanel::setupCluster()
{
    auto* form = new QFormLayout;
    addDouble(
        form, tr("Device peak:"), 0.001, 1e5, 3, tr(" TFLOP/s"),
        [](const Project& p) { return p.cluster.deviceFlops / 1e12; },
        [](Project& p, double v) { p.cluster.deviceFlops = v * 1e12; });
    addDouble(
        form, tr("Efficiency:"), 1, 100, 1, tr(" %"), [](const Project& p) { return p.cluster.efficiency * 100; },
        [](Project& p, double v) { p.cluster.efficiency = v / 100; });
    addDouble(
        form, tr("Memory per device:"), 0.001, 1e5, 3, tr(" GB"),
        [](const Project& p) { return p.cluster.memoryPerDeviceBytes / 1e9; },
        [](Project& p, double v) { p.cluster.memoryPerDeviceBytes = v * 1e9; });
    addDouble(
        form, tr("P2P latency:"), 0, 1e6, 2, tr(" µs"), [](const Project& p) { return p.cluster.latencyUs; },
        [](Project& p, double v) { p.cluster.latencyUs = v; });
    addDouble(
        form, tr("P2P bandwidth:"), 0, 1e5, 3, tr(" GB/s"),
        [](const Project& p) { return p.cluster.bandwidthBytesPerUs / 1e3; },
        [](Project& p, double v) { p.cluster.bandwidthBytesPerUs = v * 1e3; });
    return group(tr("Cluster"), form);
}

QWidget* ProjectPanel::setupCosts()
{
    auto* form = new QFormLayout;
    addDouble(
        form, tr("Overlap factor:"), 0.1, 2.0, 3, QString(), [](const Project& p) { return p.costs.overlapFactor; },
        [](Project& p, double v) { p.costs.overlapFactor = v; })
        ->setToolTip(tr("An overlapped F&B slot takes factor × (F + B) unless a time is typed in the table"));
    addDouble(
        form, tr("Optimizer bytes/param:"), 0, 64, 1, QString(),
        [](const Project& p) { return p.costs.optimizerBytesPerParameter; },
        [](Project& p, double v) { p.costs.optimizerBytesPerParameter = v; })
        ->setToolTip(tr("Optimizer state per parameter, e.g. 8 for Adam's two fp32 moments"));
    auto* table = new QTableView;
    table->setModel(m_costs);
    compactTable(table);
    table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    table->setMinimumHeight(table->fontMetrics().height() * 10);
    table->setToolTip(tr("Per-stage times in µs: italic from the model, bold typed by you (clear a cell to go back)"));
    auto* layout = new QVBoxLayout;
    layout->addLayout(form);
    layout->addWidget(new QLabel(tr("Per-stage costs (µs; type to override):")));
    layout->addWidget(table);
    return group(tr("Costs"), layout);
}

void ProjectPanel::refresh()
{
    for (const auto& r : m_refreshers)
        r();
    refreshShape();
    selectActiveRow();
    m_removeButton->setEnabled(m_document->project().variants.size() > 1);
}

void ProjectPanel::refreshShape()
{
    const Variant& v = m_document->activeVariant();
    const QSignalBlocker b1(m_kind), b2(m_ranks), b3(m_microbatches), b4(m_stagesPerRank);
    m_kind->setCurrentIndex(m_kind->findData(static_cast<int>(v.kind)));
    m_ranks->setValue(v.ranks);
    m_microbatches->setValue(v.microbatches);
    const int spr = v.stagesPerRank > 0 ? v.stagesPerRank : defaultStagesPerRank(v.kind);
    m_stagesPerRank->setValue(std::max(1, spr));
    m_stagesPerRank->setEnabled(v.kind == ScheduleKind::Interleaved1F1B);
    m_stagesPerRank->setToolTip(v.kind == ScheduleKind::Interleaved1F1B
            ? tr("Model chunks per rank")
            : tr("Fixed by the kind (DualPipe's two chunks are replicas of one stage)"));
    const bool custom = v.kind == ScheduleKind::Custom;
    m_ranks->setEnabled(!custom);
    m_microbatches->setEnabled(!custom);
    m_kind->setToolTip(custom ? tr("Imported from a CSV: the order defines the schedule") : QString());
    const bool edited = v.order.has_value();
    m_orderState->setText(edited ? tr("edited by hand") : tr("generated"));
    m_regenerate->setEnabled(edited && !custom);
}

void ProjectPanel::selectActiveRow()
{
    const int row = m_variants->rowOf(m_document->activeName());
    if (row >= 0)
        m_variantView->selectRow(row);
}

void ProjectPanel::applyShape()
{
    const auto kind = static_cast<ScheduleKind>(m_kind->currentData().toInt());
    const Variant& v = m_document->activeVariant();
    const int spr = kind == ScheduleKind::Interleaved1F1B ? m_stagesPerRank->value() : 0;
    const int currentSpr = v.stagesPerRank > 0 ? v.stagesPerRank : defaultStagesPerRank(v.kind);
    const bool sprSame = kind != ScheduleKind::Interleaved1F1B || spr == currentSpr;
    if (kind == v.kind && m_ranks->value() == v.ranks && m_microbatches->value() == v.microbatches && sprSame)
        return;
    if (kind == ScheduleKind::Custom && v.kind != ScheduleKind::Custom) {
        refreshShape();
        return; // Custom is reached by importing a CSV, not by choosing it
    }
    m_document->setVariantShape(kind, m_ranks->value(), m_microbatches->value(), spr);
}

void ProjectPanel::regenerate()
{
    m_document->regenerate();
}

} // namespace dps::ui
