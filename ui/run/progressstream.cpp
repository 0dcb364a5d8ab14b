#include "progressstream.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>

namespace dps::ui {

double RunDoneEvent::medianMakespanUs() const
{
    if (medianStep < 0 || medianStep >= stepMakespanUs.size())
        return 0.0;
    return stepMakespanUs.at(medianStep);
}

QString RunErrorEvent::text() const
{
    return rank >= 0 ? QStringLiteral("rank %1: %2").arg(rank).arg(message) : message;
}

ProgressStream::Line ProgressStream::feed(const QByteArray& line)
{
    const QByteArray trimmed = line.trimmed();
    const Line log { LineKind::Log, QString::fromUtf8(line) };
    if (!trimmed.startsWith('{'))
        return log;
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(trimmed, &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject())
        return log;
    const QJsonObject o = doc.object();
    const QString event = o.value(QStringLiteral("event")).toString();
    if (event == QLatin1String("hello"))
        return applyHello(o);
    if (event == QLatin1String("progress"))
        return applyProgress(o);
    if (event == QLatin1String("done"))
        return applyDone(o);
    if (event == QLatin1String("error"))
        return applyError(o);
    return log;
}

ProgressStream::Line ProgressStream::applyHello(const QJsonObject& o)
{
    m_formatVersion = o.value(QStringLiteral("format_version")).toInt();
    m_state.ranks = std::max(0, o.value(QStringLiteral("ranks")).toInt());
    m_state.steps = std::max(0, o.value(QStringLiteral("steps")).toInt());
    m_state.warmup = std::max(0, o.value(QStringLiteral("warmup")).toInt());
    m_state.backend = o.value(QStringLiteral("backend")).toString();
    m_state.comm = o.value(QStringLiteral("comm")).toString();
    if (m_state.ranks > 0)
        rankAt(m_state.ranks - 1);
    QString text = QStringLiteral("worker started: %1 ranks, %2 measured steps after %3 warm-up")
                       .arg(m_state.ranks)
                       .arg(m_state.steps)
                       .arg(m_state.warmup);
    if (!m_state.backend.isEmpty())
        text += QStringLiteral(", backend %1").arg(m_state.backend);
    if (!m_state.comm.isEmpty())
        text += QStringLiteral(", comm %1").arg(m_state.comm);
    if (m_formatVersion > kProgressStreamVersion)
        text += QStringLiteral(" (progress format %1 is newer than this build reads, %2)")
                    .arg(m_formatVersion)
                    .arg(kProgressStreamVersion);
    return { LineKind::Hello, text };
}

ProgressStream::Line ProgressStream::applyProgress(const QJsonObject& o)
{
    const int rank = o.value(QStringLiteral("rank")).toInt(-1);
    if (rank < 0 || rank > 65535)
        return { LineKind::Progress, {} };
    RankProgress& r = rankAt(rank);
    r.step = o.value(QStringLiteral("step")).toInt(r.step);
    r.done = std::max(0, o.value(QStringLiteral("done")).toInt());
    r.total = std::max(0, o.value(QStringLiteral("total")).toInt());
    r.fraction = fractionOf(r);
    return { LineKind::Progress, {} };
}

ProgressStream::Line ProgressStream::applyDone(const QJsonObject& o)
{
    RunDoneEvent d;
    d.output = o.value(QStringLiteral("output")).toString();
    const QJsonObject c = o.value(QStringLiteral("correctness")).toObject();
    if (c.value(QStringLiteral("passed")).isBool())
        d.correctnessPassed = c.value(QStringLiteral("passed")).toBool();
    d.maxLossError = c.value(QStringLiteral("max_loss_error")).toDouble();
    d.maxGradError = c.value(QStringLiteral("max_grad_error")).toDouble();
    d.correctnessMessage = c.value(QStringLiteral("message")).toString();
    d.medianStep = o.value(QStringLiteral("median_step")).toInt(-1);
    for (const QJsonValue v : o.value(QStringLiteral("step_makespan_us")).toArray())
        d.stepMakespanUs.push_back(v.toDouble());
    m_done = d;
    m_state.done = true;
    QString text
        = QStringLiteral("done: wrote %1").arg(d.output.isEmpty() ? QStringLiteral("the measured trace") : d.output);
    if (d.correctnessPassed)
        text += *d.correctnessPassed ? QStringLiteral(", correctness check passed")
                                     : QStringLiteral(", correctness check FAILED");
    return { LineKind::Done, text };
}

ProgressStream::Line ProgressStream::applyError(const QJsonObject& o)
{
    RunErrorEvent e;
    e.rank = o.value(QStringLiteral("rank")).toInt(-1);
    e.message = o.value(QStringLiteral("message")).toString();
    if (e.message.isEmpty())
        e.message = QStringLiteral("(no message)");
    m_errors.push_back(e);
    if (e.rank >= 0 && e.rank <= 65535)
        rankAt(e.rank).failed = true;
    return { LineKind::Error, QStringLiteral("error from %1").arg(e.text()) };
}

RankProgress& ProgressStream::rankAt(int rank)
{
    while (m_state.perRank.size() <= rank) {
        RankProgress r;
        r.rank = static_cast<int>(m_state.perRank.size());
        m_state.perRank.push_back(r);
    }
    return m_state.perRank[rank];
}

double ProgressStream::fractionOf(const RankProgress& r) const
{
    const int steps = m_state.totalSteps();
    if (steps <= 0 || r.step < 0)
        return 0.0;
    const double within = r.total > 0 ? static_cast<double>(r.done) / r.total : 0.0;
    return std::clamp((r.step + within) / steps, 0.0, 1.0);
}

RunProgress ProgressStream::progress() const
{
    RunProgress p = m_state;
    if (p.done) {
        for (RankProgress& r : p.perRank)
            r.fraction = 1.0;
    }
    double sum = 0.0;
    int slowest = p.perRank.isEmpty() ? -1 : p.perRank.front().step;
    for (const RankProgress& r : p.perRank) {
        sum += r.fraction;
        slowest = std::min(slowest, r.step);
    }
    p.overall = p.done ? 1.0 : (p.perRank.isEmpty() ? 0.0 : sum / p.perRank.size());
    p.currentStep = slowest;
    return p;
}

} // namespace dps::ui
