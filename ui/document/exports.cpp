#include "document/exports.h"

#include "schedule/csvio.h"
#include "trace/chrometrace.h"

namespace dps::ui {

ValidatedConfig validatedConfig(
    const Project& project, const SimulationSnapshot& snapshot, const std::optional<ValidatedRun>& run)
{
    return buildValidatedConfig(project, snapshot, run);
}

std::string validatedConfigText(
    const Project& project, const SimulationSnapshot& snapshot, const std::optional<ValidatedRun>& run)
{
    return validatedConfig(project, snapshot, run).text;
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
