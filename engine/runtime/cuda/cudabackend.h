#pragma once
// The cuda backend: the Backend interface on one GPU.
//
// - GEMMs: cuBLAS (cublasGemmEx, row-major via the transposed column-major product) in fp32 with fp32
//   compute (TF32 off: CUBLAS_DEFAULT_MATH with CUBLAS_COMPUTE_32F), or bf16 storage with fp32
//   accumulation (CUBLAS_COMPUTE_32F), as the project's model dtype says. One cuBLAS handle per lane with a
//   fixed workspace (cublasSetWorkspace), so repeated runs give bit-identical results.
// - Kernels (kernels.cu): exact GELU forward/backward, MSE loss (deterministic double reduction) and its
//   gradient, y += αx, fp32↔bf16 conversion; the transformer layers' kernels (layerkernels.cu, fp32 only: a
//   bf16 backend refuses them with RuntimeError), whose host index lists and gates are copied in lane order
//   into a per-lane scratch buffer (grown on demand, fixed overhead outside the count like the loss scratch).
// - Lanes: two non-blocking streams; runConcurrently issues the halves of an overlapped slot on lane 0 and
//   lane 1 so they run concurrently on the device.
// - Memory: a caching allocator (devicememory.h) that counts live bytes exactly in memory(); cuBLAS
//   workspaces and loss scratch are fixed overhead outside the count (deviceMemory() reports them).
// - Timing: CUDA events around every action (actionclock.h) on the step's clock; the executor's compute_us
//   of an action is the device span they measure (lastActionDeviceUs(), docs/gpu.md).
// Part of the CUDA module (libdpstudio-cuda.so, builds with DPS_HAVE_CUDA): programs create it through the
// module's table (cudamodule.h); dpstudio-gpucheck and the GPU tests link the module and use the class
// directly. The header needs no CUDA headers.
#include "actionclock.h"
#include "runtime/backend.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace dps::runtime {

struct CudaBackendOptions {
    int device = 0; ///< CUDA device ordinal (Selection::deviceOfRank)
    bool bf16 = false; ///< bf16 tensors with fp32 accumulation; fp32 otherwise
    std::size_t cublasWorkspaceBytes = 32u << 20; ///< per lane
};

/// Device memory figures: our allocator's and the device's.
struct CudaMemoryInfo {
    std::size_t liveBytes = 0; ///< live in our allocator (= memory().total())
    std::size_t reservedBytes = 0; ///< held by our allocator: live + cached, rounded
    std::size_t cachedBytes = 0;
    std::size_t fixedBytes = 0; ///< cuBLAS workspaces and scratch (the layers' too, as grown), outside the count
    std::size_t deviceFreeBytes = 0; ///< cudaMemGetInfo
    std::size_t deviceTotalBytes = 0;
    std::size_t rawAllocations = 0; ///< cudaMalloc calls so far
};

class CudaBackend final : public Backend {
public:
    /// Selects the device, creates the streams, cuBLAS handles and workspaces. Throws RuntimeError (naming
    /// rank, call, file and line) when the device cannot be used.
    explicit CudaBackend(const CudaBackendOptions& options);
    ~CudaBackend() override;
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    std::string name() const override { return "cuda"; }
    std::string deviceDescription() const override;
    int elementBytes() const override;
    bool hostAccessible() const override { return false; }

    void* allocate(std::size_t bytes, MemoryCategory category) override;
    void deallocate(void* ptr, std::size_t bytes, MemoryCategory category) override;

    void gemm(Lane lane, Transpose transA, Transpose transB, int m, int n, int k, float alpha, const void* a,
        const void* b, float beta, void* c) override;
    void geluForward(Lane lane, const void* in, void* out, std::size_t n) override;
    void geluBackward(Lane lane, const void* in, const void* gradOut, void* gradIn, std::size_t n) override;
    /// The loss reaches *lossHost at the next synchronize() (so the lane is not stalled mid-slot).
    void mseLoss(Lane lane, const void* y, const void* target, std::size_t n, void* grad, double* lossHost) override;
    void axpy(Lane lane, std::size_t n, float alpha, const void* x, void* y) override;
    void setZero(Lane lane, void* ptr, std::size_t bytes) override;
    /// Asynchronous on the lane; `src` may be reused on return.
    void copyHostToDevice(Lane lane, void* dst, const void* src, std::size_t bytes) override;
    /// Synchronous: `dst` holds the data on return.
    void copyDeviceToHost(Lane lane, void* dst, const void* src, std::size_t bytes) override;
    void copyDeviceToDevice(Lane lane, void* dst, const void* src, std::size_t bytes) override;
    void uploadFloats(Lane lane, void* dst, const float* src, std::size_t n) override;
    void downloadFloats(Lane lane, float* dst, const void* src, std::size_t n) override;

    // The transformer layers' kernels (backend.h), fp32 only (RuntimeError on a bf16 backend). The ops that
    // return host values (rowDots, crossEntropyForward) wait for their lane.
    void rmsNormForward(Lane lane, const void* x, std::size_t xStride, const void* g, void* y, std::size_t yStride,
        std::size_t rows, std::size_t n, float eps) override;
    void rmsNormBackward(Lane lane, const void* x, std::size_t xStride, const void* g, const void* dy,
        std::size_t dyStride, void* dx, std::size_t dxStride, void* dg, std::size_t rows, std::size_t n,
        float eps) override;
    void ropeApply(Lane lane, void* x, std::size_t rows, std::size_t rowStride, int heads, std::size_t headStride,
        std::size_t colOffset, int ropeDim, int seqLen, double base, bool inverse) override;
    void causalSoftmaxForward(Lane lane, void* scores, std::size_t seqLen, std::size_t count) override;
    void causalSoftmaxBackward(Lane lane, const void* probs, void* grad, std::size_t seqLen) override;
    void swigluForward(Lane lane, const void* gate, const void* up, void* out, std::size_t n) override;
    void swigluBackward(Lane lane, void* gate, void* up, const void* da, std::size_t n) override;
    void gatherHeads(Lane lane, const void* src, const HeadLayout& layout, int batch, int seqLen, int heads, int width,
        void* dst, int dstWidth, int dstOffset) override;
    void scatterHeads(Lane lane, const void* src, int batch, int seqLen, int heads, int width, int srcWidth,
        int srcOffset, void* dst, const HeadLayout& layout, bool accumulate) override;
    void gatherRows(Lane lane, const void* src, std::size_t cols, const int* rowsHost, const float* scalesHost,
        std::size_t n, void* dst) override;
    void scatterAddRows(Lane lane, const void* src, std::size_t cols, const int* rowsHost, const float* scalesHost,
        std::size_t n, void* dst) override;
    void rowDots(Lane lane, const void* a, const int* aRowsHost, const void* b, std::size_t n, std::size_t cols,
        double* dotsHost) override;
    void crossEntropyForward(Lane lane, const void* logits, std::size_t rows, std::size_t vocab, const int* targetsHost,
        double* lossesHost) override;
    void crossEntropyBackward(
        Lane lane, void* logits, std::size_t rows, std::size_t vocab, const int* targetsHost, double scale) override;

    /// Issues first(0) then second(1) from this thread (both asynchronous, on two streams, so the device
    /// runs them concurrently), records the open action's end events (ActionClock::recordEnds), then waits
    /// for both lanes. Rethrows the first exception.
    void runConcurrently(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second) override;
    /// Waits for both lanes and delivers pending losses.
    void synchronize() override;
    /// Records the action's start events (both lanes) and an NVTX-free label for error messages.
    void actionStarted(const std::string& label) override;
    void actionFinished() override;

    /// Right after the step's barrier: the origin of this step's event times.
    void stepStarted() override;
    /// The last finished action's device times in µs since stepStarted(); call after synchronize().
    std::optional<ActionSpan> lastActionSpan();
    /// lastActionSpan()'s duration, µs (the executor's compute_us); nullopt before the step's first action.
    std::optional<double> lastActionDeviceUs() override;

    CudaMemoryInfo deviceMemory() const;
    int device() const;
    bool bf16() const;
    /// The lane's cudaStream_t (as an opaque pointer), for communication that must order against compute.
    void* streamHandle(Lane lane) const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace dps::runtime
