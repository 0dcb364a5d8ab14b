#include "widgets/plannerpanel.h"

#include "base/errors.h"
#include "document/formatting.h"
#include "document/projectdocument.h"
#include "project/compare.h"
#include "widgets/timelineview.h"

#include <QApplication>
#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

namespace dps::ui {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

/// A marker shape per kind (beside its colour, for readers who do not tell the colours apart).
QCPScatterStyle::ScatterShape kindShape(int kindIndex)
{
    static const QCPScatterStyle::ScatterShape shapes[]
        = { QCPScatterStyle::ssDisc, QCPScatterStyle::ssSquare, QCPScatterStyle::ssTriangle, QCPScatterStyle::ssDiamond,
              QCPScatterStyle::ssTriangleInverted, QCPScatterStyle::ssCrossSquare, QCPScatterStyle::ssStar };
    return shapes[static_cast<std::size_t>(kindIndex) % std::size(shapes)];
}

int kindIndex(ScheduleKind kind)
{
    const auto& kinds = generatedKinds();
    return static_cast<int>(std::find(kinds.begin(), kinds.end(), kind) - kinds.begin());
}

} // namespace

PlannerPanel::PlannerPanel(ProjectDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_model(new PlannerModel(this))
    , m_colors(ChartColors::fromPalette(palette()))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(setupRequest());
    layout->addWidget(setupResults(), 1);
    connect(&m_service, &PlannerService::progressed, this, &PlannerPanel::showProgress);
    connect(&m_service, &PlannerService::finished, this, &PlannerPanel::showResult);
    connect(&m_service, &PlannerService::failed, this, &PlannerPanel::showFailure);
    connect(m_document, &ProjectDocument::changed, this, &PlannerPanel::loadDefaults);
    loadDefaults();
    setRunning(false);
    drawPlot();
}

QHBoxLayout* PlannerPanel::setupSizes()
{
    const auto sizeField = [](const QString& tip) {
        auto* field = new QLineEdit;
        field->setPlaceholderText(tr("auto"));
        field->setToolTip(tip);
        field->setMaximumWidth(110);
        return field;
    };
    m_tps = sizeField(tr("Tensor-parallel sizes to search, e.g. 1,2,4,8; empty: the divisors of the GPUs per node "
                         "that divide the heads and leave hidden ÷ tp ≥ 1024 (sequence parallelism on with tp > 1)"));
    m_cps = sizeField(tr("Context-parallel sizes to search, e.g. 1,2; empty: 1, and 2, 4, 8 for sequences of 16384 "
                         "tokens or more"));
    m_zeros = sizeField(tr("ZeRO stages to search (0-3), e.g. 1,3; empty: the project's and 1"));
    for (QLineEdit* field : { m_tps, m_cps, m_zeros })
        connect(field, &QLineEdit::returnPressed, this, &PlannerPanel::startPlan);
    auto* sizes = new QHBoxLayout;
    sizes->setSpacing(6);
    for (const auto& [label, field] :
        { std::pair { tr("TP:"), m_tps }, std::pair { tr("CP:"), m_cps }, std::pair { tr("ZeRO:"), m_zeros } }) {
        sizes->addWidget(new QLabel(label));
        sizes->addWidget(field);
    }
    sizes->addStretch(1);
    return sizes;
}

QWidget* PlannerPanel::setupRequest()
{
    m_devices = new QSpinBox;
    m_devices->setRange(1, 1 << 20);
    m_devices->setToolTip(tr("Devices of the job: tp × cp × pipeline size × data-parallel replicas"));
    m_globalBatch = new QSpinBox;
    m_globalBatch->setRange(1, 1 << 24);
    m_globalBatch->setSuffix(tr(" sequences"));
    m_globalBatch->setToolTip(
        tr("Sequences per step; every candidate does the same work: microbatches × size × dp = global batch"));
    m_memory = new QLineEdit;
    m_memory->setToolTip(tr("Per device: bytes (80e9) or with a unit (80GB, 80GiB); empty = the cluster's memory"));
    m_memory->setMaximumWidth(140);
    m_memoryError = new QLabel;
    m_memoryError->setStyleSheet(QStringLiteral("color: #c61a1a"));
    m_memoryError->setWordWrap(true);
    const auto userTyped = [this] {
        if (!m_loading)
            m_userEdited = true;
    };
    connect(m_devices, qOverload<int>(&QSpinBox::valueChanged), this, userTyped);
    connect(m_globalBatch, qOverload<int>(&QSpinBox::valueChanged), this, userTyped);
    connect(m_memory, &QLineEdit::textChanged, this, &PlannerPanel::checkMemoryField);
    connect(m_memory, &QLineEdit::returnPressed, this, &PlannerPanel::startPlan);

    QHBoxLayout* sizes = setupSizes();

    auto* kinds = new QHBoxLayout;
    kinds->setSpacing(10);
    for (ScheduleKind kind : generatedKinds()) {
        auto* box = new QCheckBox(QString::fromUtf8(kindDisplayName(kind).data()));
        box->setChecked(true);
        m_kindBoxes.push_back(box);
        kinds->addWidget(box);
    }
    kinds->addStretch(1);

    m_plan = new QPushButton(tr("Plan"));
    m_plan->setDefault(true);
    m_plan->setToolTip(
        tr("Search kind, tp, cp, pipeline size, dp, ZeRO stage, microbatches, layer partition and recompute"));
    m_cancel = new QPushButton(tr("Cancel"));
    m_progress = new QProgressBar;
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    m_progress->setMaximumWidth(220);
    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    connect(m_plan, &QPushButton::clicked, this, &PlannerPanel::startPlan);
    connect(m_cancel, &QPushButton::clicked, this, &PlannerPanel::cancelPlan);

    auto* box = new QWidget;
    auto* grid = new QGridLayout(box);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->addWidget(new QLabel(tr("Devices:")), 0, 0);
    grid->addWidget(m_devices, 0, 1);
    grid->addWidget(new QLabel(tr("Global batch:")), 0, 2);
    grid->addWidget(m_globalBatch, 0, 3);
    grid->addWidget(new QLabel(tr("Memory limit:")), 0, 4);
    grid->addWidget(m_memory, 0, 5);
    grid->addWidget(m_memoryError, 0, 6);
    grid->setColumnStretch(6, 1);
    grid->addWidget(new QLabel(tr("Sizes:")), 1, 0);
    grid->addLayout(sizes, 1, 1, 1, 6);
    grid->addWidget(new QLabel(tr("Kinds:")), 2, 0);
    grid->addLayout(kinds, 2, 1, 1, 6);
    auto* run = new QHBoxLayout;
    run->addWidget(m_plan);
    run->addWidget(m_cancel);
    run->addWidget(m_progress);
    run->addWidget(m_summary, 1);
    grid->addLayout(run, 3, 0, 1, 7);
    return box;
}

QWidget* PlannerPanel::setupResults()
{
    m_plot = new QCustomPlot;
    m_plot->setMinimumSize(320, 240);
    // The legend in a row above the axes: the points and the Pareto front may fill any corner inside them.
    m_plot->plotLayout()->insertRow(0);
    auto* legendRow = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(0, 0, legendRow);
    legendRow->setMargins(QMargins(6, 4, 6, 0));
    legendRow->addElement(0, 0, m_plot->legend);
    m_plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
    m_plot->legend->setWrap(4);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    connect(m_plot, &QCustomPlot::plottableClick, this, &PlannerPanel::pointClicked);
    m_table = new QTableView;
    m_table->setModel(m_model);
    m_table->setSortingEnabled(true);
    m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder); // the planner's order until clicked
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &PlannerPanel::drawSelection);
    connect(m_model, &QAbstractItemModel::layoutChanged, this, &PlannerPanel::drawSelection);
    m_add = new QPushButton(tr("Add as Variant"));
    m_add->setToolTip(
        tr("Add the selected candidates to the project as variants (undoable); the first becomes active"));
    m_addNote = new QLabel;
    m_addNote->setWordWrap(true);
    connect(m_add, &QPushButton::clicked, this, [this] {
        const QString error = addSelectedAsVariants();
        m_addNote->setText(error);
    });
    auto* addRow = new QHBoxLayout;
    addRow->addWidget(m_add);
    addRow->addWidget(m_addNote, 1);
    auto* tableBox = new QWidget;
    auto* tableLayout = new QVBoxLayout(tableBox);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tableLayout->addWidget(m_table, 1);
    tableLayout->addLayout(addRow);
    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(m_plot);
    split->addWidget(tableBox);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    split->setSizes({ 470, 1130 }); // scaled to the width the panel gets
    return split;
}

void PlannerPanel::loadDefaults()
{
    const Project& p = m_document->project();
    m_transformer = p.model.kind == ModelKind::Transformer;
    m_memory->setPlaceholderText(tr("the cluster's %1").arg(formatBytes(p.cluster.memoryPerDeviceBytes)));
    if (m_userEdited)
        return;
    m_loading = true;
    const Variant& v = m_document->activeVariant();
    int devices = p.cluster.nodes > 0 && p.cluster.gpusPerNode > 0 ? p.cluster.nodes * p.cluster.gpusPerNode : 0;
    if (devices <= 0) {
        try {
            devices = devicesOf(p, v);
        } catch (const std::exception&) {
            devices = std::max(1, v.ranks) * std::max(1, v.dp);
        }
    }
    const int size = v.microbatchSize > 0 ? v.microbatchSize : std::max(1, p.model.microbatchSize);
    m_devices->setValue(devices);
    m_globalBatch->setValue(std::max(1, v.microbatches) * size * std::max(1, v.dp));
    m_loading = false;
}

double PlannerPanel::memoryLimitBytes() const
{
    const QString text = m_memory->text().trimmed();
    return text.isEmpty() ? 0.0 : parseMemorySize(text.toStdString(), "memory limit");
}

void PlannerPanel::checkMemoryField()
{
    try {
        const double bytes = memoryLimitBytes();
        m_memoryError->setStyleSheet(QString());
        m_memoryError->setText(bytes > 0.0 ? QStringLiteral("= %1").arg(formatBytes(bytes)) : QString());
    } catch (const std::exception& e) {
        m_memoryError->setStyleSheet(QStringLiteral("color: #c61a1a"));
        m_memoryError->setText(QString::fromUtf8(e.what()));
    }
}

namespace {

/// A comma list of sizes ("1, 2,4"); empty = none. Throws ConstraintError naming the field for anything that is
/// not a non-negative integer (the planner checks the range and what the model allows).
std::vector<int> sizeList(const QString& text, const char* field)
{
    std::vector<int> sizes;
    for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const int value = part.trimmed().toInt(&ok);
        if (!ok || value < 0)
            throw ConstraintError("plan.sizes",
                std::string(field) + ": '" + part.trimmed().toStdString() + "' is not a size (a list such as 1,2,4)");
        sizes.push_back(value);
    }
    return sizes;
}

} // namespace

bool PlannerPanel::startPlan()
{
    PlanRequest request;
    try {
        request.memoryLimitBytes = memoryLimitBytes();
    } catch (const std::exception& e) {
        checkMemoryField();
        m_summary->setText(QString::fromUtf8(e.what()));
        return false;
    }
    request.devices = m_devices->value();
    request.globalBatch = m_globalBatch->value();
    try {
        request.tps = sizeList(m_tps->text(), "TP");
        request.cps = sizeList(m_cps->text(), "CP");
        request.zeros = sizeList(m_zeros->text(), "ZeRO");
    } catch (const std::exception& e) {
        m_summary->setText(QString::fromUtf8(e.what()));
        return false;
    }
    const auto& kinds = generatedKinds();
    for (std::size_t i = 0; i < kinds.size() && i < m_kindBoxes.size(); ++i)
        if (m_kindBoxes[i]->isChecked())
            request.kinds.push_back(kinds[i]);
    if (request.kinds.empty()) {
        m_summary->setText(tr("Choose at least one kind."));
        return false;
    }
    m_transformer = m_document->project().model.kind == ModelKind::Transformer;
    m_progress->setValue(0);
    m_summary->setText(tr("Planning %1 devices, global batch %2…").arg(request.devices).arg(request.globalBatch));
    setRunning(true);
    m_service.start(m_document->project(), std::move(request));
    return true;
}

void PlannerPanel::cancelPlan()
{
    m_service.cancel();
    m_summary->setText(tr("Cancelling…"));
}

bool PlannerPanel::waitUntilIdle(int timeoutMs)
{
    const bool idle = m_service.waitUntilIdle(timeoutMs);
    QApplication::processEvents();
    return idle;
}

void PlannerPanel::setRunning(bool running)
{
    m_plan->setEnabled(!running);
    m_cancel->setEnabled(running);
    m_add->setEnabled(!running && !selectedCandidates().empty());
}

void PlannerPanel::showProgress(int done, int total)
{
    m_progress->setValue(total > 0 ? static_cast<int>(100.0 * done / total) : 0);
    m_summary->setText(tr("Planning… %1 of %2 candidates").arg(done).arg(total));
}

void PlannerPanel::showFailure(const QString& message)
{
    setRunning(false);
    m_progress->setValue(0);
    m_summary->setText(message);
}

void PlannerPanel::showResult(const PlanResultPtr& result)
{
    m_model->setResult(result, m_transformer);
    m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
    m_table->resizeColumnsToContents();
    const int partitionWidth = 10 * fontMetrics().horizontalAdvance(QLatin1Char('0')); // the rest in the tooltip
    if (m_table->columnWidth(PlannerModel::Partition) > partitionWidth)
        m_table->setColumnWidth(PlannerModel::Partition, partitionWidth);
    setRunning(false);
    m_progress->setValue(result->cancelled ? m_progress->value() : 100);
    QString text = tr("%1 candidates: %2 simulated, %3 pruned, %4 over the limit, %5 failed; %6 fit; search %7")
                       .arg(result->enumerated)
                       .arg(result->simulated)
                       .arg(result->pruned)
                       .arg(result->overLimit)
                       .arg(result->failed)
                       .arg(result->candidates.size())
                       .arg(formatTime(result->searchMs * 1000.0));
    if (result->cancelled)
        text = tr("Cancelled: ") + text;
    QStringList unfit; // the kinds searched with no candidate in the table, and why
    for (const PlanKindSummary& k : result->kinds)
        if (k.fitting == 0 && k.enumerated > 0)
            unfit << (k.smallestPeakBytes > 0.0
                    ? tr("%1 (smallest peak %2)")
                          .arg(QString::fromUtf8(kindDisplayName(k.kind).data()), formatBytes(k.smallestPeakBytes))
                    : QString::fromUtf8(kindDisplayName(k.kind).data()));
    if (!unfit.isEmpty() && !result->candidates.empty())
        text += tr("\nNothing fits for %1").arg(unfit.join(QStringLiteral(", ")));
    if (result->candidates.empty() && result->smallestPeakBytes > 0.0)
        text += tr(". Nothing fits %1: the smallest peak memory is %2 (%3, rank %4)")
                    .arg(formatBytes(result->memoryLimitBytes), formatBytes(result->smallestPeakBytes),
                        QString::fromStdString(result->smallestPeakCandidate))
                    .arg(result->smallestPeakRank);
    m_summary->setText(text);
    m_addNote->clear();
    drawPlot();
    if (!result->candidates.empty())
        selectCandidates({ 0 });
}

QCPGraph* PlannerPanel::kindGraph(ScheduleKind kind) const
{
    const auto it = m_kindGraphs.find(kind);
    return it == m_kindGraphs.end() ? nullptr : it->second;
}

void PlannerPanel::drawPlot()
{
    m_plot->clearGraphs();
    m_plot->clearItems();
    m_graphCandidates.clear();
    m_kindGraphs.clear();
    m_paretoGraph = nullptr;
    m_selectionGraph = nullptr;
    m_plot->setBackground(m_colors.background);
    styleChartAxes(*m_plot, m_colors);
    m_plot->legend->setBrush(m_colors.background);
    m_plot->legend->setTextColor(m_colors.text);
    m_plot->legend->setBorderPen(QPen(m_colors.grid));
    m_plot->legend->setFont(QFont(font().family(), 8));
    const PlanResultPtr result = m_model->result();
    const auto& candidates = result ? result->candidates : std::vector<PlanCandidate> {};
    double maxBytes = result ? result->memoryLimitBytes : 0.0;
    double minStep = std::numeric_limits<double>::max(), maxStep = 0.0;
    for (const auto& c : candidates) {
        maxBytes = std::max(maxBytes, c.peakMemoryBytes);
        minStep = std::min(minStep, c.stepUs);
        maxStep = std::max(maxStep, c.stepUs);
    }
    m_byteDivisor = maxBytes >= kGiB ? kGiB : kMiB;
    m_plot->xAxis->setLabel(tr("peak memory per device (%1)").arg(m_byteDivisor == kGiB ? "GiB" : "MiB"));
    setTimeAxisUnit(m_plot->yAxis, maxStep > 0.0 ? maxStep : 1.0); // labels it "time (s)": make it "step time (s)"
    m_plot->yAxis->setLabel(tr("step %1").arg(m_plot->yAxis->label()));

    // One scatter per kind, its points in order of memory (so a point's data index maps to its candidate).
    std::vector<int> order(candidates.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(),
        [&](int a, int b) { return candidates[a].peakMemoryBytes < candidates[b].peakMemoryBytes; });
    drawKindGraphs(candidates, order);
    drawParetoFront(candidates, order);
    m_selectionGraph = m_plot->addGraph();
    m_selectionGraph->setLineStyle(QCPGraph::lsNone);
    m_selectionGraph->setPen(QPen(m_colors.highlight, 2));
    m_selectionGraph->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(m_colors.highlight, 2), Qt::NoBrush, 15));
    m_selectionGraph->setSelectable(QCP::stNone);
    m_selectionGraph->removeFromLegend();

    drawRangesAndLimit(result, maxBytes, minStep, maxStep);
    m_plot->legend->setVisible(!m_kindGraphs.empty());
    drawSelection();
}

void PlannerPanel::drawKindGraphs(const std::vector<PlanCandidate>& candidates, const std::vector<int>& order)
{
    for (ScheduleKind kind : generatedKinds()) {
        std::vector<int> mine;
        QVector<double> x, y;
        for (int i : order)
            if (candidates[i].kind == kind) {
                mine.push_back(i);
                x << candidates[i].peakMemoryBytes / m_byteDivisor;
                y << candidates[i].stepUs;
            }
        if (mine.empty())
            continue;
        QCPGraph* g = m_plot->addGraph();
        const QColor colour = seriesColor(kindIndex(kind));
        g->setName(QString::fromUtf8(kindDisplayName(kind).data()));
        g->setLineStyle(QCPGraph::lsNone);
        g->setPen(QPen(colour, 1.5));
        g->setScatterStyle(QCPScatterStyle(kindShape(kindIndex(kind)), colour, colour, 7));
        g->setData(x, y, true);
        m_graphCandidates[g] = std::move(mine);
        m_kindGraphs[kind] = g;
    }
}

void PlannerPanel::drawParetoFront(const std::vector<PlanCandidate>& candidates, const std::vector<int>& order)
{
    // The Pareto front: from the least memory up, each point holds its step time until the next one is reached.
    QVector<double> fx, fy;
    for (int i : order)
        if (candidates[i].pareto) {
            fx << candidates[i].peakMemoryBytes / m_byteDivisor;
            fy << candidates[i].stepUs;
        }
    if (!fx.isEmpty()) {
        m_paretoGraph = m_plot->addGraph();
        m_paretoGraph->setName(tr("Pareto front"));
        m_paretoGraph->setLineStyle(QCPGraph::lsStepLeft);
        m_paretoGraph->setPen(QPen(m_colors.text, 1.5));
        m_paretoGraph->setSelectable(QCP::stNone);
        m_paretoGraph->setData(fx, fy, true);
    }
}

void PlannerPanel::drawRangesAndLimit(const PlanResultPtr& result, double maxBytes, double minStep, double maxStep)
{
    const auto& candidates = result ? result->candidates : std::vector<PlanCandidate> {};
    const double limit = result ? result->memoryLimitBytes / m_byteDivisor : 0.0;
    m_plot->xAxis->setRange(0.0, std::max(limit, maxBytes / m_byteDivisor) * 1.08 + (maxBytes > 0.0 ? 0.0 : 1.0));
    if (maxStep > 0.0) {
        const double pad = std::max(maxStep - minStep, 0.02 * maxStep) * 0.08;
        m_plot->yAxis->setRange(std::max(0.0, minStep - pad), maxStep + pad);
    } else {
        m_plot->yAxis->setRange(0.0, 1.0);
    }
    if (result && limit > 0.0) {
        auto* line = new QCPItemStraightLine(m_plot);
        line->point1->setCoords(limit, 0.0);
        line->point2->setCoords(limit, 1.0);
        line->setPen(QPen(m_colors.invalid, 1.5, Qt::DashLine));
        auto* label = new QCPItemText(m_plot);
        label->position->setTypeX(QCPItemPosition::ptPlotCoords);
        label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        label->position->setCoords(limit, 0.0);
        label->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
        label->setPadding(QMargins(4, 4, 6, 2));
        label->setColor(m_colors.invalid);
        label->setText(tr("limit %1").arg(formatBytes(result->memoryLimitBytes)));
    }
    if (candidates.empty()) {
        auto* note = new QCPItemText(m_plot);
        note->position->setType(QCPItemPosition::ptAxisRectRatio);
        note->position->setCoords(0.5, 0.5);
        note->setColor(m_colors.axis);
        note->setText(result ? tr("No candidate fits the limit (see the line above).")
                             : tr("Choose devices, a global batch and a memory limit, then press Plan."));
    }
}

std::vector<int> PlannerPanel::selectedCandidates() const
{
    std::vector<int> result;
    for (const QModelIndex& row : m_table->selectionModel()->selectedRows())
        result.push_back(m_model->candidateAt(row.row()));
    std::sort(result.begin(), result.end());
    return result;
}

void PlannerPanel::selectCandidates(const std::vector<int>& candidates)
{
    QItemSelection selection;
    for (int c : candidates) {
        const int row = m_model->rowOf(c);
        if (row >= 0)
            selection.select(m_model->index(row, 0), m_model->index(row, PlannerModel::ColumnCount - 1));
    }
    m_table->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    if (!candidates.empty() && m_model->rowOf(candidates.front()) >= 0)
        m_table->scrollTo(m_model->index(m_model->rowOf(candidates.front()), 0));
}

void PlannerPanel::drawSelection()
{
    if (!m_selectionGraph)
        return;
    const PlanResultPtr result = m_model->result();
    QVector<double> x, y;
    const std::vector<int> selected = selectedCandidates();
    for (int c : selected)
        if (result && c >= 0 && c < static_cast<int>(result->candidates.size())) {
            x << result->candidates[c].peakMemoryBytes / m_byteDivisor;
            y << result->candidates[c].stepUs;
        }
    m_selectionGraph->setData(x, y);
    m_add->setEnabled(m_plan->isEnabled() && !selected.empty());
    m_add->setText(selected.size() > 1 ? tr("Add %1 as Variants").arg(selected.size()) : tr("Add as Variant"));
    m_plot->replot();
}

void PlannerPanel::pointClicked(QCPAbstractPlottable* plottable, int dataIndex, QMouseEvent* event)
{
    const auto it = m_graphCandidates.find(qobject_cast<QCPGraph*>(plottable));
    if (it == m_graphCandidates.end() || dataIndex < 0 || dataIndex >= static_cast<int>(it->second.size()))
        return;
    std::vector<int> selection;
    if (event && (event->modifiers() & Qt::ControlModifier))
        selection = selectedCandidates();
    selection.push_back(it->second[dataIndex]);
    selectCandidates(selection);
}

QString PlannerPanel::addSelectedAsVariants()
{
    const PlanResultPtr result = m_model->result();
    const std::vector<int> selected = selectedCandidates();
    if (!result || selected.empty())
        return tr("Select one or more candidates in the table or the plot first.");
    PlanResult chosen;
    for (int c : selected)
        chosen.candidates.push_back(result->candidates[c]);
    Project after;
    try {
        after = withPlanVariants(m_document->project(), chosen, static_cast<int>(chosen.candidates.size()));
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    const QString text = selected.size() > 1
        ? tr("Add %1 planned variants").arg(selected.size())
        : tr("Add planned variant %1").arg(QString::fromStdString(after.activeVariant));
    return m_document->editChecked(text, [&](Project& p) { p = after; });
}

void PlannerPanel::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::PaletteChange) {
        m_colors = ChartColors::fromPalette(palette());
        drawPlot();
    }
    QWidget::changeEvent(event);
}

} // namespace dps::ui
