#pragma once
// MessageBanner: the designer's one inline message bar, used by the main window (errors, warnings and notes
// above the chart) and by the Run panel (what a run is doing, how it ended, why it cannot start) instead of
// modal boxes. Tinted by kind, readable in light and dark palettes; it stays until dismissed, cleared or
// replaced; an optional button offers the obvious next step. It lives in ui/run, the lowest layer with
// widgets, so the Run panel uses it without depending on ui/widgets.
#include <QFrame>

class QLabel;
class QPushButton;
class QToolButton;

namespace dps::ui {

class MessageBanner : public QFrame {
    Q_OBJECT
public:
    /// What the message tells: a note, work in progress, a success, a warning or an error; each kind has
    /// its own colour and symbol.
    enum class Kind { Info, Running, Success, Warning, Error };
    Q_ENUM(Kind)

    /// A hidden banner, dismissible (its ✕ button shown) and without an action.
    explicit MessageBanner(QWidget* parent = nullptr);

    /// Shows `text` (plain text) tinted for `kind`; a non-empty `actionText` adds a button that emits
    /// actionTriggered(). An empty `text` hides the banner, like clear().
    void showMessage(Kind kind, const QString& text, const QString& actionText = {});
    /// Hides the banner and forgets its text.
    void clear();
    /// The text shown; empty while the banner is hidden.
    QString text() const;
    /// The kind of the last message.
    Kind kind() const { return m_kind; }
    /// The label of the action button; empty when the message has no action.
    QString actionText() const;

    /// Whether the ✕ button that hides the banner is offered (true by default; the Run panel's banner,
    /// which follows the run, has none).
    void setDismissible(bool dismissible);
    bool isDismissible() const { return m_dismissible; }

signals:
    /// The action button of the current message was pressed.
    void actionTriggered();
    /// The user hid the banner with its ✕ button.
    void dismissed();

protected:
    void changeEvent(QEvent* event) override;

private:
    void restyle();

    QLabel* m_icon;
    QLabel* m_text;
    QPushButton* m_action;
    QToolButton* m_close;
    Kind m_kind = Kind::Info;
    bool m_dismissible = true;
};

} // namespace dps::ui
