// dpstudio lower, dpstudio partition, export's framework formats (torchtitan, megatron, torch-comms-csv) and
// validate for PyTorch's compute_comms CSVs: thin calls into engine/schedule/lowering.h, csvio.h and
// engine/project/frameworkexport.h.
#include "commands.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "project/frameworkexport.h"
#include "project/partitioning.h"
#include "project/project.h"
#include "schedule/csvio.h"
#include "schedule/lowering.h"
#include "schedule/validator.h"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

namespace dps::cli {

namespace {

/// Prints every finding to stderr; returns whether the schedule is valid.
bool reportFindings(const std::string& label, const ValidationReport& report)
{
    for (const auto& d : report.diagnostics)
        std::cerr << label << ": " << format(d) << "\n";
    return report.valid();
}

/// Reads PyTorch's CSV in either format, naming the file in a parse error.
TorchSchedule readTorchFile(const std::string& file, const std::string& text)
{
    try {
        return readTorchCsv(text);
    } catch (const ParseError& e) {
        throw ParseError(file + ": " + e.what(), e.row(), e.column());
    }
}

/// validate(TorchSchedule), naming the file in a parse error (numbers too far beyond the file's ops).
ValidationReport validateFile(const std::string& file, const TorchSchedule& schedule)
{
    try {
        return validate(schedule);
    } catch (const ParseError& e) {
        throw ParseError(file + ": " + e.what(), e.row(), e.column());
    }
}

/// The torchtitan CSV beside its config: the config's path with the extension .csv.
std::string csvBeside(const std::string& config)
{
    return std::filesystem::path(config).replace_extension(".csv").string();
}

} // namespace

int validateTorchCsv(const ValidateArgs& args, const std::string& text)
{
    const ValidationReport report = validateFile(args.file, readTorchFile(args.file, text));
    if (args.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& d : report.diagnostics)
            list.push_back(
                { { "severity", std::string(severityName(d.severity)) }, { "rank", d.rank }, { "position", d.position },
                    { "action", d.action }, { "rule", d.rule }, { "message", d.message }, { "in_cycle", d.inCycle } });
        std::cout << nlohmann::json::array({ { { "file", args.file }, { "valid", report.valid() },
                                               { "format", "compute_comms" }, { "diagnostics", list } } })
                         .dump(1)
                  << "\n";
        return report.valid() ? kExitOk : kExitContent;
    }
    for (const auto& d : report.diagnostics)
        std::cout << args.file << ": " << format(d) << "\n";
    std::cout << args.file << (report.valid() ? ": valid (compute_comms)\n" : ": invalid\n");
    return report.valid() ? kExitOk : kExitContent;
}

int cmdLower(const LowerArgs& args)
{
    const std::string text = readTextFile(args.input);
    TorchSchedule out;
    if (csvHasComms(text)) { // already lowered: checked and written back in PyTorch's form
        out = readTorchFile(args.input, text);
    } else {
        Schedule schedule;
        if (looksLikeJsonFile(args.input, text)) {
            const Project project = parseProject(text, args.input);
            schedule = projectSchedule(args.input, project, variantOf(project, args.variant, args.input));
        } else {
            schedule = readScheduleCsv(args.input, text, "auto").schedule;
        }
        if (!reportFindings(args.input, validate(schedule)))
            return kExitContent;
        out = lowerToComms(schedule, LoweringOptions { !args.noFsdp, 3, !args.noReduceGrad });
    }
    if (!reportFindings(args.input, validateFile(args.input, out)))
        return kExitContent;
    writeOutput(args.output, writeTorchCsv(out));
    return kExitOk;
}

int exportFramework(const ExportArgs& args, const Project& project, const Variant& variant)
{
    const std::string label = args.project + " [" + variant.name + "]";
    if (args.format == "torch-comms-csv") {
        const Schedule schedule = projectSchedule(args.project, project, variant);
        if (!reportFindings(label, validate(schedule)))
            return kExitContent;
        writeOutput(args.output, writeTorchCsv(lowerToComms(schedule)));
        return kExitOk;
    }
    const bool titan = args.format == "torchtitan";
    if (titan && (args.output.empty() || args.output == "-")) {
        std::cerr << "dpstudio: error: --format torchtitan writes two files: give the config's path with -o (the "
                     "CSV goes beside it)\n";
        return kExitUsage;
    }
    const FrameworkConfig config
        = titan ? torchtitanConfig(project, variant, csvBeside(args.output)) : megatronArgs(project, variant);
    if (!config.supported) {
        std::cerr << "dpstudio: " << label << ": " << (titan ? "torchtitan" : "Megatron-Core")
                  << " cannot run this schedule: " << config.refusal << "\n";
        return kExitContent;
    }
    if (titan)
        writeFileAtomic(csvBeside(args.output), config.csv);
    writeOutput(args.output, config.text);
    for (const auto& note : config.notes)
        std::cerr << "dpstudio: note: " << note << "\n";
    return kExitOk;
}

int cmdPartition(const PartitionArgs& args)
{
    Project project = loadProject(args.project);
    const Variant& found = variantOf(project, args.variant, args.project);
    Variant& variant = project.variants[static_cast<std::size_t>(&found - project.variants.data())];
    const int stages = stageCount(variant);
    std::vector<int> partition;
    if (!args.megatronLayout.empty()) {
        partition = parseMegatronLayout(args.megatronLayout, variant.ranks, project.model.layers);
        if (static_cast<int>(partition.size()) != stages)
            throw ParseError("--megatron-layout: " + std::to_string(partition.size()) + " stages, variant "
                + variant.name + " has " + std::to_string(stages));
    } else {
        const TorchtitanSplit split { args.layersPerStage, args.firstLess, args.lastLess };
        const int titanStages = torchtitanStageCount(project.model.layers, split, stages);
        if (titanStages != stages)
            throw ConstraintError("torchtitan.split",
                "torchtitan's settings give " + std::to_string(titanStages) + " stages, variant " + variant.name
                    + " has " + std::to_string(stages));
        partition = torchtitanPartition(project.model.layers, stages, args.firstLess, args.lastLess);
    }
    variant.layerPartition = partition;
    validateProject(project);
    writeOutput(args.output.empty() ? args.project : args.output, serializeProject(project));
    std::cerr << "dpstudio: " << variant.name << ": layers per stage " << partitionText(partition) << "\n";
    return kExitOk;
}

} // namespace dps::cli
