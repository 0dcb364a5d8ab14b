// measured.json: reading the documented format, round trip, and refusing what it cannot read.
#include "trace/measured.h"
#include "base/errors.h"
#include "schedule/generator.h"
#include "sim/costmodel.h"
#include "support/synthetic.h"

#include <gtest/gtest.h>

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
        EXPECT_NE(what.find("(1)"), std::string::npos) << what;
    }
}

TEST(Measured, NamesTheFieldAtFault)
{
    auto messageOf = [](const std::string& text) {
        try {
            parseMeasured(text, "m.json");
        } catch (const FormatError& e) {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    EXPECT_EQ(messageOf(replaced(kSmall, "\"end_us\": 10,", "")), "m.json: ranks[0].actions[0].end_us: missing");
    EXPECT_EQ(messageOf(replaced(kSmall, "\"step\": 0, \"start_us\": 1.5", "\"step\": \"x\", \"start_us\": 1.5")),
        "m.json: ranks[0].actions[0].step: must be an integer");
    EXPECT_NE(messageOf(replaced(kSmall, "\"0F0\"", "\"0Q0\"")).find("ranks[0].actions[0].action"), std::string::npos);
    EXPECT_EQ(messageOf(replaced(kSmall, "\"median_step\": 1,", "")), "m.json: median_step: missing");
    EXPECT_NE(messageOf("{").find("not valid JSON"), std::string::npos);
    EXPECT_EQ(messageOf("[]"), "m.json: the top level: must be an object");
}

TEST(Measured, LoadReportsAnUnreadableFileAsIoError)
{
    EXPECT_THROW(loadMeasured("/nonexistent/measured.json"), IoError);
}
