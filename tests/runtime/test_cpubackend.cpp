// The CPU backend's kernels against naive loops and finite differences, its allocator's exact counting and
// its two lanes.
#include "base/hostinfo.h"
#include "runtime/cpubackend.h"

#include <gtest/gtest.h>

#include <chrono>

#include <sched.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace dps::runtime;

namespace {

std::vector<float> randomValues(std::size_t n, unsigned seed)
{
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = dist(gen);
    return v;
}

/// Element (i, j) of op(M) for a row-major M stored rows × cols.
float at(const std::vector<float>& m, int cols, bool transposed, int i, int j)
{
    return transposed ? m[static_cast<std::size_t>(j) * cols + i] : m[static_cast<std::size_t>(i) * cols + j];
}

/// C = alpha·op(A)·op(B) + beta·C with loops in double.
std::vector<float> naiveGemm(bool ta, bool tb, int m, int n, int k, float alpha, const std::vector<float>& a,
    const std::vector<float>& b, float beta, std::vector<float> c)
{
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            double sum = 0.0;
            for (int p = 0; p < k; ++p)
                sum += static_cast<double>(at(a, ta ? m : k, ta, i, p)) * at(b, tb ? k : n, tb, p, j);
            float& out = c[static_cast<std::size_t>(i) * n + j];
            out = static_cast<float>(alpha * sum + beta * out);
        }
    return c;
}

class CpuBackendTest : public ::testing::Test {
protected:
    /// A device tensor holding `values`.
    Tensor upload(const std::vector<float>& values)
    {
        Tensor t(backend, 1, values.size(), MemoryCategory::Workspace);
        backend.uploadFloats(0, t.data(), values.data(), values.size());
        return t;
    }
    std::vector<float> download(const Tensor& t)
    {
        std::vector<float> v(t.elements());
        backend.downloadFloats(0, v.data(), t.data(), v.size());
        return v;
    }

    CpuBackend backend { 1 };
};

} // namespace

TEST_F(CpuBackendTest, GemmMatchesNaiveLoopsForEveryTransposeAndBeta)
{
    const int m = 5, n = 7, k = 3;
    for (bool ta : { false, true })
        for (bool tb : { false, true })
            for (float beta : { 0.0f, 1.0f, 0.5f }) {
                const auto a = randomValues(static_cast<std::size_t>(m * k), 1);
                const auto b = randomValues(static_cast<std::size_t>(k * n), 2);
                const auto c0 = randomValues(static_cast<std::size_t>(m * n), 3);
                Tensor da = upload(a), db = upload(b), dc = upload(c0);
                backend.gemm(0, ta ? Transpose::Yes : Transpose::No, tb ? Transpose::Yes : Transpose::No, m, n, k, 1.5f,
                    da.data(), db.data(), beta, dc.data());
                const auto want = naiveGemm(ta, tb, m, n, k, 1.5f, a, b, beta, c0);
                const auto got = download(dc);
                for (std::size_t i = 0; i < want.size(); ++i)
                    EXPECT_NEAR(got[i], want[i], 1e-5) << "ta=" << ta << " tb=" << tb << " beta=" << beta << " i=" << i;
            }
}

namespace {

/// GELU and its derivative in long double: x·Φ(x), Φ(x) = ½·erfc(−x/√2).
long double exactGelu(long double x)
{
    return 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
}
long double exactGeluDerivative(long double x)
{
    return 0.5L * std::erfc(-x / std::sqrt(2.0L)) + x * std::exp(-0.5L * x * x) / std::sqrt(2.0L * M_PIl);
}

/// Points over [−16, 16] with both tails, plus zero and tiny values.
std::vector<float> geluPoints()
{
    std::vector<float> x { 0.0f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, -13.0f, 13.0f, -20.0f, 1e30f, -1e30f };
    for (int i = -16000; i <= 16000; ++i)
        x.push_back(static_cast<float>(i) * 1e-3f + 3.7e-5f);
    return x;
}

} // namespace

TEST_F(CpuBackendTest, GeluForwardIsTheExactErfFormToFloatAccuracyInBothTails)
{
    const auto x = geluPoints();
    Tensor in = upload(x), out(backend, 1, x.size(), MemoryCategory::Workspace);
    backend.geluForward(0, in.data(), out.data(), x.size());
    const auto got = download(out);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const long double want = exactGelu(x[i]);
        if (std::fabs(want) > 1e-36L)
            EXPECT_LE(std::fabs((got[i] - want) / want), 5e-7L) << "x=" << x[i] << " got " << got[i];
        else
            EXPECT_LE(std::fabs(got[i]), 1e-36f) << "x=" << x[i];
    }
}

TEST_F(CpuBackendTest, GeluGradientMatchesFiniteDifferencesAndTheExactDerivative)
{
    const auto x = geluPoints();
    const std::vector<float> ones(x.size(), 1.0f);
    Tensor in = upload(x), grad = upload(ones), dx(backend, 1, x.size(), MemoryCategory::Workspace);
    backend.geluBackward(0, in.data(), grad.data(), dx.data(), x.size());
    const auto got = download(dx);
    const long double h = 1e-6L;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const long double v = x[i];
        if (std::fabs(v) < 30.0L) {
            const long double fd = (exactGelu(v + h) - exactGelu(v - h)) / (2 * h);
            EXPECT_NEAR(got[i], static_cast<double>(fd), 1e-6) << "x=" << x[i];
        }
        EXPECT_NEAR(got[i], static_cast<double>(exactGeluDerivative(v)), 3e-7) << "x=" << x[i];
    }
}

TEST_F(CpuBackendTest, GeluBackwardScalesTheIncomingGradientInPlace)
{
    const std::vector<float> x { -1.0f, 0.0f, 2.0f };
    const std::vector<float> ones(3, 1.0f);
    std::vector<float> g { 2.0f, 3.0f, -1.0f };
    Tensor in = upload(x), unit = upload(ones), grad = upload(g);
    backend.geluBackward(0, in.data(), unit.data(), unit.data(), x.size());
    backend.geluBackward(0, in.data(), grad.data(), grad.data(), x.size());
    const auto derivative = download(unit);
    const auto got = download(grad);
    for (std::size_t i = 0; i < x.size(); ++i)
        EXPECT_FLOAT_EQ(got[i], g[i] * derivative[i]);
}

TEST_F(CpuBackendTest, MseLossAndGradientMatchTheDefinition)
{
    const auto y = randomValues(64, 5);
    const auto t = randomValues(64, 6);
    Tensor dy = upload(y), dt = upload(t), grad(backend, 1, y.size(), MemoryCategory::Workspace);
    double loss = -1.0;
    backend.mseLoss(0, dy.data(), dt.data(), y.size(), grad.data(), &loss);
    backend.synchronize();
    double want = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i)
        want += (static_cast<double>(y[i]) - t[i]) * (static_cast<double>(y[i]) - t[i]);
    want /= static_cast<double>(y.size());
    EXPECT_NEAR(loss, want, 1e-12);
    const auto g = download(grad);
    for (std::size_t i = 0; i < y.size(); ++i)
        EXPECT_NEAR(g[i], 2.0 * (y[i] - t[i]) / static_cast<double>(y.size()), 1e-7);
}

TEST_F(CpuBackendTest, AxpyZeroAndCopies)
{
    const auto x = randomValues(10, 7);
    const auto y = randomValues(10, 8);
    Tensor dx = upload(x), dy = upload(y), copy(backend, 1, 10, MemoryCategory::Workspace);
    backend.axpy(0, 10, 2.0f, dx.data(), dy.data());
    auto got = download(dy);
    for (std::size_t i = 0; i < 10; ++i)
        EXPECT_FLOAT_EQ(got[i], y[i] + 2.0f * x[i]);
    backend.copyDeviceToDevice(0, copy.data(), dx.data(), dx.bytes());
    EXPECT_EQ(download(copy), x);
    backend.setZero(0, copy.data(), copy.bytes());
    EXPECT_EQ(download(copy), std::vector<float>(10, 0.0f));
    std::vector<float> host(10);
    backend.copyHostToDevice(0, copy.data(), y.data(), copy.bytes());
    backend.copyDeviceToHost(0, host.data(), copy.data(), copy.bytes());
    EXPECT_EQ(host, y);
}

TEST_F(CpuBackendTest, AllocatorCountsLiveBytesExactlyPerCategory)
{
    const MemoryCounter& mem = backend.memory();
    EXPECT_EQ(mem.total(), 0u);
    {
        Tensor a(backend, 3, 5, MemoryCategory::Activation); // 60 bytes: not rounded
        Tensor p(backend, 7, 1, MemoryCategory::Parameter);
        EXPECT_EQ(mem.live(MemoryCategory::Activation), 60u);
        EXPECT_EQ(mem.live(MemoryCategory::Parameter), 28u);
        EXPECT_EQ(mem.total(), 88u);
        a.recategorize(MemoryCategory::Communication);
        EXPECT_EQ(mem.live(MemoryCategory::Activation), 0u);
        EXPECT_EQ(mem.live(MemoryCategory::Communication), 60u);
        EXPECT_EQ(mem.total(), 88u);
        Tensor moved = std::move(a);
        EXPECT_TRUE(a.empty());
        EXPECT_EQ(mem.total(), 88u);
        moved.reset();
        EXPECT_EQ(mem.total(), 28u);
        EXPECT_EQ(mem.peak(), 88u);
    }
    EXPECT_EQ(mem.total(), 0u);
    EXPECT_EQ(mem.live(MemoryCategory::Communication), 0u);
}

TEST_F(CpuBackendTest, BuffersOfAHugePageOrMoreStartOnOneAndAreCountedAsRequested)
{
    const std::size_t hugePage = std::size_t(2) << 20;
    const MemoryCounter& mem = backend.memory();
    const std::size_t before = backend.cachedBytes();
    {
        Tensor large(backend, 768, 1024, MemoryCategory::Parameter); // 3 MiB: two huge pages
        Tensor small(backend, 1000, 1, MemoryCategory::Activation); // 4000 bytes: 64-byte lines
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large.data()) % hugePage, 0u);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % 64u, 0u);
        EXPECT_EQ(mem.live(MemoryCategory::Parameter), 3u << 20); // the bytes asked for, not the 4 MiB held
        EXPECT_EQ(mem.total(), (3u << 20) + 4000u);
    }
    EXPECT_EQ(backend.cachedBytes() - before, (4u << 20) + 4032u); // whole huge pages; whole 64-byte lines
    const void* reused = nullptr;
    {
        Tensor again(backend, 896, 1024, MemoryCategory::Activation); // 3.5 MiB: the same 4 MiB block
        reused = again.data();
        EXPECT_EQ(backend.cachedBytes() - before, 4032u);
        EXPECT_EQ(mem.total(), 896u * 1024u * 4u);
    }
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(reused) % hugePage, 0u);
}

TEST_F(CpuBackendTest, TheLanesOfAnOverlappedSlotCountAtTheirBound)
{
    MemoryCounter& mem = backend.memory();
    Tensor before(backend, 10, 1, MemoryCategory::Parameter); // 40 bytes live when the lanes start
    mem.resetPeak();
    mem.beginLanes();
    backend.runConcurrently(
        [&](Lane lane) {
            const MemoryCounter::LaneScope counted(lane);
            Tensor a(backend, 25, 1, MemoryCategory::Workspace); // 100, freed
            Tensor kept(backend, 5, 1, MemoryCategory::Activation); // 20 more: lane 0 peaks at 120
            a.reset();
            kept.recategorize(MemoryCategory::Communication);
            Tensor leave(std::move(kept));
            leave.reset();
        },
        [&](Lane lane) {
            const MemoryCounter::LaneScope counted(lane);
            Tensor b(backend, 12, 1, MemoryCategory::Workspace); // lane 1 peaks at 48
        });
    // 40 + 120 + 48 whatever the interleaving (or the turns) of the two lanes.
    EXPECT_EQ(mem.endLanes(), 208u);
    EXPECT_EQ(mem.peak(), 208u);
    EXPECT_EQ(mem.total(), 40u);
    // Outside lanes, the peak is the plain high-water mark again.
    mem.resetPeak();
    Tensor c(backend, 4, 1, MemoryCategory::Workspace);
    EXPECT_EQ(mem.peak(), 56u);
}

TEST_F(CpuBackendTest, RunConcurrentlyUsesTwoThreadsAndBothLanes)
{
    backend.setLaneMode(LaneMode::Threads);
    std::thread::id ids[2];
    Lane lanes[2] = { -1, -1 };
    backend.runConcurrently(
        [&](Lane l) {
            ids[0] = std::this_thread::get_id();
            lanes[0] = l;
        },
        [&](Lane l) {
            ids[1] = std::this_thread::get_id();
            lanes[1] = l;
        });
    EXPECT_NE(ids[0], ids[1]);
    EXPECT_EQ(lanes[0], 0);
    EXPECT_EQ(lanes[1], 1);
}

TEST_F(CpuBackendTest, RunConcurrentlyRethrowsEitherHalfsExceptionAndStaysUsable)
{
    for (LaneMode mode : { LaneMode::Threads, LaneMode::InTurn, LaneMode::Alternating }) {
        backend.setLaneMode(mode);
        auto nothing = [](Lane) {};
        auto fail = [](Lane) { throw std::runtime_error("half failed"); };
        EXPECT_THROW(backend.runConcurrently(fail, nothing), std::runtime_error);
        EXPECT_THROW(backend.runConcurrently(nothing, fail), std::runtime_error);
        std::atomic<int> count { 0 };
        backend.runConcurrently([&](Lane) { ++count; }, [&](Lane) { ++count; });
        EXPECT_EQ(count, 2);
    }
}

TEST_F(CpuBackendTest, AlternatingHalvesComputeOneAtATimeAndHandOverWhileCommunicating)
{
    // Lane 0 computes, then "communicates" until lane 1 has computed; lane 1 computes. Which half takes the
    // compute turn first is up to the threads: when lane 1 does, it finishes and lane 0 finds its flag set. When
    // lane 0 does, lane 1 can compute only if communicationStarted handed the turn over (otherwise lane 0 waits
    // in vain for 5 s and the test fails). Repeated until lane 0 went first a few times; neither half ever
    // computes while the other does.
    backend.setLaneMode(LaneMode::Alternating);
    int lane0First = 0;
    for (int attempt = 0; attempt < 200 && lane0First < 5; ++attempt) {
        std::atomic<int> computing { 0 };
        std::atomic<int> most { 0 };
        std::atomic<int> first { -1 };
        std::atomic<bool> secondComputed { false };
        bool handedOver = false;
        const auto compute = [&](int lane) {
            int expected = -1;
            first.compare_exchange_strong(expected, lane);
            const int now = ++computing;
            most = std::max(most.load(), now);
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            --computing;
        };
        backend.runConcurrently(
            [&](Lane) {
                const MemoryCounter::LaneScope lane(0);
                compute(0);
                backend.communicationStarted();
                const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                while (!secondComputed && std::chrono::steady_clock::now() < until)
                    std::this_thread::sleep_for(std::chrono::microseconds(50));
                handedOver = secondComputed.load();
                backend.communicationFinished();
                compute(0);
            },
            [&](Lane) {
                const MemoryCounter::LaneScope lane(1);
                compute(1);
                secondComputed = true;
            });
        ASSERT_TRUE(handedOver) << "attempt " << attempt << ", lane " << first.load() << " first";
        EXPECT_EQ(most.load(), 1) << "attempt " << attempt;
        lane0First += first.load() == 0 ? 1 : 0;
    }
    EXPECT_EQ(lane0First, 5);
}

// LaneActivity's hidden communication, by hand: lane 0 runs [0, 100] and communicates [10, 30] and [50, 60];
// lane 1 runs [5, 70] and communicates [20, 25]. Lane 0's [10, 30] lies in lane 1's span, less lane 1's own
// [20, 25]: 15; [50, 60]: 10; lane 0 hides 25 of its 30. Lane 1's [20, 25] falls in lane 0's communication: 0.
// A lane that did not run hides nothing.
TEST(LaneActivity, HiddenCommunicationIsTheOtherLanesComputeDuringIt)
{
    LaneActivity::LaneRecord a { true, { 0, 100 }, { { 10, 30 }, { 50, 60 } } };
    LaneActivity::LaneRecord b { true, { 5, 70 }, { { 20, 25 } } };
    EXPECT_DOUBLE_EQ(LaneActivity::hiddenCommUs(a, b), 25.0);
    EXPECT_DOUBLE_EQ(LaneActivity::hiddenCommUs(b, a), 0.0);
    b.ran = false;
    EXPECT_DOUBLE_EQ(LaneActivity::hiddenCommUs(a, b), 0.0);
    // Communication after the other lane ended is not hidden: lane 1 ends at 15, so only [10, 15] of lane 0's.
    LaneActivity::LaneRecord shortLane { true, { 0, 15 }, {} };
    EXPECT_DOUBLE_EQ(LaneActivity::hiddenCommUs(a, shortLane), 5.0);
}

TEST_F(CpuBackendTest, LaneActivityRecordsEachLanesCommunication)
{
    backend.setLaneMode(LaneMode::InTurn);
    LaneActivity& activity = backend.laneActivity();
    activity.begin();
    backend.runConcurrently(
        [&](Lane) {
            const MemoryCounter::LaneScope lane(0);
            activity.laneStarted();
            backend.communicationStarted();
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            backend.communicationFinished();
            activity.laneFinished();
        },
        [&](Lane) {
            const MemoryCounter::LaneScope lane(1);
            activity.laneStarted();
            activity.laneFinished();
        });
    ASSERT_EQ(activity.lane(0).comm.size(), 1u);
    EXPECT_TRUE(activity.lane(1).comm.empty());
    EXPECT_GE(activity.commUs(), 1000.0);
    // In turn, lane 1 starts after lane 0 ended: nothing of lane 0's communication is hidden.
    EXPECT_DOUBLE_EQ(activity.hiddenCommUs(), 0.0);
}

TEST_F(CpuBackendTest, InTurnRunsTheFirstHalfThenTheSecondOnTheCallingThread)
{
    backend.setLaneMode(LaneMode::InTurn);
    std::vector<std::pair<std::thread::id, Lane>> calls;
    backend.runConcurrently([&](Lane l) { calls.emplace_back(std::this_thread::get_id(), l); },
        [&](Lane l) { calls.emplace_back(std::this_thread::get_id(), l); });
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0], std::make_pair(std::this_thread::get_id(), Lane { 0 }));
    EXPECT_EQ(calls[1], std::make_pair(std::this_thread::get_id(), Lane { 1 }));
    // The second half runs although the first failed, and the first half's error is the one thrown.
    bool secondRan = false;
    try {
        backend.runConcurrently([](Lane) { throw std::runtime_error("first"); },
            [&](Lane) {
                secondRan = true;
                throw std::logic_error("second");
            });
        ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "first");
    }
    EXPECT_TRUE(secondRan);
}

/// Sets an environment variable for one scope, restoring the previous value.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value)
        : m_name(name)
    {
        if (const char* old = std::getenv(name)) {
            m_had = true;
            m_old = old;
        }
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv()
    {
        if (m_had)
            ::setenv(m_name, m_old.c_str(), 1);
        else
            ::unsetenv(m_name);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* m_name;
    bool m_had = false;
    std::string m_old;
};

TEST(CpuLaneMode, TwoThreadsOnlyWhereTheRankHasACoreForEachHalf)
{
    const ScopedEnv noOverride("DPSTUDIO_CPU_LANES", nullptr);
    const ScopedEnv noMpich("MPI_LOCALNRANKS", nullptr);
    cpu_set_t mask;
    CPU_ZERO(&mask);
    ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
    if (CPU_COUNT(&mask) < dps::cpuCoreCount())
        GTEST_SKIP() << "this test process is bound to " << CPU_COUNT(&mask) << " of " << dps::cpuCoreCount()
                     << " CPUs: the rule then counts the bound CPUs";
    const int cores = dps::cpuCoreCount();
    {
        // 4 ranks per core on this host: a quarter of a core each, the halves take turns.
        const std::string ranks = std::to_string(4 * cores);
        const ScopedEnv local("OMPI_COMM_WORLD_LOCAL_SIZE", ranks.c_str());
        EXPECT_DOUBLE_EQ(coresForThisRank(), 0.25);
        EXPECT_EQ(defaultLaneMode(1), LaneMode::InTurn);
        EXPECT_EQ(CpuBackend(1).laneMode(), LaneMode::InTurn);
        const ScopedEnv forced("DPSTUDIO_CPU_LANES", "threads");
        EXPECT_EQ(defaultLaneMode(1), LaneMode::Threads);
    }
    {
        // One rank on the host: two threads when the host has two cores per BLAS thread.
        const ScopedEnv local("OMPI_COMM_WORLD_LOCAL_SIZE", "1");
        EXPECT_DOUBLE_EQ(coresForThisRank(), static_cast<double>(cores));
        EXPECT_EQ(defaultLaneMode(1), cores >= 2 ? LaneMode::Threads : LaneMode::InTurn);
        EXPECT_EQ(defaultLaneMode(cores), LaneMode::InTurn); // two halves × `cores` threads > cores
        const ScopedEnv forced("DPSTUDIO_CPU_LANES", "turns");
        EXPECT_EQ(defaultLaneMode(1), LaneMode::InTurn);
    }
}

TEST(CpuGemmLibrary, EveryLibraryMatchesNaiveLoopsAtAnOddShape)
{
    const std::vector<GemmLibrary> libraries = availableGemmLibraries();
    ASSERT_EQ(libraries.front(), GemmLibrary::OpenBlas);
    CpuBackend backend(1);
    const int m = 37, n = 53, k = 29; // no multiple of any vector width
    for (GemmLibrary library : libraries) {
        backend.setGemmLibrary(library);
        for (bool ta : { false, true })
            for (bool tb : { false, true })
                for (float beta : { 0.0f, 1.0f }) {
                    const auto a = randomValues(static_cast<std::size_t>(m * k), 4);
                    const auto b = randomValues(static_cast<std::size_t>(k * n), 5);
                    auto c = randomValues(static_cast<std::size_t>(m * n), 6);
                    const auto want = naiveGemm(ta, tb, m, n, k, 0.5f, a, b, beta, c);
                    backend.gemm(0, ta ? Transpose::Yes : Transpose::No, tb ? Transpose::Yes : Transpose::No, m, n, k,
                        0.5f, a.data(), b.data(), beta, c.data());
                    for (std::size_t i = 0; i < want.size(); ++i)
                        ASSERT_NEAR(c[i], want[i], 1e-5) << "library " << static_cast<int>(library) << " ta=" << ta
                                                         << " tb=" << tb << " beta=" << beta << " i=" << i;
                }
    }
}

TEST(CpuGemmLibrary, OneDnnWhereBuiltUnlessOpenBlasIsAskedFor)
{
    const bool haveOneDnn = availableGemmLibraries().back() == GemmLibrary::OneDnn;
    {
        const ScopedEnv none("DPSTUDIO_CPU_GEMM", nullptr);
        if (haveOneDnn) {
            EXPECT_EQ(defaultGemmLibrary(), GemmLibrary::OneDnn);
            EXPECT_NE(CpuBackend(1).deviceDescription().find(", GEMMs by oneDNN "), std::string::npos);
        } else {
            EXPECT_EQ(defaultGemmLibrary(), GemmLibrary::OpenBlas);
            EXPECT_THROW(CpuBackend(1).setGemmLibrary(GemmLibrary::OneDnn), RuntimeError);
        }
    }
    const ScopedEnv openblas("DPSTUDIO_CPU_GEMM", "openblas");
    EXPECT_EQ(defaultGemmLibrary(), GemmLibrary::OpenBlas);
    const CpuBackend backend(1);
    EXPECT_EQ(backend.gemmLibrary(), GemmLibrary::OpenBlas);
    EXPECT_EQ(backend.deviceDescription().find("oneDNN"), std::string::npos);
    EXPECT_NE(backend.deviceDescription().find("(OpenBLAS "), std::string::npos);
}
