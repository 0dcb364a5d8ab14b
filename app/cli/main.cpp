// dpstudio: the command line of DualPipe Studio. This file only declares options (CLI11) and calls the
// command functions of commands.h; all the work is in the engine libraries.
#include "commands.h"

#include "base/errors.h"
#include "base/version.h"
#include "launch/launcher.h"
#include "project/presets.h"
#include "protocol/backends.h"
#include "schedule/schedule.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace {

using namespace dps::cli;
using namespace dps;

/// Copies an option's value into an optional only when the user gave it.
template <typename T> void setIf(CLI::Option* opt, const T& value, std::optional<T>& target)
{
    if (opt->count() > 0)
        target = value;
}

/// A count flag's value (ranks, microbatches, layers, steps...): an integer from `minimum` to 2^31 − 1, with a
/// plain message ("must be at least 1, got 0") instead of CLI11's range printed as a 300-digit number.
CLI::Validator countValue(int minimum)
{
    return CLI::Validator(
        [minimum](std::string& text) -> std::string {
            long long v = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (text.empty() || ec != std::errc() || end != text.data() + text.size())
                return "must be an integer, got '" + text + "'";
            if (v < minimum)
                return "must be at least " + std::to_string(minimum) + ", got " + text;
            if (v > std::numeric_limits<int>::max())
                return "must be at most 2147483647, got " + text;
            return {};
        },
        minimum > 0 ? "INT > 0" : "INT >= 0");
}

/// A cost flag's value: a finite number, at least 0 (or above 0 when `positive`), at most 1e12 (µs: 11 days;
/// bytes/µs: 1 EB/s). CLI11's NonNegativeNumber lets "nan" through (the simulator then reports a bogus
/// deadlock) and prints its range as a 300-digit number.
CLI::Validator costValue(bool positive)
{
    return CLI::Validator(
        [positive](std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
                return "must be a number, got '" + text + "'";
            if (positive ? v <= 0 : v < 0)
                return std::string("must be ") + (positive ? "above 0" : "0 or more") + ", got " + text;
            if (v > 1e12)
                return "must be at most 1e12, got " + text;
            return {};
        },
        positive ? "NUMBER > 0" : "NUMBER >= 0");
}

struct CostOptionValues {
    double f = 0, i = 0, w = 0, b = 0, fb = 0, latency = 0, bandwidth = 0, overlap = 0;
    CLI::Option *of = nullptr, *oi = nullptr, *ow = nullptr, *ob = nullptr, *ofb = nullptr, *olat = nullptr,
                *obw = nullptr, *oov = nullptr;

    void add(CLI::App* cmd, std::string& costsFile)
    {
        of = cmd->add_option("--cost-f", f, "forward time per stage, µs (uniform)")->check(costValue(false));
        oi = cmd->add_option("--cost-i", i, "backward-for-inputs time per stage, µs")->check(costValue(false));
        ow = cmd->add_option("--cost-w", w, "backward-for-weights time per stage, µs")->check(costValue(false));
        ob = cmd->add_option("--cost-b", b, "full backward time, µs (default I + W)")->check(costValue(false));
        ofb = cmd->add_option("--cost-fb", fb, "overlapped F&B slot time, µs (default overlap factor × (F + B))")
                  ->check(costValue(false));
        olat = cmd->add_option("--latency", latency, "p2p latency, µs")->check(costValue(false));
        obw = cmd->add_option("--bandwidth", bandwidth, "p2p bandwidth, bytes/µs (0 = unlimited)")
                  ->check(costValue(false));
        oov = cmd->add_option("--overlap-factor", overlap, "F&B slot = factor × (F + B)")->check(costValue(true));
        cmd->add_option("--costs", costsFile, "cost file written by `dpstudio calibrate`");
    }
    /// --this-machine and --profile (simulate, compare).
    static void addMachine(CLI::App* cmd, CostFlags& flags)
    {
        auto* machine = cmd->add_flag("--this-machine", flags.thisMachine,
            "predict a CPU run on this machine: its probed CPU profile (cached), the ranks sharing its cores");
        cmd->add_option("--profile", flags.profile, "with --this-machine: this CPU profile instead")->needs(machine);
    }
    void collect(CostFlags& out) const
    {
        setIf(of, f, out.f);
        setIf(oi, i, out.i);
        setIf(ow, w, out.w);
        setIf(ob, b, out.b);
        setIf(ofb, fb, out.fb);
        setIf(olat, latency, out.latency);
        setIf(obw, bandwidth, out.bandwidth);
        setIf(oov, overlap, out.overlapFactor);
    }
};

const char* kEpilog = R"(Exit codes (every command):
  0    success
  1    the content is wrong (malformed cell, newer format_version, invalid schedule) or a check failed
  2    bad flags, or a file that cannot be read at all (missing, no permission)
  3    a run failed (rank crashed, timed out, mpirun missing)
  130  cancelled (Ctrl-C, SIGTERM)
Actions use PyTorch's notation: 2F0 (stage 2 forward of microbatch 0), 3I1 (backward for inputs),
0W3 (backward for weights), 1B5 (full backward), (0F7;7B3)OVERLAP_F_B (an overlapped F&B slot).)";

/// One subcommand: its CLI11 app and what runs it once the command line is parsed (given the whole argv).
struct Subcommand {
    CLI::App* app = nullptr;
    std::function<int(const std::vector<std::string>& argv)> run;
};

Subcommand addGenerate(CLI::App& app, const std::string& kinds)
{
    auto gen = std::make_shared<GenerateArgs>();
    auto* cGen = app.add_subcommand("generate", "generate a schedule and print it (CSV, JSON or text)");
    cGen->add_option("--schedule", gen->schedule, "schedule kind: " + kinds)->required();
    cGen->add_option("--ranks", gen->ranks, "pipeline ranks (devices)")->required();
    cGen->add_option("--microbatches", gen->microbatches, "microbatches per step")->required();
    cGen->add_option("--stages-per-rank", gen->stagesPerRank,
        "model chunks per rank (default 2 for interleaved-1f1b and the V shapes, else 1)");
    cGen->add_option("--format", gen->format, "csv (PyTorch compute-only), json (the IR), text (one line per rank)")
        ->check(CLI::IsMember({ "csv", "json", "text" }));
    cGen->add_option("-o,--output", gen->output, "write to FILE instead of stdout");
    return { cGen, [gen](const auto&) { return cmdGenerate(*gen); } };
}

Subcommand addValidate(CLI::App& app)
{
    auto val = std::make_shared<ValidateArgs>();
    auto* cVal = app.add_subcommand("validate", "validate a schedule CSV or a project file; exit 0 valid, 1 invalid");
    cVal->add_option("file", val->file, "schedule CSV or *.dpstudio.json")->required();
    cVal->add_option("--dialect", val->dialect, "CSV dialect: auto, current, 2024")
        ->check(CLI::IsMember({ "auto", "current", "2024" }));
    cVal->add_option("--variant", val->variant, "project: validate only this variant");
    cVal->add_flag("--json", val->json, "print the diagnostics as JSON");
    return { cVal, [val](const auto&) { return cmdValidate(*val); } };
}

Subcommand addSimulate(CLI::App& app, const std::string& kinds)
{
    struct Flags {
        SimulateArgs sim;
        CostOptionValues costs;
    };
    auto f = std::make_shared<Flags>();
    SimulateArgs& sim = f->sim;
    auto* cSim = app.add_subcommand("simulate", "predict a schedule's timeline, idle, bubble rate and memory");
    cSim->add_option("project", sim.project, "project file (*.dpstudio.json)");
    cSim->add_option("--variant", sim.variant, "project variant (default: the active one)");
    cSim->add_option("--schedule", sim.schedule, "generate this kind instead: " + kinds);
    cSim->add_option("--ranks", sim.ranks, "with --schedule");
    cSim->add_option("--microbatches", sim.microbatches, "with --schedule");
    cSim->add_option("--stages-per-rank", sim.stagesPerRank, "with --schedule");
    cSim->add_option("--csv", sim.csv, "simulate a PyTorch schedule CSV");
    cSim->add_option("--dialect", sim.dialect, "CSV dialect: auto, current, 2024")
        ->check(CLI::IsMember({ "auto", "current", "2024" }));
    f->costs.add(cSim, sim.costs.costsFile);
    CostOptionValues::addMachine(cSim, sim.costs);
    cSim->add_flag("--json", sim.json, "print makespan_us, bubble_rate and per-rank figures as JSON");
    cSim->add_option("--trace", sim.trace, "write the predicted timeline as a Chrome trace (Perfetto)");
    cSim->add_flag("--comms", sim.comms,
        "add the sends and receives PyTorch's runtime adds (as `dpstudio lower`) and time them where they sit "
        "(a compute_comms CSV is always timed so)");
    return { cSim, [f](const auto&) {
                f->costs.collect(f->sim.costs);
                return cmdSimulate(f->sim);
            } };
}

Subcommand addCompare(CLI::App& app)
{
    struct Flags {
        CompareArgs cmp;
        CostOptionValues costs;
    };
    auto f = std::make_shared<Flags>();
    CompareArgs& cmp = f->cmp;
    auto* cCmp = app.add_subcommand("compare", "one table over a project's variants (or the named kinds)");
    cCmp->add_option("project", cmp.project, "project file (default: the embedded default project)");
    cCmp->add_option("--schedules", cmp.schedules, "kinds to compare, e.g. dualpipe,dualpipev,1f1b")->delimiter(',');
    f->costs.add(cCmp, cmp.costs.costsFile);
    CostOptionValues::addMachine(cCmp, cmp.costs);
    cCmp->add_flag("--json", cmp.json, "print the table as JSON");
    cCmp->add_flag("--same-devices", cmp.sameDevices,
        "put every row on the same device count (the largest), at the same global batch: more data-parallel "
        "replicas, fewer microbatches each");
    return { cCmp, [f](const auto&) {
                f->costs.collect(f->cmp.costs);
                return cmdCompare(f->cmp);
            } };
}

Subcommand addExport(CLI::App& app)
{
    auto exp = std::make_shared<ExportArgs>();
    auto* cExp = app.add_subcommand(
        "export", "export a variant as PyTorch CSV, Chrome trace, project JSON, validated config or framework config");
    cExp->add_option("project", exp->project, "project file")->required();
    cExp->add_option("--variant", exp->variant, "variant (default: the active one)");
    cExp->add_option("--format", exp->format,
            "torch-csv, torch-comms-csv (with sends and receives), chrome-trace, json, validated-config, torchtitan "
            "(-o CONFIG.toml, the CSV beside it), megatron")
        ->required()
        ->check(CLI::IsMember(
            { "torch-csv", "torch-comms-csv", "chrome-trace", "json", "validated-config", "torchtitan", "megatron" }));
    auto* oOut = cExp->add_option("-o,--output", exp->output, "output file");
    auto* oPer = cExp->add_option("--per-rank", exp->perRankDir, "chrome-trace: one file per rank in DIR");
    oOut->excludes(oPer);
    cExp->add_option("--measured", exp->measured, "validated-config: include this run's measured.json");
    return { cExp, [exp](const auto&) { return cmdExport(*exp); } };
}

Subcommand addLower(CLI::App& app)
{
    auto low = std::make_shared<LowerArgs>();
    auto* cLow = app.add_subcommand("lower", "add PyTorch's communication actions to a schedule (compute_comms CSV)");
    cLow->add_option("input", low->input, "compute-only CSV or project file")->required();
    cLow->add_option("--variant", low->variant, "project: this variant (default: the active one)");
    cLow->add_option("-o,--output", low->output, "write to FILE instead of stdout");
    cLow->add_flag("--no-fsdp", low->noFsdp, "no UNSHARD/RESHARD actions");
    cLow->add_flag("--no-reduce-grad", low->noReduceGrad, "no REDUCE_GRAD actions");
    return { cLow, [low](const auto&) { return cmdLower(*low); } };
}

Subcommand addPartition(CLI::App& app)
{
    struct Flags {
        PartitionArgs part;
        int layersPerStage = 0;
        CLI::Option* oLps = nullptr;
    };
    auto f = std::make_shared<Flags>();
    PartitionArgs& part = f->part;
    auto* cPart
        = app.add_subcommand("partition", "set a variant's layers per stage from a Megatron or torchtitan config");
    cPart->add_option("project", part.project, "project file")->required();
    cPart->add_option("--variant", part.variant, "variant (default: the active one)");
    auto* oLayout
        = cPart->add_option("--megatron-layout", part.megatronLayout, "--pipeline-model-parallel-layout string");
    f->oLps
        = cPart->add_option("--layers-per-stage", f->layersPerStage, "torchtitan's pipeline_parallel_layers_per_stage")
              ->check(countValue(1));
    auto* oFirst = cPart->add_option("--first-stage-less-layers", part.firstLess, "torchtitan's (default 1)")
                       ->check(countValue(0));
    auto* oLast = cPart->add_option("--last-stage-less-layers", part.lastLess, "torchtitan's (default 1)")
                      ->check(countValue(0));
    oLayout->excludes(f->oLps)->excludes(oFirst)->excludes(oLast);
    cPart->add_option("-o,--output", part.output, "write the project here instead of in place");
    return { cPart, [f](const auto&) {
                setIf(f->oLps, f->layersPerStage, f->part.layersPerStage);
                return cmdPartition(f->part);
            } };
}

/// `init`'s flags: each value with its option, copied into InitArgs only when given.
struct InitFlags {
    InitArgs ini;
    std::string schedule, dtype, model, device, recompute, scale;
    int ranks = 0, mbs = 0, v = 0, layers = 0, hidden = 0, ffn = 0, seq = 0, mbSize = 0, nodes = 0, gpn = 0, dp = 0,
        tp = 0, cp = 0, zero = 0;
    CLI::Option *oSched = nullptr, *oRanks = nullptr, *oMbs = nullptr, *oV = nullptr, *oLayers = nullptr,
                *oHidden = nullptr, *oFfn = nullptr, *oSeq = nullptr, *oMbSize = nullptr, *oDtype = nullptr,
                *oModel = nullptr, *oDevice = nullptr, *oNodes = nullptr, *oGpn = nullptr, *oDp = nullptr,
                *oRecompute = nullptr, *oScale = nullptr, *oTp = nullptr, *oCp = nullptr, *oZero = nullptr;

    /// The schedule and model sizes of the default project.
    void addSizes(CLI::App* cIni, const std::string& kinds)
    {
        oSched = cIni->add_option("--schedule", schedule, "kind of the one variant: " + kinds);
        oRanks = cIni->add_option("--ranks", ranks, "ranks")->check(countValue(1));
        oMbs = cIni->add_option("--microbatches", mbs, "microbatches")->check(countValue(1));
        oV = cIni->add_option("--stages-per-rank", v, "stages per rank")->check(countValue(1));
        oLayers = cIni->add_option("--layers", layers, "model layers (blocks)")->check(countValue(1));
        oHidden = cIni->add_option("--hidden", hidden, "hidden size")->check(countValue(1));
        oFfn = cIni->add_option("--ffn", ffn, "FFN size (default 4 × hidden)")->check(countValue(1));
        oSeq = cIni->add_option("--seq-len", seq, "sequence length")->check(countValue(1));
        oMbSize = cIni->add_option("--microbatch-size", mbSize, "sequences per microbatch")->check(countValue(1));
        oDtype = cIni->add_option("--dtype", dtype, "fp32 or bf16")->check(CLI::IsMember({ "fp32", "bf16" }));
        cIni->add_flag("--force", ini.force, "overwrite an existing file");
    }

    /// The presets (--model, --device) and what overrides them.
    void addPresets(CLI::App* cIni)
    {
        oModel = cIni->add_option("--model", model,
            "model preset (`dpstudio presets`): its model and training state; --layers, --seq-len and "
            "--microbatch-size override it");
        oDevice = cIni->add_option("--device", device, "device preset, with --model: the cluster");
        oNodes = cIni->add_option("--nodes", nodes, "with --model: nodes (overrides the device preset)")
                     ->check(countValue(1));
        oGpn = cIni->add_option("--gpus-per-node", gpn, "with --model: devices per node (overrides the preset)")
                   ->check(countValue(1));
        oDp = cIni->add_option("--dp", dp, "with --model: data-parallel replicas of the pipeline (default 1)")
                  ->check(countValue(1));
        oRecompute = cIni->add_option("--recompute", recompute, "with --model: none, selective or full")
                         ->check(CLI::IsMember({ "none", "selective", "full" }));
        oScale = cIni->add_option("--scale", scale,
                         "with --model: full (the preset as published, default) or tiny (its structure at sizes a CPU "
                         "runs in "
                         "seconds, fp32; --device defaults to cpu)")
                     ->check(CLI::IsMember(presetScales()));
        oTp = cIni->add_option("--tp", tp, "tensor-parallel size of the variant (divides model.heads; default 1)")
                  ->check(countValue(1));
        oCp = cIni->add_option("--cp", cp, "context-parallel size of the variant (divides model.seq_len; default 1)")
                  ->check(countValue(1));
        cIni->add_flag("--sequence-parallel", ini.sequenceParallel,
            "sequence parallelism with --tp > 1 (reduce-scatter + all-gather instead of all-reduce)");
        oZero = cIni->add_option("--zero", zero, "with --model: ZeRO stage 0-3 (default: the preset's)")
                    ->check(countValue(0));
    }

    void collect()
    {
        setIf(oSched, schedule, ini.schedule);
        setIf(oRanks, ranks, ini.ranks);
        setIf(oMbs, mbs, ini.microbatches);
        setIf(oV, v, ini.stagesPerRank);
        setIf(oLayers, layers, ini.layers);
        setIf(oHidden, hidden, ini.hidden);
        setIf(oFfn, ffn, ini.ffn);
        setIf(oSeq, seq, ini.seqLen);
        setIf(oMbSize, mbSize, ini.microbatchSize);
        setIf(oDtype, dtype, ini.dtype);
        setIf(oModel, model, ini.model);
        setIf(oDevice, device, ini.device);
        setIf(oNodes, nodes, ini.nodes);
        setIf(oGpn, gpn, ini.gpusPerNode);
        setIf(oDp, dp, ini.dp);
        setIf(oRecompute, recompute, ini.recompute);
        setIf(oScale, scale, ini.scale);
        setIf(oTp, tp, ini.tp);
        setIf(oCp, cp, ini.cp);
        setIf(oZero, zero, ini.zero);
    }
};

Subcommand addInit(CLI::App& app, const std::string& kinds)
{
    auto f = std::make_shared<InitFlags>();
    auto* cIni = app.add_subcommand(
        "init", "write a new project (no flags: the default project; --model/--device: from presets)");
    cIni->add_option("-o,--output", f->ini.output, "project file to create")->required();
    f->addSizes(cIni, kinds);
    f->addPresets(cIni);
    return { cIni, [f](const auto&) {
                f->collect();
                return cmdInit(f->ini);
            } };
}

Subcommand addRun(CLI::App& app)
{
    auto run = std::make_shared<launch::RunOptions>();
    auto* cRun = app.add_subcommand("run", "run a project's schedule for real over MPI and measure it");
    cRun->add_option("project", run->project, "project file (*.dpstudio.json)")->required();
    cRun->add_option("--variant", run->variant, "variant (default: the active one)");
    cRun->add_option("--backend", run->backend, backendNameList(", "))
        ->check(CLI::IsMember(std::vector<std::string>(kBackendNames.begin(), kBackendNames.end())));
    cRun->add_option("--steps", run->steps, "measured steps (default 3)")->check(countValue(1));
    cRun->add_option("--warmup", run->warmup, "warm-up steps, not measured (default 1)")->check(countValue(0));
    cRun->add_option("--hostfile", run->hostfile, "Open MPI hostfile for several machines (TCP between hosts)");
    cRun->add_option("--timeout", run->timeoutS, "seconds without progress before a run is ended (default 600)")
        ->check(costValue(true));
    cRun->add_option("--threads", run->threads, "BLAS threads per rank (default 1)")->check(countValue(1));
    cRun->add_flag(
        "--progress-json", run->progressJson, "progress stream (JSON lines) on stdout; humans' text on stderr");
    cRun->add_option("-o,--output", run->output, "measured trace (measured.json)")->required();
    cRun->add_option("--trace-dir", run->traceDir, "also write Chrome traces, one per rank and a combined one");
    cRun->add_option("--costs", run->costsFile, "cost file for the prediction printed at the end");
    auto* oProfile = cRun->add_option("--profile", run->profile,
        "CPU profile to predict a CPU run with (default: this machine's, probed once and cached)");
    cRun->add_flag("--nominal", run->nominal, "predict for the project's devices, not for this machine")
        ->excludes(oProfile);
    return { cRun, [run](const std::vector<std::string>& argv) {
                run->argv = argv;
                return cmdRun(*run);
            } };
}

Subcommand addPresets(CLI::App& app)
{
    auto pre = std::make_shared<PresetsArgs>();
    auto* cPre = app.add_subcommand("presets", "list the model and device presets `init --model/--device` take");
    cPre->add_flag("--json", pre->json, "print as JSON (with each figure's sources)");
    return { cPre, [pre](const auto&) { return cmdPresets(*pre); } };
}

Subcommand addModelInfo(CLI::App& app)
{
    auto mi = std::make_shared<ModelInfoArgs>();
    auto* cMi = app.add_subcommand(
        "model-info", "a project's model: parameters, FLOPs per token, per-stage times and bytes, per-rank parameters");
    cMi->add_option("project", mi->project, "project file (*.dpstudio.json)")->required();
    cMi->add_option("--variant", mi->variant, "variant (default: the active one)");
    cMi->add_flag("--json", mi->json, "print as JSON");
    return { cMi, [mi](const auto&) { return cmdModelInfo(*mi); } };
}

Subcommand addDevices(CLI::App& app)
{
    auto dev = std::make_shared<DevicesArgs>();
    auto* cDev = app.add_subcommand("devices", "what can run here: CPU cores, GPUs, mpirun");
    cDev->add_flag("--json", dev->json, "print as JSON");
    auto* oProbe = cDev->add_flag("--probe", dev->probe,
        "measure this CPU (GEMMs at the model's shapes, GELU/loss/accumulation, MPI p2p), cached per machine");
    cDev->add_flag("--reprobe", dev->reprobe, "with --probe: measure again even when cached")->needs(oProbe);
    cDev->add_option("-o,--output", dev->output, "with --probe: also write the profile (JSON) to FILE")->needs(oProbe);
    cDev->add_option("--project", dev->project, "with --probe: the model's shapes (default: the default project)")
        ->needs(oProbe);
    cDev->add_option("--threads", dev->threads, "with --probe: BLAS threads (default 1)")
        ->check(CLI::Range(1, 1024))
        ->needs(oProbe);
    cDev->add_option("--budget", dev->budget, "with --probe: seconds of measuring to aim for (default 10)")
        ->check(CLI::Range(0.5, 600.0))
        ->needs(oProbe);
    return { cDev, [dev](const auto&) { return cmdDevices(*dev); } };
}

Subcommand addCalibrate(CLI::App& app)
{
    auto cal = std::make_shared<CalibrateArgs>();
    auto* cCal = app.add_subcommand("calibrate", "fit per-stage F/I/W/B, overlap factor and p2p costs to a run");
    cCal->add_option("measured", cal->measured, "measured.json from `dpstudio run`")->required();
    cCal->add_option("--project", cal->project, "the project the run came from (default: recorded in the file)");
    cCal->add_option("-o,--output", cal->output, "costs.json to write")->required();
    cCal->add_flag("--keep-refused", cal->keepRefused,
        "write the fit even when its check on the run refuses it (the reason is still printed)");
    return { cCal, [cal](const auto&) { return cmdCalibrate(*cal); } };
}

Subcommand addAnalyze(CLI::App& app)
{
    struct Flags {
        AnalyzeArgs ana;
        int step = 0;
        CLI::Option* oStep = nullptr;
    };
    auto f = std::make_shared<Flags>();
    AnalyzeArgs& ana = f->ana;
    auto* cAna = app.add_subcommand("analyze", "critical path, its share per rank, stragglers and variance of a run");
    cAna->add_option("measured", ana.measured, "measured.json (from `dpstudio run` or `import-trace`)")->required();
    cAna->add_option("--project", ana.project, "also the prediction's critical path (default: the recorded project)");
    cAna->add_option("--variant", ana.variant, "the variant to predict (default: the run's)");
    f->oStep = cAna->add_option("--step", f->step, "measured step (default: the median step)")->check(countValue(0));
    cAna->add_option("--threshold", ana.threshold, "straggler share above the others' median compute (0.1 = 10 %)")
        ->check(costValue(false));
    cAna->add_flag("--list", ana.list, "list every action and transfer of the path");
    cAna->add_option("--compare", ana.compare, "another measured.json: per-action start and duration differences");
    cAna->add_flag("--json", ana.json, "JSON output");
    return { cAna, [f](const auto&) {
                setIf(f->oStep, f->step, f->ana.step);
                return cmdAnalyze(f->ana);
            } };
}

Subcommand addPlan(CLI::App& app)
{
    auto plan = std::make_shared<PlanArgs>();
    auto* cPlan = app.add_subcommand("plan",
        "search kind, tp, cp, pipeline size, dp, ZeRO, microbatches, partition and recompute for the fastest "
        "step that fits");
    cPlan->add_option("project", plan->project, "project file (*.dpstudio.json): its model and cluster");
    cPlan->add_option("--model", plan->model, "instead of a project: a model preset (`dpstudio presets`)");
    cPlan->add_option("--device", plan->device, "with --model: a device preset");
    cPlan
        ->add_option(
            "--devices", plan->devices, "devices of the job (tp × cp × pipeline size × data-parallel replicas)")
        ->required();
    cPlan->add_option("--global-batch", plan->globalBatch, "sequences per step (microbatches × size × dp)")->required();
    cPlan->add_option("--memory-limit", plan->memoryLimit,
        "per device: bytes (80e9) or with a unit (80GB, 80GiB); default: the cluster's memory per device");
    cPlan->add_option("--kinds", plan->kinds, "kinds to search, e.g. dualpipe,dualpipev (default: all seven)")
        ->delimiter(',');
    cPlan
        ->add_option("--tp", plan->tps,
            "tensor-parallel sizes to search, e.g. 1,2,4,8 (default: divisors of the GPUs per node that divide the "
            "heads, hidden ÷ tp ≥ 1024)")
        ->delimiter(',')
        ->check(countValue(1));
    cPlan
        ->add_option("--cp", plan->cps,
            "context-parallel sizes to search, e.g. 1,2 (default: 1; also 2, 4, 8 for sequences ≥ 16384 tokens)")
        ->delimiter(',')
        ->check(countValue(1));
    cPlan->add_option("--zero", plan->zeros, "ZeRO stages to search, e.g. 1,3 (default: the project's and 1)")
        ->delimiter(',')
        ->check(countValue(0));
    cPlan->add_option("--top", plan->top, "candidates shown and added (default 10)");
    cPlan->add_flag("--json", plan->json, "print the candidates, the Pareto front and the counts as JSON");
    cPlan->add_flag("--add-variants", plan->addVariants, "add the top K to the project as variants (atomic save)");
    return { cPlan, [plan](const auto&) { return cmdPlan(*plan); } };
}

Subcommand addImportTrace(CLI::App& app)
{
    auto imp = std::make_shared<ImportTraceArgs>();
    auto* cImp = app.add_subcommand("import-trace",
        "import PyTorch profiler traces (one per rank, .json or .json.gz, or a folder) as measured.json");
    cImp->add_option("traces", imp->traces, "trace files or folders, one file per rank")->required();
    auto* oImpProject
        = cImp->add_option("--project", imp->project, "check every rank and action against this project's schedule");
    cImp->add_option("--variant", imp->variant, "with --project: the variant that ran (default: the active one)")
        ->needs(oImpProject);
    cImp->add_option("--map", imp->maps, "REGEX=ACTION-TEMPLATE: events named otherwise, e.g. 'fwd(\\d+)_(\\d+)=$1F$2'")
        ->allow_extra_args(false);
    cImp->add_option("-o,--output", imp->output, "measured trace to write (measured.json)")->required();
    return { cImp, [imp](const std::vector<std::string>& argv) {
                for (std::size_t i = 0; i < argv.size(); ++i)
                    imp->command += (i ? " " : "") + argv[i];
                return cmdImportTrace(*imp);
            } };
}

/// Runs the parsed subcommand; an engine error becomes its message on stderr and the exit code of its kind.
int runCommand(const std::vector<Subcommand>& commands, const std::vector<std::string>& argv)
{
    try {
        for (const Subcommand& c : commands)
            if (*c.app)
                return c.run(argv);
    } catch (const dps::ConstraintError& e) {
        // An unknown --schedule/--schedules kind is a bad flag (2); a broken size rule is content (1).
        std::cerr << "dpstudio: error: " << e.what() << "\n";
        return e.rule() == "kind.unknown" ? kExitUsage : kExitContent;
    } catch (const dps::IoError& e) {
        std::cerr << "dpstudio: error: " << e.what() << "\n";
        return kExitUsage;
    } catch (const dps::Error& e) {
        std::cerr << "dpstudio: error: " << e.what() << "\n";
        return kExitContent;
    } catch (const std::bad_alloc&) {
        std::cerr << "dpstudio: error: out of memory: the input is too large for this machine\n";
        return kExitContent;
    } catch (const std::exception& e) {
        std::cerr << "dpstudio: internal error: " << e.what() << "\n";
        return kExitRunFailed;
    }
    return kExitUsage;
}

} // namespace

int main(int argc, char** argv)
{
    CLI::App app { "dpstudio: design, predict, run and compare pipeline-parallel schedules" };
    app.footer(kEpilog);
    app.require_subcommand(1);
    app.set_version_flag("--version", "dpstudio " DPS_VERSION);

    const std::string kinds = generatedKindNames(", ");
    const std::vector<Subcommand> commands { addGenerate(app, kinds), addValidate(app), addSimulate(app, kinds),
        addCompare(app), addExport(app), addLower(app), addPartition(app), addInit(app, kinds), addRun(app),
        addPresets(app), addModelInfo(app), addDevices(app), addCalibrate(app), addAnalyze(app), addPlan(app),
        addImportTrace(app) };

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? kExitOk : kExitUsage;
    }
    return runCommand(commands, std::vector<std::string>(argv, argv + argc));
}
