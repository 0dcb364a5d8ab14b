#pragma once
// The preset combo box of the model and cluster editors: "(typed by hand)" first, then one item per preset
// (its id, with its title and sources as the tooltip).
#include "project/presets.h"

#include <QString>

#include <functional>
#include <vector>

class QComboBox;
class QObject;

namespace dps::ui {

/// The label of the first item, the hand-typed values: "(typed by hand)".
QString handTypedPresetLabel();

/// A combo box over `presets` with `toolTip`; choosing an item calls `choose(id)`, choosing the first
/// (hand-typed) item calls `keep()` (the editor shows the document's values again). The box's item data is
/// the preset's id ("" for the first item).
QComboBox* newPresetBox(const std::vector<PresetInfo>& presets, const QString& toolTip, QObject* context,
    std::function<void(const QString& id)> choose, std::function<void()> keep);

} // namespace dps::ui
