#pragma once
// The compute backend interface: device memory with exact live-byte accounting, the handful of kernels
// the block model needs (GEMM, exact GELU, MSE loss, axpy), host↔device copies, two lanes so the two
// halves of an overlapped slot can run concurrently, and timing hooks. The CPU backend (cpubackend.h)
// implements it with OpenBLAS; a CUDA backend implements the same interface with cuBLAS and two streams.
//
// Conventions: every matrix is row-major and contiguous; a "device pointer" is an opaque address the
// backend allocated (host memory on CPU); element type is the backend's compute type (elementBytes()),
// fp32 on CPU. Lanes: 0 and 1; a kernel issued on a lane runs in issue order after earlier work of that
// lane; synchronize() waits for both lanes.
#include "base/errors.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dps::runtime {

/// A failure inside the runtime (backend, communication, executor). what() names where (rank, action).
class RuntimeError : public Error {
public:
    using Error::Error;
};

/// What a device allocation is for; memory is counted per category.
enum class MemoryCategory : std::uint8_t {
    Parameter, ///< weights
    Gradient, ///< weight gradients
    Activation, ///< the activation ledger (modelcost.h): tensors kept between actions
    Workspace, ///< transient tensors inside one action
    Communication, ///< send/receive buffers and in-memory handovers
    Data, ///< inputs and targets
};
inline constexpr int kMemoryCategoryCount = 6;

/// Live bytes per category; thread-safe; counts the bytes requested (not rounded). The measured memory of a
/// run (docs/memory.md): everything allocated and not yet freed, and its high-water mark.
class MemoryCounter {
public:
    /// Names the lane of an overlapped slot the calling thread allocates for, while it lives (beginLanes).
    class LaneScope {
    public:
        explicit LaneScope(int lane);
        ~LaneScope();
        LaneScope(const LaneScope&) = delete;
        LaneScope& operator=(const LaneScope&) = delete;

    private:
        int m_previous;
    };

    void add(MemoryCategory category, std::size_t bytes);
    void remove(MemoryCategory category, std::size_t bytes);
    /// Moves `bytes` from one category to another (the total is unchanged).
    void move(MemoryCategory from, MemoryCategory to, std::size_t bytes);
    std::size_t live(MemoryCategory category) const;
    std::size_t total() const;
    /// Highest total since the last resetPeak(), where the two lanes of an overlapped slot count at their
    /// bound (endLanes).
    std::size_t peak() const;
    /// Makes the peak the current total.
    void resetPeak();
    /// Starts counting the two lanes of an overlapped slot apart: from now on each allocation and free also
    /// counts on the lane of the calling thread's LaneScope (lane 0 without one).
    void beginLanes();
    /// Ends what beginLanes() started and returns the lanes' bound (bytes): the total at beginLanes() plus
    /// each lane's highest net allocation since, the largest total any interleaving of the two threads'
    /// allocations reaches (the larger order, docs/memory.md). The peak becomes at least the bound, so it does
    /// not depend on how the threads happened to interleave.
    std::size_t endLanes();

private:
    std::array<std::atomic<std::int64_t>, kMemoryCategoryCount> m_live {};
    std::atomic<std::int64_t> m_total { 0 };
    std::atomic<std::int64_t> m_peak { 0 };
    std::atomic<bool> m_lanes { false };
    std::int64_t m_lanesBase = 0; ///< total at beginLanes()
    std::array<std::atomic<std::int64_t>, 2> m_laneNet {}; ///< per lane: allocated − freed since beginLanes()
    std::array<std::atomic<std::int64_t>, 2> m_laneHigh {}; ///< per lane: highest m_laneNet since beginLanes()
};

/// How a token-major tensor holds heads (for Backend::gatherHeads and scatterHeads, the transformer layers'
/// kernels): element (token t, head j, column c) is at t·rowStride + colOffset + j·headStride + c (elements).
/// headStride 0 shares one head among all (MLA's rotary key).
struct HeadLayout {
    std::size_t rowStride = 0;
    std::size_t colOffset = 0;
    std::size_t headStride = 0;
};

enum class Transpose : std::uint8_t { No, Yes };

/// Lane of an op: 0 (the main one) or 1 (the second half of an overlapped slot).
using Lane = int;

/// What the two lanes of one action did and when: each lane's span (its half of the slot) and the stretches in
/// it spent communicating (the expert all-to-all, Backend::communicationStarted/Finished). Each lane writes only
/// its own record (so the two threads of an overlapped slot need no lock); read once both are done. Times are
/// µs from begin().
class LaneActivity {
public:
    struct Interval {
        double startUs = 0.0;
        double endUs = 0.0;
    };
    /// One lane's record.
    struct LaneRecord {
        bool ran = false; ///< the lane ran a half of this action
        Interval span; ///< from the half's start to its end
        std::vector<Interval> comm; ///< its stretches of communication, in order, inside span
    };

    /// Forgets the last action's record and starts the clock.
    void begin();
    /// Reads times on `nowUs` (µs, any origin) from now on instead of the steady clock (the transformer probe
    /// times each member thread's CPU time, probe.h); an empty function restores the steady clock. Not while
    /// an action is recorded.
    void setClock(std::function<double()> nowUs);
    /// µs since begin(), on the clock.
    double elapsedUs() const { return now(); }
    /// The calling thread's lane (MemoryCounter::LaneScope) starts or ends its half.
    void laneStarted();
    void laneFinished();
    /// The calling thread's lane starts or ends a stretch of communication.
    void commStarted();
    void commFinished();
    /// Lane 0's or lane 1's record.
    const LaneRecord& lane(int lane) const { return m_lanes[lane == 1 ? 1 : 0]; }
    /// Communication time of both lanes together (µs).
    double commUs() const;
    /// Of it, the time the other lane was inside its span and not communicating itself: communication hidden
    /// behind the other half's compute (µs), hiddenCommUs(lane 0, lane 1) + hiddenCommUs(lane 1, lane 0).
    double hiddenCommUs() const;
    /// The part of `lane`'s communication (µs) during which `other` ran (inside its span) and did not
    /// communicate itself; 0 when either did not run.
    static double hiddenCommUs(const LaneRecord& lane, const LaneRecord& other);

private:
    double now() const;
    /// The clock in µs; steady_clock when empty.
    double clockUs() const;
    std::function<double()> m_clock;
    double m_originUs = 0.0;
    std::array<LaneRecord, 2> m_lanes;
};

class Backend {
public:
    virtual ~Backend() = default;

    /// "cpu", "cuda".
    virtual std::string name() const = 0;
    /// Human description of the device (CPU model and BLAS threads, GPU name).
    virtual std::string deviceDescription() const = 0;
    /// Bytes per element of the compute type (4 for fp32).
    virtual int elementBytes() const = 0;
    /// Whether device pointers can be read and written by host code (true on CPU).
    virtual bool hostAccessible() const = 0;

    /// Allocates `bytes` (> 0) of device memory, counted under `category`. Throws RuntimeError when out of
    /// memory. Thread-safe.
    virtual void* allocate(std::size_t bytes, MemoryCategory category) = 0;
    /// Frees memory from allocate() with the same size and current category. Thread-safe.
    virtual void deallocate(void* ptr, std::size_t bytes, MemoryCategory category) = 0;
    /// The counters of everything live in this backend's allocator.
    MemoryCounter& memory() { return m_memory; }
    const MemoryCounter& memory() const { return m_memory; }

    /// C (m×n) = alpha · op(A) · op(B) + beta · C; op(A) is m×k (A stored m×k, or k×m when transA),
    /// op(B) is k×n (B stored k×n, or n×k when transB). beta = 0 ignores C's previous content.
    virtual void gemm(Lane lane, Transpose transA, Transpose transB, int m, int n, int k, float alpha, const void* a,
        const void* b, float beta, void* c)
        = 0;
    /// out[i] = GELU(in[i]) = in·Φ(in), exact (erf) form; n elements; out may equal in.
    virtual void geluForward(Lane lane, const void* in, void* out, std::size_t n) = 0;
    /// gradIn[i] = gradOut[i] · GELU'(in[i]); gradIn may equal gradOut.
    virtual void geluBackward(Lane lane, const void* in, const void* gradOut, void* gradIn, std::size_t n) = 0;
    /// MSE loss mean((y − target)²) over n elements, and its gradient grad = 2(y − target)/n. The loss is
    /// written to *lossHost (a host address), valid after synchronize().
    virtual void mseLoss(Lane lane, const void* y, const void* target, std::size_t n, void* grad, double* lossHost) = 0;
    /// y += alpha · x over n elements.
    virtual void axpy(Lane lane, std::size_t n, float alpha, const void* x, void* y) = 0;
    /// Sets `bytes` bytes to zero.
    virtual void setZero(Lane lane, void* ptr, std::size_t bytes) = 0;
    virtual void copyHostToDevice(Lane lane, void* dst, const void* src, std::size_t bytes) = 0;
    virtual void copyDeviceToHost(Lane lane, void* dst, const void* src, std::size_t bytes) = 0;
    virtual void copyDeviceToDevice(Lane lane, void* dst, const void* src, std::size_t bytes) = 0;
    /// Converts n float values from the host into the compute type on the device (fp32: a copy).
    virtual void uploadFloats(Lane lane, void* dst, const float* src, std::size_t n) = 0;
    /// Converts n device elements of the compute type to floats on the host; synchronous.
    virtual void downloadFloats(Lane lane, float* dst, const void* src, std::size_t n) = 0;

    // ---------------------------------------------------------------- kernels of the transformer layers
    // The elementwise work of engine/runtime/layers/ (docs/layers.md, "Backends"): every pointer is a device
    // pointer of the compute type unless its name ends in "Host" (a host array, read before the call returns:
    // the routing's index lists and gates, which stay host bookkeeping). Strides and sizes count elements. The
    // layers run on fp32 backends only (layers::requireFp32). The CPU backend's loops are the reference
    // (cpulayerkernels.cpp); a backend without these kernels throws RuntimeError naming the op.

    /// RMSNorm (Zhang & Sennrich 2019, eq. 4) of `rows` rows of n columns: y = g ⊙ x · r, r = 1/√(mean(x²) + eps),
    /// the row sums in double. x, y rows at strides xStride, yStride; g holds n weights.
    virtual void rmsNormForward(Lane lane, const void* x, std::size_t xStride, const void* g, void* y,
        std::size_t yStride, std::size_t rows, std::size_t n, float eps)
    {
        noLayerKernel("rmsNormForward", lane, x, xStride, g, y, yStride, rows, n, eps);
    }
    /// RMSNorm's backward (docs/layers.md): dx += r·(g ⊙ dy − x·r²·mean(g ⊙ dy ⊙ x)) and, unless dg is null,
    /// dg += Σ_rows dy ⊙ x · r (summed over the rows in row order). dx must not alias x or dy.
    virtual void rmsNormBackward(Lane lane, const void* x, std::size_t xStride, const void* g, const void* dy,
        std::size_t dyStride, void* dx, std::size_t dxStride, void* dg, std::size_t rows, std::size_t n, float eps)
    {
        noLayerKernel("rmsNormBackward", lane, x, xStride, g, dy, dyStride, dx, dxStride, dg, rows, n, eps);
    }
    /// Rotary embedding (Su et al. 2021, rotate-half pairing; layers/rope.h) in place: in each of `rows` rows
    /// (rowStride apart; row t is position t mod seqLen) and each head j < heads, the ropeDim (even) columns from
    /// colOffset + j·headStride turn pair (i, i + ropeDim/2) by p·θ_i, θ_i = base^(−2i/ropeDim), angles in
    /// double; inverse turns by −p·θ_i (the backward). Throws RuntimeError for an odd ropeDim or seqLen < 1.
    virtual void ropeApply(Lane lane, void* x, std::size_t rows, std::size_t rowStride, int heads,
        std::size_t headStride, std::size_t colOffset, int ropeDim, int seqLen, double base, bool inverse)
    {
        noLayerKernel(
            "ropeApply", lane, x, rows, rowStride, heads, headStride, colOffset, ropeDim, seqLen, base, inverse);
    }
    /// The causal softmax of attention in place, on `count` score matrices of seqLen × seqLen: row r becomes
    /// softmax of its columns j ≤ r (the row maximum subtracted, the sum in double) and 0 above the diagonal.
    virtual void causalSoftmaxForward(Lane lane, void* scores, std::size_t seqLen, std::size_t count)
    {
        noLayerKernel("causalSoftmaxForward", lane, scores, seqLen, count);
    }
    /// Its backward on one seqLen × seqLen matrix: grad (dP in, dS out, in place) = P ⊙ (dP − rowsum(dP ⊙ P)) on
    /// j ≤ r (the row sum in double), 0 above the diagonal.
    virtual void causalSoftmaxBackward(Lane lane, const void* probs, void* grad, std::size_t seqLen)
    {
        noLayerKernel("causalSoftmaxBackward", lane, probs, grad, seqLen);
    }
    /// SwiGLU's product (Shazeer 2020, eq. 6): out[i] = SiLU(gate[i])·up[i], SiLU(z) = z·σ(z), n elements, fp32.
    virtual void swigluForward(Lane lane, const void* gate, const void* up, void* out, std::size_t n)
    {
        noLayerKernel("swigluForward", lane, gate, up, out, n);
    }
    /// Its backward in place (layers/swiglu.h), with da the product's gradient: gate becomes
    /// da·up·σ(gate)·(1 + gate·(1 − σ(gate))) and up becomes da·SiLU(gate); n elements.
    virtual void swigluBackward(Lane lane, void* gate, void* up, const void* da, std::size_t n)
    {
        noLayerKernel("swigluBackward", lane, gate, up, da, n);
    }
    /// Copies `width` columns of each of `heads` heads of token-major `src` (token t = b·seqLen + s, HeadLayout)
    /// into head-major `dst` (batch × heads × seqLen rows of dstWidth, at column dstOffset).
    virtual void gatherHeads(Lane lane, const void* src, const HeadLayout& layout, int batch, int seqLen, int heads,
        int width, void* dst, int dstWidth, int dstOffset)
    {
        noLayerKernel("gatherHeads", lane, src, &layout, batch, seqLen, heads, width, dst, dstWidth, dstOffset);
    }
    /// The reverse of gatherHeads: writes (accumulate false) or adds (true) head-major `src` columns
    /// [srcOffset, srcOffset + width) of rows srcWidth wide into token-major `dst`. With headStride 0 and
    /// accumulate, sums the heads in head order (the gradient of a shared head).
    virtual void scatterHeads(Lane lane, const void* src, int batch, int seqLen, int heads, int width, int srcWidth,
        int srcOffset, void* dst, const HeadLayout& layout, bool accumulate)
    {
        noLayerKernel(
            "scatterHeads", lane, src, batch, seqLen, heads, width, srcWidth, srcOffset, dst, &layout, accumulate);
    }
    /// Gathers rows: dst row r (of n, `cols` wide) = scalesHost[r] · src row rowsHost[r] (a copy when scalesHost
    /// is null). The MoE dispatch and its output gradients, the embedding lookup.
    virtual void gatherRows(Lane lane, const void* src, std::size_t cols, const int* rowsHost, const float* scalesHost,
        std::size_t n, void* dst)
    {
        noLayerKernel("gatherRows", lane, src, cols, rowsHost, scalesHost, n, dst);
    }
    /// Scatter-adds rows, r = 0 … n−1 in order: dst row rowsHost[r] += scalesHost[r] · src row r (plain += when
    /// scalesHost is null); rows may repeat (the embedding's gradient). The MoE combine and its input gradients.
    virtual void scatterAddRows(Lane lane, const void* src, std::size_t cols, const int* rowsHost,
        const float* scalesHost, std::size_t n, void* dst)
    {
        noLayerKernel("scatterAddRows", lane, src, cols, rowsHost, scalesHost, n, dst);
    }
    /// dotsHost[r] = ⟨a row aRowsHost[r], b row r⟩ in double over `cols` columns, r < n (the MoE gates'
    /// gradients). Synchronous: dotsHost holds the values on return.
    virtual void rowDots(Lane lane, const void* a, const int* aRowsHost, const void* b, std::size_t n, std::size_t cols,
        double* dotsHost)
    {
        noLayerKernel("rowDots", lane, a, aRowsHost, b, n, cols, dotsHost);
    }
    /// Cross-entropy of `rows` rows of `vocab` logits against targetsHost (ids in [0, vocab)): lossesHost[t] =
    /// log Σ_j exp(z_tj − max_t) + max_t − z_t,target (in double). Synchronous: lossesHost holds them on return.
    virtual void crossEntropyForward(
        Lane lane, const void* logits, std::size_t rows, std::size_t vocab, const int* targetsHost, double* lossesHost)
    {
        noLayerKernel("crossEntropyForward", lane, logits, rows, vocab, targetsHost, lossesHost);
    }
    /// Its gradient in place of the logits: z_tj becomes (softmax(z_t)_j − [j = target_t])·scale.
    virtual void crossEntropyBackward(
        Lane lane, void* logits, std::size_t rows, std::size_t vocab, const int* targetsHost, double scale)
    {
        noLayerKernel("crossEntropyBackward", lane, logits, rows, vocab, targetsHost, scale);
    }
    // ---------------------------------------------------------------- end of the transformer layers' kernels

    /// Runs first(0) and second(1) concurrently where the backend can (CPU: two threads; CUDA: two
    /// streams) and returns when both are done. Rethrows the first exception either threw.
    virtual void runConcurrently(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second) = 0;
    /// Waits until all work issued on both lanes is done (the timing hook: the executor calls it before
    /// reading an action's end time).
    virtual void synchronize() = 0;
    /// Timing hook: called right after the barrier that starts a step (the origin of the step's clock).
    virtual void stepStarted() { }
    /// Timing hooks around an action's computation (e.g. device events, NVTX ranges); no-ops by default.
    /// The executor calls actionFinished() once the action's work is issued, before synchronize().
    virtual void actionStarted(const std::string& label) { }
    virtual void actionFinished() { }
    /// The last finished action's computation as the device measured it, in µs: from the start of its first
    /// operation to the end of its last, over the lanes it used (cuda: CUDA events recorded by
    /// actionStarted() and actionFinished(), docs/gpu.md). Valid after synchronize(). nullopt where the
    /// backend has no clock of its own (cpu: the host's clock is the measure) or no action finished in this
    /// step yet. Never throws for that; a failing device call throws RuntimeError.
    virtual std::optional<double> lastActionDeviceUs() { return std::nullopt; }

    /// Communication inside an action (the expert all-to-all of an MoE layer): the calling thread's lane is about
    /// to wait for messages (communicationStarted) or is done (communicationFinished). Recorded in
    /// laneActivity(); a backend that runs the two halves of a slot as threads taking turns on the compute
    /// (cpu LaneMode::Alternating) hands the turn to the other half meanwhile. Calls pair up on one thread.
    void communicationStarted();
    void communicationFinished();
    /// The lanes' record of the current (or last) action: the executor begins it before an action and reads
    /// the all-to-all time, and how much of it the other half hid, after.
    LaneActivity& laneActivity() { return m_activity; }
    const LaneActivity& laneActivity() const { return m_activity; }

protected:
    /// The default of the transformer layers' kernels: throws RuntimeError naming this backend and `op`.
    template <typename... Unused> [[noreturn]] void noLayerKernel(const char* op, const Unused&...) const
    {
        throw RuntimeError("the " + name() + " backend has no kernel " + op + " for the transformer layers");
    }
    /// The hooks' backend part, after (started) or before (finished) the record: no-ops by default.
    virtual void yieldCompute() { }
    virtual void resumeCompute() { }

    MemoryCounter m_memory;
    LaneActivity m_activity;
};

/// A device matrix (rows × cols elements of the backend's compute type) owned by a Backend; move-only;
/// frees itself. An empty Tensor has no memory.
class Tensor {
public:
    Tensor() = default;
    /// Allocates rows × cols elements (may be 0 × n: no memory).
    Tensor(Backend& backend, std::size_t rows, std::size_t cols, MemoryCategory category);
    ~Tensor() { reset(); }
    Tensor(Tensor&& other) noexcept;
    Tensor& operator=(Tensor&& other) noexcept;
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;

    void* data() const { return m_data; }
    std::size_t rows() const { return m_rows; }
    std::size_t cols() const { return m_cols; }
    std::size_t elements() const { return m_rows * m_cols; }
    std::size_t bytes() const { return m_bytes; }
    bool empty() const { return m_data == nullptr; }
    MemoryCategory category() const { return m_category; }
    /// Counts this tensor's bytes under another category from now on.
    void recategorize(MemoryCategory category);
    /// Frees the memory.
    void reset();

private:
    Backend* m_backend = nullptr;
    void* m_data = nullptr;
    std::size_t m_rows = 0;
    std::size_t m_cols = 0;
    std::size_t m_bytes = 0;
    MemoryCategory m_category = MemoryCategory::Workspace;
};

} // namespace dps::runtime
