#include "document/exports.h"

#include "base/errors.h"
#include "project/predict.h"
#include "schedule/csvio.h"
#include "schedule/lowering.h"
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

FrameworkConfig frameworkExport(
    const Project& project, const SimulationSnapshot& snapshot, const std::string& format, const std::string& csvPath)
{
    FrameworkConfig config;
    if (format == "torch-comms-csv") {
        try {
            config.text = writeTorchCsv(lowerToComms(*snapshot.schedule));
            config.supported = true;
        } catch (const Error& e) {
            config.refusal = e.what();
        }
        return config;
    }
    const Variant& variant = findVariant(project, snapshot.variantName);
    if (format == "torchtitan")
        return torchtitanConfig(project, variant, csvPath);
    if (format == "megatron")
        return megatronArgs(project, variant);
    throw FormatError("unknown export format '" + format + "' (expected torch-comms-csv, torchtitan or megatron)");
}

void writePredictedTrace(const SimulationSnapshot& snapshot, const std::filesystem::path& file)
{
    writeChromeTrace(timelineFromSimulation(*snapshot.schedule, snapshot.costs, snapshot.sim), file);
}

} // namespace dps::ui
