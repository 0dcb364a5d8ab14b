#include "run/rankprogresswidget.h"

#include <QPainter>

namespace dps::ui {

namespace {

constexpr int kGap = 8;
const QColor kFailed(0xd3, 0x2f, 0x2f);

} // namespace

RankProgressWidget::RankProgressWidget(QWidget* parent)
    : QWidget(parent)
{
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void RankProgressWidget::setProgress(const RunProgress& progress)
{
    const bool resized = progress.perRank.size() != m_progress.perRank.size();
    m_progress = progress;
    if (resized)
        updateGeometry();
    update();
}

void RankProgressWidget::setRankCount(int ranks)
{
    RunProgress p;
    for (int r = 0; r < ranks; ++r)
        p.perRank.push_back(RankProgress { r, -1, 0, 0, 0.0, false });
    setProgress(p);
}

int RankProgressWidget::rowHeight() const
{
    return fontMetrics().height() + 6;
}

QSize RankProgressWidget::sizeHint() const
{
    return { 260, rowHeight() * static_cast<int>(std::max<qsizetype>(1, m_progress.perRank.size())) };
}

QSize RankProgressWidget::minimumSizeHint() const
{
    return { 160, sizeHint().height() };
}

QString RankProgressWidget::rowText(const RankProgress& r) const
{
    if (r.failed)
        return tr("failed");
    if (m_progress.done)
        return tr("done");
    if (r.step < 0)
        return tr("waiting");
    const int total = m_progress.totalSteps();
    const bool warm = r.step < m_progress.warmup;
    const int shown = warm ? r.step + 1 : r.step - m_progress.warmup + 1;
    const int of = warm ? m_progress.warmup : m_progress.steps;
    const QString step = total > 0 ? (warm ? tr("warm-up %1/%2") : tr("step %1/%2")).arg(shown).arg(of) : QString();
    return QStringLiteral("%1 · %2/%3").arg(step).arg(r.done).arg(r.total);
}

void RankProgressWidget::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing);
    const QFontMetrics fm = fontMetrics();
    const int ranks = static_cast<int>(m_progress.perRank.size());
    const int labelWidth = fm.horizontalAdvance(tr("rank %1").arg(std::max(0, ranks - 1)));
    const int textWidth = fm.horizontalAdvance(tr("warm-up 88/88 · 888/888"));
    for (int i = 0; i < ranks; ++i)
        paintRow(painter, m_progress.perRank.at(i), i * rowHeight(), labelWidth, textWidth);
}

void RankProgressWidget::paintRow(QPainter& painter, const RankProgress& r, int y, int labelWidth, int textWidth) const
{
    const int h = rowHeight();
    const QPalette& pal = palette();
    painter.setPen(pal.color(QPalette::WindowText));
    painter.drawText(QRect(0, y, labelWidth, h), Qt::AlignLeft | Qt::AlignVCenter, tr("rank %1").arg(r.rank));
    const int barLeft = labelWidth + kGap;
    const int barWidth = std::max(20, width() - barLeft - kGap - textWidth);
    const QRectF track(barLeft, y + h * 0.25, barWidth, h * 0.5);
    painter.setPen(Qt::NoPen);
    painter.setBrush(pal.color(QPalette::Mid).lighter(pal.color(QPalette::Window).lightness() > 128 ? 140 : 60));
    painter.drawRoundedRect(track, 3, 3);
    const QColor fill = r.failed ? kFailed : pal.color(QPalette::Highlight);
    const double fraction = r.failed ? std::max(r.fraction, 0.02) : r.fraction;
    if (fraction > 0) {
        painter.setBrush(fill);
        painter.drawRoundedRect(QRectF(track.left(), track.top(), track.width() * fraction, track.height()), 3, 3);
    }
    painter.setPen(r.failed ? kFailed : pal.color(QPalette::PlaceholderText));
    painter.drawText(QRect(barLeft + barWidth + kGap, y, textWidth, h), Qt::AlignLeft | Qt::AlignVCenter, rowText(r));
}

} // namespace dps::ui
