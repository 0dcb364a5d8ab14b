// Project files: the default project, round trips, defaults, and an error naming its field for every rule.
#include "base/errors.h"
#include "project/project.h"
#include "schedule/generator.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>

using namespace dps;
using json = nlohmann::json;

namespace {

json defaultJson()
{
    return json::parse(serializeProject(defaultProject()));
}

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

} // namespace

TEST(DefaultProject, HoldsTheDocumentedModelAndVariants)
{
    const Project p = defaultProject();
    EXPECT_EQ(p.model.layers, 16);
    EXPECT_EQ(p.model.hidden, 512);
    EXPECT_EQ(p.model.ffn, 2048);
    EXPECT_EQ(p.model.seqLen, 128);
    EXPECT_EQ(p.model.microbatchSize, 2);
    EXPECT_EQ(p.model.dtype, DType::FP32);
    EXPECT_EQ(p.seed, 233u);
    ASSERT_EQ(p.variants.size(), 2u);
    EXPECT_EQ(p.activeVariant, "dualpipe");
    EXPECT_EQ(&p.active(), &p.variants[0]);
    EXPECT_EQ(p.variants[0].kind, ScheduleKind::DualPipe);
    EXPECT_EQ(p.variants[0].ranks, 8);
    EXPECT_EQ(p.variants[1].name, "dualpipev");
    EXPECT_EQ(p.variants[1].kind, ScheduleKind::DualPipeV);
    EXPECT_EQ(p.variants[1].ranks, 4);
    for (const auto& v : p.variants) {
        EXPECT_EQ(v.microbatches, 20);
        EXPECT_EQ(stageCount(v), 8);
        EXPECT_EQ(effectivePartition(p, v), std::vector<int>(8, 2));
    }
    EXPECT_FALSE(p.name.empty());
}

TEST(DefaultProject, BuildsBothSchedules)
{
    const Project p = defaultProject();
    const Schedule dp = buildSchedule(p, p.variants[0]);
    EXPECT_EQ(dp.kind, ScheduleKind::DualPipe);
    EXPECT_EQ(dp.ranks, 8);
    EXPECT_EQ(dp.stages, 8);
    EXPECT_EQ(dp.microbatches, 20);
    const Schedule dv = buildSchedule(p, p.variants[1]);
    EXPECT_EQ(dv.kind, ScheduleKind::DualPipeV);
    EXPECT_EQ(dv.ranks, 4);
    EXPECT_EQ(dv.stages, 8);
}

TEST(ProjectFile, RoundTripsTheDefault)
{
    const std::string text = serializeProject(defaultProject());
    EXPECT_EQ(text.back(), '\n');
    EXPECT_EQ(serializeProject(parseProject(text)), text);
    EXPECT_TRUE(looksLikeProject(text));
    EXPECT_FALSE(looksLikeProject("0F0,0B0\n"));
    EXPECT_FALSE(looksLikeProject("{\"format_version\": 1}"));
}

TEST(ProjectFile, RoundTripsEveryOptionalField)
{
    Project p = defaultProject();
    p.name = "everything";
    p.seed = 18446744073709551615ull;
    p.model.dtype = DType::BF16;
    p.model.ffn = 1000;
    p.cluster.deviceFlops = 1e12;
    p.cluster.efficiency = 0.25;
    p.cluster.memoryPerDeviceBytes = 1.5e9;
    p.cluster.latencyUs = 0.5;
    p.cluster.bandwidthBytesPerUs = 123.25;
    p.variants[0].layerPartition = { 3, 1, 2, 2, 2, 2, 2, 2 };
    Variant hand;
    hand.name = "hand";
    hand.kind = ScheduleKind::OneFOneB;
    hand.ranks = 2;
    hand.microbatches = 2;
    hand.order = generate({ ScheduleKind::OneFOneB, 2, 2, 0 }).order;
    std::swap((*hand.order)[0][0], (*hand.order)[0][1]);
    hand.order->at(1).back() = Action::overlap({ 1, 1, OpKind::F }, { 1, 0, OpKind::B });
    p.variants.push_back(hand);
    p.activeVariant = "hand";
    p.costs.overlapFactor = 0.8;
    p.costs.optimizerBytesPerParameter = 12;
    p.costs.latencyUs = 3;
    p.costs.bandwidthBytesPerUs = 1e4;
    p.costs.stages.resize(3);
    p.costs.stages[0].forwardUs = 10;
    p.costs.stages[2].backwardUs = 7.5;
    p.costs.stages[2].overlapUs = 11;

    const std::string text = serializeProject(p);
    const Project back = parseProject(text);
    EXPECT_EQ(serializeProject(back), text);
    EXPECT_EQ(back.name, "everything");
    EXPECT_EQ(back.seed, p.seed);
    EXPECT_EQ(back.model.dtype, DType::BF16);
    EXPECT_EQ(back.cluster.bandwidthBytesPerUs, 123.25);
    EXPECT_EQ(back.variants[0].layerPartition, p.variants[0].layerPartition);
    ASSERT_TRUE(back.variants[2].order);
    EXPECT_EQ(*back.variants[2].order, *hand.order);
    EXPECT_EQ(back.activeVariant, "hand");
    ASSERT_EQ(back.costs.stages.size(), 3u);
    EXPECT_EQ(back.costs.stages[0].forwardUs, 10);
    EXPECT_FALSE(back.costs.stages[1].forwardUs);
    EXPECT_EQ(back.costs.stages[2].overlapUs, 11);
    EXPECT_EQ(back.costs.latencyUs, 3);
}

TEST(ProjectFile, DefaultsOnlyTheDocumentedFields)
{
    const json minimal = json::parse(R"({"format_version": 1,
        "model": {"layers": 4, "hidden": 8, "seq_len": 4, "microbatch_size": 1},
        "variants": [{"name": "a", "kind": "1f1b", "ranks": 2, "microbatches": 4}]})");
    const Project p = parseProject(minimal.dump());
    EXPECT_EQ(p.name, "");
    EXPECT_EQ(p.seed, 233u);
    EXPECT_EQ(p.model.ffn, 32);
    EXPECT_EQ(p.model.dtype, DType::FP32);
    EXPECT_EQ(p.cluster.deviceFlops, ClusterDesc {}.deviceFlops);
    EXPECT_EQ(p.activeVariant, "a");
    EXPECT_EQ(p.variants[0].stagesPerRank, 0);
    EXPECT_FALSE(p.variants[0].order);
    EXPECT_EQ(p.costs.overlapFactor, 1.0);
    EXPECT_EQ(p.costs.optimizerBytesPerParameter, 0.0);
    EXPECT_FALSE(p.costs.latencyUs);
    EXPECT_TRUE(p.costs.stages.empty());
}

struct ErrorCase {
    const char* name;
    std::function<void(json&)> edit;
    const char* expected;
};

void PrintTo(const ErrorCase& c, std::ostream* out)
{
    *out << c.name;
}

class ProjectErrors : public testing::TestWithParam<ErrorCase> { };

TEST_P(ProjectErrors, NameTheField)
{
    json j = defaultJson();
    GetParam().edit(j);
    const std::string message = errorOf(j);
    EXPECT_NE(message.find("p.dpstudio.json: "), std::string::npos) << message;
    EXPECT_NE(message.find(GetParam().expected), std::string::npos) << message;
}

const ErrorCase kErrorCases[] = {
    { "NegativeRanks", [](json& j) { j["variants"][1]["ranks"] = -3; },
        "variants[1].ranks: must be a positive integer, got -3" },
    { "FractionalMicrobatches", [](json& j) { j["variants"][0]["microbatches"] = 2.5; },
        "variants[0].microbatches: must be a positive integer, got 2.5" },
    { "ZeroStagesPerRank", [](json& j) { j["variants"][1]["stages_per_rank"] = 0; },
        "variants[1].stages_per_rank: must be a positive integer, got 0" },
    { "UnknownKind", [](json& j) { j["variants"][1]["kind"] = "zigzag"; },
        "variants[1].kind: unknown schedule kind \"zigzag\"" },
    { "MissingKind", [](json& j) { j["variants"][0].erase("kind"); }, "variants[0].kind: missing (required)" },
    { "EmptyName", [](json& j) { j["variants"][0]["name"] = ""; }, "variants[0].name: must not be empty" },
    { "DuplicateName", [](json& j) { j["variants"][1]["name"] = "dualpipe"; },
        "variants[1].name: \"dualpipe\" is also the name of variants[0]" },
    { "VariantNotObject", [](json& j) { j["variants"][1] = 3; }, "variants[1]: must be an object, got 3" },
    { "NoVariants", [](json& j) { j["variants"] = json::array(); }, "variants: must hold at least one variant" },
    { "VariantsNotList", [](json& j) { j["variants"] = "dualpipe"; }, "variants: must be a list, got \"dualpipe\"" },
    { "UnknownVariantField", [](json& j) { j["variants"][0]["stage_per_rank"] = 2; },
        "variants[0].stage_per_rank: unknown field" },
    { "PartitionTooShort",
        [](json& j) {
            j["variants"][0]["layer_partition"] = { 8, 8 };
        },
        "variants[0].layer_partition: has 2 entries, the variant has 8 stages" },
    { "PartitionWrongSum", [](json& j) { j["variants"][1]["layer_partition"][0] = 3; },
        "variants[1].layer_partition: covers 17 layers, the model has 16" },
    { "PartitionNegative", [](json& j) { j["variants"][0]["layer_partition"][3] = -1; },
        "variants[0].layer_partition[3]: must be a non-negative integer, got -1" },
    { "OrderBadCell", [](json& j) { j["variants"][1]["order"] = json::parse(R"([["0F0", "0X1"], [], [], []])"); },
        "variants[1].order[0][1]: " },
    { "OrderCellNotText", [](json& j) { j["variants"][1]["order"] = json::parse(R"([[5], [], [], []])"); },
        "variants[1].order[0][0]: must be an action string" },
    { "OrderWrongRows", [](json& j) { j["variants"][1]["order"] = { { "0F0" } }; },
        "variants[1].order: has 1 rows, the variant has 4 ranks" },
    { "OrderStageOutOfRange",
        [](json& j) { j["variants"][1]["order"] = json::parse(R"([[], ["0F0", "9F0"], [], []])"); },
        "variants[1].order[1][1]: stage 9 of 9F0 is outside the variant's 8 stages" },
    { "OrderMicrobatchOutOfRange",
        [](json& j) { j["variants"][1]["order"] = json::parse(R"([[], [], [], ["0F20"]])"); },
        "variants[1].order[3][0]: microbatch 20 of 0F20 is outside the variant's 20 microbatches" },
    { "CustomWithoutOrder", [](json& j) { j["variants"][0]["kind"] = "custom"; },
        "variants[0].order: missing (required when kind is \"custom\")" },
    { "MissingModel", [](json& j) { j.erase("model"); }, "model: missing (required)" },
    { "ModelNotObject", [](json& j) { j["model"] = json::array(); }, "model: must be an object, got []" },
    { "MissingHidden", [](json& j) { j["model"].erase("hidden"); }, "model.hidden: missing (required)" },
    { "LayersAsText", [](json& j) { j["model"]["layers"] = "16"; },
        "model.layers: must be a positive integer, got \"16\"" },
    { "UnknownDtype", [](json& j) { j["model"]["dtype"] = "fp16"; },
        "model.dtype: must be \"fp32\" or \"bf16\", got \"fp16\"" },
    { "UnknownModelField", [](json& j) { j["model"]["hiden"] = 2; }, "model.hiden: unknown field" },
    { "ZeroFlops", [](json& j) { j["cluster"]["device_flops"] = 0; },
        "cluster.device_flops: must be a positive number, got 0" },
    { "EfficiencyAboveOne", [](json& j) { j["cluster"]["efficiency"] = 1.5; },
        "cluster.efficiency: must be in (0, 1], got 1.5" },
    { "NegativeLatency", [](json& j) { j["cluster"]["latency_us"] = -1; },
        "cluster.latency_us: must be a non-negative number, got -1" },
    { "BandwidthAsText", [](json& j) { j["cluster"]["bandwidth_bytes_per_us"] = "fast"; },
        "cluster.bandwidth_bytes_per_us: must be a non-negative number, got \"fast\"" },
    { "UnknownActive", [](json& j) { j["active_variant"] = "nope"; },
        "active_variant: no variant named \"nope\" (variants: dualpipe, dualpipev)" },
    { "ZeroOverlapFactor", [](json& j) { j["costs"]["overlap_factor"] = 0; },
        "costs.overlap_factor: must be a positive number, got 0" },
    { "NegativeOptimizerBytes", [](json& j) { j["costs"]["optimizer_bytes_per_parameter"] = -8; },
        "costs.optimizer_bytes_per_parameter: must be a non-negative number, got -8" },
    { "StageListedTwice",
        [](json& j) { j["costs"]["stages"] = json::parse(R"([{"stage": 1, "f_us": 2}, {"stage": 1}])"); },
        "costs.stages[1].stage: stage 1 is listed twice" },
    { "NegativeStageTime", [](json& j) { j["costs"]["stages"] = json::parse(R"([{"stage": 0, "w_us": -2}])"); },
        "costs.stages[0].w_us: must be a non-negative number, got -2" },
    { "StageWithoutIndex", [](json& j) { j["costs"]["stages"] = json::parse(R"([{"f_us": 2}])"); },
        "costs.stages[0].stage: missing (required)" },
    { "UnknownStageField", [](json& j) { j["costs"]["stages"] = json::parse(R"([{"stage": 0, "x_us": 2}])"); },
        "costs.stages[0].x_us: unknown field" },
    { "NegativeSeed", [](json& j) { j["seed"] = -1; }, "seed: must be a non-negative integer, got -1" },
    { "UnknownTopField", [](json& j) { j["modle"] = json::object(); }, "modle: unknown field" },
    { "MissingVersion", [](json& j) { j.erase("format_version"); }, "format_version: missing (required)" },
    { "VersionAsText", [](json& j) { j["format_version"] = "1"; },
        "format_version: must be a positive integer, got \"1\"" },
    { "NotAnObject", [](json& j) { j = json::array({ 1 }); }, "must be a JSON object, got [1]" },
};

INSTANTIATE_TEST_SUITE_P(
    EveryRule, ProjectErrors, testing::ValuesIn(kErrorCases), [](const auto& param) { return param.param.name; });

TEST(ProjectFile, RefusesANewerVersionNamingBoth)
{
    json j = defaultJson();
    j["format_version"] = 7;
    j["a_field_from_the_future"] = true;
    EXPECT_EQ(errorOf(j, "future.dpstudio.json"),
        "future.dpstudio.json: format_version 7 is newer than this build reads (2)");
}

TEST(ProjectFile, ReportsMalformedJsonWithItsPlace)
{
    try {
        parseProject("{\n  \"format_version\": 1,\n  oops\n}", "bad.json");
        FAIL() << "no error";
    } catch (const FormatError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("bad.json: not valid JSON"), std::string::npos) << message;
        EXPECT_NE(message.find("line 3"), std::string::npos) << message;
    }
}

TEST(ProjectFile, ANumberOverflowIsMalformedJsonNotAnInternalError)
{
    std::string text = serializeProject(defaultProject());
    const std::string from = "\"efficiency\": 0.6";
    ASSERT_NE(text.find(from), std::string::npos);
    text.replace(text.find(from), from.size(), "\"efficiency\": 1e400");
    try {
        parseProject(text, "big.json");
        FAIL() << "no error";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("big.json: not valid JSON: number overflow"), std::string::npos)
            << e.what();
    }
}

TEST(ProjectFile, RefusesAHandEditedOrderWithAnAbsurdMicrobatchCount)
{
    json j = defaultJson();
    j["variants"][0]["kind"] = "custom";
    j["variants"][0]["ranks"] = 1;
    j["variants"][0]["microbatches"] = 500000000;
    j["variants"][0].erase("layer_partition");
    j["variants"][0]["order"] = json::array({ json::array({ "0F0", "0B0" }) });
    EXPECT_EQ(errorOf(j),
        "p.dpstudio.json: variants[0].microbatches: 500000000 microbatches × 1 stages is too large for a "
        "hand-edited order (at most 2^26 = 67108864 stage-microbatch pairs)");
}

TEST(ProjectFile, ActiveThrowsWhenItNamesNoVariant)
{
    Project p = defaultProject();
    p.activeVariant = "gone";
    EXPECT_THROW(p.active(), FormatError);
    EXPECT_EQ(p.find("gone"), nullptr);
    EXPECT_EQ(p.find("dualpipev"), &p.variants[1]);
}

TEST(Partition, EvenSplitGivesEarlierStagesTheRemainder)
{
    Project p = defaultProject();
    p.model.layers = 10;
    Variant v;
    v.kind = ScheduleKind::OneFOneB;
    v.ranks = 4;
    EXPECT_EQ(effectivePartition(p, v), (std::vector<int> { 3, 3, 2, 2 }));
    v.layerPartition = { 1, 2, 3 };
    EXPECT_THROW(effectivePartition(p, v), FormatError);
    v.layerPartition = { 1, 2, 3, 5 };
    EXPECT_THROW(effectivePartition(p, v), FormatError);
}

TEST(BuildSchedule, UsesTheHandEditedOrderWithTheKindsPlacement)
{
    Project p = defaultProject();
    Variant& v = p.variants[0];
    Schedule generated = buildSchedule(p, v);
    std::reverse(generated.order[3].begin(), generated.order[3].end());
    v.order = generated.order;
    const Schedule edited = buildSchedule(p, v);
    EXPECT_EQ(edited.order, generated.order);
    EXPECT_TRUE(edited.placement.isMirrored());
    v.order->pop_back();
    EXPECT_THROW(buildSchedule(p, v), FormatError);
}

TEST(BuildSchedule, RefusesSizesTheGeneratorRejects)
{
    Project p = defaultProject();
    p.variants[0].ranks = 3;
    p.variants[0].layerPartition.clear();
    EXPECT_THROW(buildSchedule(p, p.variants[0]), ConstraintError);
}

TEST(BuildSchedule, SizeRuleErrorsNameTheVariantsField)
{
    auto message = [](const Project& p, const Variant& v) {
        try {
            buildSchedule(p, v);
        } catch (const ConstraintError& e) {
            return e.rule() + " | " + e.what();
        }
        return std::string();
    };
    Project p = defaultProject();
    p.variants[1].stagesPerRank = 3;
    EXPECT_EQ(message(p, p.variants[1]),
        "dualpipev.stages-per-rank | variants[1].stages_per_rank: DualPipeV needs exactly 2 stages per rank (got 3 "
        "stages per rank)");
    p = defaultProject();
    p.variants[0].microbatches = 6;
    EXPECT_EQ(message(p, p.variants[0]),
        "dualpipe.microbatches-2x-ranks | variants[0].microbatches: DualPipe needs microbatches >= 2 × ranks (got 6 "
        "microbatches for 8 ranks)");
    p = defaultProject();
    p.variants[0].ranks = 7;
    p.variants[0].layerPartition.clear();
    EXPECT_EQ(message(p, p.variants[0]).substr(0, 48), "dualpipe.even-ranks | variants[0].ranks: DualPip");
    Variant outside = p.variants[0];
    outside.name = "other";
    EXPECT_EQ(message(p, outside).substr(0, 54), "dualpipe.even-ranks | variant \"other\", ranks: DualPipe");
}

TEST(BuildSchedule, CustomOrderInfersItsPlacement)
{
    Project p = defaultProject();
    p.model.layers = 2;
    Variant v;
    v.name = "mine";
    v.kind = ScheduleKind::Custom;
    v.ranks = 2;
    v.microbatches = 1;
    v.order = std::vector<std::vector<Action>> { { parseAction("0F0"), parseAction("0B0") },
        { parseAction("1F0"), parseAction("1B0") } };
    p.variants = { v };
    p.activeVariant = "mine";
    const Project back = parseProject(serializeProject(p));
    EXPECT_EQ(stageCount(back.variants[0]), 2);
    const Schedule s = buildSchedule(back, back.variants[0]);
    EXPECT_EQ(s.kind, ScheduleKind::Custom);
    EXPECT_EQ(s.stages, 2);
    ASSERT_TRUE(s.placement.isPerStage());
    EXPECT_EQ(s.placement.rankOf(1, 0), 1);
}

TEST(CostsFile, ParsesAppliesAndRoundTrips)
{
    const std::string text = R"({"format_version": 1, "overlap_factor": 0.9, "latency_us": 4,
        "bandwidth_bytes_per_us": 2000, "stages": [{"stage": 1, "f_us": 5, "i_us": 6, "w_us": 7, "b_us": 12}],
        "info": {"measured": "m.json"}})";
    const CostsFile costs = parseCostsFile(text, "costs.json");
    ASSERT_EQ(costs.stages.size(), 2u);
    EXPECT_EQ(costs.stages[1].backwardUs, 12);
    EXPECT_EQ(parseCostsFile(serializeCostsFile(costs)).stages[1].weightGradUs, 7);

    CostSettings settings;
    settings.stages.resize(1);
    settings.stages[0].forwardUs = 1;
    applyCostsFile(settings, costs);
    EXPECT_EQ(settings.stages[0].forwardUs, 1);
    EXPECT_EQ(settings.stages[1].forwardUs, 5);
    EXPECT_EQ(settings.overlapFactor, 0.9);
    EXPECT_EQ(settings.latencyUs, 4);
    EXPECT_EQ(settings.bandwidthBytesPerUs, 2000);
}

TEST(CostsFile, ErrorsNameTheFileAndField)
{
    auto message = [](const std::string& text) -> std::string {
        try {
            parseCostsFile(text, "costs.json");
        } catch (const FormatError& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_EQ(message(R"({"format_version": 2})"), "costs.json: format_version 2 is newer than this build reads (1)");
    EXPECT_EQ(message(R"({"format_version": 1, "stages": [{"stage": 0, "f_us": "x"}]})"),
        "costs.json: stages[0].f_us: must be a non-negative number, got \"x\"");
    EXPECT_EQ(message(R"({"format_version": 1, "overlap": 1})"), "costs.json: overlap: unknown field");
    EXPECT_EQ(message(R"({"format_version": 1, "slot_variation": [0.1]})"),
        "costs.json: slot_variation: needs 2 to 1001 quantiles (p0 … p100), got 1");
    EXPECT_EQ(message(R"({"format_version": 1, "slot_variation": [-0.1, 0.2, 0.1]})"),
        "costs.json: slot_variation[2]: must be at least slot_variation[1] (0.2): quantiles rise, got 0.1");
    EXPECT_EQ(message(R"({"format_version": 1, "slot_variation": [-1, 0.2]})"),
        "costs.json: slot_variation[0]: must be a number above -1 (measured ÷ fitted − 1), got -1");
    EXPECT_EQ(message(R"({"format_version": 1, "slot_variation": [0, "x"]})"),
        "costs.json: slot_variation[1]: must be a number above -1 (measured ÷ fitted − 1), got \"x\"");
}

TEST(CostsFile, SlotVariationGoesFromTheFileThroughTheProjectToTheCostModel)
{
    const CostsFile costs
        = parseCostsFile(R"({"format_version": 1, "slot_variation": [-0.12, 0, 0.05, 0.31]})", "costs.json");
    ASSERT_EQ(costs.slotVariation, (std::vector<double> { -0.12, 0, 0.05, 0.31 }));
    EXPECT_EQ(parseCostsFile(serializeCostsFile(costs)).slotVariation, costs.slotVariation);
    Project project = defaultProject();
    applyCostsFile(project.costs, costs);
    EXPECT_EQ(project.costs.slotVariation, costs.slotVariation);
    EXPECT_NE(serializeProject(project).find("\"format_version\": 2"), std::string::npos); // a field format 1 lacks
    const Project back = parseProject(serializeProject(project));
    EXPECT_EQ(back.costs.slotVariation, costs.slotVariation);
    EXPECT_EQ(buildCostModel(back, back.active()).slotVariation, costs.slotVariation);
    // A cost file without it keeps the project's.
    applyCostsFile(project.costs, parseCostsFile(R"({"format_version": 1, "latency_us": 2})", "costs.json"));
    EXPECT_EQ(project.costs.slotVariation, costs.slotVariation);
}
