#include "run/runhistory.h"

#include "base/format.h"

#include <QBrush>
#include <QColor>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

namespace dps::ui {

namespace {

const QString kIndexName = QStringLiteral("index.json");
const QString kProjectSuffix = QStringLiteral(".dpstudio.json");

/// Parses index.json text into records; false with `error` on a broken or newer file.
bool parseIndex(const QByteArray& text, const QString& folder, QVector<RunRecord>& runs, QString& error)
{
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(text, &parseError);
    if (!doc.isObject()) {
        error = QStringLiteral("the runs index is not a JSON object (%1)").arg(parseError.errorString());
        return false;
    }
    const QJsonObject o = doc.object();
    const int version = o.value(QStringLiteral("format_version")).toInt();
    if (version > kRunsIndexVersion) {
        error = QStringLiteral("the runs index has format_version %1, newer than this build reads (%2)")
                    .arg(version)
                    .arg(kRunsIndexVersion);
        return false;
    }
    for (const QJsonValue v : o.value(QStringLiteral("runs")).toArray())
        if (v.isObject())
            runs.push_back(recordFromJson(v.toObject(), folder));
    return true;
}

QString safeName(QString text)
{
    for (QChar& c : text)
        if (!c.isLetterOrNumber() && c != QLatin1Char('-') && c != QLatin1Char('_'))
            c = QLatin1Char('_');
    return text;
}

} // namespace

RunHistory::RunHistory(QObject* parent)
    : QAbstractTableModel(parent)
{
}

QString RunHistory::folderFor(const QString& projectPath)
{
    const QFileInfo info(projectPath);
    QString base = info.fileName();
    if (base.endsWith(kProjectSuffix) && base.size() > kProjectSuffix.size())
        base.chop(kProjectSuffix.size());
    else
        base = info.completeBaseName();
    return info.absoluteDir().filePath(base + QStringLiteral(".runs"));
}

QString RunHistory::indexPath() const
{
    return m_folder.isEmpty() ? QString() : QDir(m_folder).filePath(kIndexName);
}

bool RunHistory::open(const QString& projectPath, QString* error)
{
    const QString folder = folderFor(projectPath);
    QVector<RunRecord> runs;
    QString why;
    QFile file(QDir(folder).filePath(kIndexName));
    if (file.exists()) {
        if (!file.open(QIODevice::ReadOnly))
            why = QStringLiteral("cannot read %1: %2").arg(file.fileName(), file.errorString());
        else
            parseIndex(file.readAll(), folder, runs, why);
    }
    beginResetModel();
    m_folder = folder;
    m_runs = why.isEmpty() ? runs : QVector<RunRecord>();
    endResetModel();
    if (error)
        *error = why;
    return why.isEmpty();
}

void RunHistory::clear()
{
    beginResetModel();
    m_folder.clear();
    m_runs.clear();
    endResetModel();
}

QString RunHistory::newMeasuredPath(const QString& variant, const QDateTime& when, QString* error) const
{
    if (m_folder.isEmpty() || !QDir().mkpath(m_folder)) {
        if (error)
            *error = m_folder.isEmpty() ? QStringLiteral("no project is open")
                                        : QStringLiteral("cannot create the folder %1").arg(m_folder);
        return {};
    }
    const QString stem = when.toString(QStringLiteral("yyyyMMdd-HHmmss"))
        + (variant.isEmpty() ? QString() : QLatin1Char('-') + safeName(variant));
    QString path = QDir(m_folder).filePath(stem + QStringLiteral(".measured.json"));
    for (int n = 2; QFileInfo::exists(path); ++n)
        path = QDir(m_folder).filePath(QStringLiteral("%1-%2.measured.json").arg(stem).arg(n));
    return path;
}

bool RunHistory::addRun(const RunRecord& record, QString* error)
{
    beginInsertRows({}, 0, 0);
    m_runs.prepend(record);
    endInsertRows();
    return save(error);
}

bool RunHistory::removeRun(int row, QString* error)
{
    if (row < 0 || row >= m_runs.size()) {
        if (error)
            *error = QStringLiteral("no run at row %1").arg(row);
        return false;
    }
    beginRemoveRows({}, row, row);
    m_runs.removeAt(row);
    endRemoveRows();
    return save(error);
}

bool RunHistory::save(QString* error) const
{
    QString why;
    QJsonArray runs;
    for (const RunRecord& r : m_runs)
        runs.push_back(recordToJson(r, m_folder));
    const QJsonObject root { { QStringLiteral("format_version"), kRunsIndexVersion },
        { QStringLiteral("runs"), runs } };
    QSaveFile file(indexPath());
    if (m_folder.isEmpty() || !QDir().mkpath(m_folder))
        why = QStringLiteral("cannot create the runs folder %1").arg(m_folder);
    else if (!file.open(QIODevice::WriteOnly) || file.write(QJsonDocument(root).toJson()) < 0 || !file.commit())
        why = QStringLiteral("cannot save %1: %2").arg(file.fileName(), file.errorString());
    if (error)
        *error = why;
    return why.isEmpty();
}

int RunHistory::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}

int RunHistory::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunHistory::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const RunRecord& r = m_runs.at(index.row());
    switch (role) {
    case Qt::DisplayRole:
        return displayData(r, index.column());
    case Qt::ToolTipRole:
        return toolTip(r);
    case Qt::ForegroundRole:
        return index.column() == CorrectnessColumn && r.correctness == Correctness::Failed
            ? QVariant(QBrush(QColor(0xc6, 0x28, 0x28)))
            : QVariant();
    case Qt::TextAlignmentRole:
        return index.column() == StepTimeColumn ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
    case MeasuredPathRole:
        return r.measuredPath;
    case CorrectnessRole:
        return static_cast<int>(r.correctness);
    case StepTimeRole:
        return r.stepTimeUs;
    case DateRole:
        return r.date;
    default:
        return {};
    }
}

QVariant RunHistory::displayData(const RunRecord& r, int column) const
{
    switch (column) {
    case DateColumn:
        return r.date.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"));
    case VariantColumn:
        return r.ranks > 0 ? QStringLiteral("%1 (%2 ranks)").arg(r.variant).arg(r.ranks) : r.variant;
    case BackendColumn:
        return r.comm.isEmpty() ? r.backend : QStringLiteral("%1/%2").arg(r.backend, r.comm);
    case HardwareColumn:
        return r.hardware;
    case StepTimeColumn:
        return r.stepTimeUs > 0 ? QString::fromStdString(dps::formatTime(r.stepTimeUs)) : QStringLiteral("–");
    case CorrectnessColumn:
        return correctnessText(r.correctness);
    default:
        return {};
    }
}

QVariant RunHistory::toolTip(const RunRecord& r) const
{
    if (!r.problem.isEmpty())
        return QStringLiteral("%1\nnot read in full: %2").arg(QDir::toNativeSeparators(r.measuredPath), r.problem);
    return QStringLiteral("%1\nhost %2 · %3 measured steps\nmax loss error %4 · max gradient error %5")
        .arg(QDir::toNativeSeparators(r.measuredPath), r.host.isEmpty() ? QStringLiteral("unknown") : r.host)
        .arg(r.steps)
        .arg(r.maxLossError, 0, 'g', 3)
        .arg(r.maxGradError, 0, 'g', 3);
}

QVariant RunHistory::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* const names[ColumnCount]
        = { "Date", "Step time", "Correctness", "Variant", "Backend", "Hardware" };
    return tr(names[section]);
}

QHash<int, QByteArray> RunHistory::roleNames() const
{
    QHash<int, QByteArray> names = QAbstractTableModel::roleNames();
    names.insert(MeasuredPathRole, "measuredPath");
    names.insert(CorrectnessRole, "correctness");
    names.insert(StepTimeRole, "stepTime");
    names.insert(DateRole, "date");
    return names;
}

} // namespace dps::ui
