// Sizes that overflow are bad input: every product of sizes behind costs, memory and messages is checked where
// it is formed (base/checked.h, project/modelcost.h) and refused naming its fields, at its bound exactly.
#include "base/checked.h"
#include "base/errors.h"
#include "project/modelcost.h"
#include "project/project.h"
#include "support/variants.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

using namespace dps;
using json = nlohmann::json;

namespace {

constexpr std::int64_t k2p53 = std::int64_t(1) << 53;

json defaultJson()
{
    return json::parse(serializeProject(defaultProject()));
}

/// The FormatError message of parsing `j`, or "" when it parses.
std::string parseError(const json& j)
{
    try {
        parseProject(j.dump(), "p.dpstudio.json");
    } catch (const FormatError& e) {
        return e.what();
    }
    return "";
}

/// The FormatError message of `f()`, or "" when it throws none.
template <typename F> std::string errorOf(F&& f)
{
    try {
        f();
    } catch (const FormatError& e) {
        return e.what();
    }
    return "";
}

ModelDesc blockModel(int hidden, int ffn, int seqLen, int microbatchSize)
{
    ModelDesc m;
    m.layers = 1;
    m.hidden = hidden;
    m.ffn = ffn;
    m.seqLen = seqLen;
    m.microbatchSize = microbatchSize;
    return m;
}

/// One variant of one stage (1F1B on one rank) holding every layer of `m`.
Project oneStage(const ModelDesc& m)
{
    Project p;
    p.model = m;
    return test::withOnlyVariant(p, ScheduleKind::OneFOneB, 1, 1, "v");
}

} // namespace

// ---------------------------------------------------------------------------------------- the helper

TEST(CheckedProduct, MultipliesUpToTheBoundInclusive)
{
    EXPECT_EQ(checkedProduct({ { "a", 1 << 26 }, { "b", 1 << 27 } }, "things", kExactCount), std::int64_t(1) << 53);
    EXPECT_EQ(checkedProduct({ { "a", 46341 }, { "b", 46340 } }, "things", kIntRange), 2147441940);
    EXPECT_EQ(checkedProduct({ { "a", 0 }, { "b", std::numeric_limits<std::int64_t>::max() } }, "x", kIntRange), 0);
}

TEST(CheckedProduct, NamesEveryFactorWhenAboveTheBound)
{
    EXPECT_EQ(errorOf([] {
        checkedProduct({ { "a", 1 << 26 }, { "b", (1 << 27) + 1 } }, "things", kExactCount);
    }),
        "a: 67108864 × b 134217729 things exceed 2^53 (the largest exact count)");
    EXPECT_EQ(errorOf([] {
        checkedProduct({ { "a", 46341 }, { "", 46341, "a note" } }, "things", kIntRange);
    }),
        "a: 46341 × 46341 (a note) things exceed 2^31 − 1 (the largest int)");
    // A product beyond std::int64_t is detected, not wrapped.
    EXPECT_EQ(errorOf([] {
        checkedProduct({ { "x", std::int64_t(1) << 40 }, { "y", std::int64_t(1) << 40 } }, "things", kExactCount);
    }),
        "x: 1099511627776 × y 1099511627776 things exceed 2^53 (the largest exact count)");
    EXPECT_EQ(errorOf([] {
        checkedProduct({ { "x", 2 }, { "y", -3 } }, "things", kExactCount);
    }),
        "y: must not be negative, got -3");
}

TEST(CheckedArithmetic, DetectsOverflowOfInt64)
{
    const std::int64_t max = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(checkedMultiply(std::int64_t(1) << 31, std::int64_t(1) << 31), std::int64_t(1) << 62);
    EXPECT_FALSE(checkedMultiply(std::int64_t(1) << 32, std::int64_t(1) << 31).has_value());
    EXPECT_EQ(checkedAdd(max - 1, 1), max);
    EXPECT_FALSE(checkedAdd(max, 1).has_value());
}

// ---------------------------------------------- an oversized project: hidden 1e9, seq_len 1e8, microbatch_size 1000

TEST(Sizes, AnOversizedProjectIsRefusedNamingItsFields)
{
    json j = defaultJson();
    j["model"]["hidden"] = 1000000000;
    j["model"]["seq_len"] = 100000000;
    j["model"]["microbatch_size"] = 1000;
    EXPECT_EQ(parseError(j),
        "p.dpstudio.json: model.hidden: 1000000000 × model.seq_len 100000000 × model.microbatch_size 1000 × 4 (bytes "
        "per fp32 element) activation bytes (one T×h tensor: a layer's input, the message between stages) exceed "
        "2^53 (the largest exact count)");

    // A project built in code (dpstudio init, the designer) is refused the same way, without a file name.
    Project p = defaultProject();
    p.model.hidden = 1000000000;
    p.model.seqLen = 100000000;
    p.model.microbatchSize = 1000;
    const std::string message = "model.hidden: 1000000000 × model.seq_len 100000000 × model.microbatch_size 1000 × "
                                "4 (bytes per fp32 element) activation bytes (one T×h tensor: a layer's input, the "
                                "message between stages) exceed 2^53 (the largest exact count)";
    EXPECT_EQ(errorOf([&] { validateProject(p); }), message);
    EXPECT_EQ(errorOf([&] { buildCostModel(p, p.variants[0]); }), message);
}

TEST(Sizes, TheDefaultProjectIsUnchanged)
{
    const Project p = defaultProject();
    EXPECT_NO_THROW(validateProject(p));
    for (const auto& v : p.variants) {
        const CostModel m = buildCostModel(p, v);
        ASSERT_EQ(m.stages.size(), 8u);
        // T = 256 tokens, h = 512, f = 2048, 2 layers per stage, fp32, 1e11 × 0.6 FLOP/s.
        const double layerUs = 4.0 * 256 * 512 * 2048 / (1e11 * 0.6) * 1e6;
        for (std::size_t s = 0; s < 8; ++s) {
            const StageCost& c = m.stages[s];
            EXPECT_EQ(c.forwardUs, 2 * layerUs);
            EXPECT_EQ(c.inputGradUs, 2 * layerUs);
            EXPECT_EQ(c.weightGradUs, 2 * layerUs);
            EXPECT_EQ(c.activationBytes, s == 7 ? 5767168.0 : 5242880.0); // 2·256·2560·4 (+ 256·512·4)
            EXPECT_EQ(c.weightGradKeptBytes, 10485760.0);
            EXPECT_EQ(c.parameterCount, 4194304.0);
            EXPECT_EQ(c.parameterBytes, 16777216.0);
            EXPECT_EQ(c.gradientBytes, 16777216.0);
            EXPECT_EQ(c.messageBytes, 524288.0);
        }
        EXPECT_EQ(2 * layerUs, 35791.394133333335); // the value before the checks existed
    }
}

// ------------------------------------------------------------------ each guarded product: below / above

TEST(Sizes, ActivationBytesAtTwoToThe53)
{
    // h × T × 4 = 2^21 × 2^30 × 4 = 2^53 on a stage of no layers (nothing else grows).
    const StageCost c = blockStageCost(blockModel(1 << 21, 1, 1 << 15, 1 << 15), ClusterDesc {}, 0, true, 4);
    EXPECT_EQ(c.messageBytes, 9007199254740992.0);
    EXPECT_EQ(c.activationBytes, 9007199254740992.0);
    EXPECT_EQ(
        errorOf([] { blockStageCost(blockModel(1 << 21, 1, 1 << 15, (1 << 15) + 1), ClusterDesc {}, 0, true, 4); }),
        "model.hidden: 2097152 × model.seq_len 32768 × model.microbatch_size 32769 × 4 (bytes per fp32 element) "
        "activation bytes (one T×h tensor: a layer's input, the message between stages) exceed 2^53 (the largest "
        "exact count)");
}

TEST(Sizes, TokensAtTheLargestInt)
{
    const StageCost c = blockStageCost(blockModel(1, 1, 2147483647, 1), ClusterDesc {}, 0, false, 4);
    EXPECT_EQ(c.messageBytes, 4.0 * 2147483647);
    EXPECT_EQ(errorOf([] { blockStageCost(blockModel(1, 1, 1 << 30, 2), ClusterDesc {}, 0, false, 4); }),
        "model.seq_len: 1073741824 × model.microbatch_size 2 tokens per microbatch exceed 2^31 − 1 (the largest "
        "int)");
}

TEST(Sizes, BytesKeptFromIUntilWAtTwoToThe53)
{
    // 1 layer × 2 × T 2^20 × (h + f) 2^30 × 4 = 2^53.
    const StageCost c = blockStageCost(blockModel(1, (1 << 30) - 1, 1 << 10, 1 << 10), ClusterDesc {}, 1, true, 4);
    EXPECT_EQ(c.weightGradKeptBytes, 9007199254740992.0);
    EXPECT_EQ(c.activationBytes, 4503599627370496.0 + 4194304.0); // half, plus the loss gradient T×h×4
    EXPECT_EQ(errorOf([] { blockStageCost(blockModel(1, 1 << 30, 1 << 10, 1 << 10), ClusterDesc {}, 1, true, 4); }),
        "layers: 1 × 2 (X and dY, A and dH) × model.seq_len 1024 × model.microbatch_size 1024 × model.hidden + "
        "model.ffn 1073741825 × 4 (bytes per fp32 element) bytes kept from I until W exceed 2^53 (the largest exact "
        "count)");
}

TEST(Sizes, ParameterAndGradientBytesAtTwoToThe53)
{
    // 1 layer × 2 × h 2^24 × f 2^25 × 8 (fp32 parameter and gradient) = 2^53.
    const StageCost c = blockStageCost(blockModel(1 << 24, 1 << 25, 1, 1), ClusterDesc {}, 1, false, 4);
    EXPECT_EQ(c.parameterCount, 1125899906842624.0); // 2^50
    EXPECT_EQ(c.parameterBytes, 4503599627370496.0); // 2^52
    EXPECT_EQ(c.parameterBytes + c.gradientBytes, 9007199254740992.0);
    EXPECT_EQ(errorOf([] { blockStageCost(blockModel(1 << 24, (1 << 25) + 1, 1, 1), ClusterDesc {}, 1, false, 4); }),
        "layers: 1 × 2 (matrices W1 and W2) × model.hidden 16777216 × model.ffn 33554433 × 8 (bytes per fp32 "
        "parameter and its gradient) parameter and gradient bytes exceed 2^53 (the largest exact count)");
}

TEST(Sizes, OpTimeAtTwoToThe53Microseconds)
{
    ClusterDesc slow;
    slow.deviceFlops = 1e6;
    slow.efficiency = 1.0;
    // 4 × T 3125 × h 1424 × f 506022430 = 9007199254 × 10^6 FLOPs at 10^6 FLOP/s: 9007199254000000 µs ≤ 2^53.
    const StageCost c = blockStageCost(blockModel(1424, 506022430, 3125, 1), slow, 1, false, 4);
    EXPECT_EQ(c.forwardUs, 9007199254000000.0);
    EXPECT_EQ(c.backward(), 2 * 9007199254000000.0);
    // 4 × 1250 × 1000 × 1801439851 = 9007199255 × 10^6 FLOPs: just above.
    EXPECT_EQ(errorOf([&] { blockStageCost(blockModel(1000, 1801439851, 1250, 1), slow, 1, false, 4); }),
        "cluster.device_flops: 1e+06 FLOP/s × cluster.efficiency 1 is too slow: F, I and W of layers (1 layer) take "
        "9.007199255e+15 FLOPs each, 9.007199255e+15 µs, more than 2^53 µs (≈ 285 years)");
}

TEST(Sizes, MessageWireTimeAtTwoToThe53Microseconds)
{
    Project p = oneStage(blockModel(1 << 25, 1, 1 << 25, 1));
    p.cluster.bandwidthBytesPerUs = 0.5;
    // T × h × 4 = 2^52 bytes at 0.5 bytes/µs: 2^53 µs.
    const StageCost below = blockStageCost(p.model, p.cluster, 0, true, 4);
    EXPECT_EQ(below.messageBytes / p.cluster.bandwidthBytesPerUs, 9007199254740992.0);
    EXPECT_NO_THROW(checkStageSettings(below, p, "s"));
    // T = 2^25 + 1: 2^53 + 2^28 µs.
    p.model.seqLen = (1 << 25) + 1;
    const StageCost above = blockStageCost(p.model, p.cluster, 0, true, 4);
    EXPECT_EQ(errorOf([&] { checkStageSettings(above, p, "s"); }),
        "cluster.bandwidth_bytes_per_us: 0.5 bytes/µs is too slow: a message of 4503599761588224 bytes takes "
        "9007199523176448 µs, more than 2^53 µs (≈ 285 years)");
    // The costs' bandwidth, when set, is the one named; 0 is unlimited.
    p.costs.bandwidthBytesPerUs = 0.25;
    EXPECT_EQ(errorOf([&] { checkStageSettings(below, p, "s"); }),
        "costs.bandwidth_bytes_per_us: 0.25 bytes/µs is too slow: a message of 4503599627370496 bytes takes "
        "18014398509481984 µs, more than 2^53 µs (≈ 285 years)");
    p.costs.bandwidthBytesPerUs = 0.0;
    EXPECT_NO_THROW(checkStageSettings(above, p, "s"));
}

TEST(Sizes, OptimizerStateAtTwoToThe53)
{
    // 2^40 parameters (2 × 2^20 × 2^19), 2^43 bytes of fp32 parameters and gradients.
    Project p = oneStage(blockModel(1 << 20, 1 << 19, 1, 1));
    const StageCost c = blockStageCost(p.model, p.cluster, 1, true, 4);
    EXPECT_EQ(c.parameterCount, 1099511627776.0);
    p.costs.optimizerBytesPerParameter = 8184; // 2^43 + 2^40 × 8184 = 2^53
    EXPECT_NO_THROW(checkStageSettings(c, p, "s"));
    p.costs.optimizerBytesPerParameter = 8184.5;
    EXPECT_EQ(errorOf([&] { checkStageSettings(c, p, "variants[0].layer_partition[0]"); }),
        "costs.optimizer_bytes_per_parameter: 8184.5 × 1099511627776 parameters of variants[0].layer_partition[0], "
        "with their 8796093022208 bytes of parameters and gradients, exceed 2^53 bytes (the largest exact count)");
}

TEST(Sizes, StageCountAtTheLargestInt)
{
    json j = defaultJson();
    j["variants"][1].erase("layer_partition");
    j["variants"][1]["ranks"] = (1 << 30) - 1; // dualpipev: 2 stages per rank
    EXPECT_EQ(parseError(j), "");
    EXPECT_EQ(stageCount(parseProject(j.dump(), "p").variants[1]), 2147483646);
    j["variants"][1]["ranks"] = 1 << 30;
    EXPECT_EQ(parseError(j),
        "p.dpstudio.json: variants[1].ranks: 1073741824 × variants[1].stages_per_rank 2 stages exceed 2^31 − 1 (the "
        "largest int)");
    j["variants"][1].erase("stages_per_rank");
    EXPECT_EQ(parseError(j),
        "p.dpstudio.json: variants[1].ranks: 1073741824 × 2 (stages per rank of dualpipev) stages exceed 2^31 − 1 "
        "(the largest int)");

    // Built in code, the variant is named by its name.
    Variant v;
    v.name = "wide";
    v.kind = ScheduleKind::Interleaved1F1B;
    v.ranks = 1 << 20;
    v.stagesPerRank = 2047;
    EXPECT_EQ(stageCount(v), 2146435072);
    v.stagesPerRank = 2048;
    EXPECT_EQ(errorOf([&] { stageCount(v); }),
        "variant \"wide\", ranks: 1048576 × variant \"wide\", stages_per_rank 2048 stages exceed 2^31 − 1 (the "
        "largest int)");
}

TEST(Sizes, DefaultFfnAtTheLargestInt)
{
    EXPECT_EQ(defaultFfn(536870911), 2147483644);
    EXPECT_EQ(errorOf([] { defaultFfn(536870912); }),
        "model.hidden: 536870912 × 4 (model.ffn defaults to 4 × model.hidden) FFN units exceed 2^31 − 1 (the "
        "largest int)");
    json j = defaultJson();
    j["model"].erase("ffn");
    j["model"]["hidden"] = 536870912;
    EXPECT_EQ(parseError(j),
        "p.dpstudio.json: model.hidden: 536870912 × 4 (model.ffn defaults to 4 × model.hidden) FFN units exceed "
        "2^31 − 1 (the largest int)");
}

TEST(Sizes, MemoryPerDeviceAtTwoToThe53)
{
    json j = defaultJson();
    j["cluster"]["memory_per_device_bytes"] = 9007199254740992.0;
    EXPECT_EQ(parseError(j), "");
    j["cluster"]["memory_per_device_bytes"] = 9007199254740994.0; // the next double
    EXPECT_EQ(parseError(j),
        "p.dpstudio.json: cluster.memory_per_device_bytes: must be at most 2^53 bytes (the largest exact count), "
        "got 9007199254740994");
}

TEST(Sizes, TypedTimesAndOverlapFactorAtTwoToThe53)
{
    const std::pair<const char*, const char*> fields[] = { { "/costs/stages/0/f_us", "costs.stages: stage 3's f_us" },
        { "/costs/stages/0/b_us", "costs.stages: stage 3's b_us" },
        { "/costs/stages/0/fb_us", "costs.stages: stage 3's fb_us" }, { "/costs/latency_us", "costs.latency_us" },
        { "/cluster/latency_us", "cluster.latency_us" } };
    for (const auto& [pointer, field] : fields) {
        json j = defaultJson();
        j["costs"]["stages"] = json::array({ { { "stage", 3 } } });
        j[json::json_pointer(pointer)] = 9007199254740992.0;
        EXPECT_EQ(parseError(j), "") << pointer;
        j[json::json_pointer(pointer)] = 9007199254740994.0;
        EXPECT_EQ(parseError(j),
            std::string("p.dpstudio.json: ") + field + ": must be at most 2^53 µs (≈ 285 years), got 9007199254740994")
            << pointer;
    }
    json j = defaultJson();
    j["costs"]["overlap_factor"] = 9007199254740992.0;
    EXPECT_EQ(parseError(j), "");
    j["costs"]["overlap_factor"] = 9007199254740994.0;
    EXPECT_EQ(parseError(j), "p.dpstudio.json: costs.overlap_factor: must be at most 2^53, got 9007199254740994");

    // A cost file: the same rule, named from the file's root.
    EXPECT_EQ(
        errorOf([] { parseCostsFile(R"({"format_version": 1, "stages": [{"stage": 1, "i_us": 1e300}]})", "c.json"); }),
        "c.json: stages: stage 1's i_us: must be at most 2^53 µs (≈ 285 years), got 1e+300");

    // Typed in the designer (no file): infinity and NaN are refused when the costs are built.
    Project p = defaultProject();
    p.costs.stages.resize(1);
    p.costs.stages[0].weightGradUs = std::numeric_limits<double>::infinity();
    EXPECT_EQ(errorOf([&] { buildCostModel(p, p.variants[0]); }),
        "costs.stages: stage 0's w_us: must be at most 2^53 µs (≈ 285 years), got inf");
    p.costs.stages[0].weightGradUs = std::nan("");
    EXPECT_EQ(errorOf([&] { buildCostModel(p, p.variants[0]); }),
        "costs.stages: stage 0's w_us: must be at most 2^53 µs (≈ 285 years), got nan");
}

// ------------------------------------------------------------------------- where the checks run

TEST(Sizes, ParsingChecksEveryStageOfATypedPartition)
{
    // Stage 5 of 8 holds 9 of 16 layers; 9 × 2 × T × (h + f) × 4 with T = 2^20, h + f = 2^27 + 2^20: only it is
    // above 2^53.
    json j = defaultJson();
    j["model"]["hidden"] = 1 << 20;
    j["model"]["ffn"] = 1 << 27;
    j["model"]["seq_len"] = 1 << 10;
    j["model"]["microbatch_size"] = 1 << 10;
    j["cluster"]["device_flops"] = 1e18;
    j["variants"][0]["layer_partition"] = { 1, 1, 1, 1, 1, 9, 1, 1 };
    EXPECT_EQ(parseError(j),
        "p.dpstudio.json: variants[0].layer_partition[5]: 9 × 2 (X and dY, A and dH) × model.seq_len 1024 × "
        "model.microbatch_size 1024 × model.hidden + model.ffn 135266304 × 4 (bytes per fp32 element) bytes kept "
        "from I until W exceed 2^53 (the largest exact count)");
    // An even split names the stage with the most layers (stage 0 of 8 holds 2 of 16).
    j["variants"][0].erase("layer_partition");
    j["model"]["ffn"] = 1 << 29;
    EXPECT_EQ(parseError(j),
        "p.dpstudio.json: variants[0] stage 0 (even split of model.layers): 2 × 2 (X and dY, A and dH) × "
        "model.seq_len 1024 × model.microbatch_size 1024 × model.hidden + model.ffn 537919488 × 4 (bytes per fp32 "
        "element) bytes kept from I until W exceed 2^53 (the largest exact count)");
}

TEST(Sizes, ACpuRunOfABf16ProjectIsCheckedAtFourBytes)
{
    // bf16: 1 × 2 × 2^20 tokens × (h + f) 2^31 × 2 = 2^53 is fine; the CPU computes in fp32: twice that.
    Project p = oneStage(blockModel(1, 2147483647, 1 << 10, 1 << 10));
    p.model.dtype = DType::BF16;
    EXPECT_NO_THROW(validateProject(p));
    EXPECT_EQ(buildCostModel(p, p.variants[0]).stages[0].weightGradKeptBytes, 9007199254740992.0);
    EXPECT_EQ(errorOf([&] { buildCostModel(p, p.variants[0], 4); }),
        "variants[0] stage 0 (even split of model.layers): 1 × 2 (X and dY, A and dH) × model.seq_len 1024 × "
        "model.microbatch_size "
        "1024 × model.hidden + model.ffn 2147483648 × 4 (bytes per fp32 element) bytes kept from I until W exceed "
        "2^53 (the largest exact count)");
}
