#include "run/messagebanner.h"

#include <QApplication>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QToolButton>

namespace dps::ui {

namespace {

/// How a kind of message looks: the accent of the border and symbol, the background in a light and in a
/// dark palette, and the symbol.
struct Look {
    QColor accent;
    QColor light;
    QColor dark;
    const char* symbol;
};

Look lookOf(MessageBanner::Kind kind)
{
    switch (kind) {
    case MessageBanner::Kind::Running:
        return { QColor(0x1e, 0x88, 0xe5), QColor(0xe3, 0xf1, 0xfc), QColor(0x1a, 0x33, 0x48), "▶" };
    case MessageBanner::Kind::Success:
        return { QColor(0x2e, 0x7d, 0x32), QColor(0xe6, 0xf4, 0xe7), QColor(0x1f, 0x3a, 0x22), "✔" };
    case MessageBanner::Kind::Warning:
        return { QColor(0xc9, 0x86, 0x00), QColor(0xff, 0xf4, 0xd6), QColor(0x48, 0x3a, 0x1a), "⚠" };
    case MessageBanner::Kind::Error:
        return { QColor(0xd0, 0x30, 0x30), QColor(0xfd, 0xe8, 0xe8), QColor(0x4a, 0x23, 0x23), "✖" };
    case MessageBanner::Kind::Info:
        break;
    }
    return { QColor(0x2f, 0x6f, 0xd0), QColor(0xe6, 0xf0, 0xfd), QColor(0x1f, 0x33, 0x4d), "ℹ" };
}

} // namespace

MessageBanner::MessageBanner(QWidget* parent)
    : QFrame(parent)
    , m_icon(new QLabel(this))
    , m_text(new QLabel(this))
    , m_action(new QPushButton(this))
    , m_close(new QToolButton(this))
{
    setObjectName(QStringLiteral("messageBanner"));
    m_icon->setObjectName(QStringLiteral("bannerIcon"));
    m_icon->setAlignment(Qt::AlignTop);
    m_text->setObjectName(QStringLiteral("bannerText"));
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_text->setTextFormat(Qt::PlainText);
    m_action->setObjectName(QStringLiteral("bannerAction"));
    m_action->hide();
    m_close->setObjectName(QStringLiteral("bannerDismiss"));
    m_close->setText(QStringLiteral("✕"));
    m_close->setAutoRaise(true);
    m_close->setToolTip(tr("Dismiss"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(10, 6, 6, 6);
    layout->addWidget(m_icon);
    layout->addWidget(m_text, 1);
    layout->addWidget(m_action);
    layout->addWidget(m_close);
    connect(m_close, &QToolButton::clicked, this, [this] {
        clear();
        emit dismissed();
    });
    connect(m_action, &QPushButton::clicked, this, &MessageBanner::actionTriggered);
    hide();
}

void MessageBanner::showMessage(Kind kind, const QString& text, const QString& actionText)
{
    if (text.isEmpty()) {
        m_kind = kind;
        clear();
        return;
    }
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
    m_action->setText({});
    m_action->hide();
    hide();
}

QString MessageBanner::text() const
{
    return isHidden() ? QString() : m_text->text();
}

QString MessageBanner::actionText() const
{
    return m_action->text();
}

void MessageBanner::setDismissible(bool dismissible)
{
    m_dismissible = dismissible;
    m_close->setVisible(dismissible);
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
    const Look look = lookOf(m_kind);
    const QColor background = dark ? look.dark : look.light;
    const QColor text = dark ? QColor(0xee, 0xee, 0xee) : QColor(0x1a, 0x1a, 0x1a);
    const QString sheet(
        QStringLiteral("#messageBanner { background: %1; border: 1px solid %2; border-left: 4px solid %2; "
                       "border-radius: 3px; } #messageBanner QLabel { color: %3; }")
            .arg(background.name(), look.accent.name(), text.name()));
    if (sheet != styleSheet())
        setStyleSheet(sheet);
    m_icon->setText(QStringLiteral("<span style='color:%1; font-size:14pt'>%2</span>")
                        .arg(look.accent.name(), QString::fromUtf8(look.symbol)));
}

} // namespace dps::ui
