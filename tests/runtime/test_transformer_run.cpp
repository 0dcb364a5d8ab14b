// Transformer pipelines through the executor over ThreadComm (ranks as threads): every schedule kind on a tiny
// dense GQA model, an MoE with data-parallel replicas, MLA, against the single-process reference (losses and
// every parameter's gradient), and a stage's kept bytes equal to the model library's ledger.
#include "model/transformer.h"
#include "runtime/correctness.h"
#include "runtime/cpubackend.h"
#include "runtime/executor.h"
#include "runtime/threadcomm.h"
#include "runtime/transformerstage.h"
#include "schedule/generator.h"
#include "support/kindcase.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace dps;
using namespace dps::runtime;

namespace {

/// A tiny decoder: h 16, 4 query heads of 4 over 2 kv heads, SwiGLU 24, vocab 32, 6 tokens per microbatch.
model::Transformer tinyDense(int layers)
{
    model::Transformer m;
    m.layers = layers;
    m.hidden = 16;
    m.heads = 4;
    m.kvHeads = 2;
    m.headDim = 4;
    m.ffn = 24;
    m.vocab = 32;
    m.attention = model::Attention::GQA;
    m.seqLen = 3;
    m.microbatchSize = 2;
    m.dtypeBytes = 4;
    return m;
}

/// The same with 4 routed experts (SwiGLU 8) top-2, one shared, the first layer dense.
model::Transformer tinyMoe(int layers)
{
    model::Transformer m = tinyDense(layers);
    m.moe.experts = 4;
    m.moe.topK = 2;
    m.moe.expertFfn = 8;
    m.moe.sharedExperts = 1;
    m.moe.denseLayers = 1;
    return m;
}

/// MLA (low-rank query 8, kv latent 8, rope 2, nope 4, v 4), dense.
model::Transformer tinyMla(int layers)
{
    model::Transformer m = tinyDense(layers);
    m.attention = model::Attention::MLA;
    m.kvHeads = 4;
    m.mla = { 8, 8, 4, 2, 4 };
    return m;
}

ModelSpec specOf(const model::Transformer& m, int stages, layers::MoeGating gating = layers::MoeGating::mixtral())
{
    ModelSpec spec;
    spec.hidden = m.hidden;
    spec.ffn = m.ffn;
    spec.tokens = m.microbatchSize * m.seqLen;
    spec.partition.assign(static_cast<std::size_t>(stages), m.layers / stages);
    spec.seed = 233;
    spec.transformer = m;
    spec.gating = gating;
    return spec;
}

struct Outcome {
    CorrectnessReport report;
    std::size_t records = 0;
    double a2aUs = 0.0; ///< Σ ActionRecord::a2aUs over both steps
    double a2aHiddenUs = 0.0;
    bool hiddenWithinA2a = true; ///< every action's hidden time ≤ its all-to-all time
};

/// Runs 2 steps on schedule.ranks × replicas threads, then the correctness check; `tamper` runs on every rank
/// between the gradient sum and the check.
std::vector<Outcome> run(const Schedule& schedule, const ModelSpec& spec, int replicas = 1,
    const std::function<void(RankExecutor&, int rank)>& tamper = {}, LaneMode lanes = LaneMode::InTurn)
{
    std::vector<Outcome> out(static_cast<std::size_t>(schedule.ranks * replicas));
    ThreadWorld world(schedule.ranks * replicas);
    world.run([&](Comm& comm) {
        CpuBackend backend(1);
        ModelSpec mine = spec; // expert parallelism: this replica's member of its group, as the worker sets it
        mine.epMember = (comm.rank() % replicas) % std::max(1, spec.ep);
        if (spec.ep > 1)
            backend.setLaneMode(lanes);
        ExecutorOptions options;
        options.replicas = replicas;
        RankExecutor executor(backend, comm, mine, schedule, options);
        Outcome& outcome = out[static_cast<std::size_t>(comm.rank())];
        for (int step = 0; step < 2; ++step) {
            auto records = executor.runStep(step);
            executor.sumReplicaGradients(&records);
            outcome.records += records.size();
            for (const ActionRecord& r : records) {
                outcome.a2aUs += r.a2aUs;
                outcome.a2aHiddenUs += r.a2aHiddenUs;
                outcome.hiddenWithinA2a = outcome.hiddenWithinA2a && r.a2aHiddenUs <= r.a2aUs;
            }
        }
        if (tamper)
            tamper(executor, comm.rank());
        outcome.report
            = checkCorrectness(comm, backend, mine, executor, schedule.microbatches * replicas, { 1e-6, 1e-10 });
    });
    return out;
}

void expectPassed(const Schedule& schedule, const std::vector<Outcome>& out, int replicas = 1)
{
    for (std::size_t c = 0; c < out.size(); ++c) {
        EXPECT_TRUE(out[c].report.passed) << "comm rank " << c << ": " << out[c].report.failure;
        const auto& order = schedule.order[c / static_cast<std::size_t>(replicas)];
        EXPECT_EQ(out[c].records, 2 * order.size()) << "comm rank " << c;
    }
    EXPECT_LT(out[0].report.maxGradError, 1e-10);
    EXPECT_FALSE(out[0].report.parameters.empty());
}

using test::KindCase;

class EveryKindTransformer : public ::testing::TestWithParam<KindCase> { };

} // namespace

TEST_P(EveryKindTransformer, MatchesTheReference)
{
    const KindCase c = GetParam();
    const Schedule schedule = generate({ c.kind, c.ranks, c.microbatches, c.stagesPerRank });
    const ModelSpec spec = specOf(tinyDense(schedule.stages), schedule.stages);
    expectPassed(schedule, run(schedule, spec));
}

INSTANTIATE_TEST_SUITE_P(Runtime, EveryKindTransformer,
    ::testing::Values(KindCase { ScheduleKind::GPipe, 2, 4, 0 }, KindCase { ScheduleKind::OneFOneB, 4, 5, 0 },
        KindCase { ScheduleKind::Interleaved1F1B, 2, 4, 2 }, KindCase { ScheduleKind::ZBH1, 2, 4, 0 },
        KindCase { ScheduleKind::ZBV, 2, 4, 0 }, KindCase { ScheduleKind::DualPipe, 2, 4, 0 },
        KindCase { ScheduleKind::DualPipe, 4, 8, 0 }, KindCase { ScheduleKind::DualPipeV, 2, 6, 0 },
        KindCase { ScheduleKind::DualPipeV, 4, 8, 0 }),
    test::kindCaseName);

TEST(TransformerRun, MoeWithDataParallelReplicasMatchesTheReference)
{
    // DualPipeV on 2 ranks × dp 2 (4 threads): an MoE of 4 layers (the first dense), DeepSeek-V3's gating.
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 2, 4, 0 });
    const ModelSpec spec = specOf(tinyMoe(4), 4, layers::MoeGating::deepSeekV3());
    expectPassed(schedule, run(schedule, spec, 2), 2);
}

TEST(TransformerRun, MlaMatchesTheReference)
{
    const Schedule schedule = generate({ ScheduleKind::ZBV, 2, 4, 0 });
    expectPassed(schedule, run(schedule, specOf(tinyMla(4), 4)));
}

TEST(TransformerRun, ACorruptedGradientIsNamedByStageLayerAndParameter)
{
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 2, 0 });
    const ModelSpec spec = specOf(tinyDense(4), 2);
    const auto out = run(schedule, spec, 1, [](RankExecutor& executor, int rank) {
        if (rank != 1)
            return;
        // Layer 3 (stage 1's second layer): its attention's o_proj gradient, one element doubled.
        const StageParams& params = executor.stageParams(1);
        for (const StageParameter& p : params.parameters(ModelSpec {}))
            if (p.layer == 3 && p.name == "o_proj")
                static_cast<float*>(params.gradients().data())[p.offset] *= 2.0f;
    });
    EXPECT_FALSE(out[0].report.passed);
    EXPECT_EQ(out[0].report.failure.rfind("stage 1 (layer 3) o_proj: gradient metric ", 0), 0u)
        << out[0].report.failure;
}

TEST(TransformerRun, AStageKeepsTheModelLibrarysLedgerAfterF)
{
    // One stage holding everything (embedding, 2 layers, head): after F of one microbatch it keeps exactly the
    // model library's activation bytes without recompute (4-byte elements).
    const model::Transformer m = tinyMoe(2);
    CpuBackend backend(1);
    TransformerStage stage(backend, m, layers::MoeGating::mixtral(), 0, 2, true, true);
    Tensor weights(backend, 1, stage.parameterElements(), MemoryCategory::Parameter);
    Tensor grads(backend, 1, stage.parameterElements(), MemoryCategory::Gradient);
    backend.uploadFloats(0, weights.data(), stage.initialWeights(1).data(), weights.elements());
    backend.setZero(0, grads.data(), grads.bytes());
    SavedActivations saved;
    double loss = 0.0;
    stage.forward(0, weights.data(), grads.data(), {}, microbatchTokens(m, 1, 0), saved, &loss);
    double ledger = model::headCost(m, model::Recompute::None).activationBytes;
    for (int l = 0; l < m.layers; ++l)
        ledger += model::layerCost(m, l, model::Recompute::None).activationBytes;
    EXPECT_EQ(static_cast<double>(saved.bytes()), ledger);
    EXPECT_GT(loss, 0.0);
    // Parameters: the model library's total, every one of them (the head is not tied).
    EXPECT_EQ(static_cast<double>(stage.parameterElements()), model::totals(m).parametersTotal);
}

TEST(TransformerRun, TokensAreTheNextTokenOfEachSequence)
{
    const model::Transformer m = tinyDense(2);
    const MicrobatchTokens a = microbatchTokens(m, 7, 3);
    ASSERT_EQ(a.ids.size(), 6u);
    ASSERT_EQ(a.labels.size(), 6u);
    for (int b = 0; b < 2; ++b)
        for (int p = 0; p + 1 < 3; ++p)
            EXPECT_EQ(a.labels[static_cast<std::size_t>(b * 3 + p)], a.ids[static_cast<std::size_t>(b * 3 + p + 1)]);
    for (int id : a.ids)
        EXPECT_TRUE(id >= 0 && id < m.vocab);
    EXPECT_EQ(microbatchTokens(m, 7, 3).ids, a.ids); // a function of (seed, microbatch)
    EXPECT_NE(microbatchTokens(m, 7, 4).ids, a.ids);
}

TEST(TransformerRun, ExpertParallelMoeMatchesTheReference)
{
    // DualPipeV on 2 ranks × dp 2 with EP 2 (4 threads): each pipeline rank's two replicas hold experts 0–1 and
    // 2–3 of every MoE layer and exchange the routed rows (dispatch and combine, both ways in the backward).
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 2, 4, 0 });
    ModelSpec spec = specOf(tinyMoe(4), 4, layers::MoeGating::deepSeekV3());
    spec.ep = 2;
    expectPassed(schedule, run(schedule, spec, 2), 2);
}

TEST(TransformerRun, ExpertParallelHalvesOfAnOverlappedSlotHideEachOthersAllToAll)
{
    // DualPipe on 2 ranks × dp 2 with EP 2, the halves of each F&B slot on two threads taking turns on the compute
    // (LaneMode::Alternating, the worker's choice on a rank with one core): one half's all-to-all runs while the
    // other computes. The gradients still match the reference; every rank measures all-to-all time, and some of
    // it hidden (the halves of a step's F&B slots overlap).
    const Schedule schedule = generate({ ScheduleKind::DualPipe, 2, 4, 0 });
    ModelSpec spec = specOf(tinyMoe(4), schedule.stages, layers::MoeGating::deepSeekV3());
    spec.ep = 2;
    const auto out = run(schedule, spec, 2, {}, LaneMode::Alternating);
    expectPassed(schedule, out, 2);
    double hidden = 0.0;
    for (std::size_t c = 0; c < out.size(); ++c) {
        EXPECT_GT(out[c].a2aUs, 0.0) << "comm rank " << c;
        EXPECT_TRUE(out[c].hiddenWithinA2a) << "comm rank " << c;
        hidden += out[c].a2aHiddenUs;
    }
    EXPECT_GT(hidden, 0.0);
    // In turn, nothing is hidden.
    for (const Outcome& o : run(schedule, spec, 2, {}, LaneMode::InTurn))
        EXPECT_DOUBLE_EQ(o.a2aHiddenUs, 0.0);
}

TEST(TransformerRun, ExpertParallelGroupsAcrossFourReplicas)
{
    // 1F1B on 2 ranks × dp 4 with EP 2: two expert-parallel groups per pipeline rank; an expert's gradients are
    // summed over the two replicas that hold it, the dense ones over all four.
    const Schedule schedule = generate({ ScheduleKind::OneFOneB, 2, 2, 0 });
    ModelSpec spec = specOf(tinyMoe(2), 2);
    spec.ep = 2;
    expectPassed(schedule, run(schedule, spec, 4), 4);
}

TEST(TransformerRun, AnExpertParallelStageHoldsOnlyItsExperts)
{
    const model::Transformer m = tinyMoe(2);
    CpuBackend backend(1);
    const TransformerStage all(backend, m, layers::MoeGating::mixtral(), 1, 1, false, false);
    const TransformerStage half(backend, m, layers::MoeGating::mixtral(), 1, 1, false, false, 2, 1);
    std::vector<std::string> experts;
    for (const StageParameter& p : half.parameters())
        if (p.expert)
            experts.push_back(p.name);
    EXPECT_EQ(experts,
        (std::vector<std::string> { "experts.2.gate_proj", "experts.2.up_proj", "experts.2.down_proj",
            "experts.3.gate_proj", "experts.3.up_proj", "experts.3.down_proj" }));
    // Two of the four experts' 3 × 8 × 16 weights each fewer.
    EXPECT_EQ(all.parameterElements() - half.parameterElements(), 2u * 3u * 8u * 16u);
}
