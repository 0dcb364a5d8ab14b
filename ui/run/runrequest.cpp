#include "runrequest.h"

#include <QFileInfo>
#include <QStandardPaths>

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

QString checkNumbers(const RunRequest& r)
{
    if (r.steps < 1)
        return QStringLiteral("At least one measured step is needed (steps is %1).").arg(r.steps);
    if (r.warmup < 0)
        return QStringLiteral("Warm-up steps cannot be negative (%1).").arg(r.warmup);
    if (r.threads < 1)
        return QStringLiteral("Each rank needs at least one thread (threads is %1).").arg(r.threads);
    if (r.timeoutS < 0)
        return QStringLiteral("The timeout cannot be negative (%1 s).").arg(r.timeoutS);
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

QString checkRunRequest(const RunRequest& r)
{
    if (r.project.isEmpty())
        return QStringLiteral("No project file: save the project before running it.");
    if (QString why = checkReadableFile(r.project, QStringLiteral("project file")); !why.isEmpty())
        return why;
    static const QStringList backends { QStringLiteral("auto"), QStringLiteral("cpu"), QStringLiteral("cuda") };
    if (!backends.contains(r.backend))
        return QStringLiteral("Unknown backend \"%1\": choose auto, cpu or cuda.").arg(r.backend);
    if (QString why = checkNumbers(r); !why.isEmpty())
        return why;
    if (!r.hostfile.isEmpty())
        if (QString why = checkReadableFile(r.hostfile, QStringLiteral("hostfile")); !why.isEmpty())
            return why;
    return checkOutput(r.output);
}

QStringList runArguments(const RunRequest& r)
{
    QStringList args { QStringLiteral("run"), r.project, QStringLiteral("--progress-json"), QStringLiteral("-o"),
        r.output };
    if (!r.variant.isEmpty())
        args << QStringLiteral("--variant") << r.variant;
    args << QStringLiteral("--backend") << r.backend;
    args << QStringLiteral("--steps") << QString::number(r.steps);
    args << QStringLiteral("--warmup") << QString::number(r.warmup);
    args << QStringLiteral("--threads") << QString::number(r.threads);
    if (!r.hostfile.isEmpty())
        args << QStringLiteral("--hostfile") << r.hostfile;
    if (r.timeoutS > 0)
        args << QStringLiteral("--timeout") << QString::number(r.timeoutS);
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
