#include "runrecord.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

namespace dps::ui {

namespace {

/// GPU names from "gpus" (objects with "name", or strings) or "gpu"; empty when neither is there.
QString gpuNames(const QJsonObject& o)
{
    QStringList names;
    for (const QJsonValue v : o.value(QStringLiteral("gpus")).toArray())
        names << (v.isObject() ? v.toObject().value(QStringLiteral("name")).toString() : v.toString());
    names.removeAll(QString());
    if (names.isEmpty())
        return o.value(QStringLiteral("gpu")).toString();
    if (names.count(names.front()) == names.size() && names.size() > 1)
        return QStringLiteral("%1 × %2").arg(names.size()).arg(names.front());
    return names.join(QStringLiteral(", "));
}

double medianMakespan(const QJsonObject& o)
{
    const int median = o.value(QStringLiteral("median_step")).toInt(-1);
    for (const QJsonValue v : o.value(QStringLiteral("steps")).toArray()) {
        const QJsonObject step = v.toObject();
        if (step.value(QStringLiteral("step")).toInt(-2) == median)
            return step.value(QStringLiteral("makespan_us")).toDouble();
    }
    return 0.0;
}

void readCorrectness(const QJsonObject& c, RunRecord& r)
{
    const QJsonValue passed = c.value(QStringLiteral("passed"));
    r.correctness
        = !passed.isBool() ? Correctness::Unknown : (passed.toBool() ? Correctness::Passed : Correctness::Failed);
    r.maxLossError = c.value(QStringLiteral("max_loss_error")).toDouble();
    r.maxGradError = c.value(QStringLiteral("max_grad_error")).toDouble();
}

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
    QFile file(measuredPath);
    if (!file.open(QIODevice::ReadOnly)) {
        if (error)
            *error = QStringLiteral("cannot read %1: %2").arg(measuredPath, file.errorString());
        return false;
    }
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &parseError);
    if (!doc.isObject()) {
        if (error)
            *error = QStringLiteral("%1 is not a measured trace (%2)").arg(measuredPath, parseError.errorString());
        return false;
    }
    const QJsonObject o = doc.object();
    RunRecord r;
    r.measuredPath = QFileInfo(measuredPath).absoluteFilePath();
    r.date = QFileInfo(measuredPath).lastModified();
    r.variant = o.value(QStringLiteral("variant")).toString();
    r.ranks = static_cast<int>(o.value(QStringLiteral("ranks")).toArray().size());
    r.host = o.value(QStringLiteral("host")).toString();
    r.backend = o.value(QStringLiteral("backend")).toString();
    r.comm = o.value(QStringLiteral("comm")).toString();
    const QString gpus = gpuNames(o);
    r.hardware
        = r.backend == QLatin1String("cuda") && !gpus.isEmpty() ? gpus : o.value(QStringLiteral("cpu")).toString();
    r.steps = static_cast<int>(o.value(QStringLiteral("steps")).toArray().size());
    r.stepTimeUs = medianMakespan(o);
    readCorrectness(o.value(QStringLiteral("correctness")).toObject(), r);
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
    return QJsonObject {
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
    return r;
}

} // namespace dps::ui
