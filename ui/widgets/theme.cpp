#include "widgets/theme.h"

#include <QApplication>
#include <QFile>
#include <QPainter>
#include <QStyle>
#include <QStyleFactory>
#include <QSvgRenderer>

#include <array>
#include <memory>

namespace dps::ui {

QString themeModeName(ThemeMode mode)
{
    switch (mode) {
    case ThemeMode::Light:
        return QStringLiteral("light");
    case ThemeMode::Dark:
        return QStringLiteral("dark");
    case ThemeMode::System:
        break;
    }
    return QStringLiteral("system");
}

ThemeMode parseThemeMode(const QString& name)
{
    if (name == QLatin1String("light"))
        return ThemeMode::Light;
    if (name == QLatin1String("dark"))
        return ThemeMode::Dark;
    return ThemeMode::System;
}

namespace {

QPalette darkPalette()
{
    QPalette p;
    const QColor window(0x2b, 0x2d, 0x31), base(0x1f, 0x21, 0x24), text(0xe6, 0xe6, 0xe6);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x27, 0x29, 0x2d));
    p.setColor(QPalette::ToolTipBase, QColor(0x38, 0x3b, 0x40));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x8a, 0x8e, 0x94));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0x35, 0x38, 0x3d));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    p.setColor(QPalette::Link, QColor(0x6c, 0xb4, 0xff));
    p.setColor(QPalette::Highlight, QColor(0x3d, 0x7e, 0xd8));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Mid, QColor(0x45, 0x48, 0x4e));
    p.setColor(QPalette::Dark, QColor(0x18, 0x19, 0x1b));
    p.setColor(QPalette::Light, QColor(0x4a, 0x4d, 0x53));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
    return p;
}

QPalette lightPalette()
{
    const std::unique_ptr<QStyle> fusion(QStyleFactory::create(QStringLiteral("Fusion")));
    QPalette p = fusion ? fusion->standardPalette() : QPalette();
    p.setColor(QPalette::Window, QColor(0xf3, 0xf4, 0xf6));
    p.setColor(QPalette::Base, Qt::white);
    p.setColor(QPalette::AlternateBase, QColor(0xf6, 0xf7, 0xf9));
    p.setColor(QPalette::Highlight, QColor(0x2f, 0x6f, 0xd0));
    p.setColor(QPalette::ToolTipBase, QColor(0xff, 0xff, 0xf2));
    p.setColor(QPalette::ToolTipText, Qt::black);
    return p;
}

} // namespace

QPalette paletteFor(ThemeMode mode)
{
    switch (mode) {
    case ThemeMode::Dark:
        return darkPalette();
    case ThemeMode::Light:
        return lightPalette();
    case ThemeMode::System:
        break;
    }
    return QApplication::style() ? QApplication::style()->standardPalette() : lightPalette();
}

void applyThemeMode(ThemeMode mode)
{
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QApplication::setPalette(mode == ThemeMode::System ? lightPalette() : paletteFor(mode));
}

ChartColors ChartColors::fromPalette(const QPalette& palette)
{
    ChartColors c;
    c.dark = palette.color(QPalette::Base).lightness() < 128;
    c.background = palette.color(QPalette::Base);
    c.text = palette.color(QPalette::Text);
    c.axis = c.dark ? QColor(0x9a, 0x9e, 0xa6) : QColor(0x60, 0x64, 0x6b);
    c.grid = c.dark ? QColor(0x3a, 0x3d, 0x42) : QColor(0xe3, 0xe5, 0xe8);
    c.idle = c.dark ? QColor(0x33, 0x35, 0x3a) : QColor(0xee, 0xef, 0xf1);
    c.idleHatch = c.dark ? QColor(0x44, 0x47, 0x4d) : QColor(0xd6, 0xd8, 0xdc);
    c.invalid = c.dark ? QColor(0xff, 0x5c, 0x5c) : QColor(0xc6, 0x1a, 0x1a);
    c.highlight = palette.color(QPalette::Highlight);
    c.measured = c.dark ? QColor(0xf0, 0xf0, 0xf0) : QColor(0x20, 0x20, 0x20);
    return c;
}

QColor kindColor(OpKind kind)
{
    switch (kind) {
    case OpKind::F:
        return QColor(0x4e, 0x79, 0xa7);
    case OpKind::I:
        return QColor(0xf2, 0x8e, 0x2b);
    case OpKind::W:
        return QColor(0x59, 0xa1, 0x4f);
    case OpKind::B:
        return QColor(0xe1, 0x57, 0x59);
    }
    return Qt::gray;
}

QColor textColorOn(const QColor& background)
{
    const double luminance = 0.299 * background.redF() + 0.587 * background.greenF() + 0.114 * background.blueF();
    return luminance > 0.6 ? QColor(0x1a, 0x1a, 0x1a) : Qt::white;
}

QString kindLegendName(OpKind kind)
{
    switch (kind) {
    case OpKind::F:
        return QObject::tr("F forward");
    case OpKind::I:
        return QObject::tr("I backward (inputs)");
    case OpKind::W:
        return QObject::tr("W backward (weights)");
    case OpKind::B:
        return QObject::tr("B full backward");
    }
    return {};
}

QIcon themedIcon(const QString& name, const QPalette& palette)
{
    QFile file(QStringLiteral(":/icons/%1.svg").arg(name));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    QByteArray svg = file.readAll();
    const bool dark = palette.color(QPalette::Window).lightness() < 128;
    svg.replace("#5b6573", dark ? "#c3cad4" : "#5b6573");
    QSvgRenderer renderer(svg);
    QIcon icon;
    for (int size : { 16, 20, 24, 32, 48 }) {
        for (const QIcon::Mode mode : { QIcon::Normal, QIcon::Disabled }) {
            QPixmap pixmap(size, size);
            pixmap.fill(Qt::transparent);
            QPainter painter(&pixmap);
            painter.setOpacity(mode == QIcon::Disabled ? 0.3 : 1.0);
            renderer.render(&painter);
            painter.end();
            icon.addPixmap(pixmap, mode);
        }
    }
    return icon;
}

QColor seriesColor(int index)
{
    static const std::array<QColor, 8> colors { QColor(0x4e, 0x79, 0xa7), QColor(0xe1, 0x57, 0x59),
        QColor(0x59, 0xa1, 0x4f), QColor(0xb0, 0x7a, 0xa1), QColor(0xf2, 0x8e, 0x2b), QColor(0x76, 0xb7, 0xb2),
        QColor(0xed, 0xc9, 0x48), QColor(0x9c, 0x75, 0x5f) };
    return colors[static_cast<std::size_t>(index) % colors.size()];
}

} // namespace dps::ui
