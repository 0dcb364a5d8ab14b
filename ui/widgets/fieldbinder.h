#pragma once
// Binds editor widgets (spin boxes, combo boxes, check boxes) to fields of the open project: every change is
// one undoable, checked document edit (ProjectDocument::editChecked; consecutive changes of one field merge),
// and every widget follows the document. An edit the engine refuses (e.g. model.moe.top_k above
// model.moe.experts) is not applied: the engine's message is shown in the binder's message label and the
// widgets go back to the project's values. The project panel, the model editor and the cluster editor share
// it.
#include "document/projectdocument.h"

#include <QObject>
#include <QString>

#include <functional>
#include <utility>
#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QSpinBox;
class QWidget;

namespace dps::ui {

template <typename T> using FieldGetter = std::function<T(const Project&)>;
template <typename T> using FieldSetter = std::function<void(Project&, T)>;

class FieldBinder : public QObject {
    Q_OBJECT
public:
    /// `message` shows why an edit was refused (hidden while there is nothing to say); it is cleared by the
    /// next edit that is applied and whenever the project changes.
    FieldBinder(ProjectDocument* document, QLabel* message, QObject* parent = nullptr);

    /// A spin box row for an integer field in [min, max].
    QSpinBox* addInt(
        QFormLayout* form, const QString& label, int min, int max, FieldGetter<int> get, FieldSetter<int> set);
    /// A spin box row for a number field in [min, max] shown with `decimals` decimals and `suffix` (a unit).
    QDoubleSpinBox* addDouble(QFormLayout* form, const QString& label, double min, double max, int decimals,
        const QString& suffix, FieldGetter<double> get, FieldSetter<double> set);
    /// A combo box row of (text, value) items for a field read and written as an int.
    QComboBox* addChoice(QFormLayout* form, const QString& label, const std::vector<std::pair<QString, int>>& items,
        FieldGetter<int> get, FieldSetter<int> set);
    /// A check box row for a boolean field.
    QCheckBox* addCheck(QFormLayout* form, const QString& label, FieldGetter<bool> get, FieldSetter<bool> set);

    /// Applies `change` as one checked, undoable edit named `text` (merged with the previous edit of the same
    /// `mergeKey` when >= 0). Returns false, shows the engine's message and refreshes every widget when the
    /// engine refuses it.
    bool apply(const QString& text, const std::function<void(Project&)>& change, int mergeKey = -1);
    /// Shows `text` as the reason an edit was refused (an empty text hides the label).
    void showMessage(const QString& text);
    /// The message shown, "" when none.
    QString message() const;
    /// Shows the outcome of an edit made outside the bound fields (e.g. choosing a preset): `error` empty =
    /// applied; else the engine's reason, shown, and every widget put back to the project's value. Returns
    /// `error`.
    QString report(const QString& error);
    /// Puts every bound widget back to the project's value (signals blocked) and runs the extra refreshers.
    void refresh();
    /// Runs `refresher` at every refresh (e.g. to show or hide rows that depend on other fields).
    void onRefresh(std::function<void()> refresher);
    /// The editor of a bound field by its label without the colon ("Heads", "Top-k", "Tied embeddings"); null
    /// when there is none.
    QWidget* field(const QString& label) const;

private:
    int nextKey() { return m_nextKey++; }
    /// Adds the labelled row to `form` and remembers the field under its label.
    void addRow(QFormLayout* form, const QString& label, QWidget* widget);

    ProjectDocument* m_document;
    QLabel* m_message;
    std::vector<std::function<void()>> m_refreshers;
    std::vector<std::pair<QString, QWidget*>> m_fields;
    int m_nextKey;
    bool m_applying = false;
};

/// The label an editor shows a refused edit's message in: word-wrapped, in the palette's error colour,
/// hidden while empty.
QLabel* createMessageLabel(QWidget* parent = nullptr);

} // namespace dps::ui
