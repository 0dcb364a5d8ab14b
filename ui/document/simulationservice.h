#pragma once
// Simulates the active variant off the GUI thread whenever asked; the newest request wins and every
// result is an immutable snapshot shared with the views.
#include "document/latestjobrunner.h"
#include "document/snapshot.h"
#include "project/sweep.h"

#include <QObject>

namespace dps::ui {

class SimulationService : public QObject {
    Q_OBJECT
public:
    explicit SimulationService(QObject* parent = nullptr);

    /// Simulates `variant` of `project` (both copied); the snapshot arrives through snapshotChanged.
    void request(const Project& project, const std::string& variant);
    /// Predicts with `provider`'s setup from the next request on (empty: for the project's devices), e.g. for
    /// this machine while a CPU run of it is overlaid.
    void setPredictionProvider(PredictionProvider provider) { m_provider = std::move(provider); }
    bool hasPredictionProvider() const { return static_cast<bool>(m_provider); }
    /// From the next request on, predict PyTorch's lowering of the schedule with its sends and receives timed where
    /// they sit (PredictOptions::lowerComms): the snapshot's sim then holds them (SimResult::comms).
    void setCommsTimed(bool timed) { m_commsTimed = timed; }
    bool commsTimed() const { return m_commsTimed; }
    /// The newest snapshot delivered (null before the first).
    SnapshotPtr current() const { return m_current; }
    bool isIdle() const { return m_runner.isIdle(); }
    bool waitUntilIdle(int timeoutMs = 10000) { return m_runner.waitUntilIdle(timeoutMs); }

signals:
    void snapshotChanged(const dps::ui::SnapshotPtr& snapshot);

private:
    void accept(const SnapshotPtr& snapshot);

    LatestJobRunner m_runner;
    SnapshotPtr m_current;
    SnapshotPtr m_lastTimed; ///< the newest snapshot with real timing, per variant name
    PredictionProvider m_provider; ///< empty = the project's devices
    bool m_commsTimed = false;
};

/// Every variant of a project at once, for the comparison view.
struct CompareSnapshot {
    std::vector<SnapshotPtr> variants; ///< in the project's order
};
using CompareSnapshotPtr = std::shared_ptr<const CompareSnapshot>;
using SweepResultPtr = std::shared_ptr<const SweepResult>;

/// The comparison's background work: all variants simulated, and the sweep.
class CompareService : public QObject {
    Q_OBJECT
public:
    explicit CompareService(QObject* parent = nullptr);

    void requestVariants(const Project& project);
    void requestSweep(const Project& project, SweepParameter parameter);
    CompareSnapshotPtr current() const { return m_current; }
    SweepResultPtr sweep() const { return m_sweep; }
    bool isIdle() const { return m_variants.isIdle() && m_sweeps.isIdle(); }
    bool waitUntilIdle(int timeoutMs = 20000);

signals:
    void variantsChanged(const dps::ui::CompareSnapshotPtr& snapshot);
    void sweepChanged(const dps::ui::SweepResultPtr& sweep);

private:
    LatestJobRunner m_variants;
    LatestJobRunner m_sweeps;
    CompareSnapshotPtr m_current;
    SweepResultPtr m_sweep;
};

} // namespace dps::ui
