// Framework configs: torchtitan's split arithmetic and config (schedule name by placement, the CSV beside
// it), Megatron-Core's arguments and refusals, and Megatron layout strings both ways.
#include "base/errors.h"
#include "project/frameworkexport.h"
#include "schedule/csvio.h"

#include <gtest/gtest.h>

using namespace dps;

namespace {

Variant variantOf(ScheduleKind kind, int ranks, int microbatches, int stagesPerRank = 0)
{
    Variant v;
    v.name = std::string(kindName(kind));
    v.kind = kind;
    v.ranks = ranks;
    v.microbatches = microbatches;
    v.stagesPerRank = stagesPerRank;
    return v;
}

bool has(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

// torchtitan's _generate_llm_fqn_per_model_part by hand: 16 layers + 1 + 1 = 18 weighted over 8 stages is
// 2 each with 2 left over for stages 0 and 1: 3-1, 3, 2, 2, 2, 2, 2, 2-1.
TEST(Torchtitan, PartitionFollowsItsWeights)
{
    EXPECT_EQ(torchtitanPartition(16, 8, 1, 1), (std::vector<int> { 2, 3, 2, 2, 2, 2, 2, 1 }));
    EXPECT_EQ(torchtitanPartition(16, 8, 0, 0), (std::vector<int>(8, 2)));
    EXPECT_EQ(torchtitanPartition(16, 8, 1, 0), (std::vector<int>(8, 2)));
    EXPECT_EQ(torchtitanPartition(5, 1, 1, 1), (std::vector<int> { 5 }));
    EXPECT_THROW(torchtitanPartition(4, 8, 1, 1), ConstraintError); // 8 stages, 6 weighted layers
    EXPECT_THROW(torchtitanPartition(8, 4, 4, 1), ConstraintError); // weight 4 above the share of 3 (13 / 4)
    EXPECT_EQ(torchtitanStageCount(16, TorchtitanSplit { 3, 1, 1 }, 4), 6); // ceil(18 / 3)
    EXPECT_EQ(torchtitanStageCount(16, TorchtitanSplit {}, 4), 4);
}

TEST(Torchtitan, DualPipeVIsPlacedAsAVWithItsCsvBeside)
{
    Project p = defaultProject(); // 16 layers
    const Variant v = variantOf(ScheduleKind::DualPipeV, 4, 10);
    const FrameworkConfig c = torchtitanConfig(p, v, "job.csv");
    ASSERT_TRUE(c.supported) << c.refusal;
    EXPECT_TRUE(has(c.text, "[parallelism]\npipeline_parallel_degree = 4\n")) << c.text;
    EXPECT_TRUE(has(c.text, "pipeline_parallel_schedule = \"DualPipeV\"\n")) << c.text;
    EXPECT_TRUE(has(c.text, "pipeline_parallel_schedule_csv = \"job.csv\"\n")) << c.text;
    EXPECT_TRUE(has(c.text, "num_pp_microbatches = 10\n")) << c.text;
    // 8 stages of 2 layers: torchtitan's default 8 stages (2 per rank) with the embedding weighing 1 and
    // the output 0 (18 − 1 = 17 weighted layers: 3 − 1, then 2 each).
    EXPECT_TRUE(
        has(c.text, "pipeline_parallel_first_stage_less_layers = 1\npipeline_parallel_last_stage_less_layers = 0\n"))
        << c.text;
    EXPECT_FALSE(has(c.text, "pipeline_parallel_layers_per_stage")) << c.text;
    // The CSV, read back, is the schedule itself.
    const Schedule s = buildSchedule(p, v);
    const CsvImport back = readCsv(c.csv);
    EXPECT_EQ(back.schedule.order, s.order);
    EXPECT_EQ(back.schedule.placement.rankOfStage(), s.placement.rankOfStage());
    EXPECT_EQ(writeCsv(back.schedule), c.csv);
}

TEST(Torchtitan, NamesByPlacementAndRefusesDualPipe)
{
    Project p = defaultProject();
    EXPECT_TRUE(has(torchtitanConfig(p, variantOf(ScheduleKind::ZBV, 4, 8), "a.csv").text, "\"ZBVZeroBubble\""));
    EXPECT_TRUE(has(
        torchtitanConfig(p, variantOf(ScheduleKind::Interleaved1F1B, 4, 8, 2), "a.csv").text, "\"Interleaved1F1B\""));
    const FrameworkConfig zbh1 = torchtitanConfig(p, variantOf(ScheduleKind::ZBH1, 4, 8), "a.csv");
    EXPECT_TRUE(has(zbh1.text, "\"1F1B\"")) << zbh1.text;
    // 4 stages of 4 layers: 16 + 1 + 0 = 17 weighted layers give 5 − 1, 4, 4, 4, and 5 per stage gives
    // ceil(17 / 5) = 4 stages.
    EXPECT_TRUE(has(zbh1.text,
        "pipeline_parallel_layers_per_stage = 5\npipeline_parallel_first_stage_less_layers = 1\n"
        "pipeline_parallel_last_stage_less_layers = 0\n"))
        << zbh1.text;
    const FrameworkConfig dualpipe = torchtitanConfig(p, variantOf(ScheduleKind::DualPipe, 4, 8), "a.csv");
    EXPECT_FALSE(dualpipe.supported);
    EXPECT_TRUE(has(dualpipe.refusal, "runs a stage on two ranks")) << dualpipe.refusal;
}

TEST(Torchtitan, UnevenPartitionListsModulesWhenNoSettingGivesIt)
{
    Project p = defaultProject();
    Variant v = variantOf(ScheduleKind::OneFOneB, 4, 8);
    // torchtitan gives earlier middle stages the remainder: a later middle stage never holds more.
    v.layerPartition = { 4, 3, 5, 4 };
    const FrameworkConfig c = torchtitanConfig(p, v, "a.csv");
    ASSERT_TRUE(c.supported);
    EXPECT_TRUE(has(c.text,
        "module_fqns_per_model_part = [[\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\", "
        "\"layers.3\"], [\"layers.4\", "))
        << c.text;
    EXPECT_TRUE(has(c.text, "[\"layers.12\", \"layers.13\", \"layers.14\", \"layers.15\", \"norm\", \"lm_head\"]]\n"))
        << c.text;
    // A partition its settings can give is written as settings, the nearest to torchtitan's 1 and 1:
    // 1, 7, 7, 1 is 16 + 6 + 5 = 27 weighted layers, 6 each with 3 left over for stages 0-2: 7 - 6, 7, 7,
    // 6 - 5; 7 per stage gives ceil(27 / 7) = 4 stages.
    v.layerPartition = { 1, 7, 7, 1 };
    EXPECT_TRUE(has(torchtitanConfig(p, v, "a.csv").text,
        "pipeline_parallel_layers_per_stage = 7\npipeline_parallel_first_stage_less_layers = 6\n"
        "pipeline_parallel_last_stage_less_layers = 5\n"))
        << torchtitanConfig(p, v, "a.csv").text;
}

TEST(Megatron, EvenInterleavedUsesLayersPerVirtualStage)
{
    Project p = defaultProject();
    const FrameworkConfig c = megatronArgs(p, variantOf(ScheduleKind::Interleaved1F1B, 4, 8, 2));
    ASSERT_TRUE(c.supported) << c.refusal;
    EXPECT_TRUE(has(c.text,
        "--pipeline-model-parallel-size 4\n--num-layers 16\n"
        "--num-layers-per-virtual-pipeline-stage 2\n--micro-batch-size 2\n"
        "--global-batch-size 16\n"))
        << c.text;
}

TEST(Megatron, UnevenPartitionGivesALayout)
{
    Project p = defaultProject();
    Variant v = variantOf(ScheduleKind::OneFOneB, 4, 8);
    v.layerPartition = { 3, 5, 5, 3 };
    const FrameworkConfig c = megatronArgs(p, v);
    ASSERT_TRUE(c.supported) << c.refusal;
    EXPECT_TRUE(has(c.text, "--pipeline-model-parallel-layout 'Et*3|t*5|t*5|t*3L'\n")) << c.text;
    EXPECT_EQ(parseMegatronLayout("Et*3|t*5|t*5|t*3L", 4, 16), v.layerPartition);
}

TEST(Megatron, RefusesWhatItCannotRunByName)
{
    Project p = defaultProject();
    const std::pair<ScheduleKind, const char*> cases[] = {
        { ScheduleKind::DualPipe, "no DualPipe schedule" },
        { ScheduleKind::DualPipeV, "no V placement, which DualPipeV needs" },
        { ScheduleKind::ZBV, "no V placement" },
        { ScheduleKind::GPipe, "no GPipe order" },
        { ScheduleKind::ZBH1, "no zero-bubble schedule" },
    };
    for (const auto& [kind, reason] : cases) {
        const FrameworkConfig c = megatronArgs(p, variantOf(kind, 4, 8));
        EXPECT_FALSE(c.supported) << kindName(kind);
        EXPECT_TRUE(has(c.refusal, reason)) << c.refusal;
    }
}

TEST(Megatron, OverlappedPairsNeedExpertParallelism)
{
    Project p = defaultProject();
    Variant v = variantOf(ScheduleKind::Interleaved1F1B, 4, 8, 2);
    std::vector<std::vector<Action>> order = buildSchedule(p, v).order;
    auto& row = order[0];
    for (std::size_t i = 0; i + 1 < row.size(); ++i) { // overlap rank 0's first F that a B follows
        if (row[i].op.kind == OpKind::F && row[i + 1].op.kind == OpKind::B) {
            row[i] = Action::overlap(row[i].op, row[i + 1].op);
            row.erase(row.begin() + static_cast<std::ptrdiff_t>(i) + 1);
            break;
        }
    }
    v.order = order;
    const FrameworkConfig c = megatronArgs(p, v);
    EXPECT_FALSE(c.supported);
    EXPECT_TRUE(has(c.refusal, "only in its combined 1F1B for MoE models")) << c.refusal;
    // An order that is not Megatron's own is refused as such.
    std::swap(order[1][0], order[1][1]);
    v.order = order;
    EXPECT_TRUE(has(megatronArgs(p, v).refusal, "a hand-edited order")) << megatronArgs(p, v).refusal;
}

TEST(MegatronLayout, ReadsRepeatsAndGroups)
{
    EXPECT_EQ(megatronLayout({ 3, 4, 4, 3 }), "Et*3|t*4|t*4|t*3L");
    EXPECT_EQ(megatronLayout({ 0, 1, 2 }), "E|t|t*2L");
    EXPECT_EQ(parseMegatronLayout("E(t|)*3tL", 4, 4), (std::vector<int> { 1, 1, 1, 1 }));
    EXPECT_EQ(parseMegatronLayout("Et, t|(tt|)*2, ttL", 2, 8), (std::vector<int> { 2, 2, 2, 2 }));
    EXPECT_EQ(parseMegatronLayout("E||t*2|L", 2, 2), (std::vector<int> { 0, 0, 2, 0 })); // empty stages
}

TEST(MegatronLayout, BadLayoutsNameTheCharacter)
{
    const auto message = [](std::string_view layout, int ranks, int layers) {
        try {
            parseMegatronLayout(layout, ranks, layers);
        } catch (const ParseError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_TRUE(has(
        message("Et*3|t*4|t*4|t*3L", 2, 16), "character 17 'L': the layout has 14 decoder layers (t), the model 16"))
        << message("Et*3|t*4|t*4|t*3L", 2, 16);
    EXPECT_TRUE(
        has(message("Et*3|t*4|t*4|t*3L", 2, 13), "character 14 't': more decoder layers (t) than the model's 13"))
        << message("Et*3|t*4|t*4|t*3L", 2, 13);
    EXPECT_TRUE(has(message("Et*3|x|L", 2, 3), "character 6 'x': not a layout symbol")) << message("Et*3|x|L", 2, 3);
    EXPECT_TRUE(has(message("tE|L", 2, 1), "character 1 't': the first layer must be the embedding E"));
    EXPECT_TRUE(has(message("Et|Lt", 2, 2), "character 4 'L': the loss layer L must come last"));
    EXPECT_TRUE(has(message("Et|t|tL", 2, 3), "3 stages are not a multiple of the 2 pipeline ranks"));
    EXPECT_TRUE(has(message("E(t|*2L", 2, 2), "character 2 '(': '(' has no ')'"));
    EXPECT_TRUE(has(message("Et|m|L", 3, 1), "character 4 'm': an MTP layer"));
}
