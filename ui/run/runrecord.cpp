#include "run/runrecord.h"

#include "base/errors.h"
#include "trace/measured.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

namespace dps::ui {

namespace {

Correctness correctnessFrom(const QString& text)
{
    if (text == QLatin1String("passed"))
        return Correctness::Passed;
    return text == QLatin1String("failed") ? Correctness::Failed : Correctness::Unknown;
}

QString correctnessKey(Correctness c)
{
    if (c == Correctness::Passed)
        return QStringLiteral("passed");
    return c == Correctness::Failed ? QStringLiteral("failed") : QStringLiteral("unknown");
}

} // namespace

bool readRunRecord(const QString& measuredPath, RunRecord& record, QString* error)
{
    const QFileInfo info(measuredPath);
    RunRecord r;
    r.measuredPath = info.absoluteFilePath();
    r.date = info.lastModified();
    try {
        const MeasuredTrace t = loadMeasured(QFile::encodeName(measuredPath).toStdString());
        r.variant = QString::fromStdString(t.variant);
        r.ranks = static_cast<int>(t.ranks.size());
        r.host = QString::fromStdString(t.host);
        r.backend = QString::fromStdString(t.backend);
        r.hardware = QString::fromStdString(t.backend == "cuda" && !t.device.empty() ? t.device : t.cpu);
        r.comm = QString::fromStdString(t.comm);
        r.steps = static_cast<int>(t.steps.size());
        r.stepTimeUs = t.medianMakespanUs();
        r.correctness = !t.correctness.checked ? Correctness::Unknown // an imported profile: no check
            : t.correctness.passed             ? Correctness::Passed
                                               : Correctness::Failed;
        r.maxLossError = t.correctness.maxLossError;
        r.maxGradError = t.correctness.maxGradError;
    } catch (const IoError& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    } catch (const Error& e) { // FormatError (or a ParseError from an action): list it with the reason
        r.problem = QString::fromStdString(e.what());
    }
    record = r;
    return true;
}

QString correctnessText(Correctness correctness)
{
    switch (correctness) {
    case Correctness::Passed:
        return QStringLiteral("passed");
    case Correctness::Failed:
        return QStringLiteral("FAILED");
    default:
        return QStringLiteral("unknown");
    }
}

QJsonObject recordToJson(const RunRecord& r, const QString& base)
{
    const QString relative = QDir(base).relativeFilePath(r.measuredPath);
    const bool inside = !relative.startsWith(QLatin1String("..")) && !QDir::isAbsolutePath(relative);
    QJsonObject o {
        { QStringLiteral("measured"), inside ? relative : r.measuredPath },
        { QStringLiteral("date"), r.date.toUTC().toString(Qt::ISODateWithMs) },
        { QStringLiteral("variant"), r.variant },
        { QStringLiteral("ranks"), r.ranks },
        { QStringLiteral("host"), r.host },
        { QStringLiteral("hardware"), r.hardware },
        { QStringLiteral("backend"), r.backend },
        { QStringLiteral("comm"), r.comm },
        { QStringLiteral("steps"), r.steps },
        { QStringLiteral("step_time_us"), r.stepTimeUs },
        { QStringLiteral("correctness"), correctnessKey(r.correctness) },
        { QStringLiteral("max_loss_error"), r.maxLossError },
        { QStringLiteral("max_grad_error"), r.maxGradError },
    };
    if (!r.problem.isEmpty())
        o.insert(QStringLiteral("problem"), r.problem);
    return o;
}

RunRecord recordFromJson(const QJsonObject& o, const QString& base)
{
    RunRecord r;
    const QString measured = o.value(QStringLiteral("measured")).toString();
    r.measuredPath = measured.isEmpty() ? QString() : QDir(base).absoluteFilePath(measured);
    r.date = QDateTime::fromString(o.value(QStringLiteral("date")).toString(), Qt::ISODateWithMs);
    r.variant = o.value(QStringLiteral("variant")).toString();
    r.ranks = o.value(QStringLiteral("ranks")).toInt();
    r.host = o.value(QStringLiteral("host")).toString();
    r.hardware = o.value(QStringLiteral("hardware")).toString();
    r.backend = o.value(QStringLiteral("backend")).toString();
    r.comm = o.value(QStringLiteral("comm")).toString();
    r.steps = o.value(QStringLiteral("steps")).toInt();
    r.stepTimeUs = o.value(QStringLiteral("step_time_us")).toDouble();
    r.correctness = correctnessFrom(o.value(QStringLiteral("correctness")).toString());
    r.maxLossError = o.value(QStringLiteral("max_loss_error")).toDouble();
    r.maxGradError = o.value(QStringLiteral("max_grad_error")).toDouble();
    r.problem = o.value(QStringLiteral("problem")).toString();
    return r;
}

} // namespace dps::ui
