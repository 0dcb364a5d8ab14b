#include "widgets/partitioneditor.h"

#include "document/partitionmodel.h"
#include "document/projectdocument.h"
#include "project/partitioning.h"
#include "widgets/theme.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace dps::ui {

PartitionBar::PartitionBar(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setToolTip(tr("Drag a boundary to move layers between two neighbouring stages"));
}

void PartitionBar::setPartition(const std::vector<int>& partition)
{
    m_partition = partition;
    m_shown = partition;
    m_dragging = -1;
    update();
}

QRectF PartitionBar::barRect() const
{
    return QRectF(4, 4, width() - 8, height() - 8);
}

double PartitionBar::boundaryX(int boundary) const
{
    const int total = totalLayers(m_shown);
    if (total <= 0 || boundary < 0 || boundary >= static_cast<int>(m_shown.size()))
        return -1;
    int before = 0;
    for (int s = 0; s <= boundary; ++s)
        before += m_shown[s];
    const QRectF bar = barRect();
    return bar.left() + bar.width() * before / total;
}

int PartitionBar::boundaryAt(double x) const
{
    for (int b = 0; b + 1 < static_cast<int>(m_shown.size()); ++b)
        if (std::abs(boundaryX(b) - x) <= 5.0)
            return b;
    return -1;
}

int PartitionBar::layersAt(double x) const
{
    const QRectF bar = barRect();
    const int total = totalLayers(m_partition);
    return static_cast<int>(std::lround((x - bar.left()) / bar.width() * total));
}

void PartitionBar::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, true);
    const QRectF bar = barRect();
    const int total = totalLayers(m_shown);
    if (total <= 0)
        return;
    double x = bar.left();
    for (int s = 0; s < static_cast<int>(m_shown.size()); ++s) {
        const double w = bar.width() * m_shown[s] / total;
        const QRectF segment(x, bar.top(), w, bar.height());
        const QColor fill = seriesColor(s % 2 == 0 ? 0 : 5);
        p.fillRect(segment.adjusted(0.5, 0, -0.5, 0), fill);
        p.setPen(textColorOn(fill));
        const QString label = w > 46 ? tr("S%1: %2").arg(s).arg(m_shown[s]) : QString::number(m_shown[s]);
        if (w > 12)
            p.drawText(segment, Qt::AlignCenter, label);
        x += w;
    }
    p.setPen(QPen(palette().color(QPalette::WindowText), 2));
    for (int b = 0; b + 1 < static_cast<int>(m_shown.size()); ++b) {
        const double bx = boundaryX(b);
        p.drawLine(QPointF(bx, bar.top() - 2), QPointF(bx, bar.bottom() + 2));
    }
}

void PartitionBar::mousePressEvent(QMouseEvent* event)
{
    m_dragging = event->button() == Qt::LeftButton ? boundaryAt(event->position().x()) : -1;
    if (m_dragging < 0)
        QWidget::mousePressEvent(event);
}

void PartitionBar::mouseMoveEvent(QMouseEvent* event)
{
    if (m_dragging < 0) {
        setCursor(boundaryAt(event->position().x()) >= 0 ? Qt::SplitHCursor : Qt::ArrowCursor);
        return;
    }
    m_shown = movedBoundary(m_partition, m_dragging, layersAt(event->position().x()));
    update();
}

void PartitionBar::mouseReleaseEvent(QMouseEvent* event)
{
    if (m_dragging < 0) {
        QWidget::mouseReleaseEvent(event);
        return;
    }
    m_shown = movedBoundary(m_partition, m_dragging, layersAt(event->position().x()));
    m_dragging = -1;
    if (m_shown != m_partition)
        emit partitionEdited(m_shown);
    update();
}

PartitionEditor::PartitionEditor(ProjectDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_document(document)
    , m_model(new PartitionModel(document, this))
    , m_bar(new PartitionBar(this))
    , m_table(new QTableView(this))
    , m_total(new QLabel(this))
{
    m_table->setModel(m_model);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->setAlternatingRowColors(true);
    auto* even = new QPushButton(tr("Even"), this);
    even->setToolTip(tr("Split the layers as evenly as possible (earlier stages take the remainder)"));
    auto* balance = new QPushButton(tr("Balance by cost"), this);
    balance->setToolTip(tr("Give each stage layers in inverse proportion to its time per layer (F + B), so the "
                           "slowest stage is as fast as possible; typed stage costs scale with their layers"));
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_total, 1);
    buttons->addWidget(even);
    buttons->addWidget(balance);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_bar);
    layout->addLayout(buttons);
    layout->addWidget(m_table, 1);
    connect(even, &QPushButton::clicked, this, &PartitionEditor::makeEven);
    connect(balance, &QPushButton::clicked, this, &PartitionEditor::balanceByCost);
    connect(m_bar, &PartitionBar::partitionEdited, m_document, &ProjectDocument::setPartition);
    connect(m_model, &QAbstractItemModel::modelReset, this, &PartitionEditor::refresh);
    refresh();
}

void PartitionEditor::setSnapshot(const SnapshotPtr& snapshot)
{
    m_snapshot = snapshot;
    m_model->setSnapshot(snapshot);
}

void PartitionEditor::refresh()
{
    m_bar->setPartition(m_model->partition());
    m_total->setText(
        tr("%1 layers over %2 stages").arg(totalLayers(m_model->partition())).arg(m_model->partition().size()));
}

void PartitionEditor::makeEven()
{
    const auto next = evenPartition(m_document->project().model.layers, static_cast<int>(m_model->partition().size()));
    if (next != m_model->partition())
        m_document->setPartition(next);
}

std::vector<double> PartitionEditor::costPerLayer() const
{
    const auto& partition = m_model->partition();
    std::vector<double> rates(partition.size(), 1.0);
    const bool current = m_snapshot && m_snapshot->schedule
        && m_snapshot->variantName == m_document->activeVariant().name
        && m_snapshot->costs.stages.size() == partition.size();
    for (std::size_t s = 0; current && s < partition.size(); ++s)
        if (partition[s] > 0)
            rates[s] = (m_snapshot->costs.stages[s].forwardUs + m_snapshot->costs.stages[s].backward()) / partition[s];
    return rates;
}

void PartitionEditor::balanceByCost()
{
    const std::vector<int> before = m_model->partition();
    const auto next = balancedPartition(m_document->project().model.layers, costPerLayer());
    if (next == before || next.empty())
        return;
    m_document->edit(tr("Balance the layer partition by cost"), [&](Project& p) {
        for (auto& v : p.variants)
            if (v.name == p.activeVariant)
                v.layerPartition = next;
        for (std::size_t s = 0; s < p.costs.stages.size() && s < next.size(); ++s) {
            const double scale = before[s] > 0 ? static_cast<double>(next[s]) / before[s] : 1.0;
            auto& o = p.costs.stages[s];
            for (auto* field : { &o.forwardUs, &o.inputGradUs, &o.weightGradUs, &o.backwardUs, &o.overlapUs })
                if (*field)
                    **field *= scale;
        }
    });
}

} // namespace dps::ui
