#include "cudabackend.h"

#include "cudacheck.h"
#include "cudaruntime.h"
#include "devicememory.h"
#include "kernels.h"
#include "layerkernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
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
    std::array<void*, 2> layerScratch {}; ///< per lane: the layers' kernels' index lists, gates and results
    std::array<std::size_t, 2> layerScratchBytes {};
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
            cudaFree(layerScratch[l]);
            if (streams[l])
                cudaStreamDestroy(streams[l]);
        }
        cudaFree(lossDevice);
        cudaFreeHost(lossPinned);
    }

    /// The lane's scratch for the layers' kernels, at least `bytes`: grown (after the lane's earlier work, which
    /// may still read the old buffer, is done) to twice the need, so it settles after the first steps.
    void* scratch(Lane lane, std::size_t bytes)
    {
        const auto l = static_cast<std::size_t>(lane);
        cudaStream_t s = stream(lane);
        if (layerScratchBytes[l] < bytes) {
            DPS_CUDA_CHECK(cudaStreamSynchronize(s));
            DPS_CUDA_CHECK(cudaFree(layerScratch[l]));
            layerScratch[l] = nullptr;
            layerScratchBytes[l] = 0;
            const std::size_t grown = std::max<std::size_t>(2 * bytes, 64u << 10);
            DPS_CUDA_CHECK(cudaMalloc(&layerScratch[l], grown));
            layerScratchBytes[l] = grown;
        }
        return layerScratch[l];
    }

    /// Issues on the lane's stream the copy of an op's host index list (n ints) into the lane's scratch, which
    /// is followed (16-byte aligned) by `roomBytes` for the op's own use; returns the stream, the device indices
    /// and the room.
    struct Staged {
        cudaStream_t stream;
        const int* indices;
        char* room;
    };
    Staged stageIndices(Lane lane, const int* indicesHost, std::size_t n, std::size_t roomBytes)
    {
        const std::size_t indexBytes = (n * sizeof(int) + 15) / 16 * 16;
        char* base = static_cast<char*>(scratch(lane, indexBytes + roomBytes));
        cudaStream_t s = issue(lane);
        DPS_CUDA_CHECK(cudaMemcpyAsync(base, indicesHost, n * sizeof(int), cudaMemcpyHostToDevice, s));
        return { s, reinterpret_cast<const int*>(base), base + indexBytes };
    }

    /// stageIndices for a row kernel's rows and, when scalesHost is set, its n scales after them (in the room).
    Staged stageRows(Lane lane, const int* rowsHost, const float* scalesHost, std::size_t n)
    {
        Staged staged = stageIndices(lane, rowsHost, n, scalesHost ? n * sizeof(float) : 0);
        if (scalesHost)
            DPS_CUDA_CHECK(
                cudaMemcpyAsync(staged.room, scalesHost, n * sizeof(float), cudaMemcpyHostToDevice, staged.stream));
        else
            staged.room = nullptr;
        return staged;
    }

    /// Throws RuntimeError for a layer kernel on a bf16 backend.
    void requireFp32(const char* op) const
    {
        if (options.bf16)
            throw RuntimeError(std::string("cuda backend: ") + op
                + " runs in fp32 only (the transformer layers' kernels); this backend computes in bf16");
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

// ---------------------------------------------------------------------------- the transformer layers' kernels

namespace {

float* fp(void* p)
{
    return static_cast<float*>(p);
}

const float* fp(const void* p)
{
    return static_cast<const float*>(p);
}

} // namespace

void CudaBackend::rmsNormForward(Lane lane, const void* x, std::size_t xStride, const void* g, void* y,
    std::size_t yStride, std::size_t rows, std::size_t n, float eps)
{
    m_impl->requireFp32("rmsNormForward");
    if (rows == 0 || n == 0)
        return;
    layerkernels::rmsNormForward(m_impl->issue(lane), fp(x), xStride, fp(g), fp(y), yStride, rows, n, eps);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::rmsNormBackward(Lane lane, const void* x, std::size_t xStride, const void* g, const void* dy,
    std::size_t dyStride, void* dx, std::size_t dxStride, void* dg, std::size_t rows, std::size_t n, float eps)
{
    m_impl->requireFp32("rmsNormBackward");
    if (rows == 0 || n == 0)
        return;
    auto* inverseRms = static_cast<double*>(m_impl->scratch(lane, rows * sizeof(double)));
    layerkernels::rmsNormBackward(m_impl->issue(lane), fp(x), xStride, fp(g), fp(dy), dyStride, fp(dx), dxStride,
        dg ? fp(dg) : nullptr, rows, n, eps, inverseRms);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::ropeApply(Lane lane, void* x, std::size_t rows, std::size_t rowStride, int heads,
    std::size_t headStride, std::size_t colOffset, int ropeDim, int seqLen, double base, bool inverse)
{
    m_impl->requireFp32("ropeApply");
    if (ropeDim % 2 != 0 || ropeDim < 0)
        throw RuntimeError("rotary embedding: the rotary dimension " + std::to_string(ropeDim) + " is not even");
    if (seqLen < 1)
        throw RuntimeError("rotary embedding: sequence length " + std::to_string(seqLen) + " is below 1");
    if (rows == 0 || heads <= 0 || ropeDim == 0)
        return;
    layerkernels::ropeApply(
        m_impl->issue(lane), fp(x), rows, rowStride, heads, headStride, colOffset, ropeDim, seqLen, base, inverse);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::causalSoftmaxForward(Lane lane, void* scores, std::size_t seqLen, std::size_t count)
{
    m_impl->requireFp32("causalSoftmaxForward");
    if (seqLen == 0 || count == 0)
        return;
    layerkernels::causalSoftmaxForward(m_impl->issue(lane), fp(scores), seqLen, count);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::causalSoftmaxBackward(Lane lane, const void* probs, void* grad, std::size_t seqLen)
{
    m_impl->requireFp32("causalSoftmaxBackward");
    if (seqLen == 0)
        return;
    layerkernels::causalSoftmaxBackward(m_impl->issue(lane), fp(probs), fp(grad), seqLen);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::swigluForward(Lane lane, const void* gate, const void* up, void* out, std::size_t n)
{
    m_impl->requireFp32("swigluForward");
    if (n == 0)
        return;
    layerkernels::swigluForward(m_impl->issue(lane), fp(gate), fp(up), fp(out), n);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::swigluBackward(Lane lane, void* gate, void* up, const void* da, std::size_t n)
{
    m_impl->requireFp32("swigluBackward");
    if (n == 0)
        return;
    layerkernels::swigluBackward(m_impl->issue(lane), fp(gate), fp(up), fp(da), n);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::gatherHeads(Lane lane, const void* src, const HeadLayout& layout, int batch, int seqLen, int heads,
    int width, void* dst, int dstWidth, int dstOffset)
{
    m_impl->requireFp32("gatherHeads");
    if (batch <= 0 || seqLen <= 0 || heads <= 0 || width <= 0)
        return;
    layerkernels::gatherHeads(m_impl->issue(lane), fp(src), { layout.rowStride, layout.colOffset, layout.headStride },
        batch, seqLen, heads, width, fp(dst), dstWidth, dstOffset);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::scatterHeads(Lane lane, const void* src, int batch, int seqLen, int heads, int width, int srcWidth,
    int srcOffset, void* dst, const HeadLayout& layout, bool accumulate)
{
    m_impl->requireFp32("scatterHeads");
    if (batch <= 0 || seqLen <= 0 || heads <= 0 || width <= 0)
        return;
    layerkernels::scatterHeads(m_impl->issue(lane), fp(src), batch, seqLen, heads, width, srcWidth, srcOffset, fp(dst),
        { layout.rowStride, layout.colOffset, layout.headStride }, accumulate);
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::gatherRows(Lane lane, const void* src, std::size_t cols, const int* rowsHost, const float* scalesHost,
    std::size_t n, void* dst)
{
    m_impl->requireFp32("gatherRows");
    if (n == 0 || cols == 0)
        return;
    const auto staged = m_impl->stageRows(lane, rowsHost, scalesHost, n);
    layerkernels::gatherRows(
        staged.stream, fp(src), cols, staged.indices, reinterpret_cast<const float*>(staged.room), n, fp(dst));
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::scatterAddRows(Lane lane, const void* src, std::size_t cols, const int* rowsHost,
    const float* scalesHost, std::size_t n, void* dst)
{
    m_impl->requireFp32("scatterAddRows");
    if (n == 0 || cols == 0)
        return;
    const auto staged = m_impl->stageRows(lane, rowsHost, scalesHost, n);
    layerkernels::scatterAddRows(
        staged.stream, fp(src), cols, staged.indices, reinterpret_cast<const float*>(staged.room), n, fp(dst));
    DPS_CUDA_CHECK(cudaGetLastError());
}

void CudaBackend::rowDots(
    Lane lane, const void* a, const int* aRowsHost, const void* b, std::size_t n, std::size_t cols, double* dotsHost)
{
    m_impl->requireFp32("rowDots");
    if (n == 0)
        return;
    const auto staged = m_impl->stageIndices(lane, aRowsHost, n, n * sizeof(double));
    cudaStream_t s = staged.stream;
    auto* dots = reinterpret_cast<double*>(staged.room);
    layerkernels::rowDots(s, fp(a), staged.indices, fp(b), n, cols, dots);
    DPS_CUDA_CHECK(cudaGetLastError());
    DPS_CUDA_CHECK(cudaMemcpyAsync(dotsHost, dots, n * sizeof(double), cudaMemcpyDeviceToHost, s));
    DPS_CUDA_CHECK(cudaStreamSynchronize(s));
}

void CudaBackend::crossEntropyForward(
    Lane lane, const void* logits, std::size_t rows, std::size_t vocab, const int* targetsHost, double* lossesHost)
{
    m_impl->requireFp32("crossEntropyForward");
    if (rows == 0)
        return;
    const auto staged = m_impl->stageIndices(lane, targetsHost, rows, rows * sizeof(double));
    cudaStream_t s = staged.stream;
    auto* losses = reinterpret_cast<double*>(staged.room);
    layerkernels::crossEntropyForward(s, fp(logits), rows, vocab, staged.indices, losses);
    DPS_CUDA_CHECK(cudaGetLastError());
    DPS_CUDA_CHECK(cudaMemcpyAsync(lossesHost, losses, rows * sizeof(double), cudaMemcpyDeviceToHost, s));
    DPS_CUDA_CHECK(cudaStreamSynchronize(s));
}

void CudaBackend::crossEntropyBackward(
    Lane lane, void* logits, std::size_t rows, std::size_t vocab, const int* targetsHost, double scale)
{
    m_impl->requireFp32("crossEntropyBackward");
    if (rows == 0)
        return;
    const auto staged = m_impl->stageIndices(lane, targetsHost, rows, 0);
    layerkernels::crossEntropyBackward(staged.stream, fp(logits), rows, vocab, staged.indices, scale);
    DPS_CUDA_CHECK(cudaGetLastError());
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
        + kLossSlots * sizeof(double) + d.layerScratchBytes[0] + d.layerScratchBytes[1];
    std::tie(info.deviceFreeBytes, info.deviceTotalBytes) = d.device->deviceMemoryInfo();
    return info;
}

} // namespace dps::runtime
