#pragma once
// An inline message bar (errors, warnings, notes) shown above the content instead of a modal box. It stays
// until closed or replaced; an optional action button offers the obvious next step.
#include <QFrame>

class QLabel;
class QPushButton;
class QToolButton;

namespace dps::ui {

class MessageBanner : public QFrame {
    Q_OBJECT
public:
    enum class Kind { Error, Warning, Info };

    explicit MessageBanner(QWidget* parent = nullptr);

    /// Shows `text` (plain text); `actionText` non-empty adds a button that emits actionTriggered.
    void showMessage(Kind kind, const QString& text, const QString& actionText = {});
    void clear();
    QString text() const;
    Kind kind() const { return m_kind; }

signals:
    void actionTriggered();

protected:
    void changeEvent(QEvent* event) override;

private:
    void restyle();

    QLabel* m_icon;
    QLabel* m_text;
    QPushButton* m_action;
    QToolButton* m_close;
    Kind m_kind = Kind::Info;
};

} // namespace dps::ui
