#pragma once
// Device timing of actions with events (host logic, unit-tested with a fake device clock).
//
// The executor's clock is shared by all ranks: µs since the barrier that starts each step. After that
// barrier the backend records an origin event on lane 0 (the lanes are idle, so it completes at once);
// around an action it records a start and an end event on both lanes. Once the action's work is done
// (synchronize), its start is the earliest start and its end the latest end over the lanes, each as the
// event time elapsed since the origin, in µs. Events are recycled through the device's pool.
#include "runtime/backend.h"

#include <array>
#include <optional>

namespace dps::runtime {

/// Events on the backend's lanes; CUDA implements it with cudaEventRecord/cudaEventElapsedTime.
class EventDevice {
public:
    using Event = int;

    virtual ~EventDevice() = default;
    /// Takes an event from the pool and records it on the lane's stream.
    virtual Event record(Lane lane) = 0;
    /// Milliseconds from `from` to `to`; both completed (after a synchronize).
    virtual double elapsedMs(Event from, Event to) = 0;
    /// Gives the event back to the pool.
    virtual void release(Event event) = 0;
};

/// Start and end of an action in µs since the step's origin.
struct ActionSpan {
    double startUs = 0.0;
    double endUs = 0.0;
};

class ActionClock {
public:
    static constexpr int kLanes = 2;

    explicit ActionClock(EventDevice& device);
    ~ActionClock();
    ActionClock(const ActionClock&) = delete;
    ActionClock& operator=(const ActionClock&) = delete;

    /// Right after the step barrier: records the origin on lane 0 (replacing the previous step's).
    void stepStarted();
    /// Records start events on both lanes. Throws RuntimeError when an action is already open or no step
    /// has started.
    void actionStarted();
    /// Records end events on both lanes. Throws RuntimeError when no action is open.
    void actionFinished();
    /// The last finished action's span; valid after its work completed (synchronize). nullopt before any.
    std::optional<ActionSpan> lastAction();

    bool stepOpen() const { return m_origin[0] >= 0; }
    bool actionOpen() const { return m_open; }
    /// Events currently held (origin, starts, ends): at most 5.
    int eventsHeld() const;

private:
    using Events = std::array<EventDevice::Event, kLanes>;
    void recordAll(Events& events);
    void releaseAll(Events& events);

    EventDevice& m_device;
    Events m_origin { -1, -1 };
    Events m_start { -1, -1 };
    Events m_end { -1, -1 };
    bool m_open = false;
    bool m_finished = false;
};

} // namespace dps::runtime
