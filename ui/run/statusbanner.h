#pragma once
// StatusBanner: one inline message at the top of a panel (no modal boxes): what is going on, how a run
// ended, or why it cannot start. Tinted by kind; readable in light and dark palettes.
#include <QFrame>

class QLabel;

namespace dps::ui {

class StatusBanner : public QFrame {
    Q_OBJECT
public:
    enum class Kind { Info, Running, Success, Warning, Error };

    explicit StatusBanner(QWidget* parent = nullptr);

    /// Shows `text` (plain text) tinted for `kind`; an empty text hides the banner.
    void showMessage(Kind kind, const QString& text);
    void clear() { showMessage(Kind::Info, {}); }
    Kind kind() const { return m_kind; }
    QString text() const;

private:
    void applyStyle();

    Kind m_kind = Kind::Info;
    QLabel* m_icon = nullptr;
    QLabel* m_text = nullptr;
};

} // namespace dps::ui
