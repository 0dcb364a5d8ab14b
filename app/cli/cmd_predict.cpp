// dpstudio simulate, compare, export, init: predictions and files from projects, generated schedules and CSVs.
#include "commands.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "base/format.h"
#include "launch/cpuprobe.h"
#include "machine/costsource.h"
#include "project/compare.h"
#include "project/modelcost.h"
#include "project/predict.h"
#include "project/presets.h"
#include "project/project.h"
#include "project/validatedconfig.h"
#include "schedule/csvio.h"
#include "schedule/generator.h"
#include "schedule/lowering.h"
#include "schedule/schedule_json.h"
#include "schedule/validator.h"
#include "trace/chrometrace.h"
#include "trace/measured.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

namespace dps::cli {

namespace {

using json = nlohmann::ordered_json;

const char* const kBubbleDefinition = "bubble rate = Σ idle ÷ (ranks × makespan), idle = makespan − busy";

/// A usage error: printed, exit code 2.
int usage(const std::string& message)
{
    std::cerr << "dpstudio: error: " << message << "\n";
    return kExitUsage;
}

// ---------------------------------------------------------------------------------- inputs

const char* const kUnitCosts = "unit costs (F = I = W = 1, B = 2, F&B = 3, free links)";

/// The source of the flags' costs: their costs file (--costs) and the costs typed for every stage (--cost-*);
/// the project's devices. Throws IoError/FormatError for a costs file that cannot be read.
machine::CostSource flagsSource(const CostFlags& flags)
{
    machine::CostSource source;
    if (!flags.costsFile.empty()) {
        source.costsFile = parseCostsFile(readTextFile(flags.costsFile), flags.costsFile);
        source.costsFileName = flags.costsFile;
    }
    source.everyStage
        = { { flags.f, flags.i, flags.w, flags.b, flags.fb }, flags.latency, flags.bandwidth, flags.overlapFactor };
    return source;
}

/// The source of a project's prediction: the flags' costs, for this machine with --this-machine (its CPU profile
/// at the project's shapes, --profile FILE instead, probed and cached when the cache lacks them; progress on
/// stderr). Throws as flagsSource and launch::machineProfile.
machine::CostSource projectSource(const Project& project, const CostFlags& flags)
{
    machine::CostSource source = flagsSource(flags);
    if (!flags.thisMachine)
        return source;
    machine::CostSource here = machine::CostSource::thisMachine(
        launch::machineProfile(machine::projectShapes(project), 1, flags.profile, 10.0, std::cerr, &project));
    here.costsFile = std::move(source.costsFile);
    here.costsFileName = source.costsFileName;
    here.everyStage = source.everyStage;
    return here;
}

/// What a project's prediction says its costs are: "the project's model and costs" or the machine's label, then
/// the costs file and the flags.
std::string projectCostsNote(const machine::CostSource& source, const Project& project)
{
    return source.costsNote(source.profile ? source.label(project) : std::string("the project's model and costs"));
}

/// What simulate predicts, and what it says about it.
struct Simulated {
    std::string label; ///< e.g. "p.dpstudio.json [dualpipe]" or "golden.csv"
    std::string file; ///< the project file, when the source is one
    std::string costsSource;
    Prediction prediction;
    std::string model; ///< modelSummary() of a transformer project's variant, else ""
    double memoryLimitBytes = 0.0; ///< the project's cluster.memory_per_device_bytes; 0 = none (a CSV)
    std::string machineCosts = {}; ///< --this-machine: formatMachineCosts() of the variant, else ""
};

/// Ranks whose predicted peak memory exceeds the device's memory (none without a limit).
std::vector<int> ranksOverMemory(const Simulated& in)
{
    std::vector<int> over;
    if (in.memoryLimitBytes <= 0.0)
        return over;
    const auto& ranks = in.prediction.sim.ranks;
    for (std::size_t r = 0; r < ranks.size(); ++r)
        if (ranks[r].peakMemoryBytes > in.memoryLimitBytes)
            over.push_back(static_cast<int>(r));
    return over;
}

Simulated fromProject(const std::string& file, const std::string& text, const SimulateArgs& args)
{
    const Project parsed = parseProject(text, file);
    const machine::CostSource source = projectSource(parsed, args.costs);
    const Project project = machine::costedProject(source, parsed);
    const Variant& variant = variantOf(project, args.variant, file);
    const std::optional<machine::MachineCosts> costs = machine::machineCostsOf(source, project, variant);
    Prediction prediction = machine::predictWith(source, parsed, variant.name, !args.trace.empty());
    // The model line only for a prediction with figures (a variant that cannot be built is reported as such).
    std::string model = prediction.valid() ? modelSummary(project, variant) : std::string();
    return { file + " [" + prediction.variantName + "]", file, projectCostsNote(source, project), std::move(prediction),
        std::move(model), project.cluster.memoryPerDeviceBytes,
        costs ? machine::formatMachineCosts(*costs) : std::string() };
}

/// When an imported schedule is exactly what a generator makes, give it that kind (and closed form).
void recogniseKind(Schedule& schedule)
{
    for (ScheduleKind kind : generatedKinds()) {
        const int perRank = stageCountFor(kind, 1, defaultStagesPerRank(kind));
        if (schedule.ranks * perRank != schedule.stages)
            continue;
        try {
            Schedule made = generate({ kind, schedule.ranks, schedule.microbatches, 0 });
            if (made.order == schedule.order) {
                schedule = std::move(made);
                return;
            }
        } catch (const Error&) {
        }
    }
}

/// The prediction of a schedule from the flags' costs; with --comms, of its lowering to PyTorch's sends and receives
/// (lowerToComms, timed where they sit). An order that cannot be lowered is predicted as it is: the validator names
/// its deadlock.
Prediction predictFromFlags(Schedule schedule, const SimulateArgs& args)
{
    const machine::CostSource source = flagsSource(args.costs);
    if (args.comms) {
        try {
            return machine::predictProgramWith(source, lowerToComms(schedule), !args.trace.empty());
        } catch (const ConstraintError&) {
        }
    }
    return machine::predictScheduleWith(source, std::move(schedule), !args.trace.empty());
}

Simulated fromCsv(const std::string& file, const std::string& text, const SimulateArgs& args)
{
    CsvImport imported = readScheduleCsv(file, text, args.dialect); // a compute_comms CSV: validated here
    const machine::CostSource source = flagsSource(args.costs);
    if (csvHasComms(text))
        return { file, {}, source.costsNote(kUnitCosts),
            machine::predictProgramWith(source, readTorchCsv(text), !args.trace.empty()), {} };
    recogniseKind(imported.schedule);
    return { file, {}, source.costsNote(kUnitCosts), predictFromFlags(std::move(imported.schedule), args), {} };
}

Simulated fromKind(const SimulateArgs& args)
{
    Schedule schedule = generate(
        { parseGeneratedKind(args.schedule, "--schedule"), args.ranks, args.microbatches, args.stagesPerRank });
    const std::string label = std::string(kindName(schedule.kind)) + " " + std::to_string(args.ranks) + " ranks × "
        + std::to_string(args.microbatches) + " microbatches";
    return { label, {}, flagsSource(args.costs).costsNote(kUnitCosts), predictFromFlags(std::move(schedule), args),
        {} };
}

/// "" when the source flags are consistent, else what is wrong.
std::string sourceProblem(const SimulateArgs& args)
{
    const int sources = !args.project.empty() + !args.schedule.empty() + !args.csv.empty();
    if (sources != 1)
        return "simulate needs exactly one of: a project file, --schedule KIND --ranks N --microbatches M, "
               "or --csv FILE";
    if (!args.variant.empty() && args.project.empty())
        return "--variant needs a project file";
    if (args.schedule.empty() && (args.ranks || args.microbatches || args.stagesPerRank))
        return "--ranks, --microbatches and --stages-per-rank go with --schedule";
    if (!args.schedule.empty() && (args.ranks <= 0 || args.microbatches <= 0))
        return "--schedule needs --ranks N and --microbatches M (positive)";
    if (args.costs.thisMachine && args.project.empty())
        return "--this-machine needs a project file (the model gives the shapes)";
    if (args.comms && !args.project.empty())
        return "--comms goes with --schedule or --csv (for a project, time `dpstudio export --format "
               "torch-comms-csv`'s CSV with --csv)";
    return {};
}

Simulated loadSimulated(const SimulateArgs& args)
{
    if (!args.schedule.empty())
        return fromKind(args);
    const std::string& file = args.project.empty() ? args.csv : args.project;
    const std::string text = readTextFile(file);
    if (!args.project.empty() && looksLikeJsonFile(file, text))
        return fromProject(file, text, args);
    return fromCsv(file, text, args);
}

/// Prints the validator's errors of an invalid schedule to stderr, one per line after `label`.
void printInvalid(const std::string& label, const ValidationReport& report)
{
    for (const auto& d : report.diagnostics)
        std::cerr << label << ": " << format(d) << "\n";
    std::cerr << "dpstudio: " << label << ": invalid schedule (" << formatCountOf(report.errorCount(), "error")
              << "): not simulated\n";
}

/// Prints why a prediction has no figures (a variant that cannot be built, an invalid schedule, a deadlock)
/// to stderr and returns false; true when it has figures. `file` (may be empty) names the project file.
bool reportFailure(const std::string& label, const std::string& file, const Prediction& p)
{
    if (p.valid())
        return true;
    if (!p.built()) {
        std::cerr << "dpstudio: error: " << (file.empty() ? "" : file + ": ") << p.error << "\n";
    } else if (!p.report.valid()) {
        printInvalid(label, p.report);
    } else {
        std::cerr << "dpstudio: " << label << ": " << p.error << "\n";
        for (const auto& s : p.sim.stuck)
            std::cerr << "  rank " << s.rank << ", position " << s.position << " (" << s.action << ") waits for "
                      << s.waitsFor << "\n";
    }
    return false;
}

// --------------------------------------------------------------------------- closed forms

/// "closed form (PP/2−1)(F&B+B−3W) = 6 µs, valid for …", or why only the simulated value is shown.
std::string closedFormText(const ClosedForm& form)
{
    if (!form.available)
        return form.reason.empty() ? "no closed form for this schedule; simulated value only" : form.reason;
    if (!form.applicable)
        return "closed form " + form.formula + " does not apply: " + form.reason;
    return "closed form " + form.formula + " = " + formatTime(form.valueUs) + ", " + form.reason;
}

json closedFormJson(const ClosedForm& form)
{
    json j = { { "available", form.available }, { "applicable", form.applicable }, { "formula", form.formula },
        { "note", form.reason } };
    j["value_us"] = form.available && form.applicable ? json(form.valueUs) : json(nullptr);
    return j;
}

// ------------------------------------------------------------------------------- simulate

/// The sends and receives timed where they sit: the compute-only makespan and the stalled receives.
json commsJson(const SimResult& sim)
{
    json stalled = json::array();
    for (const StalledReceive& s : sim.stalledReceives)
        stalled.push_back({ { "rank", s.rank }, { "position", s.position }, { "action", s.action },
            { "consumer", s.consumer }, { "late_us", s.lateUs }, { "stall_us", s.stallUs }, { "cause", s.cause } });
    std::size_t count = 0;
    for (const auto& row : sim.comms)
        count += row.size();
    return { { "timed", true }, { "sends_and_receives", count },
        { "compute_only_makespan_us", sim.computeOnlyMakespanUs }, { "stalled_receives", std::move(stalled) } };
}

void printComms(const SimResult& sim)
{
    std::size_t count = 0;
    for (const auto& row : sim.comms)
        count += row.size();
    const double added = sim.makespanUs - sim.computeOnlyMakespanUs;
    std::cout << "comms:        " << count << " sends and receives timed where they sit; compute only "
              << formatTime(sim.computeOnlyMakespanUs) << (added >= 0.0 ? " (+" : " (−") << formatTime(std::abs(added))
              << " from the comms)\n";
    if (sim.stalledReceives.empty()) {
        std::cout << "stalled receives: none\n";
        return;
    }
    std::cout << "stalled receives: " << sim.stalledReceives.size() << "\n";
    for (const StalledReceive& s : sim.stalledReceives)
        std::cout << "  rank " << s.rank << ", position " << s.position << " (" << s.action << "): " << s.consumer
                  << " waited " << formatTime(s.stallUs) << " for it; it came " << formatTime(s.lateUs)
                  << " after its send was ready" << (s.cause.empty() ? "" : " (" + s.cause + ")") << "\n";
}

json simulationJson(const Simulated& in)
{
    const Prediction& p = in.prediction;
    json ranks = json::array();
    for (std::size_t r = 0; r < p.sim.ranks.size(); ++r) {
        const RankResult& rr = p.sim.ranks[r];
        ranks.push_back({ { "rank", r }, { "busy_us", rr.busyUs }, { "idle_us", rr.idleUs },
            { "peak_memory_bytes", rr.peakMemoryBytes }, { "peak_activation_bytes", rr.peakActivationBytes },
            { "peak_inflight_microbatches", rr.peakInflight }, { "p2p_bytes_sent", rr.p2pBytesSent },
            { "parameter_bytes", r < p.staticMemory.size() ? p.staticMemory[r].parameters : 0.0 } });
    }
    const Schedule& s = *p.schedule;
    json out = { { "source", in.label }, { "costs", in.costsSource },
        { "schedule",
            { { "kind", std::string(kindName(s.kind)) }, { "ranks", s.ranks }, { "stages", s.stages },
                { "microbatches", s.microbatches } } },
        { "makespan_us", p.makespanUs }, { "step_us", p.stepUs }, { "tp", p.tp }, { "cp", p.cp }, { "dp", p.dp },
        { "zero", p.zero }, { "devices", p.devices }, { "mfu", p.mfu }, { "allreduce_us", p.allReduceUs },
        { "exposed_allreduce_us", p.exposedAllReduceUs }, { "tokens_per_step", p.tokensPerStep },
        { "tokens_per_s", p.tokensPerSecond() }, { "tokens_per_s_per_device", p.tokensPerSecondPerDevice() },
        { "bubble_rate", p.bubbleRate }, { "bubble_rate_definition", kBubbleDefinition },
        { "total_p2p_bytes", p.p2pBytes }, { "largest_idle_us", p.largestIdleUs },
        { "closed_form", closedFormJson(p.closedForm) },
        { "memory_per_device_bytes", in.memoryLimitBytes > 0.0 ? json(in.memoryLimitBytes) : json(nullptr) },
        { "ranks_over_memory", ranksOverMemory(in) }, { "ranks", std::move(ranks) } };
    if (p.sim.commsTimed)
        out["comms"] = commsJson(p.sim);
    if (p.drawn)
        out["drawn"] = { { "draws", p.drawn->draws }, { "exact_makespan_us", p.drawn->exactUs },
            { "p10_makespan_us", p.drawn->p10Us }, { "p90_makespan_us", p.drawn->p90Us } };
    return out;
}

void printSimulation(const Simulated& in)
{
    const Prediction& p = in.prediction;
    const Schedule& s = *p.schedule;
    std::cout << in.label << ": " << kindDisplayName(s.kind) << ", " << s.ranks << " ranks, " << s.stages << " stages, "
              << s.microbatches << " microbatches\n";
    if (!in.model.empty())
        std::cout << "model:        " << in.model << "\n";
    std::cout << "costs:        " << in.costsSource << "\n"
              << "makespan:     " << formatTime(p.makespanUs)
              << (p.drawn ? "  (" + describeDrawn(*p.drawn) + ")" : std::string()) << "\n";
    if (p.dp > 1)
        std::cout << "step:         " << formatTime(p.stepUs) << "  (makespan + " << formatTime(p.exposedAllReduceUs)
                  << " of the dp " << p.dp << " gradient all-reduce not hidden; largest all-reduce "
                  << formatTime(p.allReduceUs) << ")\n";
    if (p.tokensPerStep > 0.0)
        std::cout << "throughput:   " << formatCount(p.tokensPerSecond()) << " tokens/s, "
                  << formatCount(p.tokensPerSecondPerDevice()) << " per device (" << p.devices << " devices"
                  << (p.tp > 1 ? ", tp " + std::to_string(p.tp) : "")
                  << (p.cp > 1 ? ", cp " + std::to_string(p.cp) : "")
                  << (p.dp > 1 ? ", dp " + std::to_string(p.dp) : "")
                  << (p.zero > 0 ? ", ZeRO-" + std::to_string(p.zero) : "") << ")"
                  << (p.mfu > 0.0 ? "; MFU " + formatPercent(p.mfu) : std::string()) << "\n";
    std::cout << "bubble rate:  " << formatPercent(p.bubbleRate) << "  (" << kBubbleDefinition << ")\n"
              << "largest idle: " << formatTime(p.largestIdleUs) << " simulated; " << closedFormText(p.closedForm)
              << "\n"
              << "p2p traffic:  " << formatBytes(p.p2pBytes) << "\n";
    if (p.sim.commsTimed)
        printComms(p.sim);
    std::cout << "\n";
    std::vector<std::vector<std::string>> rows { { "rank", "busy", "idle", "peak memory", "peak activations",
        "peak in-flight" } };
    for (std::size_t r = 0; r < p.sim.ranks.size(); ++r) {
        const RankResult& rr = p.sim.ranks[r];
        rows.push_back({ std::to_string(r), formatTime(rr.busyUs), formatTime(rr.idleUs),
            formatBytes(rr.peakMemoryBytes), formatBytes(rr.peakActivationBytes), std::to_string(rr.peakInflight) });
    }
    std::cout << formatTable(rows);
    const std::vector<int> over = ranksOverMemory(in);
    if (!over.empty()) {
        std::string list;
        for (std::size_t i = 0; i < over.size() && i < 8; ++i)
            list += (i ? ", " : "") + std::to_string(over[i]);
        if (over.size() > 8)
            list += ", …";
        std::cout << "\nwarning: does not fit: " << over.size() << " of " << p.sim.ranks.size() << " ranks (" << list
                  << ") exceed the device's " << formatBytes(in.memoryLimitBytes)
                  << " (cluster.memory_per_device_bytes); largest peak " << formatBytes(p.peakMemoryBytes)
                  << " on rank " << p.peakMemoryRank << "\n";
    }
    if (!in.machineCosts.empty())
        std::cout << "\n" << in.machineCosts;
}

void writeTrace(const std::string& file, const Simulated& in)
{
    const Prediction& p = in.prediction;
    Timeline timeline = timelineFromSimulation(*p.schedule, p.costs, p.sim);
    timeline.info["source"] = in.label;
    timeline.info["costs"] = in.costsSource;
    writeChromeTrace(timeline, file);
    std::cerr << "dpstudio: wrote " << file << " (open it in Perfetto: ui.perfetto.dev)\n";
}

} // namespace

int cmdSimulate(const SimulateArgs& args)
{
    if (const std::string problem = sourceProblem(args); !problem.empty())
        return usage(problem);
    const Simulated in = loadSimulated(args);
    if (!reportFailure(in.label, in.file, in.prediction))
        return kExitContent;
    if (args.json)
        std::cout << simulationJson(in).dump(2) << "\n";
    else
        printSimulation(in);
    if (!args.trace.empty())
        writeTrace(args.trace, in);
    return kExitOk;
}

// ---------------------------------------------------------------------------------------- compare

namespace {

/// One row per project variant, or per named kind (a kind that cannot hold the stage count is a row with
/// its reason).
std::vector<VariantComparison> compareRows(
    const Project& project, const CompareArgs& args, const machine::CostSource& source)
{
    // Each variant with the project's costs, or (--this-machine) as a CPU run on this machine.
    const auto compareOne = [&](const Variant& v) {
        try {
            return compareVariant(project, v, machine::predictOptions(source, project, v, false));
        } catch (const Error& e) {
            VariantComparison failed;
            failed.variant = v.name;
            failed.kind = v.kind;
            failed.ranks = v.ranks;
            failed.microbatches = v.microbatches;
            failed.error = e.what();
            return failed;
        }
    };
    std::vector<VariantComparison> rows;
    std::vector<std::optional<Variant>> variants; // unset: the kind cannot hold the stage count (its row says why)
    if (args.schedules.empty()) {
        for (const Variant& v : project.variants)
            variants.emplace_back(v);
    } else {
        for (const auto& name : args.schedules) {
            const ScheduleKind kind = parseGeneratedKind(name, "--schedules");
            try {
                variants.emplace_back(variantForKind(project, kind, project.active()));
            } catch (const Error& e) {
                variants.emplace_back(std::nullopt);
                VariantComparison row;
                row.variant = std::string(kindName(kind));
                row.kind = kind;
                row.microbatches = project.active().microbatches;
                row.error = e.what();
                rows.push_back(row);
            }
        }
    }
    // --same-devices: every variant on the most devices any of them uses, at the same global batch.
    int devices = 0;
    if (args.sameDevices)
        for (const auto& v : variants)
            if (v)
                try {
                    devices = std::max(devices, devicesOf(project, *v));
                } catch (const Error&) {
                    // placed again below, where the row reports it
                }
    std::size_t failedAt = 0;
    std::vector<VariantComparison> ordered;
    for (const auto& v : variants) {
        if (!v) {
            ordered.push_back(rows[failedAt++]);
            continue;
        }
        try {
            ordered.push_back(compareOne(args.sameDevices ? onSameDevices(project, *v, devices) : *v));
        } catch (const Error& e) {
            VariantComparison row;
            row.variant = v->name;
            row.kind = v->kind;
            row.ranks = v->ranks;
            row.microbatches = v->microbatches;
            row.dp = std::max(1, v->dp);
            row.tp = std::max(1, v->tp);
            row.cp = std::max(1, v->cp);
            try {
                row.devices = devicesOf(project, *v); // its own devices, as it stands
            } catch (const Error&) {
                row.devices = 0;
            }
            row.error = e.what();
            ordered.push_back(row);
        }
    }
    return ordered;
}

json rowJson(const VariantComparison& row)
{
    json j = { { "variant", row.variant }, { "kind", std::string(kindName(row.kind)) },
        { "devices", row.devices > 0 ? row.devices : row.ranks }, { "ranks", row.ranks }, { "tp", row.tp },
        { "cp", row.cp }, { "dp", row.dp }, { "zero", row.zero }, { "stages", row.stages },
        { "microbatches", row.microbatches } };
    if (!row.error.empty()) {
        j["error"] = row.error;
        return j;
    }
    j.update({ { "parameters_per_device", row.parametersPerDevice },
        { "peak_activation_bytes", row.peakActivationBytes }, { "peak_memory_bytes", row.peakMemoryBytes },
        { "makespan_us", row.makespanUs }, { "bubble_rate", row.bubbleRate }, { "largest_idle_us", row.largestIdleUs },
        { "closed_form", closedFormJson(row.closedForm) }, { "p2p_bytes", row.p2pBytes }, { "step_us", row.stepUs },
        { "tokens_per_step", row.tokensPerStep }, { "tokens_per_s", row.tokensPerSecond },
        { "tokens_per_s_per_device", row.tokensPerSecondPerDevice }, { "mfu", row.mfu } });
    return j;
}

/// The closed-form cell: its value, or "—", with the number of its note below the table (equal notes shared).
std::string closedCell(const ClosedForm& form, std::vector<std::string>& notes)
{
    const std::string note = !form.available ? (form.reason.empty() ? "no closed form for this schedule" : form.reason)
        : form.applicable                    ? form.formula + ", " + form.reason
                                             : form.formula + " does not apply: " + form.reason;
    auto it = std::find(notes.begin(), notes.end(), note);
    if (it == notes.end())
        it = notes.insert(notes.end(), note);
    const std::string ref = "[" + std::to_string(it - notes.begin() + 1) + "]";
    return (form.available && form.applicable ? formatTime(form.valueUs) : std::string("—")) + " " + ref;
}

std::vector<std::string> comparisonCells(const VariantComparison& row, std::vector<std::string>& notes)
{
    const std::string kind(kindDisplayName(row.kind));
    const std::string split = (row.tp > 1 ? " × tp " + std::to_string(row.tp) : "")
        + (row.cp > 1 ? " × cp " + std::to_string(row.cp) : "") + (row.dp > 1 ? " × dp " + std::to_string(row.dp) : "");
    const std::string devices = row.ranks <= 0 ? std::string("—")
        : !split.empty() && row.devices > 0
        ? std::to_string(row.devices) + " (" + std::to_string(row.ranks) + split + ")"
        : std::to_string(row.devices > 0 ? row.devices : row.ranks);
    if (!row.error.empty())
        return { row.variant, kind, devices, "—", row.stages > 0 ? std::to_string(row.stages) : "—", "—", "—", "—", "—",
            "—", "—", "—", "—", "—", "—" };
    return { row.variant, kind, devices, std::to_string(row.microbatches), std::to_string(row.stages),
        formatCount(row.parametersPerDevice), formatBytes(row.peakActivationBytes), formatTime(row.makespanUs),
        formatTime(row.stepUs), formatCount(row.tokensPerSecond), formatCount(row.tokensPerSecondPerDevice),
        formatPercent(row.bubbleRate), formatTime(row.largestIdleUs), closedCell(row.closedForm, notes),
        formatBytes(row.p2pBytes) };
}

void printComparison(const std::string& title, const std::vector<VariantComparison>& rows)
{
    std::vector<std::vector<std::string>> cells { { "variant", "kind", "devices", "microbatches", "stages",
        "params/device", "peak activations", "makespan", "step", "tokens/s", "tokens/s/device", "bubble",
        "largest idle", "closed form", "p2p bytes" } };
    std::vector<std::string> notes;
    for (const auto& row : rows)
        cells.push_back(comparisonCells(row, notes));
    std::cout << title << "\n\n" << formatTable(cells, 2) << "\n" << kBubbleDefinition << "\n";
    for (std::size_t n = 0; n < notes.size(); ++n)
        std::cout << "[" << n + 1 << "] " << notes[n] << "\n";
    for (const auto& row : rows)
        if (!row.error.empty())
            std::cout << "not simulated: " << row.variant << ": " << row.error << "\n";
}

} // namespace

int cmdCompare(const CompareArgs& args)
{
    const std::string source = args.project.empty() ? std::string("default project") : args.project;
    const Project parsed = args.project.empty() ? defaultProject() : parseProject(readTextFile(args.project), source);
    const machine::CostSource costSource = projectSource(parsed, args.costs);
    const Project project = machine::costedProject(costSource, parsed);
    const std::vector<VariantComparison> rows = compareRows(project, args, costSource);
    const std::string costs = projectCostsNote(costSource, project);
    if (!args.json) {
        printComparison(source + (project.name.empty() ? "" : " (" + project.name + ")") + "; costs: " + costs
                + (args.sameDevices ? "; same devices, same global batch" : ""),
            rows);
        return kExitOk;
    }
    json list = json::array();
    for (const auto& row : rows)
        list.push_back(rowJson(row));
    const json out
        = { { "source", source }, { "project", project.name }, { "costs", costs }, { "same_devices", args.sameDevices },
              { "bubble_rate_definition", kBubbleDefinition }, { "rows", std::move(list) } };
    std::cout << out.dump(2) << "\n";
    return kExitOk;
}

// ----------------------------------------------------------------------------------------- export

namespace {

int exportCsv(const ExportArgs& args, const Schedule& schedule, const std::string& label)
{
    if (const ValidationReport report = validate(schedule); !report.valid()) {
        printInvalid(label, report);
        return kExitContent;
    }
    if (csvNeedsExtension(schedule))
        std::cerr << "dpstudio: warning: this CSV puts a stage on two rows (DualPipe's two replicas of every "
                     "stage): a DualPipe Studio extension that PyTorch's schedule loader refuses\n";
    writeOutput(args.output, writeCsv(schedule));
    return kExitOk;
}

int exportTrace(const ExportArgs& args, const Project& project, const Variant& variant, const std::string& label)
{
    const Prediction p = predict(project, variant);
    if (!reportFailure(label, args.project, p))
        return kExitContent;
    Timeline timeline = timelineFromSimulation(*p.schedule, p.costs, p.sim);
    timeline.info.update({ { "source", args.project }, { "project", project.name }, { "variant", variant.name } });
    if (!args.perRankDir.empty()) {
        const auto files = writeChromeTracePerRank(timeline, args.perRankDir);
        std::cerr << "dpstudio: wrote " << files.size() << " per-rank traces to " << args.perRankDir << "\n";
    } else {
        writeOutput(args.output, chromeTrace(timeline).dump() + "\n");
    }
    return kExitOk;
}

int exportValidatedConfig(const ExportArgs& args, const Project& project, const Variant& variant)
{
    const Prediction p = predict(project, variant, PredictOptions::peaksOnly());
    if (!p.built()) { // nothing to record: the variant breaks a size rule
        reportFailure(args.project + " [" + variant.name + "]", args.project, p);
        return kExitContent;
    }
    std::optional<ValidatedRun> run;
    if (!args.measured.empty())
        run = validatedRunOf(loadMeasured(args.measured), args.measured);
    const ValidatedConfig config = buildValidatedConfig(project, p, run);
    writeOutput(args.output, config.text);
    for (const auto& r : config.reasons)
        std::cerr << "dpstudio: not validated: " << r << "\n";
    if (args.measured.empty())
        std::cerr << "dpstudio: note: no measured run recorded (add --measured measured.json from `dpstudio run`)\n";
    return config.validated ? kExitOk : kExitContent;
}

} // namespace

int cmdExport(const ExportArgs& args)
{
    if (!args.perRankDir.empty() && args.format != "chrome-trace")
        return usage("--per-rank goes with --format chrome-trace");
    if (!args.measured.empty() && args.format != "validated-config")
        return usage("--measured goes with --format validated-config");
    Project project = loadProject(args.project);
    const Variant variant = variantOf(project, args.variant, args.project);
    const std::string label = args.project + " [" + variant.name + "]";
    if (args.format == "torch-csv")
        return exportCsv(args, projectSchedule(args.project, project, variant), label);
    if (args.format == "chrome-trace")
        return exportTrace(args, project, variant, label);
    if (args.format == "validated-config")
        return exportValidatedConfig(args, project, variant);
    if (args.format == "torchtitan" || args.format == "megatron" || args.format == "torch-comms-csv")
        return exportFramework(args, project, variant);
    project.activeVariant = variant.name;
    writeOutput(args.output, serializeProject(project));
    return kExitOk;
}

// ------------------------------------------------------------------------------------------- init

namespace {

bool anyVariantFlag(const InitArgs& a)
{
    return a.schedule || a.ranks || a.microbatches || a.stagesPerRank || a.tp || a.cp || a.sequenceParallel;
}

bool anyModelFlag(const InitArgs& a)
{
    return a.layers || a.hidden || a.ffn || a.seqLen || a.microbatchSize || a.dtype;
}

void applyModelFlags(ModelDesc& m, const InitArgs& a)
{
    m.layers = a.layers.value_or(m.layers);
    if (a.hidden)
        m.ffn = a.ffn ? *a.ffn : defaultFfn(*a.hidden);
    m.hidden = a.hidden.value_or(m.hidden);
    m.ffn = a.ffn.value_or(m.ffn);
    m.seqLen = a.seqLen.value_or(m.seqLen);
    m.microbatchSize = a.microbatchSize.value_or(m.microbatchSize);
    if (a.dtype)
        m.dtype = *a.dtype == "bf16" ? DType::BF16 : DType::FP32;
}

/// The one variant of the flags: kind (default dualpipe), ranks (default: those giving 8 stages),
/// microbatches (default 20), stages per rank.
Variant variantFromFlags(const Project& base, const InitArgs& a)
{
    const ScheduleKind kind = a.schedule ? parseGeneratedKind(*a.schedule, "--schedule") : ScheduleKind::DualPipe;
    Variant like = base.active();
    like.layerPartition.clear(); // the model may have changed: split its layers evenly
    Variant v = variantForKind(base, kind, like);
    v.layerPartition.clear();
    v.ranks = a.ranks.value_or(v.ranks);
    v.microbatches = a.microbatches.value_or(v.microbatches);
    v.stagesPerRank = a.stagesPerRank.value_or(0);
    v.tp = a.tp.value_or(1);
    v.cp = a.cp.value_or(1);
    v.sequenceParallel = a.sequenceParallel;
    return v;
}

/// The flag a field of the one variant or the training comes from, for the model's own validation messages
/// ("variants[0].tp: 3 does not divide model.heads 32" is "--tp: 3 does not divide model.heads 32"); "" when the
/// message names no such field.
std::string flagMessage(const std::string& message)
{
    static const std::pair<const char*, const char*> fields[]
        = { { "variants[0].tp: ", "--tp: " }, { "variants[0].cp: ", "--cp: " },
              { "variants[0].sequence_parallel: ", "--sequence-parallel: " }, { "training.zero: ", "--zero: " } };
    for (const auto& [field, flag] : fields)
        if (message.rfind(field, 0) == 0)
            return flag + message.substr(std::string(field).size());
    return {};
}

/// "" when --tp, --cp, --sequence-parallel and --zero go together, else the usage error (exit 2).
std::string parallelFlagsProblem(const InitArgs& a)
{
    if (a.zero && !a.model)
        return "--zero goes with --model PRESET (the default project's block model has no training object)";
    if (a.zero && *a.zero > 3)
        return "--zero: must be 0, 1, 2 or 3, got " + std::to_string(*a.zero);
    if (a.sequenceParallel && a.tp.value_or(1) < 2)
        return "--sequence-parallel: needs --tp 2 or more (it splits the tensor-parallel ranks' norms over the "
               "sequence)";
    return {};
}

/// Splits each variant's layers evenly (writing the partition out), refusing more stages than layers
/// (`layersFlag` names where the layer count came from), builds each schedule (sizes the generator rejects)
/// and validates the project (sizes beyond their limits, modelcost.h), before anything is written.
void finishInitProject(Project& p, const std::string& layersFlag)
{
    for (Variant& v : p.variants) {
        v.layerPartition.clear();
        const int stages = stageCount(v);
        if (p.model.layers < stages)
            throw ConstraintError("init.layers",
                layersFlag + ": " + std::to_string(p.model.layers) + " layers cannot fill the " + std::to_string(stages)
                    + " stages of " + v.name);
        v.layerPartition = effectivePartition(p, v);
        buildSchedule(p, v);
    }
    validateProject(p); // as reading the file back would
}

Project projectFromFlags(const InitArgs& a)
{
    Project p = defaultProject();
    applyModelFlags(p.model, a);
    if (anyVariantFlag(a)) {
        const Variant v = variantFromFlags(p, a);
        p.variants = { v };
        p.activeVariant = v.name;
        p.name
            = std::string(kindDisplayName(v.kind)) + " on " + formatCountOf(static_cast<std::size_t>(v.ranks), "rank");
    }
    finishInitProject(p, "--layers");
    return p;
}

bool anyPresetFlag(const InitArgs& a)
{
    return a.model || a.device || a.nodes || a.gpusPerNode || a.dp || a.recompute || a.scale;
}

/// "" when init's preset flags go together, else the usage error (exit 2): a preset flag without --model,
/// --model without --device, or a block flag the preset fixes (--hidden, --ffn, --dtype).
std::string presetFlagsProblem(const InitArgs& a)
{
    if (!a.model)
        return anyPresetFlag(a) ? "--device, --nodes, --gpus-per-node, --dp, --recompute and --scale go with --model "
                                  "PRESET (`dpstudio presets` lists the presets)"
                                : "";
    if (!a.device && a.scale.value_or("full") != "tiny")
        return "--model needs --device PRESET (`dpstudio presets` lists the presets)";
    const std::pair<bool, const char*> fixed[]
        = { { a.hidden.has_value(), "--hidden" }, { a.ffn.has_value(), "--ffn" }, { a.dtype.has_value(), "--dtype" } };
    for (const auto& [given, flag] : fixed)
        if (given)
            return std::string(flag) + ": cannot be combined with --model: the preset fixes the model's shape "
                + "(--layers, --seq-len and --microbatch-size may override it; edit the project file for more)";
    return {};
}

/// Refuses an id that names no preset: FormatError "--model: unknown model preset "gpt5" (presets: a, b)".
void checkPresetId(
    const std::string& flag, const std::string& what, const std::string& id, const std::vector<PresetInfo>& presets)
{
    std::string ids;
    for (const PresetInfo& p : presets) {
        if (p.id == id)
            return;
        ids += (ids.empty() ? "" : ", ") + p.id;
    }
    throw FormatError(flag + ": unknown " + what + " preset \"" + id + "\" (presets: " + ids + ")");
}

model::Recompute recomputeFromFlag(const std::string& name)
{
    return name == "full"     ? model::Recompute::Full
        : name == "selective" ? model::Recompute::Selective
                              : model::Recompute::None;
}

/// " × tp T × cp C × dp D" for the sizes above 1.
std::string parallelText(const Variant& v)
{
    return (v.tp > 1 ? " × tp " + std::to_string(v.tp) : "") + (v.cp > 1 ? " × cp " + std::to_string(v.cp) : "")
        + (v.dp > 1 ? " × dp " + std::to_string(v.dp) : "");
}

/// `init --model M --device D ...`: the model and training of preset M, the cluster of preset D, one variant.
Project projectFromPreset(const InitArgs& a)
{
    checkPresetId("--model", "model", *a.model, modelPresets());
    const std::string device = a.device.value_or("cpu"); // only --scale tiny leaves it out
    checkPresetId("--device", "device", device, devicePresets());
    Project p = defaultProject();
    ModelPreset full = modelPreset(*a.model);
    full.model.preset = *a.model;
    ModelPreset preset = scaledPreset(std::move(full), a.scale.value_or("full"));
    p.model = std::move(preset.model);
    p.training = preset.training;
    p.cluster = devicePreset(device);
    p.cluster.device = device;
    p.cluster.gpusPerNode = a.gpusPerNode.value_or(p.cluster.gpusPerNode);
    p.cluster.nodes = a.nodes.value_or(p.cluster.nodes);
    p.costs = CostSettings {}; // the preset's training state replaces the default project's cost settings
    p.model.layers = a.layers.value_or(p.model.layers);
    p.model.seqLen = a.seqLen.value_or(p.model.seqLen);
    p.model.microbatchSize = a.microbatchSize.value_or(p.model.microbatchSize);
    if (a.recompute)
        p.model.recompute = recomputeFromFlag(*a.recompute);
    if (a.zero && p.training.present)
        p.training.zero = *a.zero;
    Variant v = variantFromFlags(p, a);
    // A tiny MoE runs its EP group on data-parallel replicas (the runtime needs dp >= ep), so dp defaults to ep there.
    v.dp = a.dp.value_or(a.scale.value_or("full") == "tiny" ? p.model.transformer.moe.ep : 1);
    p.variants = { v };
    p.activeVariant = v.name;
    p.name = p.model.preset + " on " + device + ": " + std::string(kindDisplayName(v.kind)) + " on "
        + formatCountOf(static_cast<std::size_t>(v.ranks), "rank") + parallelText(v);
    finishInitProject(p, a.layers ? "--layers" : "--model " + *a.model + " (its model.layers)");
    return p;
}

} // namespace

int cmdInit(const InitArgs& args)
{
    if (const std::string problem = presetFlagsProblem(args); !problem.empty())
        return usage(problem);
    if (const std::string problem = parallelFlagsProblem(args); !problem.empty())
        return usage(problem);
    std::error_code ec;
    if (std::filesystem::exists(args.output, ec) && !args.force)
        return usage(args.output + ": already exists (use --force to overwrite)");
    Project project;
    try {
        project = args.model                             ? projectFromPreset(args)
            : anyVariantFlag(args) || anyModelFlag(args) ? projectFromFlags(args)
                                                         : defaultProject();
    } catch (const FormatError& e) {
        if (const std::string flagged = flagMessage(e.what()); !flagged.empty())
            return usage(flagged); // the model refuses a flag's value: a bad flag, nothing written
        throw;
    }
    saveProject(project, args.output);
    std::cout << "wrote " << args.output << ":";
    for (const auto& v : project.variants)
        std::cout << " " << v.name << " (" << formatCountOf(static_cast<std::size_t>(v.ranks), "rank")
                  << parallelText(v) << ", " << formatCountOf(static_cast<std::size_t>(stageCount(v)), "stage") << ", "
                  << formatCountOf(static_cast<std::size_t>(v.microbatches), "microbatch", "microbatches") << ")"
                  << (v.name == project.activeVariant ? " active" : "");
    std::cout << "\n";
    return kExitOk;
}

} // namespace dps::cli
