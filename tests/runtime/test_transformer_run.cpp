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

#include <gtest/gtest.h>

#include <cctype>
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
};

/// Runs 2 steps on schedule.ranks × replicas threads, then the correctness check; `tamper` runs on every rank
/// between the gradient sum and the check.
std::vector<Outcome> run(const Schedule& schedule, const ModelSpec& spec, int replicas = 1,
    const std::function<void(RankExecutor&, int rank)>& tamper = {})
{
    std::vector<Outcome> out(static_cast<std::size_t>(schedule.ranks * replicas));
    ThreadWorld world(schedule.ranks * replicas);
    world.run([&](Comm& comm) {
        CpuBackend backend(1);
        ExecutorOptions options;
        options.replicas = replicas;
        RankExecutor executor(backend, comm, spec, schedule, options);
        Outcome& mine = out[static_cast<std::size_t>(comm.rank())];
        for (int step = 0; step < 2; ++step) {
            auto records = executor.runStep(step);
            executor.sumReplicaGradients(&records);
            mine.records += records.size();
        }
        if (tamper)
            tamper(executor, comm.rank());
        mine.report
            = checkCorrectness(comm, backend, spec, executor, schedule.microbatches * replicas, { 1e-6, 1e-10 });
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

struct KindCase {
    ScheduleKind kind;
    int ranks;
    int microbatches;
    int stagesPerRank;
};

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
    [](const ::testing::TestParamInfo<KindCase>& param) {
        std::string name = std::string(kindName(param.param.kind)) + "_" + std::to_string(param.param.ranks) + "ranks";
        for (char& ch : name)
            if (!std::isalnum(static_cast<unsigned char>(ch)))
                ch = '_';
        return name;
    });

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
