#include "exports.h"

#include "schedule/csvio.h"
#include "schedule/schedule_json.h"
#include "trace/chrometrace.h"

#include <nlohmann/json.hpp>

namespace dps::ui {

namespace {

using json = nlohmann::json;

json diagnosticsJson(const ValidationReport& report)
{
    json list = json::array();
    for (const auto& d : report.diagnostics)
        list.push_back({ { "severity", std::string(severityName(d.severity)) }, { "rank", d.rank },
            { "position", d.position }, { "action", d.action }, { "rule", d.rule }, { "message", d.message } });
    return list;
}

json predictionJson(const SimulationSnapshot& s)
{
    if (!s.timed)
        return { { "deadlocked", s.sim.deadlocked }, { "message", s.sim.deadlockMessage } };
    return { { "makespan_us", s.sim.makespanUs }, { "bubble_rate", s.sim.bubbleRate },
        { "largest_idle_us", s.largestIdle().first }, { "total_p2p_bytes", s.sim.totalP2pBytes } };
}

} // namespace

std::string validatedConfigText(const Project& project, const SimulationSnapshot& snapshot)
{
    Project p = project;
    p.activeVariant = snapshot.variantName;
    std::vector<std::string> reasons;
    if (!snapshot.report.valid())
        reasons.push_back("the schedule is invalid (" + std::to_string(snapshot.report.errorCount()) + " errors)");
    json config = { { "format_version", kValidatedConfigFormatVersion }, { "kind", "dpstudio-validated-config" } };
    config["project"] = json::parse(serializeProject(p));
    config["variant"] = snapshot.variantName;
    config["schedule"] = toJson(*snapshot.schedule);
    config["validation"]
        = { { "valid", snapshot.report.valid() }, { "diagnostics", diagnosticsJson(snapshot.report) } };
    if (snapshot.report.valid())
        config["prediction"] = predictionJson(snapshot);
    config["measured"] = nullptr;
    config["validated"] = reasons.empty();
    config["not_validated_because"] = reasons;
    return config.dump(2) + "\n";
}

std::string torchCsvText(const SimulationSnapshot& snapshot, std::vector<std::string>& warnings)
{
    if (csvNeedsExtension(*snapshot.schedule))
        warnings.push_back("this schedule puts a stage on two rows (DualPipe's replicas): our extension of the "
                           "format, which PyTorch's loader refuses");
    return writeCsv(*snapshot.schedule);
}

void writePredictedTrace(const SimulationSnapshot& snapshot, const std::filesystem::path& file)
{
    writeChromeTrace(timelineFromSimulation(*snapshot.schedule, snapshot.costs, snapshot.sim), file);
}

} // namespace dps::ui
