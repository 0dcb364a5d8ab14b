// dpstudio run, devices, calibrate: thin glue over engine/runtime/launch.
#include "commands.h"

#include "launch/calibrate.h"
#include "launch/devices.h"
#include "launch/launcher.h"
#include "trace/measured.h"

#include <iostream>
#include <optional>
#include <unistd.h>

namespace dps::cli {

namespace {

launch::RunOptions runOptions(const RunArgs& args)
{
    launch::RunOptions o;
    o.project = args.project;
    o.variant = args.variant;
    o.backend = args.backend;
    o.steps = args.steps;
    o.warmup = args.warmup;
    o.hostfile = args.hostfile;
    o.timeoutS = args.timeoutS;
    o.threads = args.threads;
    o.progressJson = args.progressJson;
    o.output = args.output;
    o.traceDir = args.traceDir;
    o.costsFile = args.costsFile;
    o.argv = args.argv;
    o.interactive = !args.progressJson && ::isatty(STDERR_FILENO) == 1;
    return o;
}

} // namespace

int cmdRun(const RunArgs& args)
{
    return launch::runProject(runOptions(args), std::cout, std::cerr);
}

int cmdDevices(const DevicesArgs& args)
{
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
    const int stages = launch::measuredStageCount(trace, project ? &*project : nullptr);
    const launch::Calibration calibration = launch::calibrate(trace, stages);
    writeOutput(args.output, serializeCostsFile(calibration.costs));
    const bool toStdout = args.output.empty() || args.output == "-";
    (toStdout ? std::cerr : std::cout) << launch::formatCalibration(calibration);
    return kExitOk;
}

} // namespace dps::cli
