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
    std::int64_t m_originNs = 0;
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
