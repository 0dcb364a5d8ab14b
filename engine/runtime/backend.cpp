#include "backend.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace dps::runtime {

namespace {
std::size_t index(MemoryCategory category)
{
    return static_cast<std::size_t>(category);
}

/// The lane the calling thread allocates for (MemoryCounter::LaneScope).
thread_local int t_lane = 0;

/// Raises `peak` to at least `value`.
void raise(std::atomic<std::int64_t>& peak, std::int64_t value)
{
    std::int64_t current = peak.load(std::memory_order_relaxed);
    while (value > current && !peak.compare_exchange_weak(current, value, std::memory_order_relaxed)) { }
}
} // namespace

MemoryCounter::LaneScope::LaneScope(int lane)
    : m_previous(t_lane)
{
    t_lane = lane == 1 ? 1 : 0;
}

MemoryCounter::LaneScope::~LaneScope()
{
    t_lane = m_previous;
}

void MemoryCounter::add(MemoryCategory category, std::size_t bytes)
{
    const auto n = static_cast<std::int64_t>(bytes);
    m_live[index(category)].fetch_add(n, std::memory_order_relaxed);
    const std::int64_t total = m_total.fetch_add(n, std::memory_order_relaxed) + n;
    raise(m_peak, total);
    if (m_lanes.load(std::memory_order_relaxed)) {
        // Only the lane's own thread writes its counters.
        auto& net = m_laneNet[static_cast<std::size_t>(t_lane)];
        const std::int64_t now = net.load(std::memory_order_relaxed) + n;
        net.store(now, std::memory_order_relaxed);
        raise(m_laneHigh[static_cast<std::size_t>(t_lane)], now);
    }
}

void MemoryCounter::remove(MemoryCategory category, std::size_t bytes)
{
    const auto n = static_cast<std::int64_t>(bytes);
    m_live[index(category)].fetch_sub(n, std::memory_order_relaxed);
    m_total.fetch_sub(n, std::memory_order_relaxed);
    if (m_lanes.load(std::memory_order_relaxed)) {
        auto& net = m_laneNet[static_cast<std::size_t>(t_lane)];
        net.store(net.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
    }
}

void MemoryCounter::beginLanes()
{
    for (int lane = 0; lane < 2; ++lane) {
        m_laneNet[static_cast<std::size_t>(lane)].store(0, std::memory_order_relaxed);
        m_laneHigh[static_cast<std::size_t>(lane)].store(0, std::memory_order_relaxed);
    }
    m_lanesBase = m_total.load(std::memory_order_relaxed);
    m_lanes.store(true, std::memory_order_release);
}

std::size_t MemoryCounter::endLanes()
{
    m_lanes.store(false, std::memory_order_release);
    const std::int64_t bound
        = m_lanesBase + m_laneHigh[0].load(std::memory_order_acquire) + m_laneHigh[1].load(std::memory_order_acquire);
    raise(m_peak, bound);
    return static_cast<std::size_t>(bound);
}

void MemoryCounter::move(MemoryCategory from, MemoryCategory to, std::size_t bytes)
{
    const auto n = static_cast<std::int64_t>(bytes);
    m_live[index(from)].fetch_sub(n, std::memory_order_relaxed);
    m_live[index(to)].fetch_add(n, std::memory_order_relaxed);
}

std::size_t MemoryCounter::live(MemoryCategory category) const
{
    return static_cast<std::size_t>(m_live[index(category)].load(std::memory_order_relaxed));
}

std::size_t MemoryCounter::total() const
{
    return static_cast<std::size_t>(m_total.load(std::memory_order_relaxed));
}

std::size_t MemoryCounter::peak() const
{
    return static_cast<std::size_t>(m_peak.load(std::memory_order_relaxed));
}

void MemoryCounter::resetPeak()
{
    m_peak.store(m_total.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

double LaneActivity::clockUs() const
{
    if (m_clock)
        return m_clock();
    const auto ns
        = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
              .count();
    return static_cast<double>(ns) / 1000.0;
}

double LaneActivity::now() const
{
    return clockUs() - m_originUs;
}

void LaneActivity::setClock(std::function<double()> nowUs)
{
    m_clock = std::move(nowUs);
}

void LaneActivity::begin()
{
    m_lanes = {};
    m_originUs = clockUs();
}

void LaneActivity::laneStarted()
{
    LaneRecord& r = m_lanes[static_cast<std::size_t>(t_lane)];
    r.ran = true;
    r.span = { now(), now() };
}

void LaneActivity::laneFinished()
{
    m_lanes[static_cast<std::size_t>(t_lane)].span.endUs = now();
}

void LaneActivity::commStarted()
{
    const double t = now();
    m_lanes[static_cast<std::size_t>(t_lane)].comm.push_back({ t, t });
}

void LaneActivity::commFinished()
{
    auto& comm = m_lanes[static_cast<std::size_t>(t_lane)].comm;
    if (!comm.empty())
        comm.back().endUs = now();
}

double LaneActivity::commUs() const
{
    double total = 0.0;
    for (const LaneRecord& r : m_lanes)
        for (const Interval& c : r.comm)
            total += c.endUs - c.startUs;
    return total;
}

double LaneActivity::hiddenCommUs() const
{
    return hiddenCommUs(m_lanes[0], m_lanes[1]) + hiddenCommUs(m_lanes[1], m_lanes[0]);
}

double LaneActivity::hiddenCommUs(const LaneRecord& lane, const LaneRecord& other)
{
    if (!lane.ran || !other.ran)
        return 0.0;
    double hidden = 0.0;
    for (const Interval& c : lane.comm) {
        // The part of c inside the other lane's span, less the other lane's own communication in it.
        const double start = std::max(c.startUs, other.span.startUs);
        const double end = std::min(c.endUs, other.span.endUs);
        if (end <= start)
            continue;
        double busy = end - start;
        for (const Interval& o : other.comm)
            busy -= std::max(0.0, std::min(end, o.endUs) - std::max(start, o.startUs));
        hidden += std::max(0.0, busy);
    }
    return hidden;
}

void Backend::communicationStarted()
{
    m_activity.commStarted();
    yieldCompute();
}

void Backend::communicationFinished()
{
    m_activity.commFinished(); // the messages are done; waiting for the compute turn is not communication
    resumeCompute();
}

Tensor::Tensor(Backend& backend, std::size_t rows, std::size_t cols, MemoryCategory category)
    : m_backend(&backend)
    , m_rows(rows)
    , m_cols(cols)
    , m_bytes(rows * cols * static_cast<std::size_t>(backend.elementBytes()))
    , m_category(category)
{
    if (m_bytes > 0)
        m_data = backend.allocate(m_bytes, category);
}

Tensor::Tensor(Tensor&& other) noexcept
    : m_backend(std::exchange(other.m_backend, nullptr))
    , m_data(std::exchange(other.m_data, nullptr))
    , m_rows(std::exchange(other.m_rows, 0))
    , m_cols(std::exchange(other.m_cols, 0))
    , m_bytes(std::exchange(other.m_bytes, 0))
    , m_category(other.m_category)
{
}

Tensor& Tensor::operator=(Tensor&& other) noexcept
{
    if (this != &other) {
        reset();
        m_backend = std::exchange(other.m_backend, nullptr);
        m_data = std::exchange(other.m_data, nullptr);
        m_rows = std::exchange(other.m_rows, 0);
        m_cols = std::exchange(other.m_cols, 0);
        m_bytes = std::exchange(other.m_bytes, 0);
        m_category = other.m_category;
    }
    return *this;
}

void Tensor::recategorize(MemoryCategory category)
{
    if (m_data && category != m_category)
        m_backend->memory().move(m_category, category, m_bytes);
    m_category = category;
}

void Tensor::reset()
{
    if (m_data)
        m_backend->deallocate(m_data, m_bytes, m_category);
    m_data = nullptr;
    m_rows = 0;
    m_cols = 0;
    m_bytes = 0;
}

} // namespace dps::runtime
