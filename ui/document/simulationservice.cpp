#include "document/simulationservice.h"

#include <QDeadlineTimer>

namespace dps::ui {

SimulationService::SimulationService(QObject* parent)
    : QObject(parent)
{
}

void SimulationService::request(const Project& project, const std::string& variant)
{
    SnapshotPtr previous = m_lastTimed && m_lastTimed->variantName == variant ? m_lastTimed : nullptr;
    const std::uint64_t generation = m_runner.generation() + 1;
    m_runner.submit([this, project, variant, previous, generation, provider = m_provider,
                        comms = m_commsTimed]() -> std::function<void()> {
        std::optional<PredictionSetup> setup;
        if (provider) {
            try {
                setup = provider(project, variant);
            } catch (const std::exception&) { // e.g. a profile without the model's shape: the project's devices
            }
        }
        if (comms) {
            if (!setup)
                setup = PredictionSetup {};
            setup->options.lowerComms = true;
        }
        SnapshotPtr snapshot = computeSnapshot(project, variant, generation, previous.get(), setup ? &*setup : nullptr);
        return [this, snapshot] { accept(snapshot); };
    });
}

void SimulationService::accept(const SnapshotPtr& snapshot)
{
    m_current = snapshot;
    if (snapshot->timed)
        m_lastTimed = snapshot;
    emit snapshotChanged(snapshot);
}

CompareService::CompareService(QObject* parent)
    : QObject(parent)
{
}

void CompareService::requestVariants(const Project& project)
{
    m_variants.submit([this, project]() -> std::function<void()> {
        auto result = std::make_shared<CompareSnapshot>();
        for (const auto& v : project.variants)
            result->variants.push_back(computeSnapshot(project, v.name, 0));
        return [this, result] {
            m_current = result;
            emit variantsChanged(m_current);
        };
    });
}

void CompareService::requestSweep(const Project& project, SweepParameter parameter)
{
    m_sweeps.submit([this, project, parameter]() -> std::function<void()> {
        auto result = std::make_shared<const SweepResult>(runSweep(project, parameter));
        return [this, result] {
            m_sweep = result;
            emit sweepChanged(m_sweep);
        };
    });
}

bool CompareService::waitUntilIdle(int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    const bool variants = m_variants.waitUntilIdle(timeoutMs);
    return m_sweeps.waitUntilIdle(static_cast<int>(deadline.remainingTime())) && variants;
}

} // namespace dps::ui
