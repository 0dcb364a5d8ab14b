// dpstudio generate, dpstudio validate.
#include "commands.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "base/format.h"
#include "project/project.h"
#include "schedule/csvio.h"
#include "schedule/generator.h"
#include "schedule/schedule_json.h"
#include "schedule/validator.h"

#include <iostream>
#include <nlohmann/json.hpp>

namespace dps::cli {

namespace {

nlohmann::json diagnosticsJson(const ValidationReport& report)
{
    nlohmann::json list = nlohmann::json::array();
    for (const auto& d : report.diagnostics)
        list.push_back(
            { { "severity", std::string(severityName(d.severity)) }, { "rank", d.rank }, { "position", d.position },
                { "action", d.action }, { "rule", d.rule }, { "message", d.message }, { "in_cycle", d.inCycle } });
    return list;
}

/// Prints a report for one schedule; returns whether it is valid.
bool printReport(const std::string& label, const Schedule& schedule, const ValidationReport& report)
{
    for (const auto& d : report.diagnostics)
        std::cout << label << ": " << format(d) << "\n";
    if (report.valid())
        std::cout << label << ": valid (" << kindDisplayName(schedule.kind) << ", " << schedule.ranks << " ranks, "
                  << schedule.stages << " stages, " << schedule.microbatches << " microbatches, "
                  << schedule.slotCount() << " slots)\n";
    else
        std::cout << label << ": invalid (" << formatCountOf(report.errorCount(), "error") << ")\n";
    return report.valid();
}

} // namespace

int cmdGenerate(const GenerateArgs& args)
{
    GenerateOptions options;
    options.kind = parseGeneratedKind(args.schedule, "--schedule");
    options.ranks = args.ranks;
    options.microbatches = args.microbatches;
    options.stagesPerRank = args.stagesPerRank;
    const Schedule schedule = generate(options);
    std::string text;
    if (args.format == "csv") {
        text = writeCsv(schedule);
        if (csvNeedsExtension(schedule))
            std::cerr << "dpstudio: warning: this CSV puts a stage on two rows (DualPipe's two replicas of every "
                         "stage): a DualPipe Studio extension that PyTorch's schedule loader refuses\n";
    } else if (args.format == "json") {
        text = toJson(schedule).dump(1) + "\n";
    } else {
        text = toText(schedule);
    }
    writeOutput(args.output, text);
    return kExitOk;
}

int cmdValidate(const ValidateArgs& args)
{
    const std::string text = readTextFile(args.file);
    nlohmann::json out = nlohmann::json::array();
    bool allValid = true;
    if (looksLikeJsonFile(args.file, text)) {
        const Project project = parseProject(text, args.file);
        bool any = false;
        for (const auto& variant : project.variants) {
            if (!args.variant.empty() && variant.name != args.variant)
                continue;
            any = true;
            const std::string label = args.file + " [" + variant.name + "]";
            Schedule schedule;
            try {
                schedule = buildSchedule(project, variant);
            } catch (const ConstraintError& e) {
                // A variant that breaks a size rule is an invalid variant, reported like the others.
                allValid = false;
                if (args.json)
                    out.push_back({ { "variant", variant.name }, { "valid", false },
                        { "diagnostics",
                            { { { "severity", "error" }, { "rank", -1 }, { "position", -1 }, { "action", "" },
                                { "rule", e.rule() }, { "message", e.what() }, { "in_cycle", false } } } } });
                else
                    std::cout << label << ": error: " << e.what() << "\n" << label << ": invalid (1 error)\n";
                continue;
            }
            const ValidationReport report = validate(schedule);
            allValid = allValid && report.valid();
            if (args.json)
                out.push_back({ { "variant", variant.name }, { "valid", report.valid() },
                    { "diagnostics", diagnosticsJson(report) } });
            else
                printReport(label, schedule, report);
        }
        if (!any)
            throw FormatError(args.file + ": --variant: no variant named '" + args.variant + "'");
    } else if (csvHasComms(text)) {
        return validateTorchCsv(args, text);
    } else {
        const CsvImport imported = readScheduleCsv(args.file, text, args.dialect);
        const ValidationReport report = validate(imported.schedule);
        allValid = report.valid();
        if (args.json)
            out.push_back(
                { { "file", args.file }, { "valid", report.valid() }, { "diagnostics", diagnosticsJson(report) } });
        else
            printReport(args.file, imported.schedule, report);
    }
    if (args.json)
        std::cout << out.dump(1) << "\n";
    return allValid ? kExitOk : kExitContent;
}

} // namespace dps::cli
