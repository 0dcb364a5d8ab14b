#pragma once
// Small transformer projects the model-library tests share (hand-computable sizes).
#include "project/presets.h"
#include "project/project.h"
#include "support/variants.h"

#include <string>

namespace dps::test {

/// A dense GQA transformer of `layers` layers: h 64, 4 heads of 16 (2 KV heads), SwiGLU 128, vocab 1000,
/// 2 × 32 tokens, bf16, on a 1 TFLOP/s device at half of it. Per layer 36,992 parameters (W^Q, W^O 64×64;
/// W^K, W^V 64×32; 3 × 64×128; two RMSNorms of 64). One variant `name` of `kind` on `ranks` ranks with
/// `microbatches` microbatches, active.
inline Project smallDenseTransformer(
    int layers, ScheduleKind kind, int ranks, int microbatches, const std::string& name = "v")
{
    Project p;
    p.model.kind = ModelKind::Transformer;
    p.model.layers = layers;
    p.model.hidden = 64;
    p.model.ffn = 128;
    p.model.seqLen = 32;
    p.model.microbatchSize = 2;
    p.model.dtype = DType::BF16;
    model::Transformer& t = p.model.transformer;
    t.layers = layers;
    t.hidden = 64;
    t.ffn = 128;
    t.heads = 4;
    t.kvHeads = 2;
    t.headDim = 16;
    t.vocab = 1000;
    t.attention = model::Attention::GQA;
    t.seqLen = 32;
    t.microbatchSize = 2;
    t.dtypeBytes = 2;
    p.cluster.deviceFlops = 1e12;
    p.cluster.efficiency = 0.5;
    return withOnlyVariant(p, kind, ranks, microbatches, name);
}

/// DeepSeek-V3 tiny (`dpstudio init --model deepseek-v3 --scale tiny`: 8 layers, the first 3 dense; T = 32, h 64,
/// top-8 of 256 experts, ep 2) as DualPipe on 2 ranks × dp 2 with 4 microbatches, 2 stages of 4 layers ("EDDDM"
/// and "MMMMH"), variant "v", without typed costs.
inline Project tinyDeepSeekDualPipe()
{
    Project p = defaultProject();
    const ModelPreset preset = scaledPreset(modelPreset("deepseek-v3"), "tiny");
    p.model = preset.model;
    p.training = preset.training;
    p.costs = CostSettings {};
    Variant v;
    v.name = "v";
    v.kind = ScheduleKind::DualPipe;
    v.ranks = 2;
    v.microbatches = 4;
    v.dp = 2;
    v.layerPartition = { 4, 4 };
    p.variants = { v };
    p.activeVariant = "v";
    return p;
}

} // namespace dps::test
