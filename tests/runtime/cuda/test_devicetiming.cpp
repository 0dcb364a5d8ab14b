// The executor's compute_us comes from the backend's device clock where it has one, as on the cuda backend:
// a CPU backend wrapped with the ActionClock the cuda backend uses, over a fake device whose lanes advance
// by a fixed cost per operation (GEMM 100 µs, any other operation 10 µs) and whose host waits cost 5 ms.
// Checks the hand-computed spans of DualPipeV's actions on one rank, so the end events must be recorded when
// the work is issued (before the host's wait) and an overlapped slot must last as long as its slower lane.
#include "runtime/backend.h"
#include "runtime/cpubackend.h"
#include "runtime/cuda/actionclock.h"
#include "runtime/executor.h"
#include "runtime/threadcomm.h"
#include "schedule/generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace dps;
using namespace dps::runtime;

namespace {

constexpr double kGemmUs = 100.0;
constexpr double kOtherUs = 10.0;
constexpr double kHostWaitUs = 5000.0; ///< what a synchronize() costs the lanes' clocks
constexpr double kGapUs = 1000.0; ///< the host's time between actions

/// Device time per lane in µs; events complete at the lane's time when recorded.
class FakeLanes final : public EventDevice {
public:
    Event record(Lane lane) override
    {
        m_time[m_next] = m_laneUs[static_cast<std::size_t>(lane)];
        return m_next++;
    }
    double elapsedMs(Event from, Event to) override { return (m_time.at(to) - m_time.at(from)) / 1000.0; }
    void release(Event e) override { m_time.erase(e); }

    void run(Lane lane, double us) { m_laneUs[static_cast<std::size_t>(lane)] += us; }
    /// Both lanes idle at the same time (the host synchronized and went on).
    void align(double gapUs)
    {
        const double now = std::max(m_laneUs[0], m_laneUs[1]) + gapUs;
        m_laneUs = { now, now };
    }

private:
    std::array<double, 2> m_laneUs { 0.0, 0.0 };
    std::map<Event, double> m_time;
    Event m_next = 0;
};

/// CpuBackend computing, the cuda backend's clock timing: every operation marks its lane used and advances it.
class ClockedCpuBackend final : public Backend {
public:
    std::string name() const override { return "clocked-cpu"; }
    std::string deviceDescription() const override { return "cpu with a fake device clock"; }
    int elementBytes() const override { return 4; }
    bool hostAccessible() const override { return true; }

    void* allocate(std::size_t bytes, MemoryCategory category) override
    {
        m_memory.add(category, bytes);
        return m_cpu.allocate(bytes, MemoryCategory::Workspace);
    }
    void deallocate(void* ptr, std::size_t bytes, MemoryCategory category) override
    {
        m_memory.remove(category, bytes);
        m_cpu.deallocate(ptr, bytes, MemoryCategory::Workspace);
    }
    void gemm(Lane lane, Transpose ta, Transpose tb, int m, int n, int k, float alpha, const void* a, const void* b,
        float beta, void* c) override
    {
        op(lane, kGemmUs);
        m_cpu.gemm(0, ta, tb, m, n, k, alpha, a, b, beta, c);
    }
    void geluForward(Lane lane, const void* in, void* out, std::size_t n) override
    {
        op(lane, kOtherUs);
        m_cpu.geluForward(0, in, out, n);
    }
    void geluBackward(Lane lane, const void* in, const void* gradOut, void* gradIn, std::size_t n) override
    {
        op(lane, kOtherUs);
        m_cpu.geluBackward(0, in, gradOut, gradIn, n);
    }
    void mseLoss(Lane lane, const void* y, const void* target, std::size_t n, void* grad, double* lossHost) override
    {
        op(lane, kOtherUs);
        m_cpu.mseLoss(0, y, target, n, grad, lossHost);
    }
    void axpy(Lane lane, std::size_t n, float alpha, const void* x, void* y) override
    {
        op(lane, kOtherUs);
        m_cpu.axpy(0, n, alpha, x, y);
    }
    void setZero(Lane lane, void* ptr, std::size_t bytes) override
    {
        op(lane, kOtherUs);
        m_cpu.setZero(0, ptr, bytes);
    }
    void copyHostToDevice(Lane lane, void* dst, const void* src, std::size_t bytes) override
    {
        op(lane, kOtherUs);
        m_cpu.copyHostToDevice(0, dst, src, bytes);
    }
    void copyDeviceToHost(Lane lane, void* dst, const void* src, std::size_t bytes) override
    {
        op(lane, kOtherUs);
        m_cpu.copyDeviceToHost(0, dst, src, bytes);
    }
    void copyDeviceToDevice(Lane lane, void* dst, const void* src, std::size_t bytes) override
    {
        op(lane, kOtherUs);
        m_cpu.copyDeviceToDevice(0, dst, src, bytes);
    }
    void uploadFloats(Lane lane, void* dst, const float* src, std::size_t n) override
    {
        op(lane, kOtherUs);
        m_cpu.uploadFloats(0, dst, src, n);
    }
    void downloadFloats(Lane lane, float* dst, const void* src, std::size_t n) override
    {
        op(lane, kOtherUs);
        m_cpu.downloadFloats(0, dst, src, n);
    }

    /// As CudaBackend: both halves issued from this thread, the ends recorded, then the host waits.
    void runConcurrently(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second) override
    {
        first(0);
        second(1);
        if (m_clock.actionOpen())
            m_clock.recordEnds();
        synchronize();
    }
    void synchronize() override
    {
        m_cpu.synchronize();
        m_lanes.run(0, kHostWaitUs); // anything recorded after the wait would include it
        m_lanes.run(1, kHostWaitUs);
    }
    void stepStarted() override
    {
        m_lanes.align(kGapUs);
        m_clock.stepStarted();
    }
    void actionStarted(const std::string& label) override
    {
        m_labels.push_back(label);
        m_lanes.align(kGapUs);
        m_clock.actionStarted();
    }
    void actionFinished() override { m_clock.actionFinished(); }
    std::optional<double> lastActionDeviceUs() override
    {
        const auto span = m_clock.lastAction();
        return span ? std::optional<double>(span->durationUs()) : std::nullopt;
    }

    const std::vector<std::string>& labels() const { return m_labels; }

private:
    void op(Lane lane, double us)
    {
        m_clock.laneUsed(lane);
        m_lanes.run(lane, us);
    }

    CpuBackend m_cpu { 1 };
    FakeLanes m_lanes;
    ActionClock m_clock { m_lanes };
    std::vector<std::string> m_labels;
};

} // namespace

TEST(DeviceTiming, ComputeUsIsTheDeviceSpanOfEachAction)
{
    // DualPipeV on one rank: stages 0 and 1 (one layer each, stage 1 last), 4 microbatches.
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 1, 4, 0 });
    ModelSpec spec;
    spec.hidden = 8;
    spec.ffn = 16;
    spec.tokens = 4;
    spec.partition = { 1, 1 };
    spec.seed = 7;
    ThreadWorld world(1);
    std::vector<ActionRecord> records;
    std::vector<std::string> labels;
    world.run([&](Comm& comm) {
        ClockedCpuBackend backend;
        RankExecutor executor(backend, comm, spec, schedule);
        records = executor.runStep(0);
        labels = backend.labels();
    });
    ASSERT_EQ(labels.size(), records.size());
    // Per layer: F = GEMM, GELU, GEMM (210 µs), + the loss on the last stage (220 µs); B = GELU (recompute),
    // GEMM dW2, GEMM dA, GELU', GEMM dW1 (320 µs), + GEMM dX where the input gradient is wanted (stage 1:
    // 420 µs); W = two GEMMs (200 µs). An overlapped slot lasts as long as its slower lane.
    const std::map<std::string, double> expected {
        { "0F0", 210.0 },
        { "1F0", 220.0 },
        { "1B0", 420.0 },
        { "(1F1;0B0)OVERLAP_F_B", 320.0 }, // F of the last stage 220 on lane 0, B of stage 0 320 on lane 1
        { "(0F2;1B1)OVERLAP_F_B", 420.0 }, // 210 against 420
        { "1B3", 420.0 },
        { "0W3", 200.0 },
    };
    int checked = 0;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const auto it = expected.find(labels[i]);
        if (it == expected.end())
            continue;
        EXPECT_NEAR(records[i].computeUs, it->second, 1e-6) << labels[i];
        ++checked;
    }
    EXPECT_EQ(checked, static_cast<int>(expected.size()));
}
