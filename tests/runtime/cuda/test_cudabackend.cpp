// The cuda backend on a real GPU, against the CPU backend: GEMMs in every transpose, GELU, MSE, axpy, bf16
// conversion, exact memory counts, determinism, the two lanes and the action clock. Every test skips with the
// reason when this machine has no GPU (CI: CUDA toolkit, stub driver, no device).
#include "runtime/backend.h"
#include "runtime/correctness.h"
#include "runtime/cpubackend.h"
#include "runtime/cuda/cudabackend.h"
#include "runtime/cuda/gpuinfo.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace dps::runtime;

namespace {

std::vector<float> randomFloats(std::size_t n, unsigned seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng);
    return v;
}

class CudaBackendTest : public ::testing::TestWithParam<bool> {
protected:
    void SetUp() override
    {
        std::string why;
        if (dps::listGpus(&why).empty())
            GTEST_SKIP() << "needs a GPU: " << why;
        CudaBackendOptions options;
        options.bf16 = GetParam();
        m_gpu = std::make_unique<CudaBackend>(options);
    }

    double tolerance() const { return GetParam() ? 1e-2 : 1e-5; }

    /// Uploads `values` to both backends; returns the two device tensors.
    std::pair<Tensor, Tensor> both(const std::vector<float>& values, std::size_t rows, std::size_t cols)
    {
        Tensor g(*m_gpu, rows, cols, MemoryCategory::Workspace);
        Tensor c(m_cpu, rows, cols, MemoryCategory::Workspace);
        m_gpu->uploadFloats(0, g.data(), values.data(), values.size());
        m_cpu.uploadFloats(0, c.data(), values.data(), values.size());
        return { std::move(g), std::move(c) };
    }

    std::vector<float> download(Backend& b, const Tensor& t)
    {
        std::vector<float> out(t.elements());
        b.synchronize();
        b.downloadFloats(0, out.data(), t.data(), out.size());
        return out;
    }

    CpuBackend m_cpu { 1 };
    std::unique_ptr<CudaBackend> m_gpu;
};

} // namespace

TEST_P(CudaBackendTest, GemmMatchesTheCpuInEveryTranspose)
{
    const int m = 96;
    const int n = 80;
    const int k = 112;
    for (const Transpose ta : { Transpose::No, Transpose::Yes })
        for (const Transpose tb : { Transpose::No, Transpose::Yes }) {
            auto [ag, ac] = both(randomFloats(static_cast<std::size_t>(m * k), 1), ta == Transpose::Yes ? k : m,
                ta == Transpose::Yes ? m : k);
            auto [bg, bc] = both(randomFloats(static_cast<std::size_t>(k * n), 2), tb == Transpose::Yes ? n : k,
                tb == Transpose::Yes ? k : n);
            auto [cg, cc] = both(randomFloats(static_cast<std::size_t>(m * n), 3), m, n);
            m_gpu->gemm(0, ta, tb, m, n, k, 0.5f, ag.data(), bg.data(), 1.0f, cg.data());
            m_cpu.gemm(0, ta, tb, m, n, k, 0.5f, ac.data(), bc.data(), 1.0f, cc.data());
            EXPECT_LE(relativeError(download(*m_gpu, cg), download(m_cpu, cc)), tolerance())
                << "transA " << (ta == Transpose::Yes) << " transB " << (tb == Transpose::Yes);
        }
}

TEST_P(CudaBackendTest, GeluForwardAndBackwardMatchTheCpu)
{
    const std::size_t n = 100003;
    auto [xg, xc] = both(randomFloats(n, 4), n, 1);
    auto [gg, gc] = both(randomFloats(n, 5), n, 1);
    Tensor yg(*m_gpu, n, 1, MemoryCategory::Workspace);
    Tensor yc(m_cpu, n, 1, MemoryCategory::Workspace);
    m_gpu->geluForward(0, xg.data(), yg.data(), n);
    m_cpu.geluForward(0, xc.data(), yc.data(), n);
    EXPECT_LE(relativeError(download(*m_gpu, yg), download(m_cpu, yc)), tolerance());
    m_gpu->geluBackward(1, xg.data(), gg.data(), gg.data(), n); // in place, on the other lane
    m_cpu.geluBackward(0, xc.data(), gc.data(), gc.data(), n);
    EXPECT_LE(relativeError(download(*m_gpu, gg), download(m_cpu, gc)), tolerance());
}

TEST_P(CudaBackendTest, MseLossAndGradientMatchTheCpu)
{
    const std::size_t n = 4096 * 3 + 17;
    auto [yg, yc] = both(randomFloats(n, 6), n, 1);
    auto [tg, tc] = both(randomFloats(n, 7), n, 1);
    Tensor gg(*m_gpu, n, 1, MemoryCategory::Workspace);
    Tensor gc(m_cpu, n, 1, MemoryCategory::Workspace);
    double lossGpu = -1.0;
    double lossCpu = -1.0;
    m_gpu->mseLoss(0, yg.data(), tg.data(), n, gg.data(), &lossGpu);
    m_cpu.mseLoss(0, yc.data(), tc.data(), n, gc.data(), &lossCpu);
    m_gpu->synchronize();
    EXPECT_LE(std::abs(lossGpu - lossCpu) / lossCpu, tolerance());
    EXPECT_LE(relativeError(download(*m_gpu, gg), download(m_cpu, gc)), tolerance());
}

TEST_P(CudaBackendTest, AxpyAndZeroMatchTheCpu)
{
    const std::size_t n = 5000;
    auto [xg, xc] = both(randomFloats(n, 8), n, 1);
    auto [yg, yc] = both(randomFloats(n, 9), n, 1);
    m_gpu->axpy(0, n, -0.75f, xg.data(), yg.data());
    m_cpu.axpy(0, n, -0.75f, xc.data(), yc.data());
    EXPECT_LE(relativeError(download(*m_gpu, yg), download(m_cpu, yc)), tolerance());
    m_gpu->setZero(0, yg.data(), yg.bytes());
    for (float v : download(*m_gpu, yg))
        ASSERT_EQ(v, 0.0f);
}

TEST_P(CudaBackendTest, MemoryIsCountedExactly)
{
    const std::size_t before = m_gpu->memory().total();
    {
        Tensor a(*m_gpu, 1000, 3, MemoryCategory::Activation);
        EXPECT_EQ(m_gpu->memory().live(MemoryCategory::Activation), 3000u * m_gpu->elementBytes());
        a.recategorize(MemoryCategory::Communication);
        EXPECT_EQ(m_gpu->memory().live(MemoryCategory::Communication), 3000u * m_gpu->elementBytes());
    }
    EXPECT_EQ(m_gpu->memory().total(), before);
    const CudaMemoryInfo info = m_gpu->deviceMemory();
    EXPECT_GT(info.deviceTotalBytes, 0u);
    EXPECT_GE(info.reservedBytes, info.liveBytes);
    EXPECT_GT(info.fixedBytes, 0u);
}

TEST_P(CudaBackendTest, RepeatedComputationsAreBitIdentical)
{
    const int m = 256;
    auto [ag, ac] = both(randomFloats(static_cast<std::size_t>(m * m), 10), m, m);
    auto run = [&] {
        Tensor c(*m_gpu, m, m, MemoryCategory::Workspace);
        m_gpu->gemm(0, Transpose::No, Transpose::Yes, m, m, m, 1.0f, ag.data(), ag.data(), 0.0f, c.data());
        m_gpu->geluForward(0, c.data(), c.data(), c.elements());
        double loss = 0.0;
        Tensor g(*m_gpu, m, m, MemoryCategory::Workspace);
        m_gpu->mseLoss(0, c.data(), ag.data(), c.elements(), g.data(), &loss);
        auto values = download(*m_gpu, c);
        values.push_back(static_cast<float>(loss));
        return values;
    };
    const auto first = run();
    const auto second = run();
    EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)), 0);
}

TEST_P(CudaBackendTest, LanesRunBothHalvesAndTheClockSpansThem)
{
    const int m = 512;
    auto [ag, ac] = both(randomFloats(static_cast<std::size_t>(m * m), 11), m, m);
    Tensor c0(*m_gpu, m, m, MemoryCategory::Workspace);
    Tensor c1(*m_gpu, m, m, MemoryCategory::Workspace);
    m_gpu->synchronize();
    m_gpu->stepStarted();
    m_gpu->actionStarted("(0F1;1B0)OVERLAP_F_B");
    m_gpu->runConcurrently(
        [&](Lane lane) {
            EXPECT_EQ(lane, 0);
            m_gpu->gemm(lane, Transpose::No, Transpose::No, m, m, m, 1.0f, ag.data(), ag.data(), 0.0f, c0.data());
        },
        [&](Lane lane) {
            EXPECT_EQ(lane, 1);
            m_gpu->gemm(lane, Transpose::No, Transpose::No, m, m, m, 1.0f, ag.data(), ag.data(), 0.0f, c1.data());
        });
    m_gpu->actionFinished();
    m_gpu->synchronize();
    const auto span = m_gpu->lastActionSpan();
    ASSERT_TRUE(span.has_value());
    EXPECT_GE(span->startUs, 0.0);
    EXPECT_GT(span->endUs, span->startUs);
    ASSERT_TRUE(m_gpu->lastActionDeviceUs().has_value()); // the executor's compute_us
    EXPECT_DOUBLE_EQ(*m_gpu->lastActionDeviceUs(), span->durationUs());
    EXPECT_EQ(download(*m_gpu, c0), download(*m_gpu, c1));
}

TEST_P(CudaBackendTest, TheDeviceSpanEndsWithTheWorkNotWithTheHostsWait)
{
    // As the executor does: the work issued, actionFinished(), then the host is late to synchronize.
    const int m = 256;
    auto [ag, ac] = both(randomFloats(static_cast<std::size_t>(m * m), 12), m, m);
    Tensor c(*m_gpu, m, m, MemoryCategory::Workspace);
    m_gpu->synchronize();
    m_gpu->stepStarted();
    m_gpu->actionStarted("0F0");
    m_gpu->gemm(0, Transpose::No, Transpose::No, m, m, m, 1.0f, ag.data(), ag.data(), 0.0f, c.data());
    m_gpu->actionFinished();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    m_gpu->synchronize();
    const auto us = m_gpu->lastActionDeviceUs();
    ASSERT_TRUE(us.has_value());
    EXPECT_GT(*us, 0.0);
    EXPECT_LT(*us, 100000.0) << "a 256³ GEMM, timed on the device, not the host's 200 ms";
}

TEST_P(CudaBackendTest, AThrowingHalfStillLetsTheOtherFinish)
{
    bool secondRan = false;
    EXPECT_THROW(
        m_gpu->runConcurrently([](Lane) { throw RuntimeError("first half failed"); }, [&](Lane) { secondRan = true; }),
        RuntimeError);
    EXPECT_TRUE(secondRan);
    EXPECT_THROW(m_gpu->geluForward(2, nullptr, nullptr, 0), RuntimeError); // no lane 2
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaBackendTest, ::testing::Values(false, true),
    [](const auto& p) { return p.param ? std::string("bf16") : std::string("fp32"); });

TEST(CudaBackendWithoutGpu, ConstructionFailsNamingTheCause)
{
    std::string why;
    if (!dps::listGpus(&why).empty())
        GTEST_SKIP() << "a GPU is present: the no-device path cannot be exercised";
    try {
        CudaBackend backend(CudaBackendOptions {});
        FAIL() << "expected RuntimeError";
    } catch (const RuntimeError& e) {
        EXPECT_NE(std::string(e.what()).find("cudaGetDeviceCount"), std::string::npos) << e.what();
    }
}
