#include "statusbanner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>

namespace dps::ui {

namespace {

struct Look {
    QColor accent;
    QStyle::StandardPixmap icon;
};

Look lookOf(StatusBanner::Kind kind)
{
    switch (kind) {
    case StatusBanner::Kind::Running:
        return { QColor(0x1e, 0x88, 0xe5), QStyle::SP_MediaPlay };
    case StatusBanner::Kind::Success:
        return { QColor(0x2e, 0x7d, 0x32), QStyle::SP_DialogApplyButton };
    case StatusBanner::Kind::Warning:
        return { QColor(0xef, 0x8f, 0x00), QStyle::SP_MessageBoxWarning };
    case StatusBanner::Kind::Error:
        return { QColor(0xd3, 0x2f, 0x2f), QStyle::SP_MessageBoxCritical };
    default:
        return { QColor(0x60, 0x7d, 0x8b), QStyle::SP_MessageBoxInformation };
    }
}

} // namespace

StatusBanner::StatusBanner(QWidget* parent)
    : QFrame(parent)
    , m_icon(new QLabel(this))
    , m_text(new QLabel(this))
{
    setObjectName(QStringLiteral("statusBanner"));
    m_text->setWordWrap(true);
    m_text->setTextFormat(Qt::PlainText);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_icon->setAlignment(Qt::AlignTop);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(8, 6, 8, 6);
    layout->setSpacing(8);
    layout->addWidget(m_icon);
    layout->addWidget(m_text, 1);
    hide();
}

void StatusBanner::showMessage(Kind kind, const QString& text)
{
    m_kind = kind;
    m_text->setText(text);
    applyStyle();
    setVisible(!text.isEmpty());
}

QString StatusBanner::text() const
{
    return m_text->text();
}

void StatusBanner::applyStyle()
{
    const Look look = lookOf(m_kind);
    const int size = style()->pixelMetric(QStyle::PM_SmallIconSize, nullptr, this);
    m_icon->setPixmap(style()->standardIcon(look.icon, nullptr, this).pixmap(size, size));
    const QColor& c = look.accent;
    setStyleSheet(QStringLiteral("QFrame#statusBanner { background: rgba(%1, %2, %3, 40); border: 1px solid rgba(%1, "
                                 "%2, %3, 150); border-left: 4px solid rgb(%1, %2, %3); border-radius: 3px; }")
                      .arg(c.red())
                      .arg(c.green())
                      .arg(c.blue()));
}

} // namespace dps::ui
