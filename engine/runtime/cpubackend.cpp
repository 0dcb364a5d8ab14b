#include "cpubackend.h"

#include "base/format.h"
#include "base/hostinfo.h"
#include "cpukernels.h"

#include <algorithm>
#include <cblas.h>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sched.h>
#include <sstream>
#include <sys/mman.h>

#if DPS_HAVE_ONEDNN
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#endif

namespace dps::runtime {

namespace {

constexpr std::size_t kAlignment = 64;
/// Buffers of at least one x86-64 huge page (2 MiB) start on a huge-page boundary, take whole huge pages and are
/// offered to Linux's transparent huge pages (madvise MADV_HUGEPAGE: Debian's THP mode is "madvise", so nothing is
/// huge unless asked). With 4 KiB pages the speed of a GEMM over a stage's weights depended on where the process's
/// pages fell: at 32 × 1024 × 4096 on a 2-core EPYC, six probe processes gave 44.0–53.3 GFLOP/s; with huge
/// pages 51.3–56.0 (docs/cpu-profile.md, "Huge pages").
constexpr std::size_t kHugePage = std::size_t(2) << 20;

/// The size a request of `bytes` is allocated and cached as: whole huge pages from kHugePage on, else whole
/// kAlignment lines.
std::size_t blockSize(std::size_t bytes)
{
    const std::size_t unit = bytes >= kHugePage ? kHugePage : kAlignment;
    return std::max(unit, (bytes + unit - 1) / unit * unit);
}

/// A new block of blockSize() bytes (nullptr when out of memory), huge-page aligned and advised as above when it
/// spans huge pages; the advice failing (a kernel without THP) leaves ordinary pages.
void* newBlock(std::size_t size)
{
    const bool huge = size >= kHugePage;
    void* p = std::aligned_alloc(huge ? kHugePage : kAlignment, size);
    if (p && huge)
        ::madvise(p, size, MADV_HUGEPAGE);
    return p;
}

const float* asFloats(const void* p)
{
    return static_cast<const float*>(p);
}
float* asFloats(void* p)
{
    return static_cast<float*>(p);
}

CBLAS_TRANSPOSE blasTranspose(Transpose t)
{
    return t == Transpose::Yes ? CblasTrans : CblasNoTrans;
}

#if DPS_HAVE_ONEDNN
/// oneDNN (Debian's build: OpenMP threading) runs a GEMM on a team of omp_get_max_threads() threads, a value
/// OpenMP keeps per calling thread: set it to the backend's thread count once in every thread that multiplies
/// (the caller's and lane 1's). omp_set_num_threads comes with libgomp, which libdnnl loads.
void limitOpenMpThreads(int threads)
{
    thread_local int current = 0;
    if (current == threads)
        return;
    using Setter = void (*)(int);
    static const auto setter = reinterpret_cast<Setter>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    if (setter)
        setter(threads);
    current = threads;
}

std::string oneDnnVersion()
{
    const dnnl_version_t* v = dnnl_version();
    return v ? std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) : "";
}
#endif

/// A positive integer environment variable, 0 when unset or not one.
int envCount(const char* name)
{
    const char* value = std::getenv(name);
    if (!value || !*value)
        return 0;
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    return *end == '\0' && n > 0 && n < 1'000'000 ? static_cast<int>(n) : 0;
}

} // namespace

double coresForThisRank()
{
    const int online = cpuCoreCount();
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
        const int bound = CPU_COUNT(&mask);
        if (bound > 0 && bound < online)
            return bound; // bound by mpirun (or taskset): these CPUs are this rank's
    }
    int localRanks = envCount("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (localRanks == 0)
        localRanks = envCount("MPI_LOCALNRANKS");
    return static_cast<double>(online) / std::max(1, localRanks);
}

std::vector<GemmLibrary> availableGemmLibraries()
{
#if DPS_HAVE_ONEDNN
    return { GemmLibrary::OpenBlas, GemmLibrary::OneDnn };
#else
    return { GemmLibrary::OpenBlas };
#endif
}

GemmLibrary defaultGemmLibrary()
{
#if DPS_HAVE_ONEDNN
    const char* forced = std::getenv("DPSTUDIO_CPU_GEMM");
    return forced && std::string(forced) == "openblas" ? GemmLibrary::OpenBlas : GemmLibrary::OneDnn;
#else
    return GemmLibrary::OpenBlas;
#endif
}

LaneMode defaultLaneMode(int blasThreads)
{
    if (const char* forced = std::getenv("DPSTUDIO_CPU_LANES"); forced && *forced) {
        if (std::string(forced) == "threads")
            return LaneMode::Threads;
        if (std::string(forced) == "turns")
            return LaneMode::InTurn;
        if (std::string(forced) == "alternating")
            return LaneMode::Alternating;
    }
    return coresForThisRank() >= 2.0 * std::max(1, blasThreads) ? LaneMode::Threads : LaneMode::InTurn;
}

CpuBackend::CpuBackend(int blasThreads)
    : m_blasThreads(blasThreads < 1 ? 1 : blasThreads)
    , m_laneMode(defaultLaneMode(m_blasThreads))
    , m_gemmLibrary(defaultGemmLibrary())
{
    openblas_set_num_threads(m_blasThreads);
    m_helper = std::thread([this] { helperLoop(); });
}

CpuBackend::~CpuBackend()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    m_helper.join();
    for (auto& [size, blocks] : m_cache)
        for (void* p : blocks)
            std::free(p);
}

void CpuBackend::setGemmLibrary(GemmLibrary library)
{
#if !DPS_HAVE_ONEDNN
    if (library == GemmLibrary::OneDnn)
        throw RuntimeError("cpu backend: built without oneDNN (libdnnl-dev was not found at configure time)");
#endif
    m_gemmLibrary = library;
}

std::string CpuBackend::deviceDescription() const
{
    std::string gemm;
#if DPS_HAVE_ONEDNN
    if (m_gemmLibrary == GemmLibrary::OneDnn)
        gemm = ", GEMMs by oneDNN " + oneDnnVersion();
#endif
    return cpuModelName() + " (OpenBLAS " + openblas_get_corename() + gemm + ", "
        + formatCountOf(static_cast<std::size_t>(m_blasThreads), "thread") + ")";
}

std::string loadedBlasCore()
{
    const char* name = openblas_get_corename();
    return name ? name : "";
}

machine::MachineKey blasMachineKey(int blasThreads)
{
    machine::MachineKey key;
    key.cpuModel = cpuModelName();
    key.cores = cpuCoreCount();
    key.cpuFlagsHash = machine::cpuFlagsHash(cpuInfoField("flags"));
    key.blasCore = loadedBlasCore();
    const char* config = openblas_get_config();
    std::string version;
    std::istringstream words(config ? config : "");
    for (std::string w; words >> w;)
        if (w != key.blasCore) // the config names the loaded core: keep only the build
            version += (version.empty() ? "" : " ") + w;
#if DPS_HAVE_ONEDNN
    if (defaultGemmLibrary() == GemmLibrary::OneDnn)
        version += " + oneDNN " + oneDnnVersion() + " GEMMs"; // the GEMM figures are oneDNN's
#endif
    key.blasVersion = version;
    key.blasThreads = blasThreads < 1 ? 1 : blasThreads;
    return key;
}

machine::BlasCoreDecision preferredBlasCore(int blasThreads)
{
    if (const char* user = std::getenv("OPENBLAS_CORETYPE"); user && *user)
        return { "", std::string("OPENBLAS_CORETYPE=") + user + " is set: left alone" };
    try {
        const machine::MachineKey key = blasMachineKey(blasThreads);
        std::string winner;
        if (const auto cached = machine::cachedCpuProfile(key); cached && cached->kernelChoice)
            winner = cached->kernelChoice->winner;
        return machine::chooseBlasCore(machine::hostCpuFeatures(), key.blasCore, winner);
    } catch (const std::exception& e) {
        return { "", std::string("OpenBLAS's own (the kernel rule failed: ") + e.what() + ")" };
    }
}

std::string preferredBlasCoreType(int blasThreads)
{
    return preferredBlasCore(blasThreads).core;
}

void* CpuBackend::allocate(std::size_t bytes, MemoryCategory category)
{
    const std::size_t rounded = blockSize(bytes);
    void* p = nullptr;
    {
        std::lock_guard lock(m_cacheMutex);
        auto it = m_cache.find(rounded);
        if (it != m_cache.end() && !it->second.empty()) {
            p = it->second.back();
            it->second.pop_back();
            m_cachedBytes -= rounded;
        }
    }
    if (!p)
        p = newBlock(rounded);
    if (!p)
        throw RuntimeError("cpu backend: out of memory allocating " + std::to_string(bytes) + " bytes");
    m_memory.add(category, bytes);
    return p;
}

void CpuBackend::deallocate(void* ptr, std::size_t bytes, MemoryCategory category)
{
    const std::size_t rounded = blockSize(bytes);
    {
        std::lock_guard lock(m_cacheMutex);
        m_cache[rounded].push_back(ptr);
        m_cachedBytes += rounded;
    }
    m_memory.remove(category, bytes);
}

std::size_t CpuBackend::cachedBytes() const
{
    std::lock_guard lock(m_cacheMutex);
    return m_cachedBytes;
}

void CpuBackend::gemm(Lane, Transpose transA, Transpose transB, int m, int n, int k, float alpha, const void* a,
    const void* b, float beta, void* c)
{
    const int lda = transA == Transpose::Yes ? m : k;
    const int ldb = transB == Transpose::Yes ? k : n;
#if DPS_HAVE_ONEDNN
    if (m_gemmLibrary == GemmLibrary::OneDnn) {
        limitOpenMpThreads(m_blasThreads);
        const dnnl_status_t status
            = dnnl_sgemm(transA == Transpose::Yes ? 'T' : 'N', transB == Transpose::Yes ? 'T' : 'N', m, n, k, alpha,
                asFloats(a), lda, asFloats(b), ldb, beta, asFloats(c), n);
        if (status != dnnl_success)
            throw RuntimeError("cpu backend: oneDNN sgemm of " + std::to_string(m) + "×" + std::to_string(n) + "×"
                + std::to_string(k) + " failed (dnnl status " + std::to_string(static_cast<int>(status)) + ")");
        return;
    }
#endif
    cblas_sgemm(CblasRowMajor, blasTranspose(transA), blasTranspose(transB), m, n, k, alpha, asFloats(a), lda,
        asFloats(b), ldb, beta, asFloats(c), n);
}

void CpuBackend::geluForward(Lane, const void* in, void* out, std::size_t n)
{
    cpu::geluForward(asFloats(in), asFloats(out), n);
}

void CpuBackend::geluBackward(Lane, const void* in, const void* gradOut, void* gradIn, std::size_t n)
{
    cpu::geluBackward(asFloats(in), asFloats(gradOut), asFloats(gradIn), n);
}

void CpuBackend::mseLoss(Lane, const void* y, const void* target, std::size_t n, void* grad, double* lossHost)
{
    const float* p = asFloats(y);
    const float* t = asFloats(target);
    float* g = asFloats(grad);
    const float scale = 2.0f / static_cast<float>(n);
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(p[i]) - static_cast<double>(t[i]);
        sum += d * d;
        g[i] = scale * (p[i] - t[i]);
    }
    *lossHost = sum / static_cast<double>(n);
}

void CpuBackend::axpy(Lane, std::size_t n, float alpha, const void* x, void* y)
{
    cblas_saxpy(static_cast<blasint>(n), alpha, asFloats(x), 1, asFloats(y), 1);
}

void CpuBackend::setZero(Lane, void* ptr, std::size_t bytes)
{
    std::memset(ptr, 0, bytes);
}

void CpuBackend::copyHostToDevice(Lane, void* dst, const void* src, std::size_t bytes)
{
    std::memcpy(dst, src, bytes);
}

void CpuBackend::copyDeviceToHost(Lane, void* dst, const void* src, std::size_t bytes)
{
    std::memcpy(dst, src, bytes);
}

void CpuBackend::copyDeviceToDevice(Lane, void* dst, const void* src, std::size_t bytes)
{
    std::memcpy(dst, src, bytes);
}

void CpuBackend::uploadFloats(Lane, void* dst, const float* src, std::size_t n)
{
    std::memcpy(dst, src, n * sizeof(float));
}

void CpuBackend::downloadFloats(Lane, float* dst, const void* src, std::size_t n)
{
    std::memcpy(dst, src, n * sizeof(float));
}

namespace {
/// Where the calling thread stands with CpuBackend's compute turn (LaneMode::Alternating).
enum class Turn : std::uint8_t { None, Holding, Yielded };
thread_local Turn t_turn = Turn::None;

/// Holds the compute turn for a half of an overlapped slot (LaneMode::Alternating), from its start to its end
/// except while it communicates.
class TurnScope {
public:
    explicit TurnScope(std::mutex& turn)
        : m_turn(turn)
    {
        m_turn.lock();
        t_turn = Turn::Holding;
    }
    ~TurnScope()
    {
        if (t_turn == Turn::Holding)
            m_turn.unlock();
        t_turn = Turn::None;
    }
    TurnScope(const TurnScope&) = delete;
    TurnScope& operator=(const TurnScope&) = delete;

private:
    std::mutex& m_turn;
};
} // namespace

void CpuBackend::runConcurrently(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second)
{
    if (m_laneMode == LaneMode::InTurn) {
        // Both halves run, as on two threads; the first half's error wins.
        std::exception_ptr firstError;
        try {
            first(0);
        } catch (...) {
            firstError = std::current_exception();
        }
        try {
            second(1);
        } catch (...) {
            if (!firstError)
                throw;
        }
        if (firstError)
            std::rethrow_exception(firstError);
        return;
    }
    if (m_laneMode == LaneMode::Alternating) {
        const std::function<void(Lane)> firstInTurn = [&](Lane lane) {
            const TurnScope turn(m_computeTurn);
            first(lane);
        };
        const std::function<void(Lane)> secondInTurn = [&](Lane lane) {
            const TurnScope turn(m_computeTurn);
            second(lane);
        };
        runOnTwoThreads(firstInTurn, secondInTurn);
        return;
    }
    runOnTwoThreads(first, second);
}

void CpuBackend::runOnTwoThreads(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second)
{
    {
        std::lock_guard lock(m_mutex);
        m_task = &second;
        m_taskFinished = false;
        m_taskError = nullptr;
    }
    m_wake.notify_one();
    std::exception_ptr firstError;
    try {
        first(0);
    } catch (...) {
        firstError = std::current_exception();
    }
    std::unique_lock lock(m_mutex);
    m_done.wait(lock, [this] { return m_taskFinished; });
    if (firstError)
        std::rethrow_exception(firstError);
    if (m_taskError)
        std::rethrow_exception(m_taskError);
}

void CpuBackend::yieldCompute()
{
    if (t_turn != Turn::Holding)
        return; // not a half of an Alternating slot
    t_turn = Turn::Yielded;
    m_computeTurn.unlock();
}

void CpuBackend::resumeCompute()
{
    if (t_turn != Turn::Yielded)
        return;
    m_computeTurn.lock();
    t_turn = Turn::Holding;
}

void CpuBackend::helperLoop()
{
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_wake.wait(lock, [this] { return m_stop || m_task != nullptr; });
        if (m_stop)
            return;
        const auto* task = m_task;
        m_task = nullptr;
        lock.unlock();
        std::exception_ptr error;
        try {
            (*task)(1);
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        m_taskError = error;
        m_taskFinished = true;
        m_done.notify_one();
    }
}

} // namespace dps::runtime
