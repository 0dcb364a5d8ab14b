#pragma once
// Device timing of actions with events (host logic, unit-tested with a fake device clock).
//
// The executor's clock is shared by all ranks: µs since the barrier that starts each step. After that
// barrier the backend records an origin event on lane 0 (the lanes are idle, so it completes at once);
// around an action it records a start and an end event on both lanes. The end events are recorded as soon
// as the action's work is issued (recordEnds() from runConcurrently before it waits, or actionFinished(),
// which the executor calls before synchronize()), so they complete with the lane's last operation, not
// when the host is done waiting. Once the action's work is done (synchronize), its start is the earliest
// start and its end the latest end over the lanes the action used (laneUsed(); both lanes when it used
// none), each as the event time elapsed since the origin, in µs: a lane the action left idle would only
// add the host's issue time. Events are recycled through the device's pool. docs/gpu.md.
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

    /// endUs − startUs: the action's device time, µs.
    double durationUs() const { return endUs - startUs; }
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
    /// The open action issued work on `lane` (0 or 1); nothing when no action is open (work between actions,
    /// e.g. uploads, is not timed). Throws RuntimeError for another lane.
    void laneUsed(Lane lane);
    /// The open action's work is all issued: records its end events on both lanes now (again, replacing
    /// them, when called twice). Throws RuntimeError when no action is open.
    void recordEnds();
    /// Closes the action, recording its end events unless recordEnds() already did. Throws RuntimeError when
    /// no action is open.
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
    std::array<bool, kLanes> m_used { false, false }; ///< lanes the current (or last) action issued work on
    bool m_open = false;
    bool m_endsRecorded = false; ///< the open action's end events are recorded
    bool m_finished = false;
};

} // namespace dps::runtime
