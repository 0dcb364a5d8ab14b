#include "actionclock.h"

#include <algorithm>
#include <string>

namespace dps::runtime {

ActionClock::ActionClock(EventDevice& device)
    : m_device(device)
{
}

ActionClock::~ActionClock()
{
    releaseAll(m_origin);
    releaseAll(m_start);
    releaseAll(m_end);
}

void ActionClock::recordAll(Events& events)
{
    releaseAll(events);
    for (int lane = 0; lane < kLanes; ++lane)
        events[static_cast<std::size_t>(lane)] = m_device.record(lane);
}

void ActionClock::releaseAll(Events& events)
{
    for (auto& e : events) {
        if (e >= 0)
            m_device.release(e);
        e = -1;
    }
}

void ActionClock::stepStarted()
{
    if (m_open)
        throw RuntimeError("action clock: a step started while an action is open");
    releaseAll(m_origin);
    m_origin[0] = m_device.record(0);
    releaseAll(m_start);
    releaseAll(m_end);
    m_finished = false;
}

void ActionClock::actionStarted()
{
    if (!stepOpen())
        throw RuntimeError("action clock: an action started before any step");
    if (m_open)
        throw RuntimeError("action clock: an action started while another is open");
    recordAll(m_start);
    releaseAll(m_end);
    m_used = { false, false };
    m_open = true;
    m_endsRecorded = false;
    m_finished = false;
}

void ActionClock::laneUsed(Lane lane)
{
    if (lane < 0 || lane >= kLanes)
        throw RuntimeError("action clock: lane " + std::to_string(lane) + " (expected 0 or 1)");
    if (m_open)
        m_used[static_cast<std::size_t>(lane)] = true;
}

void ActionClock::recordEnds()
{
    if (!m_open)
        throw RuntimeError("action clock: end events recorded outside an action");
    recordAll(m_end);
    m_endsRecorded = true;
}

void ActionClock::actionFinished()
{
    if (!m_open)
        throw RuntimeError("action clock: an action finished that never started");
    if (!m_endsRecorded)
        recordAll(m_end);
    m_open = false;
    m_finished = true;
}

std::optional<ActionSpan> ActionClock::lastAction()
{
    if (!m_finished)
        return std::nullopt;
    const bool anyUsed = m_used[0] || m_used[1];
    ActionSpan span { 1e300, -1e300 };
    for (int lane = 0; lane < kLanes; ++lane) {
        const auto l = static_cast<std::size_t>(lane);
        if (anyUsed && !m_used[l])
            continue;
        span.startUs = std::min(span.startUs, 1000.0 * m_device.elapsedMs(m_origin[0], m_start[l]));
        span.endUs = std::max(span.endUs, 1000.0 * m_device.elapsedMs(m_origin[0], m_end[l]));
    }
    return span;
}

int ActionClock::eventsHeld() const
{
    int held = 0;
    for (const Events* events : { &m_origin, &m_start, &m_end })
        for (const auto e : *events)
            held += e >= 0 ? 1 : 0;
    return held;
}

} // namespace dps::runtime
