// Project format 2: transformer models, training state, node fields of the cluster, dp / microbatch_size /
// recompute on a variant. Format-1 files read as before and are written byte for byte as before.
#include "base/errors.h"
#include "base/fileio.h"
#include "project/predict.h"
#include "project/project.h"
#include "project/transformercost.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>

using namespace dps;
using json = nlohmann::json;

namespace {

/// The FormatError message of parsing `j`, or "" when it parses.
std::string errorOf(const json& j, const std::string& source = "p.dpstudio.json")
{
    try {
        parseProject(j.dump(), source);
    } catch (const FormatError& e) {
        return e.what();
    }
    return "";
}

/// A small MoE transformer project using every field format 2 adds.
json moeJson()
{
    return json::parse(R"({
  "format_version": 2,
  "name": "small MoE",
  "seed": 7,
  "model": {"kind": "transformer", "preset": "tiny-moe", "layers": 4, "hidden": 256, "ffn": 1024, "seq_len": 64,
            "microbatch_size": 2, "dtype": "bf16", "recompute": "selective", "heads": 8, "kv_heads": 2,
            "vocab": 1000, "tied_embeddings": true, "attention": "gqa",
            "moe": {"experts": 8, "top_k": 2, "expert_ffn": 512, "shared_experts": 1, "dense_layers": 1,
                    "dense_ffn": 768, "ep": 4, "dispatch_dtype": "fp8", "max_nodes_per_token": 2}},
  "training": {"master_weights": false, "moment_dtype": "bf16", "gradient_dtype": "bf16", "zero": 1},
  "cluster": {"device": "h800", "device_flops": 989.4e12, "device_flops_fp8": 1978.9e12, "efficiency": 0.45,
              "memory_per_device_bytes": 80e9, "latency_us": 3, "bandwidth_bytes_per_us": 200000,
              "gpus_per_node": 8, "nodes": 4, "inter_node_latency_us": 6, "inter_node_bandwidth_bytes_per_us": 50000,
              "comm_compute_share": 0.25},
  "variants": [
    {"name": "dualpipe", "kind": "dualpipe", "ranks": 4, "microbatches": 8, "dp": 8, "microbatch_size": 1,
     "recompute": "full"},
    {"name": "1f1b", "kind": "1f1b", "ranks": 4, "microbatches": 8}
  ]
})");
}

/// An MLA model (DeepSeek-V3's attention shapes on a small model).
json mlaJson()
{
    json j = moeJson();
    j["model"]["attention"] = "mla";
    j["model"].erase("kv_heads");
    j["model"]["mla"]
        = { { "q_lora_rank", 96 }, { "kv_lora_rank", 64 }, { "qk_nope_head_dim", 32 }, { "qk_rope_head_dim", 16 } };
    return j;
}

} // namespace

// ------------------------------------------------------------------------------------------ format 1

TEST(FormatV1, TheDefaultProjectReadsAsBefore)
{
    const Project p = defaultProject();
    EXPECT_EQ(p.model.kind, ModelKind::Block);
    EXPECT_EQ(p.model.preset, "");
    EXPECT_EQ(p.model.recompute, model::Recompute::None);
    EXPECT_FALSE(p.training.present);
    EXPECT_EQ(p.cluster.device, "");
    EXPECT_EQ(p.cluster.deviceFlops, 1e11);
    EXPECT_EQ(p.cluster.efficiency, 0.6);
    EXPECT_EQ(p.cluster.memoryPerDeviceBytes, 8e9);
    EXPECT_EQ(p.cluster.latencyUs, 2.0);
    EXPECT_EQ(p.cluster.bandwidthBytesPerUs, 5000.0);
    EXPECT_EQ(p.cluster.deviceFlopsFp8, 0.0);
    EXPECT_EQ(p.cluster.gpusPerNode, 0);
    EXPECT_EQ(p.cluster.nodes, 0);
    EXPECT_EQ(p.cluster.interNodeLatencyUs, 5.0);
    EXPECT_EQ(p.cluster.interNodeBandwidthBytesPerUs, 25e3);
    EXPECT_EQ(p.cluster.commComputeShare, 20.0 / 132.0);
    for (const Variant& v : p.variants) {
        EXPECT_EQ(v.dp, 1);
        EXPECT_EQ(v.microbatchSize, 0);
        EXPECT_FALSE(v.recompute.has_value());
    }
}

TEST(FormatV1, TheDefaultProjectIsWrittenByteForByteAsBefore)
{
    // What the format-1 writer wrote for the default project before format 2 existed (numbers of the cluster
    // as doubles, hence "2.0" where resources/default.dpstudio.json says 2).
    constexpr const char* kWritten = R"({
  "format_version": 1,
  "name": "DualPipe vs DualPipeV, 16 layers",
  "seed": 233,
  "model": {
    "layers": 16,
    "hidden": 512,
    "ffn": 2048,
    "seq_len": 128,
    "microbatch_size": 2,
    "dtype": "fp32"
  },
  "cluster": {
    "device_flops": 100000000000.0,
    "efficiency": 0.6,
    "memory_per_device_bytes": 8000000000.0,
    "latency_us": 2.0,
    "bandwidth_bytes_per_us": 5000.0
  },
  "variants": [
    {
      "name": "dualpipe",
      "kind": "dualpipe",
      "ranks": 8,
      "microbatches": 20,
      "layer_partition": [2, 2, 2, 2, 2, 2, 2, 2]
    },
    {
      "name": "dualpipev",
      "kind": "dualpipev",
      "ranks": 4,
      "microbatches": 20,
      "stages_per_rank": 2,
      "layer_partition": [2, 2, 2, 2, 2, 2, 2, 2]
    }
  ],
  "active_variant": "dualpipe",
  "costs": {
    "overlap_factor": 1.0,
    "optimizer_bytes_per_parameter": 0.0,
    "stages": []
  }
}
)";
    EXPECT_EQ(serializeProject(defaultProject()), kWritten);
    // The file itself reads to the same project.
    const Project fromFile = parseProject(readTextFile(DPS_SOURCE_DIR "/resources/default.dpstudio.json"));
    EXPECT_EQ(serializeProject(fromFile), kWritten);
}

TEST(FormatV1, ABlockProjectOfFormat2ContentOnlyInFormat1IsWrittenAsFormat1)
{
    json j = json::parse(serializeProject(defaultProject()));
    j["format_version"] = 2;
    j["model"]["kind"] = "block"; // the default kind says nothing format 1 cannot
    const Project p = parseProject(j.dump());
    EXPECT_EQ(serializeProject(p), serializeProject(defaultProject()));
}

// Each thing format 1 cannot say makes the writer write format 2, and it reads back the same.
struct Format2Case {
    const char* name;
    std::function<void(Project&)> change;
};

class Format2Content : public testing::TestWithParam<Format2Case> { };

TEST_P(Format2Content, IsWrittenAsFormat2AndReadsBack)
{
    Project p = defaultProject();
    GetParam().change(p);
    const std::string text = serializeProject(p);
    EXPECT_EQ(json::parse(text)["format_version"], 2);
    const Project back = parseProject(text);
    EXPECT_EQ(serializeProject(back), text);
}

const Format2Case kFormat2Cases[] = {
    { "ModelRecompute", [](Project& p) { p.model.recompute = model::Recompute::Full; } },
    { "ModelPreset", [](Project& p) { p.model.preset = "block"; } },
    { "Training", [](Project& p) { p.training.present = true; } },
    { "Device", [](Project& p) { p.cluster.device = "cpu"; } },
    { "Fp8Peak", [](Project& p) { p.cluster.deviceFlopsFp8 = 2e11; } },
    { "GpusPerNode", [](Project& p) { p.cluster.gpusPerNode = 4; } },
    { "Nodes", [](Project& p) { p.cluster.nodes = 2; } },
    { "InterNodeLatency", [](Project& p) { p.cluster.interNodeLatencyUs = 7.5; } },
    { "InterNodeBandwidth", [](Project& p) { p.cluster.interNodeBandwidthBytesPerUs = 1e4; } },
    { "CommComputeShare", [](Project& p) { p.cluster.commComputeShare = 0.0; } },
    { "VariantDp", [](Project& p) { p.variants[1].dp = 4; } },
    { "VariantRecompute", [](Project& p) { p.variants[0].recompute = model::Recompute::Selective; } },
};

INSTANTIATE_TEST_SUITE_P(
    EachField, Format2Content, testing::ValuesIn(kFormat2Cases), [](const auto& param) { return param.param.name; });

TEST(FormatV1, AFormat1FileMayUseFormat2FieldsAndIsRewrittenAsFormat2)
{
    json j = json::parse(serializeProject(defaultProject()));
    j["cluster"]["gpus_per_node"] = 8;
    const Project p = parseProject(j.dump());
    EXPECT_EQ(p.cluster.gpusPerNode, 8);
    EXPECT_EQ(projectToJson(p)["format_version"], 2);
}

// ------------------------------------------------------------------------------------------ format 2

TEST(FormatV2, ReadsEveryFieldOfATransformer)
{
    const Project p = parseProject(moeJson().dump());
    const ModelDesc& m = p.model;
    EXPECT_EQ(m.kind, ModelKind::Transformer);
    EXPECT_EQ(m.preset, "tiny-moe");
    EXPECT_EQ(m.layers, 4);
    EXPECT_EQ(m.hidden, 256);
    EXPECT_EQ(m.ffn, 1024);
    EXPECT_EQ(m.seqLen, 64);
    EXPECT_EQ(m.microbatchSize, 2);
    EXPECT_EQ(m.dtype, DType::BF16);
    EXPECT_EQ(m.recompute, model::Recompute::Selective);
    const model::Transformer& t = m.transformer;
    EXPECT_EQ(t.heads, 8);
    EXPECT_EQ(t.kvHeads, 2);
    EXPECT_EQ(t.headDim, 32); // hidden / heads when not given
    EXPECT_EQ(t.vocab, 1000);
    EXPECT_TRUE(t.tiedEmbeddings);
    EXPECT_EQ(t.attention, model::Attention::GQA);
    EXPECT_EQ(t.moe.experts, 8);
    EXPECT_EQ(t.moe.topK, 2);
    EXPECT_EQ(t.moe.expertFfn, 512);
    EXPECT_EQ(t.moe.sharedExperts, 1);
    EXPECT_EQ(t.moe.denseLayers, 1);
    EXPECT_EQ(t.moe.denseFfn, 768);
    EXPECT_EQ(t.moe.ep, 4);
    EXPECT_EQ(t.moe.dispatchBytes, 1); // fp8
    EXPECT_EQ(t.moe.combineBytes, 2); // the model's bf16 when not given
    EXPECT_EQ(t.moe.maxNodesPerToken, 2);

    EXPECT_TRUE(p.training.present);
    EXPECT_FALSE(p.training.masterWeights);
    EXPECT_EQ(p.training.momentBytes, 2);
    EXPECT_EQ(p.training.gradientDtype, DType::BF16);
    EXPECT_EQ(p.training.zero, 1);

    const ClusterDesc& c = p.cluster;
    EXPECT_EQ(c.device, "h800");
    EXPECT_EQ(c.deviceFlops, 989.4e12);
    EXPECT_EQ(c.deviceFlopsFp8, 1978.9e12);
    EXPECT_EQ(c.gpusPerNode, 8);
    EXPECT_EQ(c.nodes, 4);
    EXPECT_EQ(c.latencyUs, 3.0);
    EXPECT_EQ(c.bandwidthBytesPerUs, 200000.0);
    EXPECT_EQ(c.interNodeLatencyUs, 6.0);
    EXPECT_EQ(c.interNodeBandwidthBytesPerUs, 50000.0);
    EXPECT_EQ(c.commComputeShare, 0.25);

    ASSERT_EQ(p.variants.size(), 2u);
    EXPECT_EQ(p.variants[0].dp, 8);
    EXPECT_EQ(p.variants[0].microbatchSize, 1);
    EXPECT_EQ(p.variants[0].recompute, model::Recompute::Full);
    EXPECT_EQ(p.variants[1].dp, 1);
    EXPECT_EQ(p.variants[1].microbatchSize, 0);
    EXPECT_FALSE(p.variants[1].recompute.has_value());
}

TEST(FormatV2, TransformerOfFillsTheSharedFields)
{
    const Project p = parseProject(moeJson().dump());
    const model::Transformer t = transformerOf(p.model);
    EXPECT_EQ(t.layers, 4);
    EXPECT_EQ(t.hidden, 256);
    EXPECT_EQ(t.ffn, 1024);
    EXPECT_EQ(t.seqLen, 64);
    EXPECT_EQ(t.microbatchSize, 2);
    EXPECT_EQ(t.dtypeBytes, 2);
    EXPECT_EQ(t.heads, 8);
    EXPECT_EQ(t.moe.experts, 8);
    EXPECT_EQ(transformerOf(p.model, p.variants[0].microbatchSize).microbatchSize, 1);
    EXPECT_EQ(transformerOf(p.model, 0).tokens(), 128.0);
}

TEST(FormatV2, DefaultsOfTheOptionalFields)
{
    json j = moeJson();
    for (const char* key : { "kv_heads", "tied_embeddings", "attention", "moe", "recompute", "preset" })
        j["model"].erase(key);
    j["model"].erase("dtype");
    j["model"].erase("ffn");
    j["training"] = json::object();
    j["cluster"] = json::object();
    const Project p = parseProject(j.dump());
    EXPECT_EQ(p.model.ffn, 1024); // 4 × hidden
    EXPECT_EQ(p.model.dtype, DType::FP32);
    EXPECT_EQ(p.model.recompute, model::Recompute::None);
    EXPECT_EQ(p.model.transformer.kvHeads, 8);
    EXPECT_EQ(p.model.transformer.attention, model::Attention::MHA); // kv_heads == heads
    EXPECT_FALSE(p.model.transformer.tiedEmbeddings);
    EXPECT_EQ(p.model.transformer.moe.experts, 0);
    EXPECT_EQ(p.model.transformer.moe.ep, 1);
    EXPECT_EQ(p.model.transformer.moe.dispatchBytes, 4); // the model's fp32
    EXPECT_TRUE(p.training.present);
    EXPECT_TRUE(p.training.masterWeights);
    EXPECT_EQ(p.training.momentBytes, 4);
    EXPECT_EQ(p.training.gradientDtype, DType::FP32);
    EXPECT_EQ(p.training.zero, 0);

    j["model"]["kv_heads"] = 2;
    EXPECT_EQ(parseProject(j.dump()).model.transformer.attention, model::Attention::GQA); // kv_heads < heads
}

TEST(FormatV2, ReadsMlaWithItsDefaults)
{
    const Project p = parseProject(mlaJson().dump());
    const model::Mla& mla = p.model.transformer.mla;
    EXPECT_EQ(p.model.transformer.attention, model::Attention::MLA);
    EXPECT_EQ(mla.qLoraRank, 96);
    EXPECT_EQ(mla.kvLoraRank, 64);
    EXPECT_EQ(mla.qkNopeHeadDim, 32);
    EXPECT_EQ(mla.qkRopeHeadDim, 16);
    EXPECT_EQ(mla.vHeadDim, 128); // model::Mla's default
}

TEST(FormatV2, TheExamplesOfTheFormatDocumentRead)
{
    // Every project example (a ```json block with "variants") of docs/project-format.md parses.
    const std::string doc = readTextFile(DPS_SOURCE_DIR "/docs/project-format.md");
    int projects = 0;
    for (std::size_t at = doc.find("```json\n"); at != std::string::npos; at = doc.find("```json\n", at + 1)) {
        const std::size_t begin = at + 8;
        const std::string block = doc.substr(begin, doc.find("```", begin) - begin);
        if (!looksLikeProject(block))
            continue;
        ++projects;
        EXPECT_NO_THROW(parseProject(block, "docs/project-format.md example")) << block;
    }
    EXPECT_EQ(projects, 2);
}

TEST(FormatV2, ATransformerProjectRoundTrips)
{
    for (const json& j : { moeJson(), mlaJson() }) {
        const Project p = parseProject(j.dump());
        const std::string text = serializeProject(p);
        const Project back = parseProject(text, "written.dpstudio.json");
        EXPECT_EQ(serializeProject(back), text);
        EXPECT_EQ(back.model.transformer.moe.dispatchBytes, 1);
        EXPECT_EQ(back.model.transformer.moe.combineBytes, 2);
        EXPECT_EQ(back.model.transformer.attention, p.model.transformer.attention);
        EXPECT_EQ(back.model.transformer.mla.qLoraRank, p.model.transformer.mla.qLoraRank);
        EXPECT_EQ(back.model.transformer.headDim, 32);
        EXPECT_EQ(back.training.momentBytes, 2);
        EXPECT_FALSE(back.training.masterWeights);
        EXPECT_EQ(back.cluster.commComputeShare, 0.25);
        EXPECT_EQ(back.cluster.deviceFlopsFp8, 1978.9e12);
        EXPECT_EQ(back.variants[0].recompute, model::Recompute::Full);
        EXPECT_EQ(back.variants[0].microbatchSize, 1);
        EXPECT_EQ(back.variants[0].dp, 8);
    }
}

TEST(FormatV2, WritesOptionalFieldsOnlyWhenSet)
{
    const auto j = projectToJson(parseProject(moeJson().dump()));
    EXPECT_EQ(j["format_version"], 2);
    // Variant 0 overrides dp, microbatch_size and recompute; variant 1 nothing.
    EXPECT_EQ(j["variants"][0].dump(),
        R"({"name":"dualpipe","kind":"dualpipe","ranks":4,"microbatches":8,"dp":8,"microbatch_size":1,)"
        R"("recompute":"full"})");
    EXPECT_EQ(j["variants"][1].dump(), R"({"name":"1f1b","kind":"1f1b","ranks":4,"microbatches":8})");
    // The dispatch dtype differs from the model's bf16, the combine dtype does not.
    EXPECT_EQ(j["model"]["moe"].dump(),
        R"({"experts":8,"top_k":2,"expert_ffn":512,"shared_experts":1,"dense_layers":1,"dense_ffn":768,"ep":4,)"
        R"("dispatch_dtype":"fp8","max_nodes_per_token":2})");
    EXPECT_FALSE(j["model"].contains("mla")); // only with attention "mla"
    EXPECT_EQ(
        j["training"].dump(), R"({"master_weights":false,"moment_dtype":"bf16","gradient_dtype":"bf16","zero":1})");

    // A dense transformer writes no "moe"; a cluster without nodes writes no gpus_per_node / nodes.
    json dense = moeJson();
    dense["model"].erase("moe");
    dense["cluster"].erase("gpus_per_node");
    dense["cluster"].erase("nodes");
    dense["cluster"].erase("device");
    dense["cluster"].erase("device_flops_fp8");
    dense["variants"][0]["dp"] = 2;
    const auto d = projectToJson(parseProject(dense.dump()));
    EXPECT_FALSE(d["model"].contains("moe"));
    EXPECT_EQ(d["cluster"].dump(),
        R"({"device_flops":989400000000000.0,"efficiency":0.45,"memory_per_device_bytes":80000000000.0,)"
        R"("latency_us":3.0,"bandwidth_bytes_per_us":200000.0,"inter_node_latency_us":6.0,)"
        R"("inter_node_bandwidth_bytes_per_us":50000.0,"comm_compute_share":0.25})");
}

TEST(FormatV2, ValidateProjectChecksAProjectBuiltInCode)
{
    Project p = parseProject(moeJson().dump());
    p.variants[1].dp = 6;
    try {
        validateProject(p);
        FAIL() << "no error";
    } catch (const FormatError& e) {
        EXPECT_STREQ(e.what(),
            "variants[1].dp: 6 is not a multiple of model.moe.ep 4 (an expert-parallel group is formed across the dp "
            "replicas of a stage)");
    }
    p = parseProject(moeJson().dump());
    p.model.transformer.moe.topK = 9;
    EXPECT_THROW(validateProject(p), FormatError);
    p = parseProject(moeJson().dump());
    p.training.zero = 4;
    EXPECT_THROW(validateProject(p), FormatError);
}

TEST(FormatV2, ParallelismPrecisionAndRecomputeFieldsRoundTrip)
{
    json j = moeJson();
    j["variants"][0]["dp"] = 2; // 4 ranks × tp 2 × dp 2 × cp 2 = 32 devices, cluster.nodes 4 × 8
    j["variants"][0]["tp"] = 2;
    j["variants"][0]["cp"] = 2;
    j["variants"][0]["sequence_parallel"] = true;
    j["variants"][0]["recompute_layers"] = 1;
    j["variants"][1]["recompute"] = "norm-up-projection";
    j["model"]["moe"]["imbalance"] = 1.25;
    j["training"]["zero"] = 3;
    j["training"]["gemm_dtype"] = "fp8";
    j["training"]["activation_cache_dtype"] = "fp8";
    j["training"]["ema_on_cpu"] = true;
    const Project p = parseProject(j.dump());
    const Variant& v = p.variants[0];
    EXPECT_EQ(v.tp, 2);
    EXPECT_EQ(v.cp, 2);
    EXPECT_TRUE(v.sequenceParallel);
    EXPECT_EQ(v.recomputeLayers, 1);
    EXPECT_EQ(p.variants[1].recompute, model::Recompute::NormUpProjection);
    EXPECT_EQ(p.variants[1].tp, 1);
    EXPECT_FALSE(p.variants[1].recomputeLayers.has_value());
    EXPECT_EQ(p.model.transformer.moe.imbalance, 1.25);
    EXPECT_EQ(p.training.zero, 3);
    EXPECT_EQ(p.training.gemmBytes, 1);
    EXPECT_EQ(p.training.activationCacheBytes, 1);
    EXPECT_TRUE(p.training.emaOnCpu);
    const json written = json::parse(serializeProject(p));
    EXPECT_EQ(written["variants"][0]["tp"], 2);
    EXPECT_EQ(written["variants"][0]["cp"], 2);
    EXPECT_EQ(written["variants"][0]["sequence_parallel"], true);
    EXPECT_EQ(written["variants"][0]["recompute_layers"], 1);
    EXPECT_FALSE(written["variants"][1].contains("tp"));
    EXPECT_EQ(written["model"]["moe"]["imbalance"], 1.25);
    EXPECT_EQ(written["training"]["gemm_dtype"], "fp8");
    EXPECT_EQ(written["training"]["activation_cache_dtype"], "fp8");
    EXPECT_EQ(written["training"]["ema_on_cpu"], true);
    EXPECT_EQ(serializeProject(parseProject(serializeProject(p))), serializeProject(p));
}

TEST(FormatV2, ABlockModelRefusesTensorAndContextParallelism)
{
    for (const char* field : { "tp", "cp" }) {
        Project p = defaultProject();
        (std::string(field) == "tp" ? p.variants[0].tp : p.variants[0].cp) = 2;
        try {
            validateProject(p);
            FAIL() << field;
        } catch (const FormatError& e) {
            EXPECT_EQ(std::string(e.what()),
                "variants[0]." + std::string(field)
                    + ": only for model.kind \"transformer\" (the block model runs whole layers on one device), got 2");
        }
    }
    Project p = defaultProject();
    p.variants[0].sequenceParallel = true;
    EXPECT_THROW(validateProject(p), FormatError);
}

// ------------------------------------------------------------------------------------------ bad input

struct ErrorCase {
    const char* name;
    std::function<void(json&)> change;
    const char* message; ///< after "p.dpstudio.json: "
};

class FormatV2Errors : public testing::TestWithParam<ErrorCase> { };

TEST_P(FormatV2Errors, NameTheFieldExactly)
{
    json j = moeJson();
    GetParam().change(j);
    EXPECT_EQ(errorOf(j), std::string("p.dpstudio.json: ") + GetParam().message);
}

const ErrorCase kErrors[] = {
    { "NegativeExperts", [](json& j) { j["model"]["moe"]["experts"] = -1; },
        "model.moe.experts: must be a non-negative integer, got -1" },
    { "TopKAboveExperts", [](json& j) { j["model"]["moe"]["top_k"] = 9; },
        "model.moe.top_k: 9 exceeds model.moe.experts 8" },
    { "HeadsNotDividingHidden",
        [](json& j) {
            j["model"]["heads"] = 7;
            j["model"]["kv_heads"] = 7;
        },
        "model.heads: 7 does not divide model.hidden 256 (give model.head_dim)" },
    { "TooFewNodes", [](json& j) { j["cluster"]["nodes"] = 3; },
        "variants[0]: 4 ranks × dp 8 = 32 devices do not fit cluster.nodes 3 × cluster.gpus_per_node 8" },
    { "EpNotDividingDp", [](json& j) { j["variants"][0]["dp"] = 6; },
        "variants[0].dp: 6 is not a multiple of model.moe.ep 4 (an expert-parallel group is formed across the dp "
        "replicas of a stage)" },
    { "UnknownMoeField", [](json& j) { j["model"]["moe"]["expert"] = 1; }, "model.moe.expert: unknown field" },
    { "UnknownMlaField",
        [](json& j) {
            j["model"]["attention"] = "mla";
            j["model"]["mla"] = { { "rank", 1 } };
        },
        "model.mla.rank: unknown field" },
    { "UnknownTrainingField", [](json& j) { j["training"]["zero_stage"] = 1; }, "training.zero_stage: unknown field" },
    { "UnknownClusterField", [](json& j) { j["cluster"]["gpus"] = 8; }, "cluster.gpus: unknown field" },
    { "UnknownVariantField", [](json& j) { j["variants"][1]["pp"] = 2; }, "variants[1].pp: unknown field" },
    { "UnknownTransformerField", [](json& j) { j["model"]["experts"] = 8; }, "model.experts: unknown field" },
    { "TrainingWithOptimizerBytes",
        [](json& j) {
            j["costs"] = { { "optimizer_bytes_per_parameter", 12 } };
        },
        "training: given together with costs.optimizer_bytes_per_parameter 12; the optimizer state is set by one "
        "or the other (remove one)" },
    { "UnknownModelKind", [](json& j) { j["model"]["kind"] = "moe"; },
        "model.kind: must be \"block\" or \"transformer\", got \"moe\"" },
    { "UnknownRecompute", [](json& j) { j["model"]["recompute"] = "some"; },
        "model.recompute: must be \"none\", \"selective\", \"full\" or \"norm-up-projection\", got \"some\"" },
    { "VariantRecomputeNotText", [](json& j) { j["variants"][0]["recompute"] = true; },
        "variants[0].recompute: must be a string, got true" },
    { "Fp8ModelDtype", [](json& j) { j["model"]["dtype"] = "fp8"; },
        "model.dtype: must be \"fp32\" or \"bf16\", got \"fp8\"" },
    { "UnknownDispatchDtype", [](json& j) { j["model"]["moe"]["dispatch_dtype"] = "int8"; },
        "model.moe.dispatch_dtype: must be \"fp8\", \"bf16\" or \"fp32\", got \"int8\"" },
    { "Fp8Moments", [](json& j) { j["training"]["moment_dtype"] = "fp8"; },
        "training.moment_dtype: must be \"fp32\" or \"bf16\", got \"fp8\"" },
    { "MlaFieldsWithoutMla", [](json& j) { j["model"]["mla"] = json::object(); },
        "model.mla: only with model.attention \"mla\"" },
    { "MhaWithFewerKvHeads", [](json& j) { j["model"]["attention"] = "mha"; },
        "model.kv_heads: 2 differs from model.heads 8 with model.attention \"mha\" (use \"gqa\")" },
    { "TiedNotBool", [](json& j) { j["model"]["tied_embeddings"] = "yes"; },
        "model.tied_embeddings: must be true or false, got \"yes\"" },
    { "MissingVocab", [](json& j) { j["model"].erase("vocab"); }, "model.vocab: missing (required)" },
    { "MissingHeads", [](json& j) { j["model"].erase("heads"); }, "model.heads: missing (required)" },
    { "ZeroEp", [](json& j) { j["model"]["moe"]["ep"] = 0; }, "model.moe.ep: must be a positive integer, got 0" },
    { "ZeroGpusPerNode", [](json& j) { j["cluster"]["gpus_per_node"] = 0; },
        "cluster.gpus_per_node: must be a positive integer, got 0" },
    { "ZeroNodes", [](json& j) { j["cluster"]["nodes"] = 0; }, "cluster.nodes: must be a positive integer, got 0" },
    { "CommShareOne", [](json& j) { j["cluster"]["comm_compute_share"] = 1; },
        "cluster.comm_compute_share: must be in [0, 1), got 1" },
    { "NegativeInterNodeBandwidth", [](json& j) { j["cluster"]["inter_node_bandwidth_bytes_per_us"] = -5; },
        "cluster.inter_node_bandwidth_bytes_per_us: must be a non-negative number, got -5" },
    { "DeviceNotText", [](json& j) { j["cluster"]["device"] = 800; }, "cluster.device: must be a string, got 800" },
    { "ZeroFour", [](json& j) { j["training"]["zero"] = 4; }, "training.zero: must be 0, 1, 2 or 3, got 4" },
    { "TpNotDividingHeads", [](json& j) { j["variants"][0]["tp"] = 3; },
        "variants[0].tp: 3 does not divide model.heads 8 (tensor parallelism splits attention by heads)" },
    { "TpNotDividingKvHeads", [](json& j) { j["variants"][1]["tp"] = 4; },
        "variants[1].tp: 4 does not divide model.kv_heads 2 (each tensor rank holds whole key-value groups)" },
    { "ZeroTp", [](json& j) { j["variants"][1]["tp"] = 0; }, "variants[1].tp: must be a positive integer, got 0" },
    { "CpNotDividingSequence", [](json& j) { j["variants"][1]["cp"] = 3; },
        "variants[1].cp: 3 does not divide model.seq_len 64 (context parallelism splits the sequence)" },
    { "TpTimesDpTooManyDevices", [](json& j) { j["variants"][0]["tp"] = 2; },
        "variants[0]: 4 ranks × tp 2 × dp 8 = 64 devices do not fit cluster.nodes 4 × cluster.gpus_per_node 8" },
    { "CpTimesDpNotAMultipleOfEp",
        [](json& j) {
            j["variants"][0]["dp"] = 1;
            j["variants"][0]["cp"] = 2;
        },
        "variants[0].dp: 1 × cp 2 is not a multiple of model.moe.ep 4 (an expert-parallel group is formed across the "
        "dp × cp replicas of a stage)" },
    { "SequenceParallelNotBool", [](json& j) { j["variants"][0]["sequence_parallel"] = "yes"; },
        "variants[0].sequence_parallel: must be true or false, got \"yes\"" },
    { "ImbalanceBelowOne", [](json& j) { j["model"]["moe"]["imbalance"] = 0.5; },
        "model.moe.imbalance: must be at least 1 (1 = balanced routing), got 0.5" },
    { "RecomputeLayersWithoutFull", [](json& j) { j["model"]["recompute_layers"] = 2; },
        "model.recompute_layers: 2 layers recomputed needs model.recompute \"full\", got \"selective\"" },
    { "VariantRecomputeLayersWithoutFull", [](json& j) { j["variants"][1]["recompute_layers"] = 2; },
        "variants[1].recompute_layers: 2 layers recomputed needs recompute \"full\", got \"selective\"" },
    { "UnknownGemmDtype", [](json& j) { j["training"]["gemm_dtype"] = "int4"; },
        "training.gemm_dtype: must be \"fp8\", \"bf16\" or \"fp32\", got \"int4\"" },
    { "EmaNotBool", [](json& j) { j["training"]["ema_on_cpu"] = 1; },
        "training.ema_on_cpu: must be true or false, got 1" },
    { "ZeroDp", [](json& j) { j["variants"][0]["dp"] = 0; }, "variants[0].dp: must be a positive integer, got 0" },
    { "ZeroVariantMicrobatch", [](json& j) { j["variants"][1]["microbatch_size"] = 0; },
        "variants[1].microbatch_size: must be a positive integer, got 0" },
    { "TrainingNotObject", [](json& j) { j["training"] = 1; }, "training: must be an object, got 1" },
    { "LogitsTooLarge",
        [](json& j) {
            j["model"]["vocab"] = 2147483647;
            j["model"]["seq_len"] = 1048576;
            j["model"]["microbatch_size"] = 1024;
        },
        // Variant 0 (microbatch_size 1) passes: 2147483647 × 2^20 × 4 < 2^53; variant 1 takes the model's 1024.
        "model.vocab: 2147483647 × model.seq_len 1048576 × model.microbatch_size 1024 × 4 (bytes per fp32 logit) "
        "logit bytes (the LM head's output, kept for the loss) exceed 2^53 (the largest exact count)" },
    { "TokensTooMany",
        [](json& j) {
            j["model"]["seq_len"] = 1048576;
            j["variants"][0]["microbatch_size"] = 2048;
        },
        "model.seq_len: 1048576 × variants[0].microbatch_size 2048 tokens per microbatch exceed 2^31 − 1 (the "
        "largest int)" },
    { "ActivationTooLarge",
        [](json& j) {
            j["model"]["hidden"] = 1 << 30;
            j["model"]["heads"] = 1;
            j["model"]["kv_heads"] = 1;
            j["model"]["ffn"] = 1;
            j["model"]["seq_len"] = 1 << 23;
        },
        "model.hidden: 1073741824 × model.seq_len 8388608 × variants[0].microbatch_size 1 × 2 (bytes per bf16 "
        "element) activation bytes (one T×h tensor: a layer's input, the message between stages) exceed 2^53 (the "
        "largest exact count)" },
};

INSTANTIATE_TEST_SUITE_P(
    EveryRule, FormatV2Errors, testing::ValuesIn(kErrors), [](const auto& param) { return param.param.name; });

TEST(FormatV2Errors, ABlockModelRefusesTransformerFields)
{
    json j = json::parse(serializeProject(defaultProject()));
    j["model"]["heads"] = 8;
    EXPECT_EQ(errorOf(j), "p.dpstudio.json: model.heads: only for model.kind \"transformer\"");
    j = json::parse(serializeProject(defaultProject()));
    j["model"]["kind"] = "block";
    j["model"]["moe"] = { { "experts", 8 } };
    EXPECT_EQ(errorOf(j), "p.dpstudio.json: model.moe: only for model.kind \"transformer\"");
    j = json::parse(serializeProject(defaultProject()));
    j["variants"][0]["microbatch_size"] = 4;
    EXPECT_EQ(errorOf(j),
        "p.dpstudio.json: variants[0].microbatch_size: only for model.kind \"transformer\" (a block model uses "
        "model.microbatch_size 2)");
}

TEST(FormatV2Errors, ANewerVersionNamesBoth)
{
    json j = moeJson();
    j["format_version"] = 3;
    EXPECT_EQ(errorOf(j), "p.dpstudio.json: format_version 3 is newer than this build reads (2)");
}

TEST(FormatV2Errors, DeepNestingIsMalformedJsonNotACrash)
{
    // 50,000 nested arrays: nlohmann parses them, but printing or walking them recursed once per level.
    const std::string deep = std::string(50000, '[') + std::string(50000, ']');
    for (const std::string& text : { deep, "{\"format_version\": 2, \"model\": {\"hidden\": " + deep + "}}" }) {
        try {
            parseProject(text, "deep.json");
            FAIL() << "no error";
        } catch (const FormatError& e) {
            EXPECT_EQ(
                std::string(e.what()), "deep.json: not valid JSON: arrays and objects nested deeper than 64 levels");
        }
    }
}

TEST(FormatV2, AHugeNodeSizeHoldsTheWholeEpGroupInOneNode)
{
    // ep + gpus_per_node − 1 used to overflow an int (nodes spanned 0: an internal error).
    json j = moeJson();
    j["cluster"]["gpus_per_node"] = 2147483647;
    j["cluster"].erase("nodes");
    const Project p = parseProject(j.dump());
    const DevicePlacement placement = placementOf(p, p.variants[0]);
    EXPECT_EQ(placement.ep.nodesSpanned, 1);
    EXPECT_EQ(placement.ep.peersInNode, 3);
    EXPECT_TRUE(predict(p, p.variants[0]).valid());
}

TEST(FormatV2, TheAllToAllsInterNodeRatesReadWriteAndAreChecked)
{
    json j = moeJson();
    j["cluster"]["kernels"] = { { "sm_count", 132 }, { "hbm_bandwidth_bytes_per_us", 3.35e6 },
        { "dispatch_inter_node_bandwidth_bytes_per_us", 46000 },
        { "combine_inter_node_bandwidth_bytes_per_us", 45000 } };
    const Project p = parseProject(j.dump());
    ASSERT_TRUE(p.cluster.kernels);
    EXPECT_EQ(p.cluster.kernels->dispatchInterNodeBytesPerUs, 46000);
    EXPECT_EQ(p.cluster.kernels->combineInterNodeBytesPerUs, 45000);
    const json written = projectToJson(p);
    EXPECT_EQ(written["cluster"]["kernels"]["dispatch_inter_node_bandwidth_bytes_per_us"], 46000.0);
    EXPECT_EQ(written["cluster"]["kernels"]["combine_inter_node_bandwidth_bytes_per_us"], 45000.0);
    EXPECT_EQ(serializeProject(parseProject(serializeProject(p))), serializeProject(p));
    // Absent: 0, the inter-node link's bandwidth, and not written.
    j["cluster"]["kernels"].erase("dispatch_inter_node_bandwidth_bytes_per_us");
    j["cluster"]["kernels"].erase("combine_inter_node_bandwidth_bytes_per_us");
    const Project link = parseProject(j.dump());
    EXPECT_EQ(link.cluster.kernels->dispatchInterNodeBytesPerUs, 0);
    EXPECT_FALSE(projectToJson(link)["cluster"]["kernels"].contains("dispatch_inter_node_bandwidth_bytes_per_us"));
    // Negative: refused by the reader and by the check of a project built in code, naming the field.
    j["cluster"]["kernels"]["combine_inter_node_bandwidth_bytes_per_us"] = -1;
    EXPECT_EQ(errorOf(j),
        "p.dpstudio.json: cluster.kernels.combine_inter_node_bandwidth_bytes_per_us: must be a non-negative number, "
        "got -1");
    Project built = p;
    built.cluster.kernels->dispatchInterNodeBytesPerUs = -2;
    try {
        validateProject(built);
        FAIL() << "no error";
    } catch (const FormatError& e) {
        EXPECT_STREQ(e.what(),
            "cluster.kernels.dispatch_inter_node_bandwidth_bytes_per_us: must be a non-negative number, got -2");
    }
}
