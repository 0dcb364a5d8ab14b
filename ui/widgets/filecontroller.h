#pragma once
// Files: new, open, save, save as (atomic), recent files, the unsaved-changes prompt, CSV import and the
// exports. Failures never replace the open project and are reported through failed() for the window's
// inline banner; successes worth telling through succeeded().
#include "document/snapshot.h"

#include "project/validatedconfig.h"

#include <QObject>
#include <QStringList>

#include <optional>

#include <functional>

class QCustomPlot;
class QWidget;

namespace dps::ui {

class ProjectDocument;

class FileController : public QObject {
    Q_OBJECT
public:
    /// What the user chose when asked about unsaved changes.
    enum class SaveChoice { Save, Discard, Cancel };
    using Prompt = std::function<SaveChoice(const QString& documentName)>;
    /// Returns a path, or an empty string when the user cancelled. (kind: "open", "save", "import", "export")
    using PathChooser = std::function<QString(const QString& kind, const QString& title, const QString& filter)>;

    FileController(ProjectDocument* document, QWidget* dialogParent, QObject* parent = nullptr);

    /// Replaces the default dialogs (tests).
    void setPrompt(Prompt prompt) { m_prompt = std::move(prompt); }
    void setPathChooser(PathChooser chooser) { m_chooser = std::move(chooser); }
    /// Whether opening and saving add to the recent-files list (off for headless screenshots).
    void setRemembersRecent(bool remember) { m_remembersRecent = remember; }
    /// The latest simulation of the active variant, used by the exports.
    void setSnapshot(const SnapshotPtr& snapshot) { m_snapshot = snapshot; }
    /// The last run of the active variant, recorded in the validated config (nullopt: none).
    void setLastRun(const std::optional<ValidatedRun>& run) { m_lastRun = run; }
    const std::optional<ValidatedRun>& lastRun() const { return m_lastRun; }

    /// Asks about unsaved changes when there are any; false when the user cancelled or the save failed.
    bool maybeSave();
    void newProject();
    void open();
    /// Loads a project; on failure the open project stays and failed() says why. Returns success.
    bool openFile(const QString& path);
    bool save();
    bool saveAs();
    bool saveTo(const QString& path);
    void importCsv();
    bool importCsvFile(const QString& path);
    void exportConfig();
    bool exportConfigTo(const QString& path);
    void exportCsv();
    bool exportCsvTo(const QString& path);
    void exportTrace();
    bool exportTraceTo(const QString& path);
    /// Export → PyTorch CSV with Comms, torchtitan Config, Megatron Arguments: `format` is the CLI's `export --format`
    /// name (torch-comms-csv, torchtitan, megatron; dps::ui::frameworkExport). torchtitan writes its schedule CSV
    /// beside the config (same name, .csv). A schedule the framework cannot run writes nothing; failed() says why.
    void exportFramework(const QString& format);
    bool exportFrameworkTo(const QString& format, const QString& path);
    void exportChart(QCustomPlot* plot);
    /// File → Open Profile…: PyTorch profiler traces (one file per rank, .json or .json.gz) chosen in a dialog,
    /// then openProfileFiles.
    void openProfile();
    /// Imports profiler traces (files or folders of them) against the open project's active variant
    /// (dps::importProfiles, engine/trace/kineto.h), writes the run as a measured.json in the project's runs
    /// folder (the temporary folder for a project never saved) and emits profileImported. On failure failed()
    /// names the file and the reason and nothing is written. Returns the measured.json's path, "" on failure.
    QString openProfileFiles(const QStringList& paths);

    QStringList recentFiles() const;
    void clearRecentFiles();

signals:
    void failed(const QString& message);
    void succeeded(const QString& message);
    void warned(const QString& message);
    void recentFilesChanged();
    /// A project was opened (the window clears an earlier failure's banner).
    void opened(const QString& path);
    /// Profiler traces were imported and written to `measuredPath` (the window overlays it); `summary` says
    /// what was imported and how (timing, clock).
    void profileImported(const QString& measuredPath, const QString& summary);

private:
    void addRecent(const QString& path);
    QString choose(const QString& kind, const QString& title, const QString& filter) const;
    bool requireSnapshot(const QString& what);
    bool writeText(const QString& path, const std::string& text);

    ProjectDocument* m_document;
    QWidget* m_dialogParent;
    Prompt m_prompt;
    PathChooser m_chooser;
    SnapshotPtr m_snapshot;
    std::optional<ValidatedRun> m_lastRun;
    bool m_remembersRecent = true;
};

} // namespace dps::ui
