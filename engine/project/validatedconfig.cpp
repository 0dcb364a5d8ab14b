#include "validatedconfig.h"

#include "base/errors.h"
#include "schedule/schedule_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace dps {

namespace {

using json = nlohmann::json;

/// What a validated config says of a run without a correctness check (e.g. one imported from profiler traces).
const char* const kMeasuredExternally = "measured externally, not checked";

json diagnosticsJson(const ValidationReport& report)
{
    json list = json::array();
    for (const auto& d : report.diagnostics)
        list.push_back({ { "severity", std::string(severityName(d.severity)) }, { "rank", d.rank },
            { "position", d.position }, { "action", d.action }, { "rule", d.rule }, { "message", d.message } });
    return list;
}

json predictionJson(const Prediction& p)
{
    if (p.sim.deadlocked)
        return { { "deadlocked", true }, { "message", p.sim.deadlockMessage } };
    return { { "makespan_us", p.makespanUs }, { "bubble_rate", p.bubbleRate }, { "largest_idle_us", p.largestIdleUs },
        { "total_p2p_bytes", p.p2pBytes } };
}

json runJson(const ValidatedRun& run)
{
    json hardware = { { "host", run.host }, { "cpu", run.cpu } };
    if (!run.hardware.empty())
        hardware["devices"] = run.hardware;
    if (!run.correctnessChecked) // an imported profile: no check, so nothing to say about losses or gradients
        return { { "file", run.file }, { "source", run.source }, { "hardware", hardware }, { "backend", run.backend },
            { "comm", run.comm }, { "variant", run.variant }, { "median_step", run.medianStep },
            { "median_step_makespan_us", run.medianStepMakespanUs }, { "correctness", nullptr },
            { "note", kMeasuredExternally } };
    return { { "file", run.file }, { "hardware", hardware }, { "backend", run.backend }, { "comm", run.comm },
        { "mpi_version", run.mpiVersion }, { "variant", run.variant }, { "median_step", run.medianStep },
        { "median_step_makespan_us", run.medianStepMakespanUs },
        { "correctness",
            { { "passed", run.correctnessPassed }, { "max_loss_error", run.maxLossError },
                { "max_grad_error", run.maxGradError },
                { "thresholds", { { "loss", run.lossThreshold }, { "grad", run.gradThreshold } } },
                { "message", run.correctnessMessage } } } };
}

} // namespace

std::vector<std::string> runProblems(const ValidatedRun& run, const Schedule& schedule, const std::string& variant)
{
    std::vector<std::string> problems;
    if (!run.correctnessChecked)
        problems.push_back(std::string("the run was ") + kMeasuredExternally
            + (run.source.empty() ? std::string() : " (" + run.source + ")"));
    else if (!run.correctnessPassed)
        problems.push_back("the measured run failed its correctness check"
            + (run.correctnessMessage.empty() ? std::string() : ": " + run.correctnessMessage));
    if (run.ranks > 0 && run.ranks != schedule.ranks)
        problems.push_back("the measured run has " + std::to_string(run.ranks) + " ranks, the schedule "
            + std::to_string(schedule.ranks));
    if (!run.variant.empty() && run.variant != variant)
        problems.push_back("the measured run is of variant '" + run.variant + "', not '" + variant + "'");
    return problems;
}

ValidatedConfig buildValidatedConfig(
    const Project& project, const Prediction& prediction, const std::optional<ValidatedRun>& run)
{
    if (!prediction.built())
        throw ConstraintError("validated-config.not-built",
            "no validated config for variant '" + prediction.variantName + "': " + prediction.error);
    const std::string& variant = prediction.variantName;
    const Schedule& schedule = *prediction.schedule;
    const ValidationReport& report = prediction.report;
    ValidatedConfig out;
    if (!report.valid())
        out.reasons.push_back("the schedule is invalid (" + std::to_string(report.errorCount()) + " errors)");
    Project p = project;
    p.activeVariant = variant;
    json config = { { "format_version", kValidatedConfigFormatVersion }, { "kind", "dpstudio-validated-config" } };
    config["project"] = json::parse(serializeProject(p));
    config["variant"] = variant;
    config["schedule"] = toJson(schedule);
    config["validation"] = { { "valid", report.valid() }, { "diagnostics", diagnosticsJson(report) } };
    if (prediction.timed || prediction.sim.deadlocked)
        config["prediction"] = predictionJson(prediction);
    config["measured"] = nullptr;
    if (run) {
        config["measured"] = runJson(*run);
        for (auto& problem : runProblems(*run, schedule, variant))
            out.reasons.push_back(std::move(problem));
    }
    out.validated = out.reasons.empty();
    config["validated"] = out.validated;
    config["not_validated_because"] = out.reasons;
    out.text = config.dump(2) + "\n";
    return out;
}

} // namespace dps
