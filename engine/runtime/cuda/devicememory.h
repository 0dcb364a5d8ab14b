#pragma once
// The CUDA backend's device allocator (host logic, unit-tested with a fake device).
//
// Live bytes are counted exactly as requested, per category, in the backend's MemoryCounter, so measured
// memory matches the simulator's ledger. Freed blocks are cached by size (rounded to 512 bytes) and reused,
// because cudaFree may synchronize the whole device and would serialize the two lanes; a freed block is
// reused only after a fence recorded at its release (on the backend's compute lanes) has passed (work still
// queued there may read it).
//
// When the device is out of memory: (1) the smallest cached block at least as large whose fence passed is
// taken (no device call at all); (2) else the compute lanes are waited for (synchronizeStreams(): our own
// streams, never the whole device, where NCCL's stream may hold a receive that waits for a peer that waits
// for us) and (1) is tried again; (3) else every cached block is freed and the allocation retried. Buffers
// NCCL's stream uses are released to the cache only once its work on them is done, so waiting for the
// compute lanes is enough for every fence to pass. docs/gpu.md has the remaining caveat of step (3).
#include "runtime/backend.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace dps::runtime {

/// What the allocator needs from a device; CudaBackend implements it with cudaMalloc and events, tests with
/// host memory and a manual clock.
class DeviceMemoryApi {
public:
    using Fence = std::int64_t;

    virtual ~DeviceMemoryApi() = default;
    /// Raw device memory; nullptr when the device is out of memory (other failures throw RuntimeError).
    virtual void* rawAllocate(std::size_t bytes) = 0;
    virtual void rawFree(void* ptr) = 0;
    /// Marks the point after all work issued so far on the backend's compute streams.
    virtual Fence recordFence() = 0;
    /// Whether the device has passed the fence (never blocks).
    virtual bool fencePassed(Fence fence) = 0;
    /// The fence is no longer needed.
    virtual void releaseFence(Fence fence) = 0;
    /// Waits until all work issued on the streams fences are recorded on is done (then every fence has
    /// passed); never waits for other streams of the device (NCCL's).
    virtual void synchronizeStreams() = 0;
    /// Free and total device memory (cudaMemGetInfo), for messages.
    virtual std::pair<std::size_t, std::size_t> deviceMemoryInfo() = 0;
};

class CachingDeviceAllocator {
public:
    /// Block sizes are rounded up to this (also the alignment cudaMalloc gives is at least 256).
    static constexpr std::size_t kGranularity = 512;

    /// Counts live bytes into `counter` (normally Backend::memory()).
    CachingDeviceAllocator(DeviceMemoryApi& device, MemoryCounter& counter);
    /// Frees every cached block; live blocks are leaked with a message on stderr (a Tensor outlived its
    /// backend).
    ~CachingDeviceAllocator();
    CachingDeviceAllocator(const CachingDeviceAllocator&) = delete;
    CachingDeviceAllocator& operator=(const CachingDeviceAllocator&) = delete;

    /// `bytes` > 0 counted under `category`. Under memory pressure takes a larger cached block, waits for the
    /// compute lanes, then empties the cache (file comment). Throws RuntimeError naming the size, live and
    /// free device bytes when the device is out of memory even after emptying the cache.
    void* allocate(std::size_t bytes, MemoryCategory category);
    /// Frees a block from allocate(). `category` is the block's current category (Tensor::recategorize
    /// moves counts without telling the allocator). Throws RuntimeError for an unknown pointer or a size
    /// that differs from the allocation (a bug in the caller).
    void deallocate(void* ptr, std::size_t bytes, MemoryCategory category);

    /// Synchronizes and returns every cached block to the device.
    void releaseCached();

    /// Bytes of live blocks as requested (= counter total when this allocator is its only user).
    std::size_t liveBytes() const;
    /// Bytes held from the device: live and cached blocks, rounded.
    std::size_t reservedBytes() const;
    /// Bytes of cached (free, reusable) blocks.
    std::size_t cachedBytes() const;
    /// Number of raw device allocations so far (reuse keeps it flat).
    std::size_t rawAllocations() const;
    /// Times the out-of-memory path waited for the compute lanes, and times it emptied the cache.
    std::size_t pressureSyncs() const;
    std::size_t cacheFlushes() const;

    static std::size_t roundUp(std::size_t bytes);

private:
    struct Cached {
        void* ptr = nullptr;
        DeviceMemoryApi::Fence fence = 0;
    };
    struct Live {
        std::size_t requested = 0; ///< bytes counted
        std::size_t block = 0; ///< bytes of the block (≥ roundUp(requested) when a larger one was taken)
    };
    struct Block {
        void* ptr = nullptr;
        std::size_t bytes = 0;
    };

    Block takeCached(std::size_t rounded);
    /// The smallest cached block of at least `rounded` bytes whose fence passed; {} when none.
    Block takeFitting(std::size_t rounded);
    Block allocateRaw(std::size_t rounded, std::size_t requested);
    /// Frees every cached block; waits for the compute lanes first unless `lanesIdle` (just waited for).
    void releaseCachedLocked(bool lanesIdle);
    std::string outOfMemoryText(std::size_t requested) const;

    DeviceMemoryApi& m_device;
    MemoryCounter& m_counter;
    mutable std::mutex m_mutex;
    std::map<void*, Live> m_live;
    std::multimap<std::size_t, Cached> m_cache; ///< rounded size → free block, oldest first
    std::size_t m_liveBytes = 0;
    std::size_t m_reservedBytes = 0;
    std::size_t m_cachedBytes = 0;
    std::size_t m_rawAllocations = 0;
    std::size_t m_pressureSyncs = 0;
    std::size_t m_cacheFlushes = 0;
};

} // namespace dps::runtime
