// Model and device presets: every embedded file loads with the project's readers, transformer presets pass
// model::check, device presets carry their datasheet numbers, and an unknown id names the presets.
#include "base/errors.h"
#include "project/presets.h"
#include "project/project.h"
#include "support/variants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

using namespace dps;

namespace {

std::vector<std::string> ids(const std::vector<PresetInfo>& presets)
{
    std::vector<std::string> out;
    for (const PresetInfo& p : presets)
        out.push_back(p.id);
    return out;
}

std::string errorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const FormatError& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(ModelPresets, TheIssuesListSortedById)
{
    EXPECT_EQ(ids(modelPresets()),
        (std::vector<std::string> {
            "block", "deepseek-v3", "llama3-405b", "llama3-70b", "llama3-8b", "mixtral-8x7b" }));
}

TEST(ModelPresets, EveryPresetLoadsAndPassesTheModelCheck)
{
    for (const PresetInfo& info : modelPresets()) {
        SCOPED_TRACE(info.id);
        EXPECT_FALSE(info.title.empty());
        EXPECT_FALSE(info.sources.empty());
        const ModelPreset preset = modelPreset(info.id);
        EXPECT_EQ(preset.model.preset, info.id);
        if (preset.model.kind == ModelKind::Transformer) {
            EXPECT_NO_THROW(model::check(transformerOf(preset.model)));
            EXPECT_TRUE(preset.training.present);
        }
    }
}

TEST(ModelPresets, BlockIsTheDefaultProjectsModel)
{
    const ModelPreset block = modelPreset("block");
    const ModelDesc def = defaultProject().model;
    EXPECT_EQ(block.model.kind, ModelKind::Block);
    EXPECT_EQ(block.model.layers, def.layers);
    EXPECT_EQ(block.model.hidden, def.hidden);
    EXPECT_EQ(block.model.ffn, def.ffn);
    EXPECT_EQ(block.model.seqLen, def.seqLen);
    EXPECT_EQ(block.model.microbatchSize, def.microbatchSize);
    EXPECT_EQ(block.model.dtype, def.dtype);
    EXPECT_FALSE(block.training.present);
}

TEST(ModelPresets, DeepSeekV3HasItsPublishedShape)
{
    // DeepSeek-V3's config.json (huggingface.co/deepseek-ai/DeepSeek-V3).
    const ModelPreset p = modelPreset("deepseek-v3");
    const model::Transformer t = transformerOf(p.model);
    EXPECT_EQ(p.model.kind, ModelKind::Transformer);
    EXPECT_EQ(t.layers, 61);
    EXPECT_EQ(t.hidden, 7168);
    EXPECT_EQ(t.heads, 128);
    EXPECT_EQ(t.vocab, 129280);
    EXPECT_EQ(t.attention, model::Attention::MLA);
    EXPECT_EQ(t.mla.qLoraRank, 1536);
    EXPECT_EQ(t.mla.kvLoraRank, 512);
    EXPECT_EQ(t.moe.experts, 256);
    EXPECT_EQ(t.moe.topK, 8);
    EXPECT_EQ(t.moe.expertFfn, 2048);
    EXPECT_EQ(t.moe.sharedExperts, 1);
    EXPECT_EQ(t.moe.denseLayers, 3);
    EXPECT_EQ(t.moe.dispatchBytes, 1); // FP8 dispatch (DeepSeek-V3 report §3.3)
    EXPECT_EQ(t.moe.combineBytes, 2); // BF16 combine
    EXPECT_FALSE(t.tiedEmbeddings);
}

TEST(ModelPresets, UnknownIdListsThePresets)
{
    EXPECT_EQ(errorOf([] { modelPreset("gpt5"); }),
        "unknown model preset \"gpt5\" (presets: block, deepseek-v3, llama3-405b, llama3-70b, llama3-8b, "
        "mixtral-8x7b)");
}

TEST(DevicePresets, TheIssuesListSortedById)
{
    EXPECT_EQ(ids(devicePresets()),
        (std::vector<std::string> { "a100-80g", "b200", "cpu", "h100-sxm", "h200", "h800", "mi300x" }));
}

TEST(DevicePresets, EveryPresetHasSourcesAndAValidCluster)
{
    for (const PresetInfo& info : devicePresets()) {
        SCOPED_TRACE(info.id);
        EXPECT_FALSE(info.title.empty());
        EXPECT_GE(info.sources.size(), 2u);
        const ClusterDesc c = devicePreset(info.id);
        EXPECT_EQ(c.device, info.id);
        EXPECT_GT(c.deviceFlops, 0.0);
        EXPECT_GT(c.efficiency, 0.0);
        EXPECT_LE(c.efficiency, 1.0);
        EXPECT_GE(c.commComputeShare, 0.0);
        EXPECT_LT(c.commComputeShare, 1.0);
    }
}

TEST(DevicePresets, H800IsDeepSeekV3sCluster)
{
    const ClusterDesc c = devicePreset("h800");
    EXPECT_EQ(c.deviceFlops, 989.4e12); // dense BF16, the H100 SXM5 die
    EXPECT_EQ(c.deviceFlopsFp8, 1978.9e12);
    EXPECT_EQ(c.memoryPerDeviceBytes, 80e9);
    EXPECT_EQ(c.bandwidthBytesPerUs, 200000.0); // NVLink 400 GB/s bidirectional
    EXPECT_EQ(c.interNodeBandwidthBytesPerUs, 50000.0); // 400 Gb/s InfiniBand per GPU
    EXPECT_EQ(c.gpusPerNode, 8);
    EXPECT_EQ(c.nodes, 0);
    EXPECT_EQ(c.latencyUs, 3.0);
    EXPECT_EQ(c.interNodeLatencyUs, 5.0);
    EXPECT_EQ(c.efficiency, 0.45);
    EXPECT_EQ(c.commComputeShare, 20.0 / 132.0); // 20 of 132 SMs
}

TEST(DevicePresets, DatasheetNumbers)
{
    struct Expected {
        const char* id;
        double flops, fp8, memory, intra, inter;
    };
    const Expected table[] = {
        { "a100-80g", 312e12, 0.0, 80e9, 300000, 25000 }, { "h100-sxm", 989.4e12, 1978.9e12, 80e9, 450000, 50000 },
        { "h200", 989.4e12, 1978.9e12, 141e9, 450000, 50000 }, { "b200", 2250e12, 4500e12, 180e9, 900000, 50000 },
        { "mi300x", 1307.4e12, 2614.9e12, 192e9, 448000, 50000 }, // 7 Infinity Fabric links × 64 GB/s
    };
    for (const Expected& e : table) {
        SCOPED_TRACE(e.id);
        const ClusterDesc c = devicePreset(e.id);
        EXPECT_EQ(c.deviceFlops, e.flops);
        EXPECT_EQ(c.deviceFlopsFp8, e.fp8);
        EXPECT_EQ(c.memoryPerDeviceBytes, e.memory);
        EXPECT_EQ(c.bandwidthBytesPerUs, e.intra);
        EXPECT_EQ(c.interNodeBandwidthBytesPerUs, e.inter);
        EXPECT_EQ(c.gpusPerNode, 8);
        EXPECT_EQ(c.commComputeShare, 20.0 / 132.0);
    }
}

TEST(DevicePresets, EveryGpuTimesEachOperationByItsKindAndTheCpuDoesNot)
{
    struct Expected {
        const char* id;
        int sms;
        double hbm, gemm, gemmFp8; // bytes/µs; best-shape matmul shares of the BF16 and FP8 peaks (h800's FP8:
                                   // DeepSeek's fine-grained-scaled kernels, 1304 / 1.1 TFLOP/s of 1978.9)
    };
    const Expected table[] = {
        { "a100-80g", 108, 2.039e6, 0.859, 0.859 },
        { "h100-sxm", 132, 3.35e6, 0.801, 0.734 },
        { "h800", 132, 3.35e6, 0.801, 0.599 },
        { "h200", 132, 4.8e6, 0.803, 0.734 },
        { "b200", 148, 8.0e6, 0.776, 0.763 },
        { "mi300x", 304, 5.3e6, 0.601, 0.601 },
    };
    for (const Expected& e : table) {
        SCOPED_TRACE(e.id);
        const ClusterDesc c = devicePreset(e.id);
        ASSERT_TRUE(c.kernels);
        EXPECT_EQ(c.kernels->smCount, e.sms);
        EXPECT_EQ(c.kernels->hbmBandwidthBytesPerUs, e.hbm);
        EXPECT_EQ(c.kernels->gemmEfficiency, e.gemm);
        EXPECT_EQ(c.kernels->gemmEfficiencyFp8, e.gemmFp8);
        EXPECT_EQ(c.kernels->attentionForwardEfficiency, 0.6);
        EXPECT_EQ(c.kernels->attentionBackwardEfficiency, 0.45);
        EXPECT_EQ(c.kernels->memoryEfficiency, 0.9);
        // Only the H800 has the expert all-to-all measured on it (DeepEP's first README, internode EP 64:
        // dispatch 46 GB/s, combine 45 GB/s); the others time it on the inter-node link.
        const bool h800 = std::string(e.id) == "h800";
        EXPECT_EQ(c.kernels->dispatchInterNodeBytesPerUs, h800 ? 46000 : 0);
        EXPECT_EQ(c.kernels->combineInterNodeBytesPerUs, h800 ? 45000 : 0);
        // And its Wgrad kernels' rate (DeepGEMM pull request #95: 1092 TFLOP/s ÷ 1.2 of 1978.9); the others' FP8 W
        // GEMMs run at gemm_efficiency_fp8.
        EXPECT_EQ(c.kernels->wgradEfficiencyFp8, h800 ? 0.46 : 0.0);
    }
    EXPECT_FALSE(devicePreset("cpu").kernels);
}

TEST(DevicePresets, CpuIsTheDefaultProjectsCluster)
{
    const ClusterDesc c = devicePreset("cpu");
    const ClusterDesc def = defaultProject().cluster;
    EXPECT_EQ(c.deviceFlops, def.deviceFlops);
    EXPECT_EQ(c.efficiency, def.efficiency);
    EXPECT_EQ(c.memoryPerDeviceBytes, def.memoryPerDeviceBytes);
    EXPECT_EQ(c.latencyUs, def.latencyUs);
    EXPECT_EQ(c.bandwidthBytesPerUs, def.bandwidthBytesPerUs);
    EXPECT_EQ(c.gpusPerNode, 0); // every rank on this one machine
    EXPECT_EQ(c.commComputeShare, 0.0);
}

TEST(DevicePresets, UnknownIdListsThePresets)
{
    EXPECT_EQ(errorOf([] { devicePreset("tpu-v5"); }),
        "unknown device preset \"tpu-v5\" (presets: a100-80g, b200, cpu, h100-sxm, h200, h800, mi300x)");
}

TEST(Presets, AProjectMadeOfPresetsRoundTrips)
{
    for (const PresetInfo& m : modelPresets())
        for (const char* device : { "h800", "cpu" }) {
            SCOPED_TRACE(m.id + " on " + device);
            const ModelPreset preset = modelPreset(m.id);
            Project p;
            p.model = preset.model;
            p.training = preset.training;
            p.cluster = devicePreset(device);
            p = test::withOnlyVariant(p, ScheduleKind::DualPipe, 4, 8, "dualpipe");
            EXPECT_NO_THROW(validateProject(p));
            const std::string text = serializeProject(p);
            const Project back = parseProject(text, m.id + ".dpstudio.json");
            EXPECT_EQ(serializeProject(back), text);
            EXPECT_EQ(back.model.preset, m.id);
            EXPECT_EQ(back.cluster.device, device);
        }
}

TEST(ScaledPresets, TinyDeepSeekV3KeepsItsStructure)
{
    ModelPreset full = modelPreset("deepseek-v3");
    full.model.preset = "deepseek-v3";
    const ModelPreset tiny = scaledPreset(full, "tiny");
    const ModelDesc& m = tiny.model;
    const model::Transformer& t = m.transformer;
    EXPECT_EQ(m.preset, "deepseek-v3/tiny");
    EXPECT_EQ(m.kind, ModelKind::Transformer);
    EXPECT_EQ(m.dtype, DType::FP32);
    EXPECT_EQ(m.hidden, 64);
    EXPECT_EQ(m.seqLen, 32);
    EXPECT_EQ(m.microbatchSize, 1);
    EXPECT_EQ(m.layers, 8); // 3 dense + 5 MoE
    EXPECT_EQ(m.ffn, 168); // 18432 × 64 / 7168 = 164.6, to a multiple of 8
    EXPECT_EQ(t.attention, model::Attention::MLA);
    EXPECT_EQ(t.heads, 4);
    EXPECT_EQ(t.mla.qLoraRank, 32); // V3 has a low-rank query: kept
    EXPECT_EQ(t.mla.kvLoraRank, 32);
    EXPECT_EQ(t.mla.qkRopeHeadDim, 8);
    EXPECT_EQ(t.moe.experts, 256); // what the issue keeps: expert counts, top-k, shared, dense first layers
    EXPECT_EQ(t.moe.topK, 8);
    EXPECT_EQ(t.moe.sharedExperts, 1);
    EXPECT_EQ(t.moe.denseLayers, 3);
    EXPECT_EQ(t.moe.expertFfn, 16); // 2048 × 64 / 7168 = 18.3
    EXPECT_EQ(t.moe.denseFfn, 168);
    EXPECT_EQ(t.moe.ep, 2);
    EXPECT_EQ(t.moe.maxNodesPerToken, 0);
    EXPECT_EQ(t.moe.dispatchBytes, 4);
    EXPECT_EQ(t.vocab, 256);
    EXPECT_FALSE(t.tiedEmbeddings);
    EXPECT_EQ(m.recompute, model::Recompute::None); // what the CPU engine runs
    EXPECT_FALSE(tiny.training.present); // no optimizer state: the engine holds weights and gradients only
    EXPECT_NO_THROW(model::check(transformerOf(m)));
}

TEST(ScaledPresets, TinyGqaKeepsFewerKvHeadsThanQueryHeads)
{
    for (const std::string id : { "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b" }) {
        const ModelPreset tiny = scaledPreset(modelPreset(id), "tiny");
        const model::Transformer& t = tiny.model.transformer;
        EXPECT_EQ(t.attention, model::Attention::GQA) << id;
        EXPECT_EQ(t.heads, 4) << id;
        EXPECT_EQ(t.kvHeads, 1) << id; // groups of 4 (8B, Mixtral) and 8 (70B, 405B) become one group of 4
        EXPECT_EQ(t.headDim, 16) << id;
        EXPECT_EQ(tiny.model.layers, 8) << id;
        EXPECT_NO_THROW(model::check(transformerOf(tiny.model))) << id;
    }
    EXPECT_EQ(scaledPreset(modelPreset("llama3-70b"), "tiny").model.ffn, 224); // 28672 / 8192 = 3.5 × 64
    EXPECT_EQ(scaledPreset(modelPreset("llama3-405b"), "tiny").model.ffn, 208); // 53248 / 16384 = 3.25 × 64
    const ModelPreset mixtral = scaledPreset(modelPreset("mixtral-8x7b"), "tiny");
    EXPECT_EQ(mixtral.model.transformer.moe.experts, 8);
    EXPECT_EQ(mixtral.model.transformer.moe.topK, 2);
    EXPECT_EQ(mixtral.model.transformer.moe.expertFfn, 224);
    EXPECT_EQ(mixtral.model.transformer.moe.ep, 1); // the preset has no EP: none added
}

TEST(ScaledPresets, FullIsThePresetAndAnUnknownScaleIsRefused)
{
    const ModelPreset full = modelPreset("llama3-8b");
    const ModelPreset same = scaledPreset(full, "full");
    EXPECT_EQ(same.model.hidden, full.model.hidden);
    EXPECT_EQ(same.model.layers, full.model.layers);
    EXPECT_EQ(errorOf([&] { scaledPreset(full, "huge"); }), "unknown scale \"huge\" (scales: full, tiny)");
    const ModelPreset block = scaledPreset(modelPreset("block"), "tiny");
    EXPECT_EQ(block.model.hidden, 64);
    EXPECT_EQ(block.model.ffn, 256); // the block's 4 × hidden
    EXPECT_EQ(block.model.layers, 8);
}
