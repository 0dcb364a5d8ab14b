// Stream/event bookkeeping of the action clock (actionclock.h) on a fake device whose events carry the
// time the test gives each lane.
#include "runtime/backend.h"
#include "runtime/cuda/actionclock.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace dps::runtime;

namespace {

class FakeEvents final : public EventDevice {
public:
    /// The device time (ms) at which the next event recorded on `lane` completes.
    void setLaneTime(Lane lane, double ms) { m_laneMs[lane] = ms; }

    Event record(Lane lane) override
    {
        const Event e = m_next++;
        m_time[e] = m_laneMs[lane];
        m_live.insert(e);
        ++recorded;
        return e;
    }
    double elapsedMs(Event from, Event to) override
    {
        EXPECT_TRUE(m_live.count(from) && m_live.count(to)) << "elapsed time of a released event";
        return m_time.at(to) - m_time.at(from);
    }
    void release(Event e) override { EXPECT_TRUE(m_live.erase(e)) << "event " << e << " released twice"; }
    std::size_t live() const { return m_live.size(); }

    int recorded = 0;

private:
    std::map<Lane, double> m_laneMs { { 0, 0.0 }, { 1, 0.0 } };
    std::map<Event, double> m_time;
    std::set<Event> m_live;
    Event m_next = 0;
};

} // namespace

TEST(ActionClock, SpansAreMicrosecondsSinceTheStepOrigin)
{
    FakeEvents events;
    ActionClock clock(events);
    events.setLaneTime(0, 100.0);
    clock.stepStarted();
    events.setLaneTime(0, 100.5);
    events.setLaneTime(1, 100.5);
    clock.actionStarted();
    events.setLaneTime(0, 102.0);
    events.setLaneTime(1, 102.0);
    clock.actionFinished();
    const auto span = clock.lastAction();
    ASSERT_TRUE(span.has_value());
    EXPECT_DOUBLE_EQ(span->startUs, 500.0);
    EXPECT_DOUBLE_EQ(span->endUs, 2000.0);
}

TEST(ActionClock, AnOverlappedSlotEndsWhenItsSlowerLaneEnds)
{
    FakeEvents events;
    ActionClock clock(events);
    clock.stepStarted();
    events.setLaneTime(0, 1.0);
    events.setLaneTime(1, 1.0);
    clock.actionStarted();
    events.setLaneTime(0, 3.0); // forward half
    events.setLaneTime(1, 4.5); // backward half, longer
    clock.actionFinished();
    const auto span = clock.lastAction();
    ASSERT_TRUE(span.has_value());
    EXPECT_DOUBLE_EQ(span->startUs, 1000.0);
    EXPECT_DOUBLE_EQ(span->endUs, 4500.0);
}

TEST(ActionClock, AnActionIsTimedOnTheLanesItUsed)
{
    // One half on lane 0; lane 1 stays idle, so its events complete when the host records them: at the
    // action's start (before lane 0 finished an earlier copy) and once everything is issued.
    FakeEvents events;
    ActionClock clock(events);
    clock.stepStarted();
    events.setLaneTime(0, 1.2); // lane 0 still copies the input until 1.2 ms
    events.setLaneTime(1, 1.0);
    clock.actionStarted();
    clock.laneUsed(0);
    events.setLaneTime(0, 3.0);
    events.setLaneTime(1, 1.1);
    clock.actionFinished();
    const auto span = clock.lastAction();
    ASSERT_TRUE(span.has_value());
    EXPECT_DOUBLE_EQ(span->startUs, 1200.0);
    EXPECT_DOUBLE_EQ(span->endUs, 3000.0);
    EXPECT_DOUBLE_EQ(span->durationUs(), 1800.0);
    clock.laneUsed(1); // between actions: not counted
    clock.actionStarted();
    EXPECT_THROW(clock.laneUsed(2), RuntimeError);
}

TEST(ActionClock, EndsRecordedWhenTheWorkIsIssuedAreNotMovedByTheHostsWait)
{
    // runConcurrently records the ends once both halves are issued; the executor's actionFinished() after
    // the host waited must not record them again at the later time.
    FakeEvents events;
    ActionClock clock(events);
    clock.stepStarted();
    clock.actionStarted();
    clock.laneUsed(0);
    clock.laneUsed(1);
    events.setLaneTime(0, 2.0);
    events.setLaneTime(1, 2.5);
    clock.recordEnds();
    events.setLaneTime(0, 9.0); // the host's wait and whatever followed
    events.setLaneTime(1, 9.0);
    clock.actionFinished();
    EXPECT_EQ(events.recorded, 1 + 2 + 2);
    const auto span = clock.lastAction();
    ASSERT_TRUE(span.has_value());
    EXPECT_DOUBLE_EQ(span->startUs, 0.0);
    EXPECT_DOUBLE_EQ(span->endUs, 2500.0);
    EXPECT_THROW(clock.recordEnds(), RuntimeError); // no action open
}

TEST(ActionClock, EventsAreRecycledAndNeverPileUp)
{
    FakeEvents events;
    {
        ActionClock clock(events);
        for (int step = 0; step < 3; ++step) {
            clock.stepStarted();
            for (int action = 0; action < 50; ++action) {
                clock.actionStarted();
                clock.actionFinished();
                ASSERT_TRUE(clock.lastAction().has_value());
                EXPECT_LE(clock.eventsHeld(), 5);
            }
        }
        EXPECT_EQ(events.recorded, 3 * (1 + 50 * 4));
        EXPECT_EQ(events.live(), 5u);
    }
    EXPECT_EQ(events.live(), 0u); // the clock gives every event back
}

TEST(ActionClock, MisuseIsRefused)
{
    FakeEvents events;
    ActionClock clock(events);
    EXPECT_THROW(clock.actionStarted(), RuntimeError); // no step yet
    clock.stepStarted();
    EXPECT_FALSE(clock.lastAction().has_value());
    EXPECT_THROW(clock.actionFinished(), RuntimeError);
    clock.actionStarted();
    EXPECT_TRUE(clock.actionOpen());
    EXPECT_THROW(clock.actionStarted(), RuntimeError);
    EXPECT_THROW(clock.stepStarted(), RuntimeError);
    EXPECT_FALSE(clock.lastAction().has_value()); // still open
    clock.actionFinished();
    EXPECT_TRUE(clock.lastAction().has_value());
    clock.stepStarted();
    EXPECT_FALSE(clock.lastAction().has_value()); // a new step forgets the last one
}
