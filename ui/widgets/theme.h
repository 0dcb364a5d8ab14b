#pragma once
// Colours: the light and dark application palettes and the chart colours derived from the palette in
// use, so every chart stays readable in both.
#include "schedule/action.h"

#include <QColor>
#include <QIcon>
#include <QPalette>
#include <QString>

namespace dps::ui {

enum class ThemeMode { System, Light, Dark };

/// "system", "light", "dark" and back (unknown text = System).
QString themeModeName(ThemeMode mode);
ThemeMode parseThemeMode(const QString& name);

/// Palette of a mode (System: the style's standard palette).
QPalette paletteFor(ThemeMode mode);
/// Sets the Fusion style and the palette of `mode` on the running application.
void applyThemeMode(ThemeMode mode);

/// Colours a chart uses, derived from the palette in use.
struct ChartColors {
    QColor background; ///< plot background
    QColor text;
    QColor axis;
    QColor grid;
    QColor idle; ///< idle time inside a row
    QColor idleHatch;
    QColor invalid; ///< outline of blocks the validator names
    QColor highlight; ///< hovered / dragged block
    QColor measured; ///< outlines of measured blocks (run overlay)
    bool dark = false;

    static ChartColors fromPalette(const QPalette& palette);
};

/// Fill colour of an op kind (the same in both palettes; chosen to stay distinct for colour-blind users).
QColor kindColor(OpKind kind);
/// Black or white, whichever reads better on `background`.
QColor textColorOn(const QColor& background);
/// Display name of a kind for the legend: "F (forward)", ...
QString kindLegendName(OpKind kind);

/// A toolbar icon from the embedded SVGs (":/icons/<name>.svg") with its line colour adapted to the
/// palette, so icons stay visible on dark backgrounds.
QIcon themedIcon(const QString& name, const QPalette& palette);

/// A palette of distinct line colours for series (variants, ranks).
QColor seriesColor(int index);

} // namespace dps::ui
