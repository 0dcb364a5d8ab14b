#include "run/progressstream.h"

#include "launch/progress.h"
#include "protocol/progress.h"

#include <algorithm>

namespace dps::ui {

namespace {

using launch::EventKind;
using launch::ProgressEvent;

/// Highest rank number followed; anything above is treated as garbage.
constexpr int kMaxRank = 65535;

QString qstring(const std::string& text)
{
    return QString::fromStdString(text);
}

} // namespace

QString RunErrorEvent::text() const
{
    return rank >= 0 ? QStringLiteral("rank %1: %2").arg(rank).arg(message) : message;
}

ProgressStream::Line ProgressStream::feed(const QByteArray& line)
{
    const Line log { LineKind::Log, QString::fromUtf8(line) };
    const std::optional<ProgressEvent> event = launch::parseProgressLine(line.toStdString());
    if (!event)
        return log;
    switch (event->kind) {
    case EventKind::Hello:
        return applyHello(*event);
    case EventKind::Progress:
        return applyProgress(*event);
    case EventKind::Done:
        return applyDone(*event);
    case EventKind::Error:
        return applyError(*event);
    case EventKind::Failed:
        return applyFailed(*event);
    case EventKind::Other:
        break;
    }
    return log;
}

ProgressStream::Line ProgressStream::applyHello(const ProgressEvent& e)
{
    m_formatVersion = e.formatVersion;
    m_state.ranks = std::clamp(e.ranks, 0, kMaxRank + 1);
    m_state.steps = std::max(0, e.steps);
    m_state.warmup = std::max(0, e.warmup);
    m_state.backend = qstring(e.backend);
    m_state.comm = qstring(e.comm);
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
    if (e.newerFormat())
        text += QStringLiteral(" (progress format %1 is newer than this build reads, %2)")
                    .arg(m_formatVersion)
                    .arg(protocol::kProgressFormatVersion);
    return { LineKind::Hello, text };
}

ProgressStream::Line ProgressStream::applyProgress(const ProgressEvent& e)
{
    if (e.rank < 0 || e.rank > kMaxRank)
        return { LineKind::Progress, {} };
    RankProgress& r = rankAt(e.rank);
    if (e.step >= 0)
        r.step = e.step;
    r.done = std::max(0, e.done);
    r.total = std::max(0, e.total);
    r.fraction = fractionOf(r);
    return { LineKind::Progress, {} };
}

ProgressStream::Line ProgressStream::applyDone(const ProgressEvent& e)
{
    RunDoneEvent d;
    d.output = qstring(e.output);
    d.correctnessPassed = e.correctnessPassed;
    d.maxLossError = e.maxLossError;
    d.maxGradError = e.maxGradError;
    d.correctnessMessage = qstring(e.correctnessMessage);
    d.medianStep = e.medianStep;
    d.stepMakespanUs = QVector<double>(e.stepMakespanUs.begin(), e.stepMakespanUs.end());
    d.medianMakespanUs = e.medianMakespanUs();
    m_done = d;
    m_state.done = true;
    QString text
        = QStringLiteral("done: wrote %1").arg(d.output.isEmpty() ? QStringLiteral("the measured trace") : d.output);
    if (d.correctnessPassed)
        text += *d.correctnessPassed ? QStringLiteral(", correctness check passed")
                                     : QStringLiteral(", correctness check FAILED");
    return { LineKind::Done, text };
}

ProgressStream::Line ProgressStream::applyError(const ProgressEvent& e)
{
    RunErrorEvent error;
    error.rank = e.rank;
    error.message = e.message.empty() ? QStringLiteral("(no message)") : qstring(e.message);
    m_errors.push_back(error);
    if (error.rank >= 0 && error.rank <= kMaxRank)
        rankAt(error.rank).failed = true;
    return { LineKind::Error, QStringLiteral("error from %1").arg(error.text()) };
}

ProgressStream::Line ProgressStream::applyFailed(const ProgressEvent& e)
{
    m_failed = RunFailedEvent { e.exitCode, qstring(e.message) };
    return { LineKind::Failed, {} };
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
