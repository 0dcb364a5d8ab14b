#include "widgets/projectpanel.h"

#include "document/stagecostmodel.h"
#include "document/variantlistmodel.h"
#include "widgets/fieldbinder.h"

#include "schedule/generator.h"

#include <QCheckBox>
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

/// The active variant of a project being edited (the first one when the name is stale).
Variant& activeIn(Project& p)
{
    for (auto& v : p.variants)
        if (v.name == p.activeVariant)
            return v;
    return p.variants.front();
}

const Variant& activeIn(const Project& p)
{
    const Variant* v = p.find(p.activeVariant);
    return v ? *v : p.variants.front();
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
    , m_message(createMessageLabel())
    , m_binder(new FieldBinder(document, m_message, this))
    , m_variants(new VariantListModel(document, this))
    , m_costs(new StageCostModel(document, this))
{
    auto* content = new QWidget;
    auto* column = new QVBoxLayout(content);
    column->setContentsMargins(6, 6, 6, 6);
    column->addWidget(setupVariants());
    column->addWidget(setupShape());
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
    m_binder
        ->addInt(
            form, tr("Data-parallel (dp):"), 1, 1 << 20, [](const Project& p) { return activeIn(p).dp; },
            [](Project& p, int v) { activeIn(p).dp = v; })
        ->setToolTip(tr("Replicas of the pipeline: the job uses ranks × tp × cp × dp devices; an expert-parallel group "
                        "is formed across the replicas of one stage, so model.moe.ep must divide dp × cp"));
    m_binder
        ->addInt(
            form, tr("Tensor-parallel (tp):"), 1, 1 << 10, [](const Project& p) { return activeIn(p).tp; },
            [](Project& p, int v) { activeIn(p).tp = v; })
        ->setToolTip(
            tr("Megatron-LM's column/row split of attention and MLP over tp devices of a node (a transformer's; "
               "tp divides model.heads and model.kv_heads)"));
    m_binder
        ->addInt(
            form, tr("Context-parallel (cp):"), 1, 1 << 10, [](const Project& p) { return activeIn(p).cp; },
            [](Project& p, int v) { activeIn(p).cp = v; })
        ->setToolTip(tr("Ring attention: the sequence split over cp devices, key-value blocks passed around them (a "
                        "transformer's; cp divides model.seq_len)"));
    m_binder
        ->addCheck(
            form, tr("Sequence parallel:"), [](const Project& p) { return activeIn(p).sequenceParallel; },
            [](Project& p, bool v) { activeIn(p).sequenceParallel = v; })
        ->setToolTip(tr("With tp > 1: norms and dropout split over the sequence, each all-reduce replaced by a "
                        "reduce-scatter and an all-gather (Korthikanti et al. 2022)"));
    m_binder
        ->addInt(
            form, tr("Microbatch size:"), 0, 1 << 16, [](const Project& p) { return activeIn(p).microbatchSize; },
            [](Project& p, int v) { activeIn(p).microbatchSize = v; })
        ->setSpecialValueText(tr("the model's"));
    m_binder->addChoice(
        form, tr("Recompute:"),
        { { tr("the model's"), -1 }, { tr("none"), static_cast<int>(model::Recompute::None) },
            { tr("selective"), static_cast<int>(model::Recompute::Selective) },
            { tr("full"), static_cast<int>(model::Recompute::Full) },
            { tr("norm-up-projection"), static_cast<int>(model::Recompute::NormUpProjection) } },
        [](const Project& p) {
            const auto& r = activeIn(p).recompute;
            return r ? static_cast<int>(*r) : -1;
        },
        [](Project& p, int v) {
            auto& r = activeIn(p).recompute;
            if (v < 0)
                r.reset();
            else
                r = static_cast<model::Recompute>(v);
        });
    auto* layout = new QVBoxLayout;
    layout->addLayout(form);
    layout->addWidget(m_message);
    return group(tr("Active variant"), layout);
}

QWidget* ProjectPanel::setupCosts()
{
    auto* form = new QFormLayout;
    m_binder
        ->addDouble(
            form, tr("Overlap factor:"), 0.1, 2.0, 3, QString(), [](const Project& p) { return p.costs.overlapFactor; },
            [](Project& p, double v) { p.costs.overlapFactor = v; })
        ->setToolTip(tr("An overlapped F&B slot takes factor × (F + B) unless a time is typed in the table"));
    m_binder
        ->addDouble(
            form, tr("Optimizer bytes/param:"), 0, 64, 1, QString(),
            [](const Project& p) { return p.costs.optimizerBytesPerParameter; },
            [](Project& p, double v) { p.costs.optimizerBytesPerParameter = v; })
        ->setToolTip(tr("Optimizer state per parameter, e.g. 8 for Adam's two fp32 moments (used when the model's "
                        "training state is not set)"));
    auto* table = new QTableView;
    table->setModel(m_costs);
    compactTable(table);
    // Each column as wide as its values (a narrow panel scrolls sideways rather than eliding the numbers).
    table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    table->setMinimumHeight(table->fontMetrics().height() * 10);
    table->setToolTip(tr("Per-stage times in µs: italic from the model, bold typed by you (clear a cell to go back)"));
    auto* layout = new QVBoxLayout;
    layout->addLayout(form);
    layout->addWidget(new QLabel(tr("Per-stage costs (µs; type to override):")));
    layout->addWidget(table);
    return group(tr("Costs"), layout);
}

QString ProjectPanel::message() const
{
    return m_binder->message();
}

void ProjectPanel::refresh()
{
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
    const bool edited = v.order.has_value() || v.commOrder.has_value();
    m_orderState->setText(!edited ? tr("generated")
            : v.commOrder         ? tr("edited by hand, sends and receives placed by hand")
                                  : tr("edited by hand"));
    m_regenerate->setEnabled((v.order && !custom) || v.commOrder);
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
