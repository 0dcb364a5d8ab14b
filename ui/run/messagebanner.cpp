#include "messagebanner.h"

#include <QApplication>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QToolButton>

namespace dps::ui {

MessageBanner::MessageBanner(QWidget* parent)
    : QFrame(parent)
    , m_icon(new QLabel(this))
    , m_text(new QLabel(this))
    , m_action(new QPushButton(this))
    , m_close(new QToolButton(this))
{
    setObjectName(QStringLiteral("messageBanner"));
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_text->setTextFormat(Qt::PlainText);
    m_close->setText(QStringLiteral("✕"));
    m_close->setAutoRaise(true);
    m_close->setToolTip(tr("Dismiss"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(10, 6, 6, 6);
    layout->addWidget(m_icon);
    layout->addWidget(m_text, 1);
    layout->addWidget(m_action);
    layout->addWidget(m_close);
    connect(m_close, &QToolButton::clicked, this, &MessageBanner::clear);
    connect(m_action, &QPushButton::clicked, this, &MessageBanner::actionTriggered);
    hide();
}

void MessageBanner::showMessage(Kind kind, const QString& text, const QString& actionText)
{
    m_kind = kind;
    m_text->setText(text);
    m_action->setText(actionText);
    m_action->setVisible(!actionText.isEmpty());
    restyle();
    show();
}

void MessageBanner::clear()
{
    m_text->clear();
    hide();
}

QString MessageBanner::text() const
{
    return isVisible() || !isHidden() ? m_text->text() : QString();
}

void MessageBanner::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::PaletteChange)
        restyle();
    QFrame::changeEvent(event);
}

void MessageBanner::restyle()
{
    const bool dark = QApplication::palette().color(QPalette::Window).lightness() < 128;
    QColor accent, background;
    QString symbol;
    switch (m_kind) {
    case Kind::Error:
        accent = QColor(0xd0, 0x30, 0x30);
        background = dark ? QColor(0x4a, 0x23, 0x23) : QColor(0xfd, 0xe8, 0xe8);
        symbol = QStringLiteral("✖");
        break;
    case Kind::Warning:
        accent = QColor(0xc9, 0x86, 0x00);
        background = dark ? QColor(0x48, 0x3a, 0x1a) : QColor(0xff, 0xf4, 0xd6);
        symbol = QStringLiteral("⚠");
        break;
    case Kind::Info:
        accent = QColor(0x2f, 0x6f, 0xd0);
        background = dark ? QColor(0x1f, 0x33, 0x4d) : QColor(0xe6, 0xf0, 0xfd);
        symbol = QStringLiteral("ℹ");
        break;
    }
    const QColor text = dark ? QColor(0xee, 0xee, 0xee) : QColor(0x1a, 0x1a, 0x1a);
    const QString sheet(
        QStringLiteral("#messageBanner { background: %1; border: 1px solid %2; border-left: 4px solid %2; "
                       "border-radius: 3px; } #messageBanner QLabel { color: %3; }")
            .arg(background.name(), accent.name(), text.name()));
    if (sheet != styleSheet())
        setStyleSheet(sheet);
    m_icon->setText(QStringLiteral("<span style='color:%1; font-size:14pt'>%2</span>").arg(accent.name(), symbol));
}

} // namespace dps::ui
