#include "run/runrequest.h"

#include "protocol/backends.h"

#include <QFileInfo>
#include <QStandardPaths>

#include <algorithm>
#include <cmath>

namespace dps::ui {

namespace {

/// Empty when `path` names a readable file, else why not ("what" names it in the message).
QString checkReadableFile(const QString& path, const QString& what)
{
    const QFileInfo info(path);
    if (!info.exists())
        return QStringLiteral("The %1 %2 does not exist.").arg(what, path);
    if (!info.isFile())
        return QStringLiteral("The %1 %2 is not a file.").arg(what, path);
    if (!info.isReadable())
        return QStringLiteral("The %1 %2 cannot be read.").arg(what, path);
    return {};
}

QString checkNumbers(const launch::RunOptions& r)
{
    if (r.steps < 1)
        return QStringLiteral("At least one measured step is needed (steps is %1).").arg(r.steps);
    if (r.warmup < 0)
        return QStringLiteral("Warm-up steps cannot be negative (%1).").arg(r.warmup);
    if (r.threads < 1)
        return QStringLiteral("Each rank needs at least one thread (threads is %1).").arg(r.threads);
    if (!(r.timeoutS > 0) || !std::isfinite(r.timeoutS))
        return QStringLiteral("The timeout must be a positive number of seconds (it is %1).").arg(r.timeoutS);
    return {};
}

QString checkOutput(const QString& output)
{
    if (output.isEmpty())
        return QStringLiteral("No file was given for the measured trace.");
    const QFileInfo dir(QFileInfo(output).absolutePath());
    if (!dir.isDir())
        return QStringLiteral("The folder for the measured trace, %1, does not exist.").arg(dir.filePath());
    if (!dir.isWritable())
        return QStringLiteral("The folder for the measured trace, %1, is not writable.").arg(dir.filePath());
    return {};
}

} // namespace

QString checkRunOptions(const launch::RunOptions& options)
{
    const QString project = QString::fromStdString(options.project);
    if (project.isEmpty())
        return QStringLiteral("No project file: save the project before running it.");
    if (QString why = checkReadableFile(project, QStringLiteral("project file")); !why.isEmpty())
        return why;
    if (!isBackendName(options.backend))
        return QStringLiteral("Unknown backend \"%1\": choose %2.")
            .arg(QString::fromStdString(options.backend), QString::fromStdString(backendNameList()));
    if (QString why = checkNumbers(options); !why.isEmpty())
        return why;
    if (!options.hostfile.empty())
        if (QString why = checkReadableFile(QString::fromStdString(options.hostfile), QStringLiteral("hostfile"));
            !why.isEmpty())
            return why;
    return checkOutput(QString::fromStdString(options.output));
}

QStringList runArguments(const launch::RunOptions& options)
{
    launch::RunOptions withStream = options;
    withStream.progressJson = true;
    QStringList args;
    for (const std::string& word : launch::runCommandArguments(withStream))
        args << QString::fromStdString(word);
    return args;
}

QString resolveProgram(const QString& program)
{
    if (program.isEmpty())
        return {};
    const QString path = program.contains(QLatin1Char('/')) ? program : QStandardPaths::findExecutable(program);
    const QFileInfo info(path);
    return !path.isEmpty() && info.isFile() && info.isExecutable() ? info.absoluteFilePath() : QString();
}

} // namespace dps::ui
