#include "cpubackend.h"

#include "cpukernels.h"
#include "base/hostinfo.h"

#include <algorithm>
#include <cblas.h>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

namespace dps::runtime {

namespace {

constexpr std::size_t kAlignment = 64;

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

} // namespace

CpuBackend::CpuBackend(int blasThreads)
    : m_blasThreads(blasThreads < 1 ? 1 : blasThreads)
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

std::string CpuBackend::deviceDescription() const
{
    return cpuModelName() + " (OpenBLAS " + openblas_get_corename() + ", " + std::to_string(m_blasThreads) + " thread"
        + (m_blasThreads == 1 ? "" : "s") + ")";
}

std::string loadedBlasCore()
{
    const char* name = openblas_get_corename();
    return name ? name : "";
}

launch::MachineKey blasMachineKey(int blasThreads)
{
    launch::MachineKey key;
    key.cpuModel = cpuModelName();
    key.cores = cpuCoreCount();
    key.cpuFlagsHash = launch::cpuFlagsHash(cpuInfoField("flags"));
    key.blasCore = loadedBlasCore();
    const char* config = openblas_get_config();
    std::string version;
    std::istringstream words(config ? config : "");
    for (std::string w; words >> w;)
        if (w != key.blasCore) // the config names the loaded core: keep only the build
            version += (version.empty() ? "" : " ") + w;
    key.blasVersion = version;
    key.blasThreads = blasThreads < 1 ? 1 : blasThreads;
    return key;
}

launch::BlasCoreDecision preferredBlasCore(int blasThreads)
{
    if (const char* user = std::getenv("OPENBLAS_CORETYPE"); user && *user)
        return { "", std::string("OPENBLAS_CORETYPE=") + user + " is set: left alone" };
    try {
        const launch::MachineKey key = blasMachineKey(blasThreads);
        std::string winner;
        if (const auto cached = launch::cachedCpuProfile(key); cached && cached->kernelChoice)
            winner = cached->kernelChoice->winner;
        return launch::chooseBlasCore(launch::hostCpuFeatures(), key.blasCore, winner);
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
    const std::size_t rounded = std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
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
        p = std::aligned_alloc(kAlignment, rounded);
    if (!p)
        throw RuntimeError("cpu backend: out of memory allocating " + std::to_string(bytes) + " bytes");
    m_memory.add(category, bytes);
    return p;
}

void CpuBackend::deallocate(void* ptr, std::size_t bytes, MemoryCategory category)
{
    const std::size_t rounded = std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
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

void CpuBackend::runConcurrently(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second)
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
