#include "widgets/presetbox.h"

#include <QComboBox>

namespace dps::ui {

QString handTypedPresetLabel()
{
    return QObject::tr("(typed by hand)");
}

QComboBox* newPresetBox(const std::vector<PresetInfo>& presets, const QString& toolTip, QObject* context,
    std::function<void(const QString& id)> choose, std::function<void()> keep)
{
    auto* box = new QComboBox;
    box->addItem(handTypedPresetLabel(), QString());
    for (const PresetInfo& info : presets) {
        box->addItem(QString::fromStdString(info.id), QString::fromStdString(info.id));
        QString tip = QString::fromStdString(info.title);
        for (const auto& source : info.sources)
            tip += QStringLiteral("\n• ") + QString::fromStdString(source);
        box->setItemData(box->count() - 1, tip, Qt::ToolTipRole);
    }
    box->setToolTip(toolTip);
    QObject::connect(box, qOverload<int>(&QComboBox::activated), context,
        [box, choose = std::move(choose), keep = std::move(keep)](int index) {
            const QString id = box->itemData(index).toString();
            if (id.isEmpty())
                keep();
            else
                choose(id);
        });
    return box;
}

} // namespace dps::ui
