// The PyTorch profiler importer (engine/trace/kineto.h) on the committed traces of tests/data/traces: the
// real ones torch 1.13 wrote (tests/tools/torch_pp_trace.py), the hand-made Kineto and legacy ones whose
// times were chosen by hand (make_handmade.py), and the broken ones.
#include "base/errors.h"
#include "base/fileio.h"
#include "project/predict.h"
#include "project/project.h"
#include "project/validatedconfig.h"
#include "schedule/schedule.h"
#include "sim/calibrate.h"
#include "trace/kineto.h"
#include "trace/measured.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <unistd.h>

namespace {

using namespace dps;
namespace fs = std::filesystem;

const std::string kData = DPS_TEST_DATA "/traces";

Project tracesProject()
{
    return loadProject(kData + "/torch-block.dpstudio.json");
}

ProfileImport importFolder(const std::string& folder, const Project* project, const std::string& variant)
{
    ProfileImportOptions options;
    options.project = project;
    options.variant = project ? &project->active() : nullptr;
    if (project && !variant.empty())
        options.variant = project->find(variant);
    return importProfiles(profileFiles({ kData + "/" + folder }), options);
}

const MeasuredAction& actionOf(const MeasuredTrace& t, int rank, int step, const std::string& text)
{
    for (const MeasuredAction* a : t.actionsOf(rank, step))
        if (toString(a->action) == text)
            return *a;
    throw std::runtime_error("no " + text + " on rank " + std::to_string(rank) + " in step " + std::to_string(step));
}

/// The error importProfiles throws (FormatError), or "" when it imports.
std::string importError(const std::string& folder, const std::string& variant = "1f1b-2mb")
{
    const Project project = tracesProject();
    try {
        importFolder(folder, &project, variant);
    } catch (const FormatError& e) {
        return e.what();
    }
    return {};
}

fs::path tempDir(const std::string& name)
{
    const fs::path dir = fs::temp_directory_path() / ("dps-kineto-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

// Every action of the schedule exactly once per step, on every rank, in two real torch 1.13 traces.
void expectEveryActionOncePerStep(const MeasuredTrace& t, const Schedule& schedule, int steps)
{
    ASSERT_EQ(t.steps.size(), static_cast<std::size_t>(steps));
    ASSERT_EQ(t.ranks.size(), static_cast<std::size_t>(schedule.ranks));
    for (int r = 0; r < schedule.ranks; ++r)
        for (int s = 0; s < steps; ++s) {
            std::map<std::string, int> count;
            for (const MeasuredAction* a : t.actionsOf(r, s))
                ++count[toString(a->action)];
            ASSERT_EQ(count.size(), schedule.order[static_cast<std::size_t>(r)].size())
                << "rank " << r << " step " << s;
            for (const Action& a : schedule.order[static_cast<std::size_t>(r)])
                EXPECT_EQ(count[toString(a)], 1) << toString(a) << " on rank " << r << " in step " << s;
            double previousEnd = 0.0;
            for (const MeasuredAction* a : t.actionsOf(r, s)) { // in execution order, never overlapping
                EXPECT_GE(a->startUs, previousEnd) << toString(a->action);
                EXPECT_GE(a->endUs - a->startUs, a->waitUs + a->computeUs - 1e-9) << toString(a->action);
                previousEnd = a->endUs;
            }
        }
}

TEST(Kineto, RealTorchTracesMatchEveryScheduleActionOncePerStep)
{
    const Project project = tracesProject();
    for (const std::string variant : { "dualpipev", "1f1b" }) {
        const ProfileImport imported = importFolder("torch113-" + variant, &project, variant);
        const MeasuredTrace& t = imported.trace;
        expectEveryActionOncePerStep(t, buildSchedule(project, *project.find(variant)), 2);
        EXPECT_EQ(t.source.layout, "legacy");
        EXPECT_EQ(t.source.timing, "cpu user annotations");
        EXPECT_EQ(t.source.clock, "aligned at the first step's start");
        EXPECT_EQ(t.variant, variant);
        EXPECT_FALSE(t.correctness.checked);
        EXPECT_EQ(t.backend, "cpu");
    }
}

TEST(Kineto, RealTraceWaitsComeFromTheReceiveSpans)
{
    // rank1.json.gz of the DualPipeV run, second recorded step: PP:1RECV_F0 48920 … 50379 µs (1459 µs), PP:1F0
    // 50391 … 51626 µs (1235 µs); 1F0 hands 2F0 its output on the rank (no send). ProfilerStep#1 starts at
    // 48900 µs on rank 1 (its first at 127 µs) and at 48605 µs on rank 0 (its first at 101 µs): step 1 starts
    // at 48504 µs on the aligned clock, so 1F0 starts at 48920 − 127 − 48504 = 289 µs.
    const Project project = tracesProject();
    const MeasuredTrace t = importFolder("torch113-dualpipev", &project, "dualpipev").trace;
    const MeasuredAction& a = actionOf(t, 1, 1, "1F0");
    EXPECT_DOUBLE_EQ(a.computeUs, 1235.0);
    EXPECT_DOUBLE_EQ(a.waitUs, 1459.0);
    EXPECT_DOUBLE_EQ(a.startUs, 289.0);
    EXPECT_DOUBLE_EQ(a.endUs, 289.0 + (51626 - 48920));
}

TEST(Kineto, CalibrateAndValidatedExportWorkOnAnImportedRealTrace)
{
    const Project project = tracesProject();
    const MeasuredTrace t = importFolder("torch113-dualpipev", &project, "dualpipev").trace;
    // Round trip through the file the CLI writes.
    const MeasuredTrace back = parseMeasured(serializeMeasured(t), "imported.json");
    EXPECT_EQ(serializeMeasured(back), serializeMeasured(t));
    EXPECT_EQ(back.formatVersion, 2);
    EXPECT_FALSE(back.correctness.checked);
    EXPECT_EQ(back.source, t.source);

    // F of stage 0: the trimmed mean of 0F0, 0F1, 0F2 over both steps, each slot from its PP:0F<m> span's start to
    // its PP:0SEND_F<m> span's end: 1061, 1105, 1150, 1230, 1259, 1275 µs (10 % of 6 cuts none) → 7080 / 6 = 1180 µs.
    EXPECT_EQ(measuredStageCount(back), 4);
    const Calibration c = calibrate(measuredSlots(back), measuredStageCount(back));
    ASSERT_GE(c.costs.stages.size(), 1u);
    ASSERT_TRUE(c.costs.stages[0].forwardUs.has_value());
    EXPECT_DOUBLE_EQ(*c.costs.stages[0].forwardUs, 1180.0);

    const Prediction p = predict(project, "dualpipev");
    const ValidatedConfig config = buildValidatedConfig(project, p, validatedRunOf(back, "imported.json"));
    EXPECT_FALSE(config.validated);
    ASSERT_EQ(config.reasons.size(), 1u);
    EXPECT_EQ(config.reasons[0],
        "the run was measured externally, not checked (torch.profiler (legacy layout, cpu user annotations, aligned at "
        "the first step's start; 2 files))");
    const auto json = nlohmann::json::parse(config.text);
    EXPECT_TRUE(json["measured"]["correctness"].is_null());
    EXPECT_EQ(json["measured"]["note"], "measured externally, not checked");
    EXPECT_EQ(json["measured"]["median_step_makespan_us"], back.medianMakespanUs());
}

TEST(Kineto, GpuSpansTimeTheActionsOnACommonBase)
{
    // kineto-gpu (make_handmade.py): rank 1's base is 50 µs after rank 0's; the step starts at 100 µs on
    // rank 0 and 60 µs (110 µs on the common clock) on rank 1, so times count from 100 µs of rank 0's clock.
    const Project project = tracesProject();
    const ProfileImport imported = importFolder("kineto-gpu", &project, "1f1b-2mb");
    const MeasuredTrace& t = imported.trace;
    EXPECT_EQ(t.source.layout, "kineto");
    EXPECT_EQ(t.source.timing, "gpu user annotations");
    EXPECT_EQ(t.source.clock, "common base (baseTimeNanoseconds)");
    EXPECT_EQ(t.device, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(t.backend, "cuda");
    EXPECT_EQ(t.comm, "nccl");
    ASSERT_EQ(t.ranks.size(), 2u); // ranks from distributedInfo: the files are worker-a and worker-b
    EXPECT_EQ(t.ranks[1].rank, 1);
    // 0F0: GPU 120 … 220, its send 220 … 230. Memory: 1000 B allocated since 115 µs.
    const MeasuredAction& f0 = actionOf(t, 0, 0, "0F0");
    EXPECT_DOUBLE_EQ(f0.startUs, 20.0);
    EXPECT_DOUBLE_EQ(f0.endUs, 130.0);
    EXPECT_DOUBLE_EQ(f0.waitUs, 0.0);
    EXPECT_DOUBLE_EQ(f0.computeUs, 100.0);
    EXPECT_EQ(f0.memoryBytes, 1000);
    // 0F1: 230 … 330, send to 340; 2000 B at 250 µs (the CPU's 99999 B are not the device's).
    EXPECT_EQ(actionOf(t, 0, 0, "0F1").memoryBytes, 2000);
    // 0B0: waits 340 … 590 for the gradient, computes 590 … 790.
    const MeasuredAction& b0 = actionOf(t, 0, 0, "0B0");
    EXPECT_DOUBLE_EQ(b0.startUs, 240.0);
    EXPECT_DOUBLE_EQ(b0.endUs, 690.0);
    EXPECT_DOUBLE_EQ(b0.waitUs, 250.0);
    EXPECT_DOUBLE_EQ(b0.computeUs, 200.0);
    EXPECT_EQ(b0.memoryBytes, 2000);
    EXPECT_EQ(actionOf(t, 0, 0, "0B1").memoryBytes, 1500);
    // Rank 1 (+50 µs): 1F0 waits 70 … 180, computes 180 … 330 → 20 … 280 µs.
    const MeasuredAction& r1 = actionOf(t, 1, 0, "1F0");
    EXPECT_DOUBLE_EQ(r1.startUs, 20.0);
    EXPECT_DOUBLE_EQ(r1.endUs, 280.0);
    EXPECT_DOUBLE_EQ(r1.waitUs, 110.0);
    EXPECT_DOUBLE_EQ(r1.computeUs, 150.0);
    EXPECT_EQ(r1.memoryBytes, 0); // no memory events on rank 1
    ASSERT_EQ(t.steps.size(), 1u);
    EXPECT_DOUBLE_EQ(t.steps[0].makespanUs, 1060.0); // 0B1 ends at 1160 µs
}

TEST(Kineto, LegacyLayoutWithUnescapedNamesAlignsRanksAtTheFirstStep)
{
    const Project project = tracesProject();
    const MeasuredTrace t = importFolder("legacy-unescaped", &project, "1f1b-2mb").trace;
    EXPECT_EQ(t.source.layout, "legacy");
    ASSERT_EQ(t.steps.size(), 2u); // ProfilerStep#3 and #4
    EXPECT_DOUBLE_EQ(t.steps[0].makespanUs, 570.0);
    EXPECT_DOUBLE_EQ(t.steps[1].makespanUs, 570.0);
    // Rank 0: 0F0 20 … 120 and its send to 130, its step at 10 µs; the gloo:send crossing 0F1 and 0B0 is ignored.
    const MeasuredAction& f0 = actionOf(t, 0, 1, "0F0");
    EXPECT_DOUBLE_EQ(f0.startUs, 10.0);
    EXPECT_DOUBLE_EQ(f0.endUs, 120.0);
    EXPECT_DOUBLE_EQ(actionOf(t, 0, 0, "0F1").startUs, 170.0);
    // Rank 1's step starts at 17 µs of its clock: 1B0 at 177 µs is 160 µs into the step.
    EXPECT_DOUBLE_EQ(actionOf(t, 1, 0, "1B0").startUs, 160.0);
}

TEST(Kineto, AnOverlappedSlotShownAsTwoSpansIsOneSlot)
{
    const Project project = tracesProject();
    const MeasuredTrace t = importFolder("kineto-split-overlap", &project, "dualpipev").trace;
    const MeasuredAction& o = actionOf(t, 0, 0, "(0F3;3B1)OVERLAP_F_B");
    EXPECT_DOUBLE_EQ(o.startUs, 700.0); // 7 actions of 100 µs before it
    EXPECT_DOUBLE_EQ(o.endUs, 900.0);
    EXPECT_DOUBLE_EQ(o.computeUs, 200.0);
    EXPECT_EQ(t.actionsOf(0, 0).size(), 16u);
    EXPECT_DOUBLE_EQ(actionOf(t, 1, 0, "(2F2;1B0)OVERLAP_F_B").startUs, 600.0); // one span of 200 µs
    EXPECT_DOUBLE_EQ(t.steps[0].makespanUs, 1900.0); // rank 0: 13 × 100 + 3 × 200 µs
}

TEST(Kineto, BrokenTracesNameTheFileAndTheReason)
{
    const std::string truncated = importError("broken/truncated");
    EXPECT_NE(truncated.find("broken/truncated/rank0.json: not valid JSON"), std::string::npos) << truncated;
    EXPECT_EQ(importError("broken/missing-rank"),
        "rank 1: missing (no trace file of rank 1 among the 1 given; 2 ranks expected by variant '1f1b-2mb')");
    const std::string duplicate = importError("broken/duplicate");
    EXPECT_NE(duplicate.find("broken/duplicate/rank0.json (rank 0), step 0: compute action 0F1 appears 2 times (at "
                             "110 µs, 210 µs)"), // spans at 10 + 100 i µs, the step at 0
        std::string::npos)
        << duplicate;
    const std::string mismatch = importError("broken/mismatch");
    EXPECT_NE(mismatch.find("broken/mismatch/rank0.json (rank 0), step 0: 0F5 is not in the schedule of rank 0 "
                            "(variant '1f1b-2mb')"),
        std::string::npos)
        << mismatch;
    const std::string noRank = importError("broken/no-rank");
    EXPECT_NE(noRank.find("broken/no-rank/trace.json: no rank: the trace has no distributedInfo.rank and its name has "
                          "no rank<N>"),
        std::string::npos)
        << noRank;
    // The real traces of the other variant do not follow this schedule: named, action by action.
    const std::string other = importError("torch113-1f1b", "dualpipev");
    EXPECT_NE(other.find("torch113-1f1b/rank0.json.gz (rank 0), step 0: 0B0, 0B1, 0F3, 0B2, 0B3 are not in the "
                         "schedule of rank 0 (variant 'dualpipev')"),
        std::string::npos)
        << other;
}

TEST(Kineto, WithoutAProjectWorldSizeAndDuplicatesStillCount)
{
    try {
        importFolder("broken/missing-rank", nullptr, ""); // distributedInfo.world_size is 2
        FAIL() << "a missing rank was imported";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1: missing"), std::string::npos) << e.what();
    }
    const MeasuredTrace t = importFolder("legacy-unescaped", nullptr, "").trace;
    EXPECT_EQ(t.variant, "");
    EXPECT_EQ(t.projectJson, "");
    EXPECT_EQ(measuredStageCount(t), 2);
}

TEST(Kineto, TruncatedGzipIsRefused)
{
    const std::string whole = readTextFile(kData + "/torch113-1f1b/rank0.json.gz");
    const fs::path dir = tempDir("gz");
    writeFileAtomic(dir / "rank0.json.gz", whole.substr(0, whole.size() / 2));
    try {
        readProfileText(dir / "rank0.json.gz");
        FAIL() << "a truncated gzip file was read";
    } catch (const FormatError& e) {
        EXPECT_EQ(std::string(e.what()), (dir / "rank0.json.gz").string() + ": not a valid gzip file: truncated");
    }
    EXPECT_EQ(readProfileText(kData + "/torch113-1f1b/rank0.json.gz").front(), '[');
    fs::remove_all(dir);
}

TEST(Kineto, MapsNameOtherSchemesAndRanksComeFromFileNames)
{
    const fs::path dir = tempDir("map");
    // No ProfilerStep spans: the whole trace is one step. Rank from the name (job_rank-0, job_rank-1).
    const auto span = [](const std::string& name, int ts, int dur) {
        return "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"" + name + "\", \"ts\": " + std::to_string(ts)
            + ", \"dur\": " + std::to_string(dur) + "}";
    };
    writeFileAtomic(dir / "job_rank-0.pt.trace.json",
        "{\"traceEvents\": [" + span("fwd_s0_mb0", 500, 40) + ", " + span("bwd_s0_mb0", 600, 80) + ", "
            + span("aten::mm", 510, 5) + "]}");
    writeFileAtomic(dir / "job_rank-1.pt.trace.json",
        "{\"traceEvents\": [" + span("fwd_s1_mb0", 1540, 40) + ", " + span("bwd_s1_mb0", 1580, 80) + "]}");
    ProfileImportOptions options;
    options.maps
        = { parseProfileNameMap(R"(fwd_s(\d+)_mb(\d+)=$1F$2)"), parseProfileNameMap(R"(bwd_s(\d+)_mb(\d+)=$1B$2)") };
    const MeasuredTrace t = importProfiles(profileFiles({ dir.string() }), options).trace;
    ASSERT_EQ(t.ranks.size(), 2u);
    ASSERT_EQ(t.ranks[0].actions.size(), 2u);
    EXPECT_EQ(toString(t.ranks[0].actions[1].action), "0B0");
    EXPECT_DOUBLE_EQ(t.ranks[0].actions[1].startUs, 100.0); // 600 − 500: the rank's first span starts its step
    EXPECT_DOUBLE_EQ(t.ranks[1].actions[1].endUs, 120.0); // 1660 − 1540
    EXPECT_DOUBLE_EQ(t.steps[0].makespanUs, 180.0);
    fs::remove_all(dir);

    EXPECT_THROW(parseProfileNameMap("no-equals-sign"), FormatError);
    EXPECT_THROW(parseProfileNameMap("fwd(=$1F0"), FormatError);
}

} // namespace

TEST(Kineto, MeasuredFormat2FieldsAreReadAndNamedWhenWrong)
{
    const std::string v2 = R"json({"format_version": 2, "correctness": null,
        "source": {"kind": "torch.profiler", "layout": "kineto", "timing": "gpu user annotations",
                   "clock": "common base (baseTimeNanoseconds)", "files": ["a.json", "b.json"]},
        "steps": [{"step": 0, "makespan_us": 10}], "median_step": 0,
        "ranks": [{"rank": 0, "actions": [{"action": "0F0", "step": 0, "start_us": 0, "end_us": 10}]}]})json";
    const MeasuredTrace t = parseMeasured(v2, "imported.json");
    EXPECT_FALSE(t.correctness.checked);
    EXPECT_EQ(t.source.files, (std::vector<std::string> { "a.json", "b.json" }));
    EXPECT_EQ(describeSource(t.source),
        "torch.profiler (kineto layout, gpu user annotations, common base (baseTimeNanoseconds); 2 files)");
    const std::string text = serializeMeasured(t);
    EXPECT_NE(text.find("\"format_version\": 2"), std::string::npos);
    EXPECT_NE(text.find("\"correctness\": null"), std::string::npos);
    EXPECT_EQ(serializeMeasured(parseMeasured(text, "again.json")), text);

    const auto messageOf = [&](const std::string& from, const std::string& to) {
        std::string broken = v2;
        broken.replace(broken.find(from), from.size(), to);
        try {
            parseMeasured(broken, "imported.json");
        } catch (const FormatError& e) {
            return std::string(e.what());
        }
        return std::string("read");
    };
    EXPECT_EQ(messageOf("\"kind\": \"torch.profiler\", ", ""), "imported.json: source.kind: missing");
    EXPECT_EQ(messageOf("\"b.json\"", "7"), "imported.json: source.files[1]: must be a string");
    EXPECT_EQ(messageOf("\"format_version\": 2", "\"format_version\": 3"),
        "imported.json: format_version 3 is newer than this build of DualPipe Studio reads (2); update DualPipe "
        "Studio");
}

TEST(Kineto, AnOverlappedSlotOnTwoStreamsIsTimedFromFirstStartToLastEnd)
{
    // One annotation, its work on two GPU streams: two gpu_user_annotation spans with its External id.
    const fs::path dir = tempDir("streams");
    writeFileAtomic(dir / "node.json", R"json({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "ts": 0, "dur": 1000},
        {"ph": "X", "cat": "user_annotation", "name": "PP:(0F1;1B0)OVERLAP_F_B", "ts": 10, "dur": 5,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "PP:(0F1;1B0)OVERLAP_F_B", "tid": 7, "ts": 100, "dur": 100,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "PP:(0F1;1B0)OVERLAP_F_B", "tid": 8, "ts": 250, "dur": 50,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "user_annotation", "name": "PP:0RECV_F1", "ts": 50, "dur": 40},
        {"ph": "X", "cat": "user_annotation", "name": "PP:1RECV_B0", "ts": 60, "dur": 40}]})json");
    const MeasuredTrace t = importProfiles({ dir / "node.json" }, {}).trace;
    const MeasuredAction& a = actionOf(t, 0, 0, "(0F1;1B0)OVERLAP_F_B");
    // Its two receives (one per half) ran side by side, 50 … 90 and 60 … 100 µs: 50 µs of waiting, not 80.
    EXPECT_DOUBLE_EQ(a.startUs, 50.0);
    EXPECT_DOUBLE_EQ(a.waitUs, 50.0);
    EXPECT_DOUBLE_EQ(a.endUs, 300.0);
    EXPECT_DOUBLE_EQ(a.computeUs, 150.0); // 100 + 50: the gap between them is not work
    fs::remove_all(dir);
}

TEST(Kineto, CommActionsMapLikeComputeOnes)
{
    // The overlapped slot above, one receive named by the job's own label mapped with --map to a comm action, one
    // "PP: 1RECV_B0": both read by the schedule CSV's action parser (which trims spaces, as it does for "PP: 0F2 ");
    // a PP:0UNSHARD span is recognised and ignored.
    const fs::path dir = tempDir("commmaps");
    writeFileAtomic(dir / "node.json", R"json({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "ts": 0, "dur": 1000},
        {"ph": "X", "cat": "user_annotation", "name": "PP:0UNSHARD", "ts": 1, "dur": 2},
        {"ph": "X", "cat": "user_annotation", "name": "PP:(0F1;1B0)OVERLAP_F_B", "ts": 100, "dur": 200},
        {"ph": "X", "cat": "user_annotation", "name": "recv_act stage=0 mb=1", "ts": 50, "dur": 40},
        {"ph": "X", "cat": "user_annotation", "name": "PP: 1RECV_B0", "ts": 60, "dur": 40},
        {"ph": "X", "cat": "user_annotation", "name": "PP: 0F2 ", "ts": 400, "dur": 10}]})json");
    ProfileImportOptions options;
    options.maps.push_back(parseProfileNameMap("recv_act stage=(\\d+) mb=(\\d+)=$1RECV_F$2"));
    const MeasuredTrace t = importProfiles({ dir / "node.json" }, options).trace;
    const MeasuredAction& a = actionOf(t, 0, 0, "(0F1;1B0)OVERLAP_F_B");
    EXPECT_DOUBLE_EQ(a.startUs, 50.0); // from the first receive's start
    EXPECT_DOUBLE_EQ(a.waitUs, 50.0); // 50 … 100: both receives side by side
    EXPECT_DOUBLE_EQ(a.endUs, 300.0);
    EXPECT_DOUBLE_EQ(actionOf(t, 0, 0, "0F2").startUs, 400.0);
    fs::remove_all(dir);
}

TEST(Kineto, TracesWithoutActionsOrWithTimesBeyondExactAreRefused)
{
    const fs::path dir = tempDir("refused");
    const auto errorOf = [&](const std::string& text) {
        writeFileAtomic(dir / "rank0.json", text);
        try {
            importProfiles({ dir / "rank0.json" }, {});
        } catch (const FormatError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    const std::string file = (dir / "rank0.json").string();
    EXPECT_EQ(errorOf(R"({"traceEvents": []})"),
        file
            + ": no compute action: no PP:<action> span (e.g. PP:0F1) names one; wrap each action in "
              "record_function(\"PP:<action>\"), or map other names with --map");
    EXPECT_EQ(errorOf(R"({"traceEvents": [{"name": "PP:0F0", "ph": "X", "ts": 1e308, "dur": 1e308}]})"),
        file + ": event \"PP:0F0\": ts " + std::to_string(1e308) + " µs and dur " + std::to_string(1e308)
            + " µs are beyond 2^53 µs (the largest exact time)");
    EXPECT_EQ(errorOf(R"({"distributedInfo": {"rank": -1}, "traceEvents": []})"),
        file + ": distributedInfo.rank -1 is outside [0, 65536)");
    fs::remove_all(dir);
}

TEST(Kineto, AMapThatMakesNoActionIsNamed)
{
    try {
        parseProfileNameMap("PP:(\\d)F(\\d)=$1F$9");
        FAIL() << "a template naming a group the regex lacks was taken";
    } catch (const FormatError& e) {
        EXPECT_STREQ(e.what(), "--map 'PP:(\\d)F(\\d)=$1F$9': the template names group $9 but the regex has 2");
    }
    ProfileImportOptions options;
    options.maps.push_back(parseProfileNameMap("PP:(\\d)F(\\d)=$1Q$2"));
    try {
        importProfiles({ kData + "/torch113-1f1b/rank0.json.gz" }, options);
        FAIL() << "a map making no action was taken";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("--map 'PP:(\\d)F(\\d)=$1Q$2': event \"PP:0F0\" becomes \"0Q0\", which is "
                                             "not an action"),
            std::string::npos)
            << e.what();
    }
}
