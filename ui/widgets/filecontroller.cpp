#include "widgets/filecontroller.h"

#include "document/exports.h"
#include "document/formatting.h"
#include "document/projectdocument.h"
#include "run/runhistory.h"
#include "widgets/timelineview.h"

#include "base/fileio.h"
#include "schedule/csvio.h"
#include "trace/kineto.h"
#include "trace/measured.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QSettings>

namespace dps::ui {

namespace {
constexpr int kMaxRecent = 8;
const char* const kRecentKey = "recentFiles";
const char* const kProjectFilter
    = QT_TRANSLATE_NOOP("FileController", "DualPipe Studio projects (*.dpstudio.json *.json)");
} // namespace

FileController::FileController(ProjectDocument* document, QWidget* dialogParent, QObject* parent)
    : QObject(parent)
    , m_document(document)
    , m_dialogParent(dialogParent)
{
}

QString FileController::choose(const QString& kind, const QString& title, const QString& filter) const
{
    if (m_chooser)
        return m_chooser(kind, title, filter);
    const QString dir = QFileInfo(m_document->filePath()).absolutePath();
    if (kind == QLatin1String("open") || kind == QLatin1String("import"))
        return QFileDialog::getOpenFileName(m_dialogParent, title, dir, filter);
    return QFileDialog::getSaveFileName(m_dialogParent, title, dir, filter);
}

bool FileController::maybeSave()
{
    if (!m_document->isModified())
        return true;
    SaveChoice choice = SaveChoice::Cancel;
    if (m_prompt) {
        choice = m_prompt(m_document->displayName());
    } else {
        const auto answer = QMessageBox::question(m_dialogParent, tr("Unsaved changes"),
            tr("%1 has unsaved changes. Save them first?").arg(m_document->displayName()),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
        choice = answer == QMessageBox::Save
            ? SaveChoice::Save
            : (answer == QMessageBox::Discard ? SaveChoice::Discard : SaveChoice::Cancel);
    }
    if (choice == SaveChoice::Save)
        return save();
    return choice == SaveChoice::Discard;
}

void FileController::newProject()
{
    if (maybeSave())
        m_document->reset(defaultProject());
}

void FileController::open()
{
    if (!maybeSave())
        return;
    const QString path = choose(QStringLiteral("open"), tr("Open project"), tr(kProjectFilter));
    if (!path.isEmpty())
        openFile(path);
}

bool FileController::openFile(const QString& path)
{
    Project project;
    try {
        project = loadProject(path.toStdString());
    } catch (const std::exception& e) {
        emit failed(tr("Could not open %1 — the open project is unchanged.\n%2")
                        .arg(QFileInfo(path).fileName(), QString::fromUtf8(e.what())));
        return false;
    }
    m_document->reset(project, QFileInfo(path).absoluteFilePath());
    addRecent(QFileInfo(path).absoluteFilePath());
    emit opened(QFileInfo(path).absoluteFilePath());
    return true;
}

bool FileController::save()
{
    return m_document->filePath().isEmpty() ? saveAs() : saveTo(m_document->filePath());
}

bool FileController::saveAs()
{
    QString path = choose(QStringLiteral("save"), tr("Save project as"), tr(kProjectFilter));
    if (path.isEmpty())
        return false;
    if (QFileInfo(path).suffix().isEmpty())
        path += QStringLiteral(".dpstudio.json");
    return saveTo(path);
}

bool FileController::saveTo(const QString& path)
{
    try {
        saveProject(m_document->project(), path.toStdString());
    } catch (const std::exception& e) {
        emit failed(tr("Could not save: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
    m_document->markSaved(QFileInfo(path).absoluteFilePath());
    addRecent(QFileInfo(path).absoluteFilePath());
    return true;
}

void FileController::importCsv()
{
    const QString path = choose(
        QStringLiteral("import"), tr("Import a PyTorch schedule CSV"), tr("Schedule CSV (*.csv);;All files (*)"));
    if (!path.isEmpty())
        importCsvFile(path);
}

bool FileController::importCsvFile(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        emit failed(tr("Could not read %1: %2").arg(QFileInfo(path).fileName(), file.errorString()));
        return false;
    }
    const QByteArray bytes = file.readAll();
    CsvImport imported;
    try {
        imported = readScheduleCsv(QFileInfo(path).fileName().toStdString(),
            std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
    } catch (const std::exception& e) {
        emit failed(tr("Could not import %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
    const QString name = m_document->addImportedVariant(imported.schedule, QFileInfo(path).completeBaseName());
    QStringList notes;
    for (const auto& w : imported.warnings)
        notes << QString::fromStdString(w);
    const QString summary = tr("Imported %1 as variant '%2' (%3 ranks, %4 microbatches)")
                                .arg(QFileInfo(path).fileName(), name)
                                .arg(imported.schedule.ranks)
                                .arg(imported.schedule.microbatches);
    if (notes.isEmpty())
        emit succeeded(summary);
    else
        emit warned(summary + QStringLiteral(": ") + notes.join(QStringLiteral("; ")));
    return true;
}

void FileController::openProfile()
{
    const QString title = tr("Open Profile");
    const QString filter = tr("PyTorch profiler traces, one per rank (*.json *.json.gz);;All files (*)");
    QStringList paths;
    if (m_chooser) {
        const QString path = m_chooser(QStringLiteral("profile"), title, filter);
        if (!path.isEmpty())
            paths << path;
    } else {
        paths = QFileDialog::getOpenFileNames(
            m_dialogParent, title, QFileInfo(m_document->filePath()).absolutePath(), filter);
    }
    if (!paths.isEmpty())
        openProfileFiles(paths);
}

QString FileController::openProfileFiles(const QStringList& paths)
{
    const Project& project = m_document->project();
    const Variant& variant = project.active();
    ProfileImport imported;
    try {
        std::vector<std::string> arguments;
        for (const QString& path : paths)
            arguments.push_back(QFile::encodeName(path).toStdString());
        ProfileImportOptions options;
        options.project = &project;
        options.variant = &variant;
        options.command = "File > Open Profile: " + QStringList(paths).join(QLatin1Char(' ')).toStdString();
        imported = importProfiles(profileFiles(arguments), options);
    } catch (const std::exception& e) {
        emit failed(tr("Could not open the profile: %1").arg(QString::fromUtf8(e.what())));
        return {};
    }
    // Beside the project's runs when it has a file, so the runs history can list it; else a temporary folder.
    const QString folder = m_document->filePath().isEmpty() ? QDir::temp().filePath(QStringLiteral("dpstudio-profiles"))
                                                            : RunHistory::folderFor(m_document->filePath());
    const QString stamp = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss"));
    const QString path = QDir(folder).filePath(
        QStringLiteral("%1-%2.profile.measured.json").arg(stamp, QString::fromStdString(variant.name)));
    if (!QDir().mkpath(folder)) {
        emit failed(tr("Could not write the imported profile: cannot create %1").arg(QDir::toNativeSeparators(folder)));
        return {};
    }
    if (!writeText(path, serializeMeasured(imported.trace)))
        return {};
    const MeasuredTrace& t = imported.trace;
    const QString summary = tr("Imported a profile of %1 ranks, %2 steps (median step %3: %4; %5, %6) as variant "
                               "'%7', overlaid on the prediction; saved as %8")
                                .arg(t.ranks.size())
                                .arg(t.steps.size())
                                .arg(t.medianStep)
                                .arg(formatTime(t.medianMakespanUs()), QString::fromStdString(t.source.timing),
                                    QString::fromStdString(t.source.clock), QString::fromStdString(variant.name),
                                    QDir::toNativeSeparators(path));
    emit profileImported(path, summary);
    return path;
}

bool FileController::requireSnapshot(const QString& what)
{
    if (m_snapshot && m_snapshot->schedule)
        return true;
    emit failed(tr("Cannot export %1: the active variant cannot be built (see the list under the chart)").arg(what));
    return false;
}

bool FileController::writeText(const QString& path, const std::string& text)
{
    try {
        writeFileAtomic(path.toStdString(), text);
    } catch (const std::exception& e) {
        emit failed(tr("Could not write %1: %2").arg(QFileInfo(path).fileName(), QString::fromUtf8(e.what())));
        return false;
    }
    return true;
}

void FileController::exportConfig()
{
    const QString path = choose(QStringLiteral("export"), tr("Export the validated config"), tr("JSON (*.json)"));
    if (!path.isEmpty())
        exportConfigTo(path);
}

bool FileController::exportConfigTo(const QString& path)
{
    if (!requireSnapshot(tr("the validated config")))
        return false;
    const ValidatedConfig config = validatedConfig(m_document->project(), *m_snapshot, m_lastRun);
    if (!writeText(path, config.text))
        return false;
    if (config.validated)
        emit succeeded(m_lastRun ? tr("Wrote the validated config (with the last run) to %1").arg(path)
                                 : tr("Wrote the validated config to %1 (no run recorded yet)").arg(path));
    else
        emit warned(tr("Wrote %1, marked not validated: %2").arg(path, QString::fromStdString(config.reasons.front())));
    return true;
}

void FileController::exportCsv()
{
    const QString path = choose(QStringLiteral("export"), tr("Export a PyTorch schedule CSV"), tr("CSV (*.csv)"));
    if (!path.isEmpty())
        exportCsvTo(path);
}

bool FileController::exportCsvTo(const QString& path)
{
    if (!requireSnapshot(tr("the CSV")))
        return false;
    if (!m_snapshot->report.valid()) {
        emit failed(tr("Not exported: the order is invalid (%1 errors). Fix it or undo first.")
                        .arg(m_snapshot->report.errorCount()));
        return false;
    }
    std::vector<std::string> warnings;
    if (!writeText(path, torchCsvText(*m_snapshot, warnings)))
        return false;
    if (warnings.empty())
        emit succeeded(tr("Wrote %1").arg(path));
    else
        emit warned(tr("Wrote %1 — note: %2").arg(path, QString::fromStdString(warnings.front())));
    return true;
}

void FileController::exportFramework(const QString& format)
{
    const QString title = format == QLatin1String("torchtitan") ? tr("Export a torchtitan job config")
        : format == QLatin1String("megatron")                   ? tr("Export Megatron-Core arguments")
                                              : tr("Export a PyTorch CSV with its sends and receives");
    const QString filter = format == QLatin1String("torchtitan") ? tr("TOML (*.toml)")
        : format == QLatin1String("megatron")                    ? tr("Text (*.txt)")
                                                                 : tr("CSV (*.csv)");
    const QString path = choose(QStringLiteral("export"), title, filter);
    if (!path.isEmpty())
        exportFrameworkTo(format, path);
}

bool FileController::exportFrameworkTo(const QString& format, const QString& path)
{
    if (!requireSnapshot(tr("the %1 export").arg(format)))
        return false;
    if (!m_snapshot->report.valid()) {
        emit failed(tr("Not exported: the order is invalid (%1 errors). Fix it or undo first.")
                        .arg(m_snapshot->report.errorCount()));
        return false;
    }
    const QFileInfo info(path);
    const QString csv = info.dir().filePath(info.completeBaseName() + QStringLiteral(".csv"));
    FrameworkConfig config;
    try {
        config = frameworkExport(m_document->project(), *m_snapshot, format.toStdString(), csv.toStdString());
    } catch (const std::exception& e) {
        emit failed(tr("Not exported: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
    if (!config.supported) {
        const QString who = format == QLatin1String("torchtitan") ? QStringLiteral("torchtitan")
            : format == QLatin1String("megatron")                 ? QStringLiteral("Megatron-Core")
                                                                  : QStringLiteral("PyTorch");
        emit failed(
            tr("Not exported: %1 cannot run this schedule: %2").arg(who, QString::fromStdString(config.refusal)));
        return false;
    }
    if (format == QLatin1String("torchtitan") && !writeText(csv, config.csv))
        return false;
    if (!writeText(path, config.text))
        return false;
    const QString wrote
        = format == QLatin1String("torchtitan") ? tr("Wrote %1 and %2").arg(path, csv) : tr("Wrote %1").arg(path);
    if (config.notes.empty())
        emit succeeded(wrote);
    else
        emit warned(tr("%1 — note: %2").arg(wrote, QString::fromStdString(config.notes.front())));
    return true;
}

void FileController::exportTrace()
{
    const QString path = choose(
        QStringLiteral("export"), tr("Export the predicted timeline as a Chrome trace"), tr("Chrome trace (*.json)"));
    if (!path.isEmpty())
        exportTraceTo(path);
}

bool FileController::exportTraceTo(const QString& path)
{
    if (!requireSnapshot(tr("the trace")))
        return false;
    if (!m_snapshot->timed) {
        emit failed(tr("Not exported: the order is invalid, so there is no predicted timeline"));
        return false;
    }
    try {
        writePredictedTrace(*m_snapshot, path.toStdString());
    } catch (const std::exception& e) {
        emit failed(tr("Could not write %1: %2").arg(path, QString::fromUtf8(e.what())));
        return false;
    }
    emit succeeded(tr("Wrote %1 (open it in Perfetto: ui.perfetto.dev)").arg(path));
    return true;
}

void FileController::exportChart(QCustomPlot* plot)
{
    const QString path = choose(QStringLiteral("export"), tr("Export the chart"),
        tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"));
    if (path.isEmpty())
        return;
    const QString error = saveChart(plot, path);
    if (error.isEmpty())
        emit succeeded(tr("Wrote %1").arg(path));
    else
        emit failed(error);
}

QStringList FileController::recentFiles() const
{
    return QSettings().value(QLatin1String(kRecentKey)).toStringList();
}

void FileController::clearRecentFiles()
{
    QSettings().remove(QLatin1String(kRecentKey));
    emit recentFilesChanged();
}

void FileController::addRecent(const QString& path)
{
    if (!m_remembersRecent)
        return;
    QStringList files = recentFiles();
    files.removeAll(path);
    files.prepend(path);
    while (files.size() > kMaxRecent)
        files.removeLast();
    QSettings().setValue(QLatin1String(kRecentKey), files);
    emit recentFilesChanged();
}

} // namespace dps::ui
