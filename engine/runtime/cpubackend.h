#pragma once
// The CPU backend: fp32, GEMMs through oneDNN or OpenBLAS (GemmLibrary), 64-byte aligned host memory from a
// block cache (freed blocks are kept per size and reused, so the tensors of every action do not go back to the
// OS and fault in again). The two halves of an overlapped slot run on two threads (a persistent helper thread
// runs lane 1) when the rank has the cores for both, else one after the other on the calling thread (LaneMode).
#include "backend.h"
#include "machine/cpuprofile.h"

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace dps::runtime {

/// How CpuBackend::runConcurrently runs the two halves of an overlapped slot.
enum class LaneMode : std::uint8_t {
    /// On two threads at once (lane 1 on the helper thread): when the rank has a core for each.
    Threads,
    /// One after the other on the calling thread, the first half first: when the rank has fewer cores than
    /// two halves' BLAS threads. Two threads on one core only take turns and evict each other's cache
    /// (docs/performance.md: DualPipeV on 2 ranks bound to a core each, 438 → 430 ms a step).
    InTurn,
    /// On two threads that take turns on the compute: a half waiting for communication (the expert all-to-all,
    /// Backend::communicationStarted) hands the turn to the other half, which computes meanwhile; the compute
    /// and communication streams of a GPU (DeepSeek-V3 report §3.2.2) on a rank without a core per half. The
    /// worker's choice for expert parallelism where Threads is not (runtime/worker.cpp).
    Alternating,
};

/// The library the CPU backend's GEMMs go through (everything else: OpenBLAS or our kernels).
enum class GemmLibrary : std::uint8_t {
    OpenBlas, ///< cblas_sgemm
    OneDnn, ///< dnnl_sgemm (built with oneDNN: DPS_HAVE_ONEDNN)
};

/// The GEMM libraries this build has: OpenBLAS, and oneDNN where it was found at configure time.
std::vector<GemmLibrary> availableGemmLibraries();
/// oneDNN where the backend was built with it (faster than OpenBLAS at the model's shapes,
/// docs/performance.md), unless DPSTUDIO_CPU_GEMM=openblas; OpenBLAS otherwise. Never throws.
GemmLibrary defaultGemmLibrary();

/// The lane mode for a rank of this process with `blasThreads` BLAS threads: Threads when
/// coresForThisRank() ≥ 2·blasThreads, else InTurn. DPSTUDIO_CPU_LANES=threads|turns|alternating overrides it (for
/// measurements). Never throws.
LaneMode defaultLaneMode(int blasThreads);
/// The cores one rank of this process can count on: the CPUs of its affinity mask when the process is bound
/// to fewer CPUs than the host has online (mpirun's --bind-to core), else the online CPUs shared by the ranks
/// on this host (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's MPI_LOCALNRANKS; 1 rank without either).
/// Never throws.
double coresForThisRank();

class CpuBackend final : public Backend {
public:
    /// `blasThreads` (≥ 1) is passed to openblas_set_num_threads; the lane mode is defaultLaneMode(blasThreads).
    explicit CpuBackend(int blasThreads = 1);
    ~CpuBackend() override;
    CpuBackend(const CpuBackend&) = delete;
    CpuBackend& operator=(const CpuBackend&) = delete;

    std::string name() const override { return "cpu"; }
    std::string deviceDescription() const override;
    int elementBytes() const override { return 4; }
    bool hostAccessible() const override { return true; }

    void* allocate(std::size_t bytes, MemoryCategory category) override;
    void deallocate(void* ptr, std::size_t bytes, MemoryCategory category) override;

    void gemm(Lane lane, Transpose transA, Transpose transB, int m, int n, int k, float alpha, const void* a,
        const void* b, float beta, void* c) override;
    void geluForward(Lane lane, const void* in, void* out, std::size_t n) override;
    void geluBackward(Lane lane, const void* in, const void* gradOut, void* gradIn, std::size_t n) override;
    void mseLoss(Lane lane, const void* y, const void* target, std::size_t n, void* grad, double* lossHost) override;
    void axpy(Lane lane, std::size_t n, float alpha, const void* x, void* y) override;
    void setZero(Lane lane, void* ptr, std::size_t bytes) override;
    void copyHostToDevice(Lane lane, void* dst, const void* src, std::size_t bytes) override;
    void copyDeviceToHost(Lane lane, void* dst, const void* src, std::size_t bytes) override;
    void copyDeviceToDevice(Lane lane, void* dst, const void* src, std::size_t bytes) override;
    void uploadFloats(Lane lane, void* dst, const float* src, std::size_t n) override;
    void downloadFloats(Lane lane, float* dst, const void* src, std::size_t n) override;

    void runConcurrently(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second) override;
    void synchronize() override { }

    // The transformer layers' kernels (backend.h), host loops in cpulayerkernels.cpp.
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

    int blasThreads() const { return m_blasThreads; }
    LaneMode laneMode() const { return m_laneMode; }
    GemmLibrary gemmLibrary() const { return m_gemmLibrary; }
    /// Replaces the GEMM library (tests; the worker keeps the default). Throws RuntimeError for oneDNN in a
    /// build without it.
    void setGemmLibrary(GemmLibrary library);
    /// Replaces the lane mode (tests; the worker keeps the default). Not while runConcurrently runs.
    void setLaneMode(LaneMode mode) { m_laneMode = mode; }
    /// Bytes held in the block cache (freed, kept for reuse): not counted in memory().
    std::size_t cachedBytes() const;

protected:
    /// LaneMode::Alternating: the calling half gives the compute turn away while it communicates, and waits for it.
    void yieldCompute() override;
    void resumeCompute() override;

private:
    void helperLoop();
    /// first on the calling thread, second on the helper thread; rethrows the first error.
    void runOnTwoThreads(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second);

    int m_blasThreads = 1;
    LaneMode m_laneMode = LaneMode::Threads;
    GemmLibrary m_gemmLibrary = GemmLibrary::OpenBlas;
    mutable std::mutex m_cacheMutex;
    std::map<std::size_t, std::vector<void*>> m_cache; ///< free blocks by rounded size
    std::size_t m_cachedBytes = 0;
    std::thread m_helper;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_done;
    const std::function<void(Lane)>* m_task = nullptr; ///< the helper's pending task, guarded by m_mutex
    std::exception_ptr m_taskError;
    bool m_taskFinished = false;
    bool m_stop = false;
    std::mutex m_computeTurn; ///< LaneMode::Alternating: held by the half that computes
};

/// The OpenBLAS core this process loaded (openblas_get_corename: "SkylakeX").
std::string loadedBlasCore();
/// This process's machine key (machine/cpuprofile.h): the CPU model, cores and flags, the OpenBLAS core it
/// loaded and its build (openblas_get_config without the core name, plus " + oneDNN X.Y.Z GEMMs" when the
/// GEMMs go through oneDNN), and `blasThreads`.
machine::MachineKey blasMachineKey(int blasThreads);
/// The BLAS kernel rule (machine::chooseBlasCore, docs/cpu-profile.md) for this process: the CPU's features
/// (/proc/cpuinfo flags), the core OpenBLAS loaded (its own detection while OPENBLAS_CORETYPE is unset) and
/// the measured winner of the cached profile of this machine with `blasThreads` threads, if any (a missing
/// or unreadable cache counts as nothing measured). With OPENBLAS_CORETYPE set: "" (the user's choice is
/// left alone). Never throws.
machine::BlasCoreDecision preferredBlasCore(int blasThreads);
/// The OpenBLAS core type (OPENBLAS_CORETYPE) the CPU backend prefers on this machine, "" for OpenBLAS's
/// own choice: preferredBlasCore(blasThreads).core. OpenBLAS reads the variable only when it is loaded, so
/// dpstudio-worker re-executes itself with it set (engine/worker/main.cpp); an OPENBLAS_CORETYPE already in
/// the environment is left alone.
std::string preferredBlasCoreType(int blasThreads = 1);

} // namespace dps::runtime
