#include "document/latestjobrunner.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QMetaObject>

namespace dps::ui {

LatestJobRunner::LatestJobRunner(QObject* parent)
    : QObject(parent)
{
    m_pool.setMaxThreadCount(1);
}

LatestJobRunner::~LatestJobRunner()
{
    m_pending = nullptr;
    m_pool.waitForDone();
}

std::uint64_t LatestJobRunner::submit(Job job)
{
    m_pending = std::move(job);
    m_pendingGeneration = ++m_generation;
    if (!m_running)
        startPending();
    return m_generation;
}

void LatestJobRunner::startPending()
{
    if (!m_pending)
        return;
    Job job = std::move(m_pending);
    m_pending = nullptr;
    const std::uint64_t generation = m_pendingGeneration;
    m_running = true;
    m_pool.start([this, job = std::move(job), generation] {
        std::function<void()> continuation;
        try {
            continuation = job();
        } catch (...) {
            continuation = nullptr; // jobs report errors in their results; this only keeps the thread alive
        }
        QMetaObject::invokeMethod(
            this, [this, generation, continuation] { finished(generation, continuation); }, Qt::QueuedConnection);
    });
}

void LatestJobRunner::finished(std::uint64_t generation, const std::function<void()>& continuation)
{
    m_running = false;
    if (m_pending) {
        startPending();
        return;
    }
    if (generation == m_generation && continuation)
        continuation();
    emit settled();
}

bool LatestJobRunner::waitUntilIdle(int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (!isIdle() && !deadline.hasExpired())
        QCoreApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents, 20);
    return isIdle();
}

} // namespace dps::ui
