// dpstudio run, devices, calibrate: thin glue over engine/launch (and the calibration of engine/sim).
#include "commands.h"

#include "launch/cpuprobe.h"
#include "launch/devices.h"
#include "launch/launcher.h"
#include "sim/calibrate.h"
#include "trace/measured.h"

#include <iostream>
#include <optional>
#include <unistd.h>

namespace dps::cli {

int cmdRun(const launch::RunOptions& options)
{
    launch::RunOptions o = options;
    o.interactive = !o.progressJson && ::isatty(STDERR_FILENO) == 1;
    return launch::runProject(o, std::cout, std::cerr);
}

int cmdDevices(const DevicesArgs& args)
{
    if (args.probe) {
        launch::CpuProbeOptions options;
        const Project project = args.project.empty() ? defaultProject() : loadProject(args.project);
        options.shapes = machine::projectShapes(project);
        if (project.model.kind == ModelKind::Transformer)
            options.project = project; // its stages too (docs/cpu-profile.md)
        options.threads = args.threads;
        options.budgetS = args.budget;
        options.reprobe = args.reprobe;
        const launch::CpuProbeResult result = launch::probeCpu(options, std::cerr);
        const std::string json = machine::serializeCpuProfile(result.profile);
        std::cout << (args.json ? json : machine::formatCpuProfile(result.profile));
        for (const std::string& note : result.notes)
            std::cerr << "dpstudio: note: " << note << "\n";
        if (result.fromCache)
            std::cerr << "dpstudio: reused " << result.cachePath.string() << " (probed " << result.profile.probedAt
                      << "; --reprobe measures again)\n";
        else if (!result.cachePath.empty())
            std::cerr << "dpstudio: saved to " << result.cachePath.string() << "\n";
        if (!args.output.empty())
            writeOutput(args.output, json);
        return kExitOk;
    }
    const launch::DeviceReport report = launch::probeDevices();
    std::cout << (args.json ? launch::devicesJson(report) : launch::formatDevices(report));
    return kExitOk;
}

int cmdCalibrate(const CalibrateArgs& args)
{
    const MeasuredTrace trace = loadMeasured(args.measured);
    std::optional<Project> project;
    if (!args.project.empty())
        project = loadProject(args.project);
    const int stages = measuredStageCount(trace, project ? &*project : nullptr);
    const Calibration calibration = calibrate(measuredSlots(trace), stages);
    writeOutput(args.output, serializeCostsFile(calibration.costs));
    const bool toStdout = args.output.empty() || args.output == "-";
    (toStdout ? std::cerr : std::cout) << formatCalibration(calibration);
    return kExitOk;
}

} // namespace dps::cli
