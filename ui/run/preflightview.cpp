#include "run/preflightview.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>

namespace dps::ui {

namespace {

QStyle::StandardPixmap iconOf(PreflightSeverity severity)
{
    switch (severity) {
    case PreflightSeverity::Error:
        return QStyle::SP_MessageBoxCritical;
    case PreflightSeverity::Warning:
        return QStyle::SP_MessageBoxWarning;
    default:
        return QStyle::SP_MessageBoxInformation;
    }
}

} // namespace

PreflightView::PreflightView(QWidget* parent)
    : QWidget(parent)
    , m_layout(new QVBoxLayout(this))
{
    m_layout->setContentsMargins(0, 0, 0, 0);
    m_layout->setSpacing(4);
    hide();
}

void PreflightView::setItems(const QVector<PreflightItem>& items)
{
    if (items.size() == m_items.size()
        && std::equal(items.begin(), items.end(), m_items.begin(), [](const PreflightItem& a, const PreflightItem& b) {
               return a.severity == b.severity && a.text == b.text;
           }))
        return;
    m_items = items;
    while (QLayoutItem* old = m_layout->takeAt(0)) {
        delete old->widget();
        delete old;
    }
    for (const PreflightItem& item : items)
        m_layout->addWidget(makeRow(item));
    setVisible(!items.isEmpty());
}

QWidget* PreflightView::makeRow(const PreflightItem& item)
{
    auto* row = new QWidget(this);
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(6);
    auto* icon = new QLabel(row);
    const int size = style()->pixelMetric(QStyle::PM_SmallIconSize, nullptr, this);
    icon->setPixmap(style()->standardIcon(iconOf(item.severity), nullptr, this).pixmap(size, size));
    icon->setAlignment(Qt::AlignTop);
    auto* text = new QLabel(item.text, row);
    text->setWordWrap(true);
    text->setTextFormat(Qt::PlainText);
    layout->addWidget(icon);
    layout->addWidget(text, 1);
    return row;
}

QString PreflightView::text() const
{
    QStringList lines;
    for (const PreflightItem& item : m_items)
        lines << item.text;
    return lines.join(QLatin1Char('\n'));
}

} // namespace dps::ui
