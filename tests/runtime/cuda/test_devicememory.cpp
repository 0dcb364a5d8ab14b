// The CUDA backend's allocator accounting and reuse (devicememory.h) on a fake device: host memory, fences
// that pass when the test says so (or when the lanes are waited for), and a capacity limit.
#include "runtime/backend.h"
#include "runtime/cuda/devicememory.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <thread>
#include <vector>

using namespace dps::runtime;

namespace {

class FakeDevice final : public DeviceMemoryApi {
public:
    explicit FakeDevice(std::size_t capacity)
        : m_capacity(capacity)
    {
    }

    void* rawAllocate(std::size_t bytes) override
    {
        if (m_used + bytes > m_capacity)
            return nullptr;
        void* p = std::malloc(bytes);
        m_blocks[p] = bytes;
        m_used += bytes;
        ++allocations;
        return p;
    }
    void rawFree(void* ptr) override
    {
        m_used -= m_blocks.at(ptr);
        m_blocks.erase(ptr);
        std::free(ptr);
        ++frees;
    }
    Fence recordFence() override
    {
        m_open.insert(m_next);
        return m_next++;
    }
    bool fencePassed(Fence fence) override { return fence < m_passedBelow; }
    void releaseFence(Fence fence) override
    {
        if (!m_open.erase(fence))
            ADD_FAILURE() << "fence " << fence << " released twice";
    }
    void synchronizeStreams() override
    {
        m_passedBelow = m_next;
        ++syncs;
    }
    std::pair<std::size_t, std::size_t> deviceMemoryInfo() override { return { m_capacity - m_used, m_capacity }; }

    /// The device catches up with everything issued so far.
    void catchUp() { m_passedBelow = m_next; }
    std::size_t used() const { return m_used; }
    std::size_t openFences() const { return m_open.size(); }

    int allocations = 0;
    int frees = 0;
    int syncs = 0;

private:
    std::size_t m_capacity;
    std::size_t m_used = 0;
    std::map<void*, std::size_t> m_blocks;
    Fence m_next = 0;
    Fence m_passedBelow = 0;
    std::set<Fence> m_open;
};

} // namespace

TEST(DeviceMemory, CountsRequestedBytesPerCategoryExactly)
{
    FakeDevice device(1 << 20);
    MemoryCounter counter;
    CachingDeviceAllocator allocator(device, counter);
    void* a = allocator.allocate(1000, MemoryCategory::Activation);
    void* p = allocator.allocate(4096, MemoryCategory::Parameter);
    EXPECT_EQ(counter.live(MemoryCategory::Activation), 1000u);
    EXPECT_EQ(counter.live(MemoryCategory::Parameter), 4096u);
    EXPECT_EQ(counter.total(), 5096u);
    EXPECT_EQ(allocator.liveBytes(), 5096u);
    EXPECT_EQ(allocator.reservedBytes(), 1024u + 4096u); // rounded to 512
    allocator.deallocate(a, 1000, MemoryCategory::Activation);
    EXPECT_EQ(counter.total(), 4096u);
    EXPECT_EQ(counter.peak(), 5096u);
    EXPECT_EQ(allocator.cachedBytes(), 1024u);
    allocator.deallocate(p, 4096, MemoryCategory::Parameter);
    EXPECT_EQ(counter.total(), 0u);
}

TEST(DeviceMemory, ReusesABlockOnlyAfterItsFencePassed)
{
    FakeDevice device(1 << 20);
    MemoryCounter counter;
    CachingDeviceAllocator allocator(device, counter);
    void* a = allocator.allocate(700, MemoryCategory::Workspace);
    allocator.deallocate(a, 700, MemoryCategory::Workspace);
    void* b = allocator.allocate(700, MemoryCategory::Workspace); // work that may read `a` is still queued
    EXPECT_NE(a, b);
    EXPECT_EQ(device.allocations, 2);
    device.catchUp();
    void* c = allocator.allocate(600, MemoryCategory::Activation); // same rounded size, fence passed
    EXPECT_EQ(c, a);
    EXPECT_EQ(device.allocations, 2);
    EXPECT_EQ(allocator.rawAllocations(), 2u);
    allocator.deallocate(b, 700, MemoryCategory::Workspace);
    allocator.deallocate(c, 600, MemoryCategory::Activation);
    EXPECT_EQ(counter.total(), 0u);
}

TEST(DeviceMemory, RepeatedStepsStopAllocatingFromTheDevice)
{
    FakeDevice device(64 << 20);
    MemoryCounter counter;
    CachingDeviceAllocator allocator(device, counter);
    const std::vector<std::size_t> sizes { 4096, 65536, 4096, 12345, 65536 };
    for (int step = 0; step < 5; ++step) {
        std::vector<void*> live;
        for (std::size_t s : sizes)
            live.push_back(allocator.allocate(s, MemoryCategory::Activation));
        for (std::size_t i = 0; i < sizes.size(); ++i)
            allocator.deallocate(live[i], sizes[i], MemoryCategory::Activation);
        device.catchUp(); // the executor synchronizes between actions
    }
    EXPECT_EQ(device.allocations, static_cast<int>(sizes.size()));
    EXPECT_EQ(counter.total(), 0u);
}

TEST(DeviceMemory, OutOfMemoryEmptiesTheCacheThenRetries)
{
    FakeDevice device(8192);
    MemoryCounter counter;
    CachingDeviceAllocator allocator(device, counter);
    void* a = allocator.allocate(4096, MemoryCategory::Activation);
    allocator.deallocate(a, 4096, MemoryCategory::Activation); // cached, its fence not passed
    void* b = allocator.allocate(6000, MemoryCategory::Activation); // needs the cached block's room
    EXPECT_NE(b, nullptr);
    EXPECT_EQ(device.syncs, 1); // the lanes, once: no cached block is large enough, so the cache goes
    EXPECT_EQ(device.frees, 1);
    EXPECT_EQ(allocator.pressureSyncs(), 1u);
    EXPECT_EQ(allocator.cacheFlushes(), 1u);
    EXPECT_EQ(allocator.cachedBytes(), 0u);
    EXPECT_EQ(allocator.reservedBytes(), 6144u);
    EXPECT_EQ(device.openFences(), 0u);
    allocator.deallocate(b, 6000, MemoryCategory::Activation);
}

TEST(DeviceMemory, UnderPressureALargerCachedBlockServesBeforeAnyWaitOrFree)
{
    FakeDevice device(8192);
    MemoryCounter counter;
    CachingDeviceAllocator allocator(device, counter);
    void* p = allocator.allocate(2048, MemoryCategory::Parameter);
    void* a = allocator.allocate(6000, MemoryCategory::Activation); // a 6144-byte block: the device is full
    allocator.deallocate(a, 6000, MemoryCategory::Activation);
    device.catchUp(); // the work that read `a` is done
    // 3072 bytes: no cached block of that size, no room on the device; the 6144-byte block serves.
    void* c = allocator.allocate(3000, MemoryCategory::Workspace);
    EXPECT_EQ(c, a);
    EXPECT_EQ(device.syncs, 0);
    EXPECT_EQ(device.frees, 0);
    EXPECT_EQ(device.allocations, 2);
    EXPECT_EQ(counter.total(), 2048u + 3000u); // the count stays the bytes asked for
    EXPECT_EQ(allocator.reservedBytes(), 8192u);
    EXPECT_EQ(allocator.cachedBytes(), 0u);
    // Freed, it goes back to the cache as the 6144-byte block it is.
    allocator.deallocate(c, 3000, MemoryCategory::Workspace);
    EXPECT_EQ(allocator.cachedBytes(), 6144u);
    // Its fence has not passed: the lanes are waited for (not the device), and the block serves again.
    void* d = allocator.allocate(6000, MemoryCategory::Activation);
    EXPECT_EQ(d, a);
    EXPECT_EQ(device.syncs, 1);
    EXPECT_EQ(device.frees, 0);
    EXPECT_EQ(allocator.pressureSyncs(), 1u);
    EXPECT_EQ(allocator.cacheFlushes(), 0u);
    EXPECT_EQ(counter.total(), 2048u + 6000u);
    allocator.deallocate(d, 6000, MemoryCategory::Activation);
    allocator.deallocate(p, 2048, MemoryCategory::Parameter);
    EXPECT_EQ(counter.total(), 0u);
}

TEST(DeviceMemory, OutOfMemoryForRealNamesTheFigures)
{
    FakeDevice device(4096);
    MemoryCounter counter;
    CachingDeviceAllocator allocator(device, counter);
    void* a = allocator.allocate(2048, MemoryCategory::Parameter);
    try {
        allocator.allocate(1 << 20, MemoryCategory::Activation);
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("out of device memory allocating 1.0 MiB"), std::string::npos) << what;
        EXPECT_NE(what.find("device free"), std::string::npos) << what;
    }
    EXPECT_EQ(counter.total(), 2048u);
    allocator.deallocate(a, 2048, MemoryCategory::Parameter);
}

TEST(DeviceMemory, MisuseIsCaught)
{
    FakeDevice device(1 << 20);
    MemoryCounter counter;
    CachingDeviceAllocator allocator(device, counter);
    EXPECT_THROW(allocator.allocate(0, MemoryCategory::Workspace), RuntimeError);
    void* a = allocator.allocate(100, MemoryCategory::Workspace);
    EXPECT_THROW(allocator.deallocate(a, 99, MemoryCategory::Workspace), RuntimeError);
    allocator.deallocate(a, 100, MemoryCategory::Workspace);
    EXPECT_THROW(allocator.deallocate(a, 100, MemoryCategory::Workspace), RuntimeError);
    int onStack = 0;
    EXPECT_THROW(allocator.deallocate(&onStack, 4, MemoryCategory::Workspace), RuntimeError);
    EXPECT_EQ(counter.total(), 0u);
}

TEST(DeviceMemory, RecategorizedTensorsFreeUnderTheirNewCategory)
{
    // Tensor::recategorize moves the count in the counter only; the allocator accepts the new category.
    FakeDevice device(1 << 20);
    MemoryCounter counter;
    CachingDeviceAllocator allocator(device, counter);
    void* a = allocator.allocate(512, MemoryCategory::Communication);
    counter.move(MemoryCategory::Communication, MemoryCategory::Activation, 512);
    allocator.deallocate(a, 512, MemoryCategory::Activation);
    EXPECT_EQ(counter.live(MemoryCategory::Activation), 0u);
    EXPECT_EQ(counter.live(MemoryCategory::Communication), 0u);
}

TEST(DeviceMemory, ReleaseCachedReturnsEverythingAndDestructionFreesTheCache)
{
    FakeDevice device(1 << 20);
    {
        MemoryCounter counter;
        CachingDeviceAllocator allocator(device, counter);
        for (std::size_t s : { 512u, 1024u, 2048u }) {
            void* p = allocator.allocate(s, MemoryCategory::Workspace);
            allocator.deallocate(p, s, MemoryCategory::Workspace);
        }
        EXPECT_EQ(allocator.cachedBytes(), 3584u);
        allocator.releaseCached();
        EXPECT_EQ(allocator.reservedBytes(), 0u);
        EXPECT_EQ(device.used(), 0u);
        void* q = allocator.allocate(4096, MemoryCategory::Workspace);
        allocator.deallocate(q, 4096, MemoryCategory::Workspace);
    }
    EXPECT_EQ(device.used(), 0u);
    EXPECT_EQ(device.openFences(), 0u);
}

TEST(DeviceMemory, ConcurrentUseKeepsExactCounts)
{
    FakeDevice device(256 << 20);
    MemoryCounter counter;
    CachingDeviceAllocator allocator(device, counter);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 500; ++i) {
                const std::size_t bytes = 256u * static_cast<std::size_t>(1 + (i + t) % 7);
                void* p = allocator.allocate(bytes, MemoryCategory::Activation);
                allocator.deallocate(p, bytes, MemoryCategory::Activation);
            }
        });
    for (auto& th : threads)
        th.join();
    EXPECT_EQ(counter.total(), 0u);
    EXPECT_EQ(allocator.liveBytes(), 0u);
}
