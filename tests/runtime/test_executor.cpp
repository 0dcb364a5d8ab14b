// The executor over ThreadComm (ranks as threads): every generated schedule kind and hand-edited orders run,
// match the sequential reference, measure every action exactly once, and reach exactly the simulator's peak
// activation bytes and, action by action, its memory with the engine's buffers (docs/memory.md).
#include "project/modelcost.h"
#include "runtime/correctness.h"
#include "runtime/cpubackend.h"
#include "runtime/executor.h"
#include "runtime/threadcomm.h"
#include "schedule/generator.h"
#include "sim/simulator.h"
#include "support/kindcase.h"

#include <gtest/gtest.h>

#include <cmath>

#include <optional>

using namespace dps;
using namespace dps::runtime;

namespace {

ModelSpec tinySpec(std::vector<int> partition)
{
    ModelSpec s;
    s.hidden = 16;
    s.ffn = 48;
    s.tokens = 6;
    s.partition = std::move(partition);
    s.seed = 233;
    return s;
}

/// What every rank produced.
struct RankOutcome {
    std::vector<ActionRecord> records; ///< all steps
    CorrectnessReport report;
    std::map<int, double> losses;
};

/// The receive window of the threaded runs (and of costModel()).
constexpr int kWindow = 3;

/// Runs `steps` steps of the schedule on threads, then the correctness check. `tamper` runs on every rank
/// between the replica sum and the check. `lanes`: how the backend runs overlapped slots (unset: its default).
std::vector<RankOutcome> runThreaded(const Schedule& schedule, const ModelSpec& spec, int steps = 2,
    const std::function<void(RankExecutor&, Backend&, int rank)>& tamper = {},
    std::optional<LaneMode> lanes = std::nullopt, int replicas = 1)
{
    std::vector<RankOutcome> out(static_cast<std::size_t>(schedule.ranks * replicas));
    ThreadWorld world(schedule.ranks * replicas);
    world.run([&](Comm& comm) {
        CpuBackend backend(1);
        if (lanes)
            backend.setLaneMode(*lanes);
        ExecutorOptions options;
        options.receiveWindow = kWindow;
        options.replicas = replicas;
        RankExecutor executor(backend, comm, spec, schedule, options);
        RankOutcome& mine = out[static_cast<std::size_t>(comm.rank())];
        for (int step = 0; step < steps; ++step) {
            auto records = executor.runStep(step);
            executor.sumReplicaGradients(&records);
            mine.records.insert(mine.records.end(), records.begin(), records.end());
        }
        if (tamper)
            tamper(executor, backend, comm.rank());
        mine.losses = executor.losses();
        mine.report
            = checkCorrectness(comm, backend, spec, executor, schedule.microbatches * replicas, { 1e-6, 1e-10 });
    });
    return out;
}

/// The simulator's cost model for the spec: modelcost's stage costs with 4-byte elements.
CostModel costModel(const ModelSpec& spec)
{
    ModelDesc model;
    model.layers = spec.totalLayers();
    model.hidden = spec.hidden;
    model.ffn = spec.ffn;
    model.microbatchSize = 1;
    model.seqLen = spec.tokens;
    CostModel costs;
    for (int s = 0; s < spec.stages(); ++s)
        costs.stages.push_back(blockStageCost(model, ClusterDesc {}, spec.layersOf(s), s == spec.stages() - 1, 4));
    costs.receiveWindow = kWindow;
    return costs;
}

std::vector<int> evenPartition(int stages, int layersPerStage)
{
    return std::vector<int>(static_cast<std::size_t>(stages), layersPerStage);
}

/// Each slot's memory in the simulator: the total of its (last) memory point, in list order.
std::vector<std::uint64_t> simulatedSlotMemory(const Schedule& schedule, const RankResult& rank, int r)
{
    std::vector<std::uint64_t> slots;
    std::size_t point = 0;
    for (const Action& a : schedule.order[static_cast<std::size_t>(r)]) {
        point += static_cast<std::size_t>(a.size());
        slots.push_back(static_cast<std::uint64_t>(rank.memory.at(point).totalBytes));
    }
    return slots;
}

/// Checks of any run: correctness, every action once per step in order, sane times, peak ledger = simulator,
/// and every action's memory (the allocator's high-water mark) = the simulator's for that slot, to the byte.
void expectGoodRun(const Schedule& schedule, const ModelSpec& spec, const std::vector<RankOutcome>& out, int steps)
{
    const SimResult sim = simulate(schedule, costModel(spec));
    ASSERT_FALSE(sim.deadlocked) << sim.deadlockMessage;
    for (int r = 0; r < schedule.ranks; ++r) {
        const RankOutcome& o = out[static_cast<std::size_t>(r)];
        EXPECT_TRUE(o.report.passed) << "rank " << r << ": " << o.report.failure;
        const auto& order = schedule.order[static_cast<std::size_t>(r)];
        ASSERT_EQ(o.records.size(), order.size() * static_cast<std::size_t>(steps)) << "rank " << r;
        std::uint64_t peak = 0;
        std::uint64_t peakMemory = 0;
        const auto slots = simulatedSlotMemory(schedule, sim.ranks[static_cast<std::size_t>(r)], r);
        for (std::size_t i = 0; i < o.records.size(); ++i) {
            const ActionRecord& rec = o.records[i];
            EXPECT_EQ(rec.step, static_cast<int>(i / order.size()));
            EXPECT_EQ(rec.index, static_cast<int>(i % order.size())) << "each action once, in order";
            EXPECT_LE(rec.startUs, rec.endUs);
            EXPECT_LE(rec.waitUs, rec.endUs - rec.startUs + 1e-3);
            EXPECT_GE(rec.memoryBytes, rec.activationBytes);
            EXPECT_EQ(rec.memoryBytes, slots[i % order.size()])
                << "rank " << r << " step " << rec.step << " action " << toString(order[i % order.size()]);
            peak = std::max(peak, rec.activationBytes);
            peakMemory = std::max(peakMemory, rec.memoryBytes);
        }
        EXPECT_EQ(static_cast<double>(peak), sim.ranks[static_cast<std::size_t>(r)].peakActivationBytes)
            << "rank " << r;
        EXPECT_EQ(static_cast<double>(peakMemory), sim.ranks[static_cast<std::size_t>(r)].peakMemoryBytes)
            << "rank " << r;
    }
}

using test::KindCase;

class EveryKind : public ::testing::TestWithParam<KindCase> { };

} // namespace

TEST_P(EveryKind, MatchesTheReferenceAndTheSimulatorsMemory)
{
    const KindCase c = GetParam();
    const Schedule schedule = generate({ c.kind, c.ranks, c.microbatches, c.stagesPerRank });
    const ModelSpec spec = tinySpec(evenPartition(schedule.stages, 1));
    const auto out = runThreaded(schedule, spec);
    expectGoodRun(schedule, spec, out, 2);
}

INSTANTIATE_TEST_SUITE_P(Runtime, EveryKind,
    ::testing::Values(KindCase { ScheduleKind::GPipe, 3, 4, 0 }, KindCase { ScheduleKind::OneFOneB, 3, 5, 0 },
        KindCase { ScheduleKind::Interleaved1F1B, 2, 4, 2 }, KindCase { ScheduleKind::ZBH1, 3, 5, 0 },
        KindCase { ScheduleKind::ZBV, 2, 4, 0 }, KindCase { ScheduleKind::DualPipe, 4, 8, 0 },
        KindCase { ScheduleKind::DualPipe, 2, 4, 0 }, KindCase { ScheduleKind::DualPipeV, 2, 6, 0 },
        KindCase { ScheduleKind::DualPipeV, 4, 8, 0 }),
    test::kindCaseName);

TEST(Executor, TwoStagesMatchTheReferenceLossByLoss)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 4, 0 });
    const ModelSpec spec = tinySpec({ 2, 1 });
    const auto out = runThreaded(schedule, spec, 1);
    expectGoodRun(schedule, spec, out, 1);
    ASSERT_EQ(out[1].losses.size(), 4u); // the last stage's rank has every loss
    EXPECT_TRUE(out[0].losses.empty());
    CpuBackend backend(1);
    const Reference ref = runReference(backend, spec, { 0, 1, 2, 3 });
    for (const auto& [m, loss] : out[1].losses)
        EXPECT_EQ(loss, ref.losses.at(m)) << "microbatch " << m;
}

TEST(Executor, ActivationBytesAreTheLedgerAfterEachAction)
{
    const Schedule schedule = generate({ ScheduleKind::GPipe, 2, 2, 0 });
    const ModelSpec spec = tinySpec({ 2, 1 });
    const auto out = runThreaded(schedule, spec, 1);
    const CostModel costs = costModel(spec);
    const auto a0 = static_cast<std::uint64_t>(costs.stages[0].activationBytes);
    const auto a1 = static_cast<std::uint64_t>(costs.stages[1].activationBytes);
    // GPipe: F0 F1 B0 B1 on both ranks.
    std::vector<std::uint64_t> rank0, rank1;
    for (const ActionRecord& r : out[0].records)
        rank0.push_back(r.activationBytes);
    for (const ActionRecord& r : out[1].records)
        rank1.push_back(r.activationBytes);
    EXPECT_EQ(rank0, (std::vector<std::uint64_t> { a0, 2 * a0, a0, 0 }));
    EXPECT_EQ(rank1, (std::vector<std::uint64_t> { a1, 2 * a1, a1, 0 }));
}

TEST(Executor, MemoryIsTheAllocatorsHighWaterMarkOfEachActionHandComputed)
{
    // GPipe on 2 ranks, 2 microbatches, stages of 2 and 1 layers; T = 6, h = 16, f = 48, fp32: a T×h tensor is
    // th = 384 bytes, a T×f one tf = 1152; receive window 3 (both of a rank's receives posted at the start).
    const Schedule schedule = generate({ ScheduleKind::GPipe, 2, 2, 0 });
    const ModelSpec spec = tinySpec({ 2, 1 });
    const auto out = runThreaded(schedule, spec, 1);
    std::vector<std::uint64_t> rank0, rank1;
    for (const ActionRecord& r : out[0].records)
        rank0.push_back(r.memoryBytes);
    for (const ActionRecord& r : out[1].records)
        rank1.push_back(r.memoryBytes);
    // Rank 0 starts at 26112: weights and gradients 2 × 12288, inputs 2 × 384, 2 posted receives 2 × 384.
    // 0F0: input copy +384, then F's high-water 2(tf+th) + tf = 4224: 30720; it keeps 3072 and sends its output.
    // 0F1: the same on 29568: 34176. 0B0: its receive frees both sends (the gradient back proves them
    // consumed): 33024 − 768, + B's high-water tf + th = 1536: 33792; it frees 3072 + 384. 0B1: 28800 + 1536.
    EXPECT_EQ(rank0, (std::vector<std::uint64_t> { 30720, 34176, 33792, 30336 }));
    // Rank 1 starts at 13824: 2 × 6144, targets 2 × 384, 2 posted receives. 1F0: F's high-water on the last
    // stage (tf + th) + max(tf, th) = 2688: 16512; it keeps 1536. 1F1: 18048. 1B0: + tf + th = 18432; it frees
    // tf + th. 1B1: 15360 + 1536 = 16896 (its two sends are held to the step's end: no message comes back).
    EXPECT_EQ(rank1, (std::vector<std::uint64_t> { 16512, 18048, 18432, 16896 }));
    expectGoodRun(schedule, spec, out, 1);
}

TEST(Executor, AnOverlappedSlotCountsBothHalvesAtTheirHighWaterMarksInEitherLaneMode)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipe, 4, 8, 0 });
    const ModelSpec spec = tinySpec(evenPartition(schedule.stages, 2));
    const auto threads = runThreaded(schedule, spec, 1, {}, LaneMode::Threads);
    const auto turns = runThreaded(schedule, spec, 1, {}, LaneMode::InTurn);
    for (int r = 0; r < schedule.ranks; ++r)
        for (std::size_t i = 0; i < threads[static_cast<std::size_t>(r)].records.size(); ++i)
            EXPECT_EQ(threads[static_cast<std::size_t>(r)].records[i].memoryBytes,
                turns[static_cast<std::size_t>(r)].records[i].memoryBytes)
                << "rank " << r << " action " << i;
    expectGoodRun(schedule, spec, threads, 1);
    expectGoodRun(schedule, spec, turns, 1);
}

TEST(Executor, UnevenPartitionWithAnEmptyStage)
{
    const Schedule schedule = generate({ ScheduleKind::ZBV, 2, 4, 0 });
    const ModelSpec spec = tinySpec({ 3, 0, 1, 2 });
    expectGoodRun(schedule, spec, runThreaded(schedule, spec), 2);
}

TEST(Executor, HandEditedOrderWithOverlappedSlotsAndLocalHandovers)
{
    Schedule schedule;
    schedule.kind = ScheduleKind::Custom;
    schedule.ranks = 2;
    schedule.microbatches = 3;
    schedule.stages = 3;
    schedule.placement = Placement::perStage({ 0, 0, 1 });
    const auto row = [](std::initializer_list<const char*> cells) {
        std::vector<Action> actions;
        for (const char* c : cells)
            actions.push_back(parseAction(c));
        return actions;
    };
    schedule.order = {
        row({ "0F0", "1F0", "0F1", "1F1", "0F2", "1I0", "0B0", "(1F2;1B1)OVERLAP_F_B", "1W0", "0B1", "1B2", "0B2" }),
        row({ "2F0", "2B0", "2F1", "2I1", "2F2", "2W1", "2B2" }),
    };
    const ModelSpec spec = tinySpec({ 1, 2, 1 });
    expectGoodRun(schedule, spec, runThreaded(schedule, spec), 2);
}

TEST(Executor, DualPipeSumsTheReplicasOfEveryStage)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipe, 2, 4, 0 });
    const ModelSpec spec = tinySpec({ 1, 1 });
    std::vector<std::vector<float>> grads(2);
    const auto out = runThreaded(schedule, spec, 1, [&](RankExecutor& executor, Backend& backend, int rank) {
        EXPECT_EQ(executor.localStages(), (std::vector<int> { 0, 1 }));
        EXPECT_EQ(executor.holders()[0], (std::vector<int> { 0, 1 }));
        grads[static_cast<std::size_t>(rank)] = executor.stageParams(1).gradient(backend, 0, Matrix::W2);
    });
    EXPECT_EQ(grads[0], grads[1]); // both holders end with the same sum
    EXPECT_TRUE(out[0].report.passed) << out[0].report.failure;
}

TEST(Executor, ACorruptedGradientFailsTheCheckNamingStageAndParameter)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 2, 0 });
    const ModelSpec spec = tinySpec({ 1, 2 });
    const auto out = runThreaded(schedule, spec, 1, [](RankExecutor& executor, Backend&, int) {
        if (executor.localStages() == std::vector<int> { 1 }) {
            const LayerParams& p = executor.stageParams(1).layer(1);
            static_cast<float*>(p.dw1)[3] += 1.0f;
        }
    });
    for (const RankOutcome& o : out) {
        EXPECT_FALSE(o.report.passed);
        EXPECT_EQ(o.report.failure.rfind("stage 1 (layer 2) w1: gradient metric", 0), 0u) << o.report.failure;
    }
    EXPECT_GT(out[0].report.maxGradError, 1e-10);
}

TEST(Executor, RefusesAnOpPlacedOnAnotherRank)
{
    Schedule schedule = generate({ ScheduleKind::GPipe, 2, 2, 0 });
    std::swap(schedule.order[0], schedule.order[1]);
    ThreadWorld world(2);
    EXPECT_THROW(world.run([&](Comm& comm) {
        CpuBackend backend(1);
        RankExecutor executor(backend, comm, tinySpec({ 1, 1 }), schedule);
    }),
        RuntimeError);
}

TEST(Correctness, ThresholdTableAndMetric)
{
    EXPECT_EQ(thresholdsFor("cpu", DType::FP32).loss, 1e-6);
    EXPECT_EQ(thresholdsFor("cpu", DType::FP32).grad, 1e-10);
    EXPECT_EQ(thresholdsFor("cuda", DType::FP32).loss, 1e-5);
    EXPECT_EQ(thresholdsFor("cuda", DType::FP32).grad, 1e-8);
    EXPECT_EQ(thresholdsFor("cuda", DType::BF16).loss, 1e-2);
    EXPECT_EQ(thresholdsFor("cuda", DType::BF16).grad, 1e-3);
    EXPECT_THROW(thresholdsFor("tpu", DType::FP32), RuntimeError);
    EXPECT_EQ(gradientMetric({ 1.0f, 2.0f }, { 1.0f, 2.0f }), 0.0);
    EXPECT_EQ(gradientMetric({ 0.0f }, { 0.0f }), 0.0);
    EXPECT_NEAR(gradientMetric({ 1.0f, 0.0f }, { 0.0f, 1.0f }), 1.0, 1e-15);
    EXPECT_NEAR(gradientMetric({ 1.0f }, { -1.0f }), 2.0, 1e-15);
    EXPECT_NEAR(relativeError(1.1, 1.0), 0.1, 1e-12);
    // Vectors: ‖(3, 4) − (0, 0)‖ = 5 against a zero reference; ‖(1, 2) − (1, 0)‖ / ‖(1, 0)‖ = 2; sizes differ: ∞.
    EXPECT_DOUBLE_EQ(relativeError(std::vector<float> { 3.0f, 4.0f }, std::vector<float> { 0.0f, 0.0f }), 5.0);
    EXPECT_DOUBLE_EQ(relativeError(std::vector<float> { 1.0f, 2.0f }, std::vector<float> { 1.0f, 0.0f }), 2.0);
    EXPECT_TRUE(std::isinf(relativeError(std::vector<float> { 1.0f }, std::vector<float> {})));
}

TEST(Executor, DataParallelReplicasRunTheirOwnMicrobatchesAndSumOverEveryHolder)
{
    // DualPipe on 2 ranks × 2 replicas: comm rank c is pipeline rank c / 2 of replica c % 2; both pipeline ranks
    // hold both stages, so each stage has 4 holders.
    const Schedule schedule = generate({ ScheduleKind::DualPipe, 2, 4, 0 });
    const ModelSpec spec = tinySpec({ 1, 1 });
    std::vector<std::vector<float>> grads(4);
    const auto out = runThreaded(
        schedule, spec, 2,
        [&](RankExecutor& executor, Backend& backend, int rank) {
            EXPECT_EQ(executor.holders()[0], (std::vector<int> { 0, 1, 2, 3 }));
            grads[static_cast<std::size_t>(rank)] = executor.stageParams(1).gradient(backend, 0, Matrix::W2);
        },
        std::nullopt, 2);
    for (int c = 1; c < 4; ++c)
        EXPECT_EQ(grads[static_cast<std::size_t>(c)], grads[0]) << "comm rank " << c; // every holder has the sum
    // Each replica computed the losses of its own microbatches: replica d's m is the model's 4d + m, and
    // together the two replicas cover 0..7 exactly once.
    std::map<int, int> computed;
    for (int c = 0; c < 4; ++c)
        for (const auto& [m, loss] : out[static_cast<std::size_t>(c)].losses) {
            EXPECT_EQ(m / 4, c % 2) << "comm rank " << c << " computed microbatch " << m;
            ++computed[m];
        }
    EXPECT_EQ(computed.size(), 8u);
    for (const auto& [m, n] : computed)
        EXPECT_EQ(n, 1) << "microbatch " << m;
    // The check compares every holder's sum with the reference over all 8 microbatches.
    for (int c = 0; c < 4; ++c)
        EXPECT_TRUE(out[static_cast<std::size_t>(c)].report.passed) << out[static_cast<std::size_t>(c)].report.failure;
    // Memory: the simulator with gradientReplicas 2 counts the 3 other holders' gradients at the step's end, to
    // the byte, on every rank of replica 0.
    CostModel costs = costModel(spec);
    costs.gradientReplicas = 2;
    const SimResult sim = simulate(schedule, costs);
    for (int r = 0; r < 2; ++r) {
        std::uint64_t peak = 0;
        for (const ActionRecord& rec : out[static_cast<std::size_t>(r * 2)].records)
            peak = std::max(peak, rec.memoryBytes);
        EXPECT_EQ(static_cast<double>(peak), sim.ranks[static_cast<std::size_t>(r)].peakMemoryBytes) << "rank " << r;
    }
    EXPECT_GT(sim.ranks[0].peakMemoryBytes, simulate(schedule, costModel(spec)).ranks[0].peakMemoryBytes);
}

TEST(Executor, AJobOfTheWrongSizeForTheReplicasIsRefused)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 2, 0 });
    const ModelSpec spec = tinySpec({ 1, 1 });
    ThreadWorld world(3);
    std::vector<std::string> errors(3);
    world.run([&](Comm& comm) {
        CpuBackend backend(1);
        ExecutorOptions options;
        options.replicas = 2;
        try {
            RankExecutor executor(backend, comm, spec, schedule, options);
        } catch (const RuntimeError& e) {
            errors[static_cast<std::size_t>(comm.rank())] = e.what();
        }
    });
    EXPECT_EQ(errors[0], "the schedule has 2 ranks × 2 replicas but the job has 3");
}
