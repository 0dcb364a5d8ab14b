// Processor sharing of the cores among the ranks' threads, simulated as a fluid (docs/shared-cores.md).
//
// Every computing thread progresses at the same rate min(1, cores / k), so instead of decrementing each
// thread's remaining work at every event the kernel keeps the work one thread has done since the start,
// W(t) = ∫ rate dt ("virtual time" of processor sharing), and gives each thread the value of W at which it
// finishes: W at its start + its work. The next thread to finish is the smallest such value in a heap; the
// next slot to start is the earliest arrival in another heap; time advances to the earlier of the two and W
// by rate × the step. Dependencies, transfers and tie-breaks are those of simulate() (simulator.h).
#include "sharedcores.h"

#include "base/errors.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>
#include <utility>

namespace dps {

int peakComputeThreads(const Schedule& schedule)
{
    int threads = 0;
    for (const auto& row : schedule.order)
        threads += std::any_of(row.begin(), row.end(), [](const Action& a) { return a.overlapped; }) ? 2 : 1;
    return threads;
}

bool waitingRanksSpin(WaitingRanks waiting, int ranks, int cores)
{
    switch (waiting) {
    case WaitingRanks::Yield:
        return false;
    case WaitingRanks::Spin:
        return true;
    case WaitingRanks::Auto:
        break;
    }
    return ranks <= cores;
}

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// One production of a (stage, microbatch): its forward, or its gradient (I or B).
struct Production {
    double endUs = -kInfinity; ///< when it ended; −∞ = not yet
    int rank = -1; ///< the rank that ran it
    int waitHead = -1; ///< first rank parked waiting for it, −1 none
    bool produced() const { return endUs > -kInfinity; }
};

/// The latest input of a slot, as simulate() decides it (simulator.cpp's Arrival, same rule and ties).
struct Arrival {
    double readyUs = 0.0;
    int fromRank = -1;

    /// An input produced at timeUs by producerRank (+ transferUs when that is another rank than consumerRank).
    void add(double timeUs, int producerRank, int consumerRank, double transferUs)
    {
        int src = -1;
        if (producerRank != consumerRank) {
            src = producerRank;
            timeUs += transferUs;
        }
        const bool tieToRank = timeUs == readyUs && src >= 0 && (fromRank < 0 || src < fromRank);
        if (timeUs > readyUs || tieToRank) {
            readyUs = timeUs;
            fromRank = src;
        }
    }
};

struct RankState {
    std::size_t pos = 0; ///< next slot in the rank's list
    bool inSlot = false; ///< computing its slot
    bool scheduled = false; ///< its slot's inputs are known, the last one still in flight
    int threadsLeft = 0; ///< halves of the current slot still computing
    double freeUs = 0.0; ///< end of the last slot
    double busyUs = 0.0;
    SlotTiming current; ///< the slot in progress
    std::vector<SlotTiming> timing; ///< one per slot run, in list order
};

/// A computing thread: it finishes when the work done per thread reaches `doneAt` (µs of work).
struct Thread {
    double doneAt = 0.0;
    int rank = 0;
    bool operator>(const Thread& o) const { return doneAt != o.doneAt ? doneAt > o.doneAt : rank > o.rank; }
};

/// A slot whose inputs are all known, starting at `timeUs`.
struct Start {
    double timeUs = 0.0;
    int rank = 0;
    bool operator>(const Start& o) const { return timeUs != o.timeUs ? timeUs > o.timeUs : rank > o.rank; }
};

class FluidKernel {
public:
    FluidKernel(const Schedule& schedule, const CostModel& costs, int cores, bool spin, std::uint64_t variationDraw)
        : m_schedule(schedule)
        , m_costs(costs)
        , m_cores(static_cast<double>(cores))
        , m_spin(spin)
        , m_variationDraw(variationDraw)
    {
        inferSizes();
        const std::size_t keys = static_cast<std::size_t>(m_stages) * static_cast<std::size_t>(m_microbatches);
        m_forward.assign(keys, Production {});
        m_gradient.assign(keys, Production {});
        m_inputGradDone.assign(keys, 0);
        m_rank.resize(schedule.order.size());
        m_nextWaiter.assign(schedule.order.size(), -1);
        for (std::size_t r = 0; r < m_rank.size(); ++r)
            m_rank[r].timing.reserve(schedule.order[r].size());
    }

    /// Runs the step; false when some rank could not finish its list (never for a schedule simulate() runs
    /// without a deadlock: the dependencies are the same).
    bool run()
    {
        const int ranks = static_cast<int>(m_rank.size());
        for (int r = 0; r < ranks; ++r)
            m_tries.push_back(r);
        processTries();
        while (!m_threads.empty() || !m_starts.empty()) {
            const double computing = static_cast<double>(m_threads.size());
            const double k = computing + (m_spin ? static_cast<double>(ranks - m_ranksInSlot) : 0.0);
            const double rate = computing > 0.0 ? std::min(1.0, m_cores / k) : 0.0;
            const double doneUs = computing > 0.0 ? m_nowUs + (m_threads.top().doneAt - m_work) / rate : kInfinity;
            const double startUs = m_starts.empty() ? kInfinity : m_starts.top().timeUs;
            if (doneUs <= startUs) {
                m_work = m_threads.top().doneAt;
                m_nowUs = doneUs;
            } else {
                m_work += rate * (startUs - m_nowUs);
                m_nowUs = startUs;
            }
            // Threads whose end lies within rounding of now end now (equal work started together).
            const double tolerance = 1e-12 * std::max(1.0, std::abs(m_work));
            while (!m_threads.empty() && m_threads.top().doneAt <= m_work + tolerance) {
                const int r = m_threads.top().rank;
                m_threads.pop();
                if (--m_rank[static_cast<std::size_t>(r)].threadsLeft == 0)
                    finishSlot(r);
            }
            while (!m_starts.empty() && m_starts.top().timeUs <= m_nowUs) {
                const int r = m_starts.top().rank;
                m_starts.pop();
                begin(r);
            }
            processTries();
        }
        for (std::size_t r = 0; r < m_rank.size(); ++r)
            if (m_rank[r].pos < m_schedule.order[r].size())
                return false;
        return true;
    }

    /// Busy time, timing and makespan into `result` (whose other fields are simulate()'s); retimes the memory
    /// curve: point 0 at time 0, then one point per op at its slot's end, in list order, and a point after those
    /// (the step's replica gradient sum without EngineBuffers, CostModel::engineReplicaSum) at the rank's end.
    void fill(SimResult& result, bool recordTiming)
    {
        double makespan = 0.0;
        for (const RankState& st : m_rank)
            makespan = std::max(makespan, st.freeUs);
        result.makespanUs = makespan;
        double idle = 0.0;
        for (std::size_t r = 0; r < m_rank.size(); ++r) {
            RankResult& rr = result.ranks[r];
            rr.busyUs = m_rank[r].busyUs;
            rr.idleUs = makespan - rr.busyUs;
            rr.endUs = m_rank[r].freeUs;
            idle += rr.idleUs;
            if (!rr.memory.empty()) {
                std::size_t point = 1;
                const auto& row = m_schedule.order[r];
                for (std::size_t i = 0; i < row.size(); ++i)
                    for (int h = 0; h < row[i].size() && point < rr.memory.size(); ++h)
                        rr.memory[point++].timeUs = m_rank[r].timing[i].endUs;
                for (; point < rr.memory.size(); ++point)
                    rr.memory[point].timeUs = m_rank[r].freeUs;
            }
        }
        const double capacity = makespan * static_cast<double>(m_rank.size());
        result.bubbleRate = capacity > 0.0 ? idle / capacity : 0.0;
        result.timing.clear();
        if (recordTiming)
            for (RankState& st : m_rank)
                result.timing.push_back(std::move(st.timing));
    }

private:
    /// Stages and microbatches: the schedule's own, or inferred from its ops when unset (as simulate()).
    void inferSizes()
    {
        const SimSizes sizes = simulatedSizes(m_schedule);
        m_stages = sizes.stages;
        m_microbatches = sizes.microbatches;
    }

    const StageCost& stageCost(int s) const
    {
        static const StageCost defaults {};
        return static_cast<std::size_t>(s) < m_costs.stages.size() ? m_costs.stages[static_cast<std::size_t>(s)]
                                                                   : defaults;
    }

    std::size_t key(int stage, int microbatch) const
    {
        return static_cast<std::size_t>(stage) * static_cast<std::size_t>(m_microbatches)
            + static_cast<std::size_t>(microbatch);
    }

    /// Work of a single op at full speed (µs).
    double opWork(const Op& op) const
    {
        const StageCost& c = stageCost(op.stage);
        switch (op.kind) {
        case OpKind::F:
            return c.forwardUs;
        case OpKind::I:
            return c.inputGradUs;
        case OpKind::W:
            return c.weightGradUs;
        case OpKind::B:
            return c.backward();
        }
        return 0.0;
    }

    /// Works of the two halves of an overlapped slot (µs): D and clamp(F + B − D, 0, D), D the slot's flat
    /// time; cached per (forward stage, backward stage).
    std::pair<double, double> overlapWork(int fStage, int bStage)
    {
        const std::size_t pair
            = static_cast<std::size_t>(fStage) * static_cast<std::size_t>(m_stages) + static_cast<std::size_t>(bStage);
        const auto [it, inserted] = m_overlapWork.try_emplace(pair);
        if (inserted) {
            const StageCost& f = stageCost(fStage);
            const StageCost& b = stageCost(bStage);
            const double d = m_costs.overlapTime(f, b);
            it->second = { d, std::clamp(f.forwardUs + b.backward() - d, 0.0, std::max(d, 0.0)) };
        }
        return it->second;
    }

    /// Parks rank r on `awaited`; always false.
    bool park(int r, Production& awaited)
    {
        m_nextWaiter[static_cast<std::size_t>(r)] = awaited.waitHead;
        awaited.waitHead = r;
        return false;
    }

    /// Adds op's inputs to `arrival`; false (rank parked) when one has not been produced yet.
    bool gather(int r, const Op& op, Arrival& arrival)
    {
        switch (op.kind) {
        case OpKind::F: {
            if (op.stage == 0)
                return true;
            const Production& prev = m_forward[key(op.stage - 1, op.microbatch)];
            if (!prev.produced())
                return park(r, m_forward[key(op.stage - 1, op.microbatch)]);
            arrival.add(
                prev.endUs, prev.rank, r, m_costs.transferTime(stageCost(op.stage - 1).messageBytes, prev.rank, r));
            return true;
        }
        case OpKind::I:
        case OpKind::B: {
            const std::size_t k = key(op.stage, op.microbatch);
            if (!m_forward[k].produced())
                return park(r, m_forward[k]);
            if (op.stage < m_stages - 1) {
                const Production& next = m_gradient[k + static_cast<std::size_t>(m_microbatches)];
                if (!next.produced())
                    return park(r, m_gradient[k + static_cast<std::size_t>(m_microbatches)]);
                arrival.add(
                    next.endUs, next.rank, r, m_costs.transferTime(stageCost(op.stage).messageBytes, next.rank, r));
            }
            arrival.add(m_forward[k].endUs, r, r, 0.0);
            return true;
        }
        case OpKind::W: {
            const std::size_t k = key(op.stage, op.microbatch);
            return m_inputGradDone[k] != 0 || park(r, m_gradient[k]);
        }
        }
        return true;
    }

    /// Tries to start the next slot of every rank in m_tries (free now): begins it now, schedules its start
    /// when an input is still in flight, or parks the rank on the input not produced yet.
    void processTries()
    {
        while (!m_tries.empty()) {
            const int r = m_tries.back();
            m_tries.pop_back();
            RankState& st = m_rank[static_cast<std::size_t>(r)];
            const auto& row = m_schedule.order[static_cast<std::size_t>(r)];
            if (st.inSlot || st.scheduled || st.pos >= row.size())
                continue;
            const Action& a = row[st.pos];
            Arrival arrival;
            if (!gather(r, a.op, arrival) || (a.overlapped && !gather(r, a.backward, arrival)))
                continue;
            st.current = SlotTiming { std::max(st.freeUs, arrival.readyUs), 0.0, arrival.readyUs, arrival.fromRank };
            if (st.current.startUs <= m_nowUs) {
                begin(r);
            } else {
                st.scheduled = true;
                m_starts.push(Start { st.current.startUs, r });
            }
        }
    }

    /// Rank r starts its slot now: its halves join the computing threads (a slot of no work ends at once).
    void begin(int r)
    {
        RankState& st = m_rank[static_cast<std::size_t>(r)];
        const Action& a = m_schedule.order[static_cast<std::size_t>(r)][st.pos];
        st.scheduled = false;
        st.inSlot = true;
        ++m_ranksInSlot;
        st.current.startUs = std::max(st.current.startUs, m_nowUs);
        double work[2] = { 0.0, 0.0 };
        if (a.overlapped)
            std::tie(work[0], work[1]) = overlapWork(a.op.stage, a.backward.stage);
        else
            work[0] = opWork(a.op);
        if (m_variationDraw != 0) {
            const double factor = slotVariationFactor(m_costs.slotVariation, m_variationDraw, r, st.pos);
            work[0] *= factor;
            work[1] *= factor;
        }
        st.threadsLeft = 0;
        for (double w : work)
            if (w > 0.0) {
                m_threads.push(Thread { m_work + w, r });
                ++st.threadsLeft;
            }
        if (st.threadsLeft == 0)
            finishSlot(r);
    }

    /// Rank r's slot ends now: its outputs are produced, the ranks waiting for them and r itself try again.
    void finishSlot(int r)
    {
        RankState& st = m_rank[static_cast<std::size_t>(r)];
        const Action& a = m_schedule.order[static_cast<std::size_t>(r)][st.pos];
        st.current.endUs = m_nowUs;
        st.busyUs += st.current.endUs - st.current.startUs;
        st.freeUs = m_nowUs;
        st.timing.push_back(st.current);
        st.inSlot = false;
        --m_ranksInSlot;
        st.pos++;
        for (int h = 0; h < a.size(); ++h)
            produce(r, a.at(h));
        m_tries.push_back(r);
    }

    void produce(int r, const Op& op)
    {
        if (op.kind == OpKind::W)
            return;
        const std::size_t k = key(op.stage, op.microbatch);
        Production& made = op.kind == OpKind::F ? m_forward[k] : m_gradient[k];
        made.endUs = m_nowUs;
        made.rank = r;
        if (op.kind == OpKind::I)
            m_inputGradDone[k] = 1;
        for (int w = made.waitHead; w >= 0;) {
            const int next = m_nextWaiter[static_cast<std::size_t>(w)];
            m_nextWaiter[static_cast<std::size_t>(w)] = -1;
            m_tries.push_back(w);
            w = next;
        }
        made.waitHead = -1;
    }

    const Schedule& m_schedule;
    const CostModel& m_costs;
    double m_cores;
    bool m_spin;
    std::uint64_t m_variationDraw; ///< SimOptions::variationDraw
    int m_stages = 0;
    int m_microbatches = 0;
    double m_nowUs = 0.0;
    double m_work = 0.0; ///< work done by one thread computing since time 0 (µs at full speed)
    int m_ranksInSlot = 0; ///< ranks computing a slot (the others wait)
    std::vector<Production> m_forward; ///< F(s, m) by key(s, m)
    std::vector<Production> m_gradient; ///< I or B(s, m)
    std::vector<std::uint8_t> m_inputGradDone; ///< whether I(s, m) ran
    std::vector<int> m_nextWaiter; ///< next rank parked on the same production, −1 none
    std::vector<RankState> m_rank;
    std::vector<int> m_tries; ///< ranks free now that may start their next slot
    std::priority_queue<Thread, std::vector<Thread>, std::greater<>> m_threads;
    std::priority_queue<Start, std::vector<Start>, std::greater<>> m_starts;
    std::unordered_map<std::size_t, std::pair<double, double>> m_overlapWork;
};

} // namespace

SimResult simulateSharedCores(
    const Schedule& schedule, const CostModel& costs, const SharedCoresOptions& options, const SimOptions& simOptions)
{
    if (options.cores < 1)
        throw ConstraintError("shared-cores.cores", "cores: must be at least 1, got " + std::to_string(options.cores));
    if (options.cores >= peakComputeThreads(schedule))
        return simulate(schedule, costs, simOptions);
    SimOptions untimed = simOptions;
    untimed.recordTiming = false;
    SimResult result = simulate(schedule, costs, untimed);
    if (result.deadlocked)
        return simulate(schedule, costs, simOptions);
    const int ranks = static_cast<int>(schedule.order.size());
    FluidKernel kernel(schedule, costs, options.cores, waitingRanksSpin(options.waiting, ranks, options.cores),
        simOptions.variationDraw);
    if (!kernel.run()) // unreachable: simulate() ran the same dependencies to the end
        return simulate(schedule, costs, simOptions);
    kernel.fill(result, simOptions.recordTiming);
    return result;
}

} // namespace dps
