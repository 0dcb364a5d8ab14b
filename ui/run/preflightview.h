#pragma once
// PreflightView: the pre-flight findings as a short list, one row per finding with its severity's
// icon; hidden when there is nothing to say.
#include "run/preflight.h"

#include <QWidget>

class QVBoxLayout;

namespace dps::ui {

class PreflightView : public QWidget {
    Q_OBJECT
public:
    explicit PreflightView(QWidget* parent = nullptr);

    void setItems(const QVector<PreflightItem>& items);
    const QVector<PreflightItem>& items() const { return m_items; }
    /// The findings as text, one per line, for tests and tooltips.
    QString text() const;

private:
    QWidget* makeRow(const PreflightItem& item);

    QVector<PreflightItem> m_items;
    QVBoxLayout* m_layout = nullptr;
};

} // namespace dps::ui
