#include "widgets/fieldbinder.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>

namespace dps::ui {

namespace {

/// Merge keys of different binders never meet: each binder takes its own range.
int s_nextKeyBase = 2000;

QString fieldName(const QString& label)
{
    return QString(label).remove(QLatin1Char(':'));
}

} // namespace

QLabel* createMessageLabel(QWidget* parent)
{
    auto* label = new QLabel(parent);
    label->setWordWrap(true);
    label->setTextFormat(Qt::PlainText);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setStyleSheet(QStringLiteral("QLabel { color: #c62828; }"));
    label->setObjectName(QStringLiteral("fieldMessage"));
    label->hide();
    return label;
}

FieldBinder::FieldBinder(ProjectDocument* document, QLabel* message, QObject* parent)
    : QObject(parent)
    , m_document(document)
    , m_message(message)
    , m_nextKey(s_nextKeyBase)
{
    s_nextKeyBase += 1000;
    connect(document, &ProjectDocument::changed, this, [this] {
        if (!m_applying)
            showMessage({});
        refresh();
    });
}

bool FieldBinder::apply(const QString& text, const std::function<void(Project&)>& change, int mergeKey)
{
    m_applying = true;
    const QString error = m_document->editChecked(text, change, mergeKey);
    m_applying = false;
    showMessage(error);
    if (!error.isEmpty())
        refresh();
    return error.isEmpty();
}

void FieldBinder::showMessage(const QString& text)
{
    if (!m_message)
        return;
    m_message->setText(text);
    m_message->setVisible(!text.isEmpty());
}

QString FieldBinder::message() const
{
    return m_message ? m_message->text() : QString();
}

QString FieldBinder::report(const QString& error)
{
    showMessage(error);
    if (!error.isEmpty())
        refresh();
    return error;
}

void FieldBinder::refresh()
{
    for (const auto& r : m_refreshers)
        r();
}

void FieldBinder::onRefresh(std::function<void()> refresher)
{
    m_refreshers.push_back(std::move(refresher));
}

void FieldBinder::addRow(QFormLayout* form, const QString& label, QWidget* widget)
{
    if (qobject_cast<QCheckBox*>(widget))
        form->addRow(widget); // both columns: a check box's own text is its label, and a narrow dock cut it
    else
        form->addRow(label, widget);
    m_fields.emplace_back(fieldName(label), widget);
}

QWidget* FieldBinder::field(const QString& label) const
{
    for (const auto& [name, widget] : m_fields)
        if (name == label)
            return widget;
    return nullptr;
}

QSpinBox* FieldBinder::addInt(
    QFormLayout* form, const QString& label, int min, int max, FieldGetter<int> get, FieldSetter<int> set)
{
    auto* box = new QSpinBox;
    box->setRange(min, max);
    box->setKeyboardTracking(false);
    box->setMinimumWidth(90); // the range's widest text would otherwise set the panel's width
    const int key = nextKey();
    const QString name = fieldName(label);
    connect(box, qOverload<int>(&QSpinBox::valueChanged), this, [this, set, key, name](int value) {
        apply(
            tr("Set %1 to %2").arg(name).arg(value), [&](Project& p) { set(p, value); }, key);
    });
    m_refreshers.push_back([this, box, get] {
        const QSignalBlocker block(box);
        box->setValue(get(m_document->project()));
    });
    addRow(form, label, box);
    m_refreshers.back()();
    return box;
}

QDoubleSpinBox* FieldBinder::addDouble(QFormLayout* form, const QString& label, double min, double max, int decimals,
    const QString& suffix, FieldGetter<double> get, FieldSetter<double> set)
{
    auto* box = new QDoubleSpinBox;
    box->setRange(min, max);
    box->setDecimals(decimals);
    box->setSuffix(suffix);
    box->setKeyboardTracking(false);
    box->setMinimumWidth(90);
    const int key = nextKey();
    const QString name = fieldName(label);
    connect(box, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this, set, key, name](double value) {
        apply(
            tr("Set %1 to %2").arg(name).arg(value), [&](Project& p) { set(p, value); }, key);
    });
    m_refreshers.push_back([this, box, get] {
        const QSignalBlocker block(box);
        box->setValue(get(m_document->project()));
    });
    addRow(form, label, box);
    m_refreshers.back()();
    return box;
}

QComboBox* FieldBinder::addChoice(QFormLayout* form, const QString& label,
    const std::vector<std::pair<QString, int>>& items, FieldGetter<int> get, FieldSetter<int> set)
{
    auto* box = new QComboBox;
    for (const auto& [text, value] : items)
        box->addItem(text, value);
    const QString name = fieldName(label);
    connect(box, qOverload<int>(&QComboBox::activated), this, [this, box, set, name](int index) {
        const int value = box->itemData(index).toInt();
        apply(tr("Set %1 to %2").arg(name, box->itemText(index)), [&](Project& p) { set(p, value); });
    });
    m_refreshers.push_back([this, box, get] {
        const QSignalBlocker block(box);
        box->setCurrentIndex(box->findData(get(m_document->project())));
    });
    addRow(form, label, box);
    m_refreshers.back()();
    return box;
}

QCheckBox* FieldBinder::addCheck(QFormLayout* form, const QString& label, FieldGetter<bool> get, FieldSetter<bool> set)
{
    auto* box = new QCheckBox(label);
    connect(box, &QCheckBox::toggled, this, [this, set, label](bool on) {
        apply(on ? tr("Turn on %1").arg(label) : tr("Turn off %1").arg(label), [&](Project& p) { set(p, on); });
    });
    m_refreshers.push_back([this, box, get] {
        const QSignalBlocker block(box);
        box->setChecked(get(m_document->project()));
    });
    addRow(form, label, box);
    m_refreshers.back()();
    return box;
}

} // namespace dps::ui
