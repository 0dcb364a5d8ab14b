#include "devicememory.h"

#include <cstdio>

namespace dps::runtime {

namespace {

std::string mib(std::size_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return text;
}

} // namespace

CachingDeviceAllocator::CachingDeviceAllocator(DeviceMemoryApi& device, MemoryCounter& counter)
    : m_device(device)
    , m_counter(counter)
{
}

CachingDeviceAllocator::~CachingDeviceAllocator()
{
    std::lock_guard lock(m_mutex);
    try {
        releaseCachedLocked(false);
    } catch (...) {
    }
    if (!m_live.empty())
        std::fprintf(
            stderr, "dps cuda allocator: %zu blocks (%zu bytes) still live at shutdown\n", m_live.size(), m_liveBytes);
}

std::size_t CachingDeviceAllocator::roundUp(std::size_t bytes)
{
    return (bytes + kGranularity - 1) / kGranularity * kGranularity;
}

CachingDeviceAllocator::Block CachingDeviceAllocator::takeCached(std::size_t rounded)
{
    auto [first, last] = m_cache.equal_range(rounded);
    for (auto it = first; it != last; ++it) {
        if (!m_device.fencePassed(it->second.fence))
            continue;
        void* ptr = it->second.ptr;
        m_device.releaseFence(it->second.fence);
        m_cache.erase(it);
        m_cachedBytes -= rounded;
        return { ptr, rounded };
    }
    return {};
}

CachingDeviceAllocator::Block CachingDeviceAllocator::takeFitting(std::size_t rounded)
{
    for (auto it = m_cache.lower_bound(rounded); it != m_cache.end(); ++it) {
        if (!m_device.fencePassed(it->second.fence))
            continue;
        const Block block { it->second.ptr, it->first };
        m_device.releaseFence(it->second.fence);
        m_cache.erase(it);
        m_cachedBytes -= block.bytes;
        return block;
    }
    return {};
}

CachingDeviceAllocator::Block CachingDeviceAllocator::allocateRaw(std::size_t rounded, std::size_t requested)
{
    void* ptr = m_device.rawAllocate(rounded);
    if (!ptr && !m_cache.empty()) {
        // (1) A larger block we already hold, (2) the same after our lanes caught up, (3) empty the cache.
        if (const Block block = takeFitting(rounded); block.ptr)
            return block;
        m_device.synchronizeStreams();
        ++m_pressureSyncs;
        if (const Block block = takeFitting(rounded); block.ptr)
            return block;
        releaseCachedLocked(true);
        ++m_cacheFlushes;
        ptr = m_device.rawAllocate(rounded);
    }
    if (!ptr)
        throw RuntimeError(outOfMemoryText(requested));
    m_reservedBytes += rounded;
    ++m_rawAllocations;
    return { ptr, rounded };
}

void* CachingDeviceAllocator::allocate(std::size_t bytes, MemoryCategory category)
{
    if (bytes == 0)
        throw RuntimeError("cuda allocator: allocation of 0 bytes");
    const std::size_t rounded = roundUp(bytes);
    std::lock_guard lock(m_mutex);
    Block block = takeCached(rounded);
    if (!block.ptr)
        block = allocateRaw(rounded, bytes);
    m_live.emplace(block.ptr, Live { bytes, block.bytes });
    m_liveBytes += bytes;
    m_counter.add(category, bytes);
    return block.ptr;
}

void CachingDeviceAllocator::deallocate(void* ptr, std::size_t bytes, MemoryCategory category)
{
    std::lock_guard lock(m_mutex);
    const auto it = m_live.find(ptr);
    if (it == m_live.end())
        throw RuntimeError("cuda allocator: freeing a pointer it did not allocate (or freeing it twice)");
    if (it->second.requested != bytes)
        throw RuntimeError("cuda allocator: freeing " + std::to_string(bytes) + " bytes of a block of "
            + std::to_string(it->second.requested) + " bytes");
    const std::size_t block = it->second.block;
    m_live.erase(it);
    m_liveBytes -= bytes;
    m_counter.remove(category, bytes);
    m_cache.emplace(block, Cached { ptr, m_device.recordFence() });
    m_cachedBytes += block;
}

void CachingDeviceAllocator::releaseCachedLocked(bool lanesIdle)
{
    if (m_cache.empty())
        return;
    if (!lanesIdle)
        m_device.synchronizeStreams();
    for (auto& [rounded, block] : m_cache) {
        m_device.releaseFence(block.fence);
        m_device.rawFree(block.ptr);
        m_reservedBytes -= rounded;
    }
    m_cache.clear();
    m_cachedBytes = 0;
}

void CachingDeviceAllocator::releaseCached()
{
    std::lock_guard lock(m_mutex);
    releaseCachedLocked(false);
}

std::string CachingDeviceAllocator::outOfMemoryText(std::size_t requested) const
{
    const auto [freeBytes, totalBytes] = m_device.deviceMemoryInfo();
    return "cuda: out of device memory allocating " + mib(requested) + " (live in our allocator " + mib(m_liveBytes)
        + ", device free " + mib(freeBytes) + " of " + mib(totalBytes) + ")";
}

std::size_t CachingDeviceAllocator::liveBytes() const
{
    std::lock_guard lock(m_mutex);
    return m_liveBytes;
}

std::size_t CachingDeviceAllocator::reservedBytes() const
{
    std::lock_guard lock(m_mutex);
    return m_reservedBytes;
}

std::size_t CachingDeviceAllocator::cachedBytes() const
{
    std::lock_guard lock(m_mutex);
    return m_cachedBytes;
}

std::size_t CachingDeviceAllocator::rawAllocations() const
{
    std::lock_guard lock(m_mutex);
    return m_rawAllocations;
}

std::size_t CachingDeviceAllocator::pressureSyncs() const
{
    std::lock_guard lock(m_mutex);
    return m_pressureSyncs;
}

std::size_t CachingDeviceAllocator::cacheFlushes() const
{
    std::lock_guard lock(m_mutex);
    return m_cacheFlushes;
}

} // namespace dps::runtime
