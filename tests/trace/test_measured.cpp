// measured.json: reading the documented format, round trip, and refusing what it cannot read.
#include "base/errors.h"
#include "base/fileio.h"
#include "base/stats.h"
#include "project/project.h"
#include "schedule/generator.h"
#include "sim/costmodel.h"
#include "support/synthetic.h"
#include "trace/measured.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace dps;

namespace {

const char* kSmall = R"({
  "format_version": 1,
  "command": "dpstudio run p.dpstudio.json -o m.json",
  "host": "node1", "cpu": "AMD EPYC", "mpi_version": "Open MPI 4.1.4", "backend": "cpu", "comm": "mpi",
  "variant": "v", "threads": 2, "warmup": 1,
  "correctness": {"passed": true, "max_loss_error": 2e-8, "max_grad_error": 3e-12,
                  "thresholds": {"loss": 1e-6, "grad": 1e-10}},
  "steps": [{"step": 0, "makespan_us": 100.5}, {"step": 1, "makespan_us": 90.25}],
  "median_step": 1,
  "ranks": [{"rank": 0, "actions": [
     {"action": "0F0", "step": 0, "start_us": 1.5, "end_us": 10, "wait_us": 0.5, "bytes_sent": 256,
      "bytes_received": 0, "memory_bytes": 4096, "activation_bytes": 1024},
     {"action": "(0F7;7B3)OVERLAP_F_B", "step": 1, "start_us": 2, "end_us": 20, "wait_us": 3,
      "bytes_sent": 512, "bytes_received": 512, "memory_bytes": 8192, "activation_bytes": 2048}]}],
  "project": {"format_version": 1, "variants": []}
})";

std::string replaced(std::string text, const std::string& from, const std::string& to)
{
    text.replace(text.find(from), from.size(), to);
    return text;
}

/// The FormatError parseMeasured throws for `text` (read as m.json), or "(accepted)".
std::string messageOf(const std::string& text)
{
    try {
        parseMeasured(text, "m.json");
    } catch (const FormatError& e) {
        return std::string(e.what());
    }
    return std::string("(accepted)");
}

} // namespace

TEST(Measured, ReadsEveryDocumentedField)
{
    const MeasuredTrace t = parseMeasured(kSmall);
    EXPECT_EQ(t.formatVersion, 1);
    EXPECT_EQ(t.command, "dpstudio run p.dpstudio.json -o m.json");
    EXPECT_EQ(t.host, "node1");
    EXPECT_EQ(t.mpiVersion, "Open MPI 4.1.4");
    EXPECT_EQ(t.backend, "cpu");
    EXPECT_EQ(t.comm, "mpi");
    EXPECT_EQ(t.variant, "v");
    EXPECT_EQ(t.threads, 2);
    EXPECT_EQ(t.warmup, 1);
    EXPECT_TRUE(t.correctness.passed);
    EXPECT_DOUBLE_EQ(t.correctness.maxLossError, 2e-8);
    EXPECT_DOUBLE_EQ(t.correctness.gradThreshold, 1e-10);
    ASSERT_EQ(t.steps.size(), 2u);
    EXPECT_EQ(t.medianStep, 1);
    EXPECT_DOUBLE_EQ(t.medianMakespanUs(), 90.25);
    ASSERT_EQ(t.ranks.size(), 1u);
    ASSERT_EQ(t.ranks[0].actions.size(), 2u);
    const MeasuredAction& a = t.ranks[0].actions[1];
    EXPECT_TRUE(a.action.overlapped);
    EXPECT_EQ(toString(a.action), "(0F7;7B3)OVERLAP_F_B");
    EXPECT_DOUBLE_EQ(a.busyUs(), 15.0);
    EXPECT_EQ(a.bytesReceived, 512);
    EXPECT_EQ(a.activationBytes, 2048);
    EXPECT_EQ(t.actionsOf(0, 0).size(), 1u);
    EXPECT_FALSE(t.projectJson.empty());
}

TEST(Measured, RoundTripsASyntheticRun)
{
    const Schedule schedule = generate({ ScheduleKind::DualPipeV, 2, 8, 0 });
    const MeasuredTrace t = test::syntheticTrace(schedule, uniformCostModel(schedule.stages, test::fiw(3, 2, 1)), 3);
    const std::string text = serializeMeasured(t);
    const MeasuredTrace back = parseMeasured(text);
    EXPECT_EQ(serializeMeasured(back), text);
    ASSERT_EQ(back.ranks.size(), t.ranks.size());
    for (std::size_t r = 0; r < t.ranks.size(); ++r) {
        ASSERT_EQ(back.ranks[r].actions.size(), t.ranks[r].actions.size());
        for (std::size_t i = 0; i < t.ranks[r].actions.size(); ++i) {
            const MeasuredAction& x = t.ranks[r].actions[i];
            const MeasuredAction& y = back.ranks[r].actions[i];
            EXPECT_EQ(x.action, y.action);
            EXPECT_EQ(x.step, y.step);
            EXPECT_DOUBLE_EQ(x.startUs, y.startUs);
            EXPECT_DOUBLE_EQ(x.endUs, y.endUs);
            EXPECT_DOUBLE_EQ(x.waitUs, y.waitUs);
            EXPECT_EQ(x.bytesReceived, y.bytesReceived);
            EXPECT_EQ(x.memoryBytes, y.memoryBytes);
        }
    }
    EXPECT_EQ(back.medianStep, 1);
}

TEST(Measured, RefusesANewerFormatNamingBothVersions)
{
    try {
        parseMeasured(replaced(kSmall, "\"format_version\": 1", "\"format_version\": 7"), "run.json");
        FAIL() << "a newer format was read";
    } catch (const FormatError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("run.json"), std::string::npos) << what;
        EXPECT_NE(what.find("format_version 7"), std::string::npos) << what;
        EXPECT_NE(what.find("(2)"), std::string::npos) << what;
    }
}

TEST(Measured, NamesTheFieldAtFault)
{
    EXPECT_EQ(messageOf(replaced(kSmall, "\"end_us\": 10,", "")), "m.json: ranks[0].actions[0].end_us: missing");
    EXPECT_EQ(messageOf(replaced(kSmall, "\"step\": 0, \"start_us\": 1.5", "\"step\": \"x\", \"start_us\": 1.5")),
        "m.json: ranks[0].actions[0].step: must be an integer");
    EXPECT_NE(messageOf(replaced(kSmall, "\"0F0\"", "\"0Q0\"")).find("ranks[0].actions[0].action"), std::string::npos);
    EXPECT_EQ(messageOf(replaced(kSmall, "\"median_step\": 1,", "")), "m.json: median_step: missing");
    EXPECT_NE(messageOf("{").find("not valid JSON"), std::string::npos);
    EXPECT_EQ(messageOf("[]"), "m.json: the top level: must be an object");
    // Found by fuzzing: a number too large for a double escaped as nlohmann's out_of_range.
    EXPECT_NE(messageOf("{\"format_version\": 3e888}").find("m.json: not valid JSON"), std::string::npos);
}

TEST(Measured, AllToAllTimesAreOptionalAndChecked)
{
    // Absent: 0, and not written back. Present: read, and written back beside compute_us.
    EXPECT_DOUBLE_EQ(parseMeasured(kSmall).ranks[0].actions[1].a2aUs, 0.0);
    EXPECT_EQ(serializeMeasured(parseMeasured(kSmall)).find("a2a_us"), std::string::npos);
    const std::string withA2a
        = replaced(kSmall, "\"wait_us\": 3,", "\"wait_us\": 3, \"a2a_us\": 6.5, \"a2a_hidden_us\": 2.25,");
    const MeasuredTrace t = parseMeasured(withA2a);
    EXPECT_DOUBLE_EQ(t.ranks[0].actions[1].a2aUs, 6.5);
    EXPECT_DOUBLE_EQ(t.ranks[0].actions[1].a2aHiddenUs, 2.25);
    const MeasuredTrace back = parseMeasured(serializeMeasured(t));
    EXPECT_DOUBLE_EQ(back.ranks[0].actions[1].a2aHiddenUs, 2.25);
    EXPECT_EQ(messageOf(replaced(withA2a, "2.25", "7")),
        "m.json: ranks[0].actions[1].a2a_hidden_us: must be between 0 and a2a_us (6.5)");
    EXPECT_EQ(messageOf(replaced(withA2a, "6.5", "-1")), "m.json: ranks[0].actions[1].a2a_us: must not be negative");
}

TEST(Measured, LoadReportsAnUnreadableFileAsIoError)
{
    EXPECT_THROW(loadMeasured("/nonexistent/measured.json"), IoError);
}

TEST(Measured, RoundTripsARealWorkerFileExactly)
{
    const std::string path = DPS_TEST_DATA "/measured/tiny-dualpipev.measured.json";
    const std::string text = readTextFile(path);
    const MeasuredTrace t = parseMeasured(text, path);
    EXPECT_EQ(t.device, "AMD EPYC (OpenBLAS Zen, 1 thread)");
    EXPECT_EQ(t.backendChoice, "");
    EXPECT_TRUE(t.warnings.empty());
    ASSERT_EQ(t.correctness.losses.size(), 4u);
    EXPECT_EQ(t.correctness.losses[3].microbatch, 3);
    EXPECT_DOUBLE_EQ(t.correctness.losses[3].loss, 0.3030009361345351);
    EXPECT_DOUBLE_EQ(t.correctness.losses[3].reference, 0.3030009361345351);
    EXPECT_DOUBLE_EQ(t.correctness.losses[3].error, 0.0);
    ASSERT_FALSE(t.ranks.empty());
    EXPECT_DOUBLE_EQ(t.ranks[0].actions[0].computeUs, 21.141);
    EXPECT_EQ(serializeMeasured(t), text);
}

TEST(Measured, ReadsAndWritesTheWorkersExtraFields)
{
    const std::string text
        = replaced(replaced(replaced(kSmall, "\"comm\": \"mpi\",",
                                "\"comm\": \"mpi\", \"device\": \"EPYC (OpenBLAS Zen)\", "
                                "\"backend_choice\": \"backend cpu, comm mpi: cpu\","),
                       "\"median_step\": 1,", "\"median_step\": 1, \"warnings\": [\"bf16 runs in fp32\"],"),
            "\"grad\": 1e-10}}",
            "\"grad\": 1e-10}, \"losses\": [{\"microbatch\": 0, \"loss\": 0.5, \"reference\": 0.25, \"error\": 1}, "
            "{\"microbatch\": 1, \"loss\": null, \"reference\": 0.25, \"error\": null}]}");
    const MeasuredTrace t
        = parseMeasured(replaced(text, "\"wait_us\": 0.5,", "\"wait_us\": 0.5, \"compute_us\": 7.25,"));
    EXPECT_EQ(t.device, "EPYC (OpenBLAS Zen)");
    EXPECT_EQ(t.backendChoice, "backend cpu, comm mpi: cpu");
    EXPECT_EQ(t.warnings, std::vector<std::string> { "bf16 runs in fp32" });
    ASSERT_EQ(t.correctness.losses.size(), 2u);
    EXPECT_EQ(t.correctness.losses[0].microbatch, 0);
    EXPECT_DOUBLE_EQ(t.correctness.losses[0].loss, 0.5);
    EXPECT_DOUBLE_EQ(t.correctness.losses[0].error, 1.0);
    EXPECT_TRUE(std::isnan(t.correctness.losses[1].loss)); // a diverged microbatch: null in the file
    EXPECT_DOUBLE_EQ(t.ranks[0].actions[0].computeUs, 7.25);
    EXPECT_DOUBLE_EQ(t.ranks[0].actions[1].computeUs, 0.0);

    const std::string written = serializeMeasured(t);
    EXPECT_NE(written.find("\"device\": \"EPYC (OpenBLAS Zen)\",\n  \"mpi_version\""), std::string::npos) << written;
    EXPECT_NE(written.find("\"comm\": \"mpi\",\n  \"backend_choice\": \"backend cpu, comm mpi: cpu\",\n  \"variant\""),
        std::string::npos)
        << written;
    EXPECT_NE(written.find("\"loss\": null"), std::string::npos) << written;
    const MeasuredTrace back = parseMeasured(written);
    EXPECT_EQ(back.warnings, t.warnings);
    EXPECT_TRUE(std::isnan(back.correctness.losses[1].error));
    EXPECT_EQ(serializeMeasured(back), written);
}

TEST(Measured, LeavesOutAnEmptyBackendChoice)
{
    const std::string written = serializeMeasured(parseMeasured(kSmall));
    EXPECT_EQ(written.find("backend_choice"), std::string::npos);
    EXPECT_NE(written.find("\"warnings\": []"), std::string::npos) << written;
}

TEST(Measured, NamesTheExtraFieldAtFault)
{
    EXPECT_EQ(messageOf(replaced(kSmall, "\"median_step\": 1,", "\"median_step\": 1, \"warnings\": [3],")),
        "m.json: warnings[0]: must be a string");
    EXPECT_EQ(messageOf(replaced(kSmall, "\"grad\": 1e-10}}", "\"grad\": 1e-10}, \"losses\": [{\"microbatch\": 0}]}")),
        "m.json: correctness.losses[0].loss: missing");
    EXPECT_EQ(messageOf(replaced(kSmall, "\"wait_us\": 0.5,", "\"wait_us\": 0.5, \"compute_us\": \"x\",")),
        "m.json: ranks[0].actions[0].compute_us: must be a number");
}

TEST(Measured, RanksHostsSayWhichTransfersCrossedHosts)
{
    // Ranks 0, 1 on hostA and 2, 3 on hostB (a two-host run, tests/launch/twohost_e2e.sh): only 1 <-> 2 cross.
    MeasuredTrace t = parseMeasured(kSmall);
    ASSERT_EQ(t.ranks.size(), 1u);
    EXPECT_EQ(t.ranks[0].host, ""); // a file without ranks[].host
    t.ranks.resize(4);
    const char* hosts[] = { "hostA", "hostA", "hostB", "hostB" };
    for (int r = 0; r < 4; ++r) {
        t.ranks[static_cast<std::size_t>(r)].rank = r;
        t.ranks[static_cast<std::size_t>(r)].host = hosts[r];
    }
    EXPECT_FALSE(crossesHosts(t, 0, 1));
    EXPECT_TRUE(crossesHosts(t, 1, 2));
    EXPECT_TRUE(crossesHosts(t, 2, 1));
    EXPECT_FALSE(crossesHosts(t, 2, 3));
    EXPECT_FALSE(crossesHosts(t, 3, 4)); // rank 4 is not in the trace
    const std::string written = serializeMeasured(t);
    EXPECT_NE(written.find("\"rank\": 2,\n      \"host\": \"hostB\",\n      \"actions\""), std::string::npos)
        << written;
    const MeasuredTrace back = parseMeasured(written);
    EXPECT_EQ(back.ranks[1].host, "hostA");
    EXPECT_EQ(back.ranks[2].host, "hostB");
    EXPECT_EQ(serializeMeasured(back), written);

    t.ranks[2].host.clear(); // not recorded: not known to cross, and not written
    EXPECT_FALSE(crossesHosts(t, 1, 2));
    EXPECT_EQ(serializeMeasured(t).find("\"host\": \"\""), std::string::npos);
    EXPECT_NE(serializeMeasured(parseMeasured(kSmall)).find("\"rank\": 0,\n      \"actions\""), std::string::npos);
}

TEST(Measured, NamesAHostThatIsNotText)
{
    try {
        parseMeasured(
            replaced(kSmall, "\"ranks\": [{\"rank\": 0,", "\"ranks\": [{\"rank\": 0, \"host\": 7,"), "m.json");
        FAIL() << "accepted";
    } catch (const FormatError& e) {
        EXPECT_STREQ(e.what(), "m.json: ranks[0].host: must be a string");
    }
}

TEST(Measured, StepsAndMedianStepFromTheActions)
{
    MeasuredTrace t;
    t.ranks.resize(2);
    auto add = [&](int rank, int step, double endUs) {
        MeasuredAction a;
        a.action = parseAction("0F0");
        a.step = step;
        a.endUs = endUs;
        t.ranks[static_cast<std::size_t>(rank)].actions.push_back(a);
    };
    add(0, 0, 50);
    add(1, 0, 90); // step 0: 90
    add(0, 1, 70); // step 1: 70
    add(1, 2, 30);
    add(0, 2, 120); // step 2: 120
    add(1, 3, 80); // step 3: 80
    setStepsFromActions(t);
    ASSERT_EQ(t.steps.size(), 4u);
    EXPECT_EQ(t.steps[0].step, 0);
    EXPECT_DOUBLE_EQ(t.steps[0].makespanUs, 90);
    EXPECT_DOUBLE_EQ(t.steps[1].makespanUs, 70);
    EXPECT_DOUBLE_EQ(t.steps[2].makespanUs, 120);
    EXPECT_DOUBLE_EQ(t.steps[3].makespanUs, 80);
    EXPECT_EQ(t.medianStep, 3); // 70, 80, 90, 120: the lower of the middle two
    EXPECT_DOUBLE_EQ(t.medianMakespanUs(), 80);
    // An even step count: the median step's makespan is the median of the makespans (`run` and `analyze` agree).
    EXPECT_DOUBLE_EQ(t.medianMakespanUs(), median({ 90, 70, 120, 80 }));

    MeasuredTrace empty;
    empty.medianStep = 5;
    setStepsFromActions(empty);
    EXPECT_TRUE(empty.steps.empty());
    EXPECT_EQ(empty.medianStep, 0);
}

TEST(Measured, SlotsForCalibrationCarryRankStepTimesAndBytes)
{
    const std::vector<MeasuredSlot> slots = measuredSlots(parseMeasured(kSmall));
    ASSERT_EQ(slots.size(), 2u);
    EXPECT_EQ(slots[1].rank, 0);
    EXPECT_EQ(slots[1].step, 1);
    EXPECT_EQ(toString(slots[1].action), "(0F7;7B3)OVERLAP_F_B");
    EXPECT_DOUBLE_EQ(slots[1].startUs, 2);
    EXPECT_DOUBLE_EQ(slots[1].endUs, 20);
    EXPECT_DOUBLE_EQ(slots[1].waitUs, 3);
    EXPECT_EQ(slots[1].bytesReceived, 512);
    EXPECT_DOUBLE_EQ(slots[1].busyUs(), 15);
}

TEST(Measured, StageCountComesFromTheRecordedProject)
{
    Project p = defaultProject();
    MeasuredTrace t;
    t.projectJson = serializeProject(p);
    t.variant = "dualpipev";
    EXPECT_EQ(measuredStageCount(t), 8);
    EXPECT_EQ(measuredStageCount(MeasuredTrace {}), 0);
    EXPECT_EQ(measuredStageCount(parseMeasured(kSmall, "m.json"), &p), 8); // variant "v" unknown: the active one
    EXPECT_EQ(measuredStageCount(parseMeasured(
                  replaced(kSmall, "\"project\": {\"format_version\": 1, \"variants\": []}", "\"project\": null"))),
        8); // no project: the largest stage in the actions (7) + 1
}
