#include "cudabackend.h"

#include "cudacheck.h"
#include "cudaruntime.h"
#include "devicememory.h"
#include "kernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdio>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

namespace dps::runtime {

namespace {

constexpr std::size_t kLossSlots = 1024;

/// Events and raw memory of one device, for the allocator and the action clock.
class CudaDevice final : public DeviceMemoryApi, public EventDevice {
public:
    explicit CudaDevice(std::array<cudaStream_t, 2> streams)
        : m_streams(streams)
    {
    }

    ~CudaDevice() override
    {
        for (cudaEvent_t e : m_events)
            cudaEventDestroy(e);
    }

    void* rawAllocate(std::size_t bytes) override
    {
        void* ptr = nullptr;
        const cudaError_t rc = cudaMalloc(&ptr, bytes);
        if (rc == cudaErrorMemoryAllocation) {
            cudaGetLastError(); // clear the sticky-free error state
            return nullptr;
        }
        DPS_CUDA_CHECK(rc);
        return ptr;
    }

    void rawFree(void* ptr) override { DPS_CUDA_CHECK(cudaFree(ptr)); }

    Fence recordFence() override
    {
        // A fence is a pair of events (one per lane), numbered by its first event.
        const int first = take(true);
        const int second = take(true);
        DPS_CUDA_CHECK(cudaEventRecord(event(first), m_streams[0]));
        DPS_CUDA_CHECK(cudaEventRecord(event(second), m_streams[1]));
        std::lock_guard lock(m_mutex);
        if (!m_freeFences.empty()) {
            const Fence fence = m_freeFences.back();
            m_freeFences.pop_back();
            m_fencePairs[static_cast<std::size_t>(fence)] = { first, second };
            return fence;
        }
        m_fencePairs.emplace_back(first, second);
        return static_cast<Fence>(m_fencePairs.size() - 1);
    }

    bool fencePassed(Fence fence) override
    {
        std::unique_lock lock(m_mutex);
        const auto [first, second] = m_fencePairs[static_cast<std::size_t>(fence)];
        lock.unlock();
        return done(first) && done(second);
    }

    void releaseFence(Fence fence) override
    {
        std::unique_lock lock(m_mutex);
        const auto pair = std::exchange(m_fencePairs[static_cast<std::size_t>(fence)], { -1, -1 });
        m_freeFences.push_back(fence);
        lock.unlock();
        give(pair.first);
        give(pair.second);
    }

    /// Our two lanes only, never cudaDeviceSynchronize: NCCL's stream on this device may hold a receive that
    /// waits for a peer which in turn waits for this rank, and waiting for the whole device would deadlock.
    /// Fences are recorded on these lanes only, so this is enough for every fence to pass.
    void synchronizeStreams() override
    {
        for (cudaStream_t s : m_streams)
            DPS_CUDA_CHECK(cudaStreamSynchronize(s));
    }

    std::pair<std::size_t, std::size_t> deviceMemoryInfo() override
    {
        std::size_t freeBytes = 0;
        std::size_t totalBytes = 0;
        if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
            cudaGetLastError();
        return { freeBytes, totalBytes };
    }

    Event record(Lane lane) override
    {
        const int e = take(false);
        DPS_CUDA_CHECK(cudaEventRecord(event(e), m_streams[static_cast<std::size_t>(lane)]));
        return e;
    }

    double elapsedMs(Event from, Event to) override
    {
        float ms = 0.0f;
        DPS_CUDA_CHECK(cudaEventElapsedTime(&ms, event(from), event(to)));
        return ms;
    }

    void release(Event e) override { give(e); }

private:
    cudaEvent_t event(int index) const
    {
        std::lock_guard lock(m_mutex);
        return m_events[static_cast<std::size_t>(index)];
    }

    bool done(int index)
    {
        const cudaError_t rc = cudaEventQuery(event(index));
        if (rc == cudaErrorNotReady)
            return false;
        DPS_CUDA_CHECK(rc);
        return true;
    }

    /// An event from the pool: fences use events without timing (cheaper), the clock timed ones.
    int take(bool fence)
    {
        std::lock_guard lock(m_mutex);
        auto& pool = fence ? m_freeFenceEvents : m_freeTimedEvents;
        if (!pool.empty()) {
            const int e = pool.back();
            pool.pop_back();
            return e;
        }
        cudaEvent_t e = nullptr;
        DPS_CUDA_CHECK(cudaEventCreateWithFlags(&e, fence ? cudaEventDisableTiming : cudaEventDefault));
        m_events.push_back(e);
        m_timed.push_back(!fence);
        return static_cast<int>(m_events.size() - 1);
    }

    void give(int index)
    {
        if (index < 0)
            return;
        std::lock_guard lock(m_mutex);
        (m_timed[static_cast<std::size_t>(index)] ? m_freeTimedEvents : m_freeFenceEvents).push_back(index);
    }

    std::array<cudaStream_t, 2> m_streams;
    std::vector<cudaEvent_t> m_events;
    std::vector<bool> m_timed;
    std::vector<int> m_freeFenceEvents;
    std::vector<int> m_freeTimedEvents;
    std::vector<std::pair<int, int>> m_fencePairs;
    std::vector<Fence> m_freeFences;
    mutable std::mutex m_mutex; ///< guards the pools (the allocator and the clock share them)
};

std::string gib(std::size_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return text;
}

} // namespace

struct CudaBackend::Impl {
    struct PendingLoss {
        std::size_t slot;
        double* destination;
    };

    CudaBackendOptions options;
    kernels::Element element = kernels::Element::F32;
    std::array<cudaStream_t, 2> streams {};
    std::array<cublasHandle_t, 2> handles {};
    std::array<void*, 2> workspaces {};
    std::array<double*, 2> partials {}; ///< per lane: kReductionBlocks doubles of mseLoss scratch
    double* lossDevice = nullptr; ///< kLossSlots doubles
    double* lossPinned = nullptr; ///< kLossSlots doubles of pinned host memory
    std::size_t nextLossSlot = 0;
    std::vector<PendingLoss> pendingLosses;
    std::unique_ptr<CudaDevice> device;
    std::unique_ptr<CachingDeviceAllocator> allocator;
    std::unique_ptr<ActionClock> clock;
    std::string label; ///< the action running, for messages
    std::string description;

    cudaStream_t stream(Lane lane) const
    {
        if (lane != 0 && lane != 1)
            throw RuntimeError("cuda backend: lane " + std::to_string(lane) + " (expected 0 or 1)");
        return streams[static_cast<std::size_t>(lane)];
    }

    /// The lane's stream for an operation about to be issued on it: the open action used the lane.
    cudaStream_t issue(Lane lane)
    {
        cudaStream_t s = stream(lane);
        if (clock)
            clock->laneUsed(lane);
        return s;
    }

    void createLanes()
    {
        for (std::size_t l = 0; l < 2; ++l) {
            DPS_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[l], cudaStreamNonBlocking));
            DPS_CUBLAS_CHECK(cublasCreate(&handles[l]));
            DPS_CUBLAS_CHECK(cublasSetStream(handles[l], streams[l]));
            DPS_CUDA_CHECK(cudaMalloc(&workspaces[l], options.cublasWorkspaceBytes));
            DPS_CUBLAS_CHECK(cublasSetWorkspace(handles[l], workspaces[l], options.cublasWorkspaceBytes));
            // fp32 stays fp32 (no TF32); bf16 GEMMs accumulate in fp32 through their compute type.
            DPS_CUBLAS_CHECK(cublasSetMathMode(handles[l], CUBLAS_DEFAULT_MATH));
            DPS_CUBLAS_CHECK(cublasSetAtomicsMode(handles[l], CUBLAS_ATOMICS_NOT_ALLOWED));
            DPS_CUDA_CHECK(cudaMalloc(&partials[l], kernels::kReductionBlocks * sizeof(double)));
        }
        DPS_CUDA_CHECK(cudaMalloc(&lossDevice, kLossSlots * sizeof(double)));
        DPS_CUDA_CHECK(cudaMallocHost(&lossPinned, kLossSlots * sizeof(double)));
    }

    void destroyLanes() noexcept
    {
        for (std::size_t l = 0; l < 2; ++l) {
            if (streams[l])
                cudaStreamSynchronize(streams[l]);
            if (handles[l])
                cublasDestroy(handles[l]);
            cudaFree(workspaces[l]);
            cudaFree(partials[l]);
            if (streams[l])
                cudaStreamDestroy(streams[l]);
        }
        cudaFree(lossDevice);
        cudaFreeHost(lossPinned);
    }

    void deliverLosses()
    {
        for (const PendingLoss& p : pendingLosses)
            *p.destination = lossPinned[p.slot];
        pendingLosses.clear();
    }

    void synchronizeLanes()
    {
        for (cudaStream_t s : streams)
            DPS_CUDA_CHECK(cudaStreamSynchronize(s));
    }

    std::string describe() const
    {
        cudaDeviceProp prop {};
        DPS_CUDA_CHECK(cudaGetDeviceProperties(&prop, options.device));
        return std::string(prop.name) + " (device " + std::to_string(options.device) + ", sm_"
            + std::to_string(prop.major) + std::to_string(prop.minor) + ", " + gib(prop.totalGlobalMem) + "), "
            + (options.bf16 ? "bf16 with fp32 accumulation" : "fp32, TF32 off") + ", " + cudamodule::cudaVersionText()
            + ", " + cudamodule::cublasVersionText();
    }
};

CudaBackend::CudaBackend(const CudaBackendOptions& options)
    : m_impl(std::make_unique<Impl>())
{
    Impl& d = *m_impl;
    d.options = options;
    d.element = options.bf16 ? kernels::Element::BF16 : kernels::Element::F32;
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0)
        throw RuntimeError(checkFailureText("cudaGetDeviceCount(&count)", __FILE__, __LINE__,
            rc == cudaSuccess ? std::string("no CUDA device") : std::string(cudaGetErrorString(rc))));
    if (options.device < 0 || options.device >= count)
        throw RuntimeError("cuda backend: device " + std::to_string(options.device) + " requested, "
            + std::to_string(count) + " visible");
    DPS_CUDA_CHECK(cudaSetDevice(options.device));
    try {
        d.createLanes();
        d.device = std::make_unique<CudaDevice>(d.streams);
        d.allocator = std::make_unique<CachingDeviceAllocator>(*d.device, m_memory);
        d.clock = std::make_unique<ActionClock>(*d.device);
        d.description = d.describe();
    } catch (...) {
        d.destroyLanes();
        throw;
    }
}

CudaBackend::~CudaBackend()
{
    Impl& d = *m_impl;
    cudaSetDevice(d.options.device);
    d.clock.reset();
    d.allocator.reset();
    d.destroyLanes();
    d.device.reset();
}

std::string CudaBackend::deviceDescription() const
{
    return m_impl->description;
}

int CudaBackend::elementBytes() const
{
    return m_impl->options.bf16 ? 2 : 4;
}

int CudaBackend::device() const
{
    return m_impl->options.device;
}

bool CudaBackend::bf16() const
{
    return m_impl->options.bf16;
}

void* CudaBackend::streamHandle(Lane lane) const
{
    return m_impl->stream(lane);
}

void* CudaBackend::allocate(std::size_t bytes, MemoryCategory category)
{
    return m_impl->allocator->allocate(bytes, category);
}

void CudaBackend::deallocate(void* ptr, std::size_t bytes, MemoryCategory category)
{
    m_impl->allocator->deallocate(ptr, bytes, category);
}

void CudaBackend::gemm(Lane lane, Transpose transA, Transpose transB, int m, int n, int k, float alpha, const void* a,
    const void* b, float beta, void* c)
{
    // Row-major C (m×n) = op(A)·op(B) is column-major Cᵀ (n×m) = op(B)ᵀ·op(A)ᵀ: swap the operands.
    Impl& d = *m_impl;
    const cudaDataType type = d.options.bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const int lda = transA == Transpose::Yes ? m : k;
    const int ldb = transB == Transpose::Yes ? k : n;
    const cublasOperation_t opA = transA == Transpose::Yes ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opB = transB == Transpose::Yes ? CUBLAS_OP_T : CUBLAS_OP_N;
    d.issue(lane);
    DPS_CUBLAS_CHECK(cublasGemmEx(d.handles[static_cast<std::size_t>(lane)], opB, opA, n, m, k, &alpha, b, type, ldb, a,
        type, lda, &beta, c, type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void CudaBackend::geluForward(Lane lane, const void* in, void* out, std::size_t n)
{
    kernels::geluForward(m_impl->issue(lane), m_impl->element, in, out, n);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::geluBackward(Lane lane, const void* in, const void* gradOut, void* gradIn, std::size_t n)
{
    kernels::geluBackward(m_impl->issue(lane), m_impl->element, in, gradOut, gradIn, n);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::mseLoss(Lane lane, const void* y, const void* target, std::size_t n, void* grad, double* lossHost)
{
    Impl& d = *m_impl;
    if (d.pendingLosses.size() == kLossSlots)
        synchronize(); // every slot of the ring is waiting to be delivered
    const std::size_t slot = d.nextLossSlot;
    d.nextLossSlot = (d.nextLossSlot + 1) % kLossSlots;
    cudaStream_t s = d.issue(lane);
    kernels::mseLoss(s, d.element, y, target, n, grad, d.partials[static_cast<std::size_t>(lane)], d.lossDevice + slot);
    DPS_CUDA_CHECK(cudaGetLastError());
    DPS_CUDA_CHECK(
        cudaMemcpyAsync(d.lossPinned + slot, d.lossDevice + slot, sizeof(double), cudaMemcpyDeviceToHost, s));
    d.pendingLosses.push_back({ slot, lossHost });
}

void CudaBackend::axpy(Lane lane, std::size_t n, float alpha, const void* x, void* y)
{
    kernels::axpy(m_impl->issue(lane), m_impl->element, n, alpha, x, y);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::setZero(Lane lane, void* ptr, std::size_t bytes)
{
    DPS_CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, m_impl->issue(lane)));
}

void CudaBackend::copyHostToDevice(Lane lane, void* dst, const void* src, std::size_t bytes)
{
    DPS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, m_impl->issue(lane)));
}

void CudaBackend::copyDeviceToHost(Lane lane, void* dst, const void* src, std::size_t bytes)
{
    cudaStream_t s = m_impl->issue(lane);
    DPS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
    DPS_CUDA_CHECK(cudaStreamSynchronize(s));
}

void CudaBackend::copyDeviceToDevice(Lane lane, void* dst, const void* src, std::size_t bytes)
{
    DPS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, m_impl->issue(lane)));
}

void CudaBackend::uploadFloats(Lane lane, void* dst, const float* src, std::size_t n)
{
    if (!m_impl->options.bf16) {
        copyHostToDevice(lane, dst, src, n * sizeof(float));
        return;
    }
    // A float tensor of n elements is 2n bf16 elements of this backend.
    Tensor floats(*this, 2 * n, 1, MemoryCategory::Workspace);
    copyHostToDevice(lane, floats.data(), src, n * sizeof(float));
    kernels::floatToBf16(m_impl->issue(lane), static_cast<const float*>(floats.data()), dst, n);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::downloadFloats(Lane lane, float* dst, const void* src, std::size_t n)
{
    if (!m_impl->options.bf16) {
        copyDeviceToHost(lane, dst, src, n * sizeof(float));
        return;
    }
    Tensor floats(*this, 2 * n, 1, MemoryCategory::Workspace);
    kernels::bf16ToFloat(m_impl->issue(lane), src, static_cast<float*>(floats.data()), n);
    DPS_CUDA_CHECK(cudaGetLastError());
    copyDeviceToHost(lane, dst, floats.data(), n * sizeof(float));
}

void CudaBackend::runConcurrently(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second)
{
    std::exception_ptr error;
    const std::function<void(Lane)>* tasks[2] = { &first, &second };
    for (Lane lane = 0; lane < 2; ++lane) {
        try {
            // The lane's allocations count on that lane (MemoryCounter::LaneScope). The executor names the lane
            // too, but in its own copy of backend.cpp: this module has its own, with its own thread_local.
            const MemoryCounter::LaneScope counted(lane);
            (*tasks[lane])(lane);
        } catch (...) {
            if (!error)
                error = std::current_exception();
        }
    }
    // Both halves are issued: the action's end events go in now, ahead of the host's wait.
    if (m_impl->clock->actionOpen())
        m_impl->clock->recordEnds();
    m_impl->synchronizeLanes();
    if (error)
        std::rethrow_exception(error);
}

void CudaBackend::synchronize()
{
    m_impl->synchronizeLanes();
    m_impl->deliverLosses();
}

void CudaBackend::actionStarted(const std::string& label)
{
    m_impl->label = label;
    if (!m_impl->clock->stepOpen())
        m_impl->clock->stepStarted(); // the executor did not mark the step: time from the first action
    m_impl->clock->actionStarted();
}

void CudaBackend::actionFinished()
{
    m_impl->clock->actionFinished();
}

void CudaBackend::stepStarted()
{
    m_impl->clock->stepStarted();
}

std::optional<ActionSpan> CudaBackend::lastActionSpan()
{
    return m_impl->clock->lastAction();
}

std::optional<double> CudaBackend::lastActionDeviceUs()
{
    const std::optional<ActionSpan> span = m_impl->clock->lastAction();
    return span ? std::optional<double>(span->durationUs()) : std::nullopt;
}

CudaMemoryInfo CudaBackend::deviceMemory() const
{
    const Impl& d = *m_impl;
    CudaMemoryInfo info;
    info.liveBytes = d.allocator->liveBytes();
    info.reservedBytes = d.allocator->reservedBytes();
    info.cachedBytes = d.allocator->cachedBytes();
    info.rawAllocations = d.allocator->rawAllocations();
    info.fixedBytes = 2 * (d.options.cublasWorkspaceBytes + kernels::kReductionBlocks * sizeof(double))
        + kLossSlots * sizeof(double);
    std::tie(info.deviceFreeBytes, info.deviceTotalBytes) = d.device->deviceMemoryInfo();
    return info;
}

} // namespace dps::runtime
