#include "backend.h"

#include <utility>

namespace dps::runtime {

namespace {
std::size_t index(MemoryCategory category)
{
    return static_cast<std::size_t>(category);
}
} // namespace

void MemoryCounter::add(MemoryCategory category, std::size_t bytes)
{
    const auto n = static_cast<std::int64_t>(bytes);
    m_live[index(category)].fetch_add(n, std::memory_order_relaxed);
    const std::int64_t total = m_total.fetch_add(n, std::memory_order_relaxed) + n;
    std::int64_t peak = m_peak.load(std::memory_order_relaxed);
    while (total > peak && !m_peak.compare_exchange_weak(peak, total, std::memory_order_relaxed)) { }
}

void MemoryCounter::remove(MemoryCategory category, std::size_t bytes)
{
    const auto n = static_cast<std::int64_t>(bytes);
    m_live[index(category)].fetch_sub(n, std::memory_order_relaxed);
    m_total.fetch_sub(n, std::memory_order_relaxed);
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
