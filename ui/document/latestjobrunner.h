#pragma once
// Runs jobs on a private worker thread, one at a time, where only the newest request matters: a request
// made while a job runs replaces any request still waiting, and the result of a job that was superseded
// is dropped. Each job returns a continuation that runs on the GUI thread when its result is current.
#include <QObject>
#include <QThreadPool>

#include <cstdint>
#include <functional>

namespace dps::ui {

class LatestJobRunner : public QObject {
    Q_OBJECT
public:
    /// Work done off the GUI thread; what it returns runs on the GUI thread if still the newest.
    using Job = std::function<std::function<void()>()>;

    explicit LatestJobRunner(QObject* parent = nullptr);
    ~LatestJobRunner() override;

    /// Queues `job` as the newest request; returns its generation number.
    std::uint64_t submit(Job job);
    /// True when no job is running or waiting.
    bool isIdle() const { return !m_running && !m_pending; }
    /// Processes events until idle or `timeoutMs` passed; true when idle (tests, screenshots).
    bool waitUntilIdle(int timeoutMs = 10000);
    std::uint64_t generation() const { return m_generation; }

signals:
    /// Emitted on the GUI thread after the newest job's continuation ran.
    void settled();

private:
    void startPending();
    void finished(std::uint64_t generation, const std::function<void()>& continuation);

    QThreadPool m_pool;
    Job m_pending;
    std::uint64_t m_pendingGeneration = 0;
    std::uint64_t m_generation = 0;
    bool m_running = false;
};

} // namespace dps::ui
