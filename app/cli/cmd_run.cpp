// dpstudio run, devices, calibrate: thin glue over engine/launch (and the calibration of engine/sim).
#include "commands.h"

#include "base/errors.h"
#include "launch/cpuprobe.h"
#include "launch/devices.h"
#include "launch/launcher.h"
#include "launch/report.h"
#include "machine/costsource.h"
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

namespace {

/// The project a calibration is checked on: --project, else the one the run recorded; none when neither.
std::optional<Project> calibrationProject(const CalibrateArgs& args, const MeasuredTrace& trace)
{
    if (!args.project.empty())
        return loadProject(args.project);
    if (!trace.projectJson.empty())
        return parseProject(trace.projectJson, "the project recorded in " + args.measured);
    return std::nullopt;
}

/// `variant` of `project` predicted as `trace`'s run, as dpstudio run's report and the designer predict it
/// (machine/costsource.h costSourceOfRun: for this machine from its cached profile when the run was a CPU run
/// here). Throws FormatError "variant 'x': <error>" when it has no figures.
Prediction predictAsRun(const Project& project, const std::string& variant, const MeasuredTrace& trace)
{
    std::optional<machine::MachineProfile> profile;
    if (machine::measuredHere(trace))
        profile = machine::cachedMachineProfile(std::max(1, trace.threads));
    const machine::RunPredictionSetup setup
        = machine::runPredictionSetup(machine::costSourceOfRun(trace, std::move(profile)), project, variant, false);
    Prediction p = predict(project, variant, setup.options);
    if (!p.valid())
        throw FormatError("variant '" + p.variantName + "': " + p.error);
    return p;
}

/// The fit laid over `project`, predicted as the run executed it, against the run's own steps (launch::checkFit),
/// printed to `out`; none (with a note saying why) for an imported profile, whose waits are inside its slots, or
/// a run the project cannot predict.
std::optional<launch::FitCheck> checkCalibration(
    const Project& project, const MeasuredTrace& trace, const Calibration& calibration, std::ostream& out)
{
    if (!trace.source.empty()) {
        out << "note: an imported profile (" << describeSource(trace.source)
            << ") times its waits inside its slots: the fit is not checked against the run\n";
        return std::nullopt;
    }
    Project fitted = project;
    applyCostsFile(fitted.costs, calibration.costs);
    const std::string variant = trace.variant.empty() || !project.find(trace.variant) ? "" : trace.variant;
    try {
        const launch::FitCheck check
            = launch::checkFit(predictAsRun(fitted, variant, trace).sim, trace, calibration.residuals);
        out << launch::formatFitCheck(check);
        return check;
    } catch (const Error& e) {
        out << "note: the fit is not checked against the run: " << e.what() << "\n";
        return std::nullopt;
    }
}

} // namespace

int cmdCalibrate(const CalibrateArgs& args)
{
    const MeasuredTrace trace = loadMeasured(args.measured);
    const std::optional<Project> project = calibrationProject(args, trace);
    const int stages = measuredStageCount(trace, project ? &*project : nullptr);
    const Calibration calibration = calibrate(measuredSlots(trace), stages);
    const bool toStdout = args.output.empty() || args.output == "-";
    std::ostream& out = toStdout ? std::cerr : std::cout;
    out << formatCalibration(calibration);
    const std::optional<launch::FitCheck> check
        = project ? checkCalibration(*project, trace, calibration, out) : std::nullopt;
    if (!project)
        out << "note: no project recorded in the run nor given (--project): the fit is not checked against the run\n";
    if (check && !check->accepted() && !args.keepRefused) {
        std::cerr << "dpstudio: calibrate: the fit was refused (above); nothing written (--keep-refused writes it)\n";
        return kExitContent;
    }
    if (check && !check->accepted())
        std::cerr << "dpstudio: calibrate: the fit was refused (above); written anyway (--keep-refused)\n";
    writeOutput(args.output, serializeCostsFile(calibration.costs));
    return kExitOk;
}

} // namespace dps::cli
