// dpstudio import-trace: PyTorch profiler traces (engine/trace/kineto.h) to our measured.json.
#include "commands.h"

#include "base/format.h"
#include "project/predict.h"
#include "trace/kineto.h"
#include "trace/measured.h"

#include <iostream>
#include <optional>

namespace dps::cli {

int cmdImportTrace(const ImportTraceArgs& args)
{
    std::optional<Project> project;
    const Variant* variant = nullptr;
    if (!args.project.empty()) {
        project = loadProject(args.project);
        variant = &variantOf(*project, args.variant, args.project);
    }
    ProfileImportOptions options;
    options.project = project ? &*project : nullptr;
    options.variant = variant;
    options.command = args.command;
    for (const std::string& map : args.maps)
        options.maps.push_back(parseProfileNameMap(map));
    const ProfileImport imported = importProfiles(profileFiles(args.traces), options);
    const MeasuredTrace& trace = imported.trace;
    writeOutput(args.output, serializeMeasured(trace));

    std::ostream& out = (args.output.empty() || args.output == "-") ? std::cerr : std::cout;
    for (const std::string& note : imported.notes)
        std::cerr << "dpstudio: note: " << note << "\n";
    std::size_t actions = 0;
    for (const MeasuredRank& r : trace.ranks)
        actions += r.actions.size();
    out << "imported " << formatCountOf(trace.ranks.size(), "rank") << ", " << formatCountOf(trace.steps.size(), "step")
        << ", " << formatCountOf(actions, "action") << "; median step " << trace.medianStep << ": makespan "
        << formatTime(trace.medianMakespanUs()) << "\n";
    if (project) {
        const Prediction p = predict(*project, *variant, PredictOptions::peaksOnly());
        if (p.valid() && p.makespanUs > 0.0)
            out << "predicted for the project's devices (variant " << variant->name << "): makespan "
                << formatTime(p.makespanUs) << "; measured "
                << formatSignedPercent(trace.medianMakespanUs() / p.makespanUs - 1.0) << "\n";
        else if (!p.error.empty())
            std::cerr << "dpstudio: note: no prediction to compare with: " << p.error << "\n";
    }
    return kExitOk;
}

} // namespace dps::cli
