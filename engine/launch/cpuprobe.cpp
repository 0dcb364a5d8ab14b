#include "cpuprobe.h"

#include "launcher.h"
#include "process.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "base/format.h"
#include "project/transformercost.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <future>
#include <numeric>
#include <ostream>
#include <set>
#include <unistd.h>

namespace dps::launch {

using namespace dps::machine;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

/// A private folder for the workers' outputs; removed with everything in it.
class ScratchDir {
public:
    ScratchDir()
    {
        std::string pattern = (fs::temp_directory_path() / "dpstudio-probe-XXXXXX").string();
        if (!::mkdtemp(pattern.data()))
            throw IoError(
                fs::temp_directory_path().string() + ": cannot create a temporary folder: " + std::strerror(errno));
        m_path = pattern;
    }
    ~ScratchDir()
    {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

std::string lower(std::string text)
{
    for (char& c : text)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

/// The last non-empty line of a process's stderr, for messages.
std::string lastLine(const std::string& text)
{
    std::string last;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string line = text.substr(start, end - start);
        if (line.find_first_not_of(" \t\r") != std::string::npos)
            last = line;
        start = end + 1;
    }
    return last;
}

std::string failure(const CapturedRun& run)
{
    if (!run.started)
        return "cannot start: " + run.err;
    if (run.timedOut)
        return "timed out";
    const std::string line = lastLine(run.err);
    return run.status.describe() + (line.empty() ? "" : ": " + line);
}

std::chrono::milliseconds timeoutFor(double measuringS)
{
    // Generous: a large model's shapes take longer than the budget (each is timed at least once after a
    // warm-up); the timeout only catches a hung worker.
    return std::chrono::milliseconds(static_cast<long long>((measuringS * 10 + 600) * 1000));
}

/// Runs a worker probe mode that writes a profile to `file` and reads it back; nullopt (with `why`) when it
/// fails.
std::optional<CpuProfile> runProbeMode(const std::vector<std::string>& argv, const std::vector<std::string>& env,
    const fs::path& file, double measuringS, std::string& why)
{
    const CapturedRun run = runCaptured(argv, env, timeoutFor(measuringS));
    if (!run.started || run.timedOut || run.status.exitCode != 0) {
        why = failure(run);
        return std::nullopt;
    }
    return loadCpuProfile(file);
}

/// F + I + W GEMM throughput over every shape: summed FLOPs over summed median times.
double gemmThroughput(const CpuProfile& profile)
{
    double flops = 0, us = 0;
    for (const ShapeMeasure& s : profile.shapes)
        for (const GemmMeasure& g : s.gemms) {
            flops += g.flops();
            us += g.timeUs;
        }
    return us > 0 ? flops / (us * 1e-6) : 0.0;
}

std::string byteListText(const std::vector<ProbeShape>& shapes)
{
    std::set<std::uint64_t> sizes { 8, 1024, 65536, 262144, 1048576, 4194304 };
    for (const ProbeShape& s : shapes) // the messages between stages: T × h fp32 elements
        sizes.insert(static_cast<std::uint64_t>(s.tokens) * static_cast<std::uint64_t>(s.hidden) * 4u);
    std::string text;
    for (const std::uint64_t b : sizes)
        if (b <= (1u << 30))
            text += (text.empty() ? "" : ",") + std::to_string(b);
    return text;
}

std::string secondsText(double s)
{
    return formatNumber(s, 3);
}

/// A transformer stage to time: its key and where the project has it (variant index, stage).
struct StageToTime {
    TransformerStageKey key;
    int variant = 0;
    int stage = 0;
};

/// The most weights and gradients (fp32 bytes) of one stage the transformer probe builds: a tiny or small model's
/// stages are megabytes; a full-size preset's (DeepSeek-V3: tens of GB a stage) are not timed on a CPU.
constexpr double kMaxProbedStageBytes = 2.0 * 1024 * 1024 * 1024;

/// The distinct stages of the probe's transformer project (of its chosen variants), in variant and stage order.
/// A stage larger than kMaxProbedStageBytes is left out with a note.
std::vector<StageToTime> transformerStagesOf(const CpuProbeOptions& options, std::vector<std::string>& notes)
{
    std::vector<StageToTime> out;
    if (!options.project || options.project->model.kind != ModelKind::Transformer)
        return out;
    const Project& project = *options.project;
    for (std::size_t v = 0; v < project.variants.size(); ++v) {
        const Variant& variant = project.variants[v];
        if (!options.variants.empty()
            && std::find(options.variants.begin(), options.variants.end(), variant.name) == options.variants.end())
            continue;
        const std::vector<TransformerStageKey> keys = transformerStageKeys(project, variant);
        const std::vector<int> partition = effectivePartition(project, variant);
        const DevicePlacement placement = placementOf(project, variant);
        int firstLayer = 0;
        for (std::size_t s = 0; s < keys.size(); firstLayer += partition[s], ++s) {
            if (std::any_of(out.begin(), out.end(), [&](const StageToTime& t) { return t.key == keys[s]; }))
                continue;
            // Weights and gradients in fp32, as the CPU backend holds them (the model library's count).
            const double bytes = 2.0 * 4.0
                * transformerStageCost(
                    project, variant, placement, firstLayer, partition[s], s == 0, s + 1 == keys.size(), "layers")
                      .parameterCount;
            if (bytes > kMaxProbedStageBytes) {
                notes.push_back("transformer stage " + std::to_string(s) + " of variant " + variant.name + " ("
                    + keys[s].layers + ") not timed: its weights and gradients take " + formatBytes(bytes)
                    + " in fp32, more than the probe builds (" + formatBytes(kMaxProbedStageBytes) + ")");
                continue;
            }
            out.push_back({ keys[s], static_cast<int>(v), static_cast<int>(s) });
        }
    }
    return out;
}

/// Times the transformer stages of the probe's project that `profile` lacks (every one with `reprobe`) with
/// `dpstudio-worker --probe-transformer`, under the kernel the profile's figures are for, and adds them to the
/// profile (the new ones first, at most kMaxCachedTransformerStages); a stage too large to build is a note.
/// Returns whether it measured any. Throws IoError when the worker fails.
bool addTransformerStages(CpuProfile& profile, const CpuProbeOptions& options, const std::string& workerPath,
    const std::string& threadText, const fs::path& scratch, double budget, std::ostream& log,
    std::vector<std::string>& notes)
{
    std::vector<StageToTime> missing;
    for (const StageToTime& t : transformerStagesOf(options, notes))
        if (options.reprobe || !profile.transformerStage(t.key))
            missing.push_back(t);
    if (missing.empty())
        return false;
    const fs::path projectFile = scratch / "transformer-project.json";
    writeFileAtomic(projectFile, serializeProject(*options.project));
    std::string stages;
    for (const StageToTime& t : missing)
        stages += (stages.empty() ? "" : ",") + std::to_string(t.variant) + ":" + std::to_string(t.stage);
    // 70 % of the budget as the kernels get, at most 1 s a stage: a stage's medians settle within a few hundred
    // repetitions of a tiny model, and a large one is timed once or a few times whatever the budget.
    const double seconds = std::min(budget * 0.7, 1.0 * static_cast<double>(missing.size()));
    const char* userCore = std::getenv("OPENBLAS_CORETYPE");
    const bool setCore = !(userCore && *userCore) && !profile.kernel.empty();
    log << "dpstudio: timing " << formatCountOf(missing.size(), "transformer stage") << " ("
        << (profile.kernel.empty() ? std::string("OpenBLAS's own") : profile.kernel) << " kernels, "
        << secondsText(seconds) << " s)\n"
        << std::flush;
    const fs::path file = scratch / "transformer.json";
    std::string why;
    const std::optional<CpuProfile> p = runProbeMode(
        { workerPath, "--probe-transformer", "--project", projectFile.string(), "--stages", stages, "--threads",
            threadText, "--seconds", secondsText(seconds), "-o", file.string() },
        setCore ? environmentWith({ "OPENBLAS_CORETYPE=" + profile.kernel }) : environmentWith({}), file, seconds, why);
    if (!p)
        throw IoError(workerPath + " --probe-transformer failed: " + why);
    std::vector<TransformerStageMeasure> kept = p->transformerStages;
    for (TransformerStageMeasure& t : profile.transformerStages)
        if (kept.size() < kMaxCachedTransformerStages
            && std::none_of(kept.begin(), kept.end(), [&](const TransformerStageMeasure& k) { return k.key == t.key; }))
            kept.push_back(std::move(t));
    profile.transformerStages = std::move(kept);
    return true;
}

/// Writes the profile to the machine's cache (a failure is a note and clears the path).
void saveToCache(CpuProbeResult& result)
{
    try {
        result.cachePath = saveCpuProfileToCache(result.profile);
    } catch (const IoError& e) {
        result.notes.push_back(std::string("not cached: ") + e.what());
        result.cachePath.clear();
    }
}

/// What every step of a probe needs: the options, the worker, the scratch folder, the budget and the log.
struct ProbeRun {
    const CpuProbeOptions& options;
    std::ostream& log;
    std::string workerPath;
    std::string threadText;
    fs::path scratch;
    double budget = 0.0; ///< seconds of measuring to aim for
    Clock::time_point started;
    std::string userCore; ///< OPENBLAS_CORETYPE as the user set it, or ""

    double elapsedS() const { return std::chrono::duration<double>(Clock::now() - started).count(); }
    bool addStages(CpuProfile& profile, std::vector<std::string>& notes) const
    {
        return addTransformerStages(profile, options, workerPath, threadText, scratch, budget, log, notes);
    }
};

/// The worker's path: the options', else found beside dpstudio. Throws IoError when there is none.
std::string workerPathOf(const CpuProbeOptions& options)
{
    std::optional<fs::path> worker = options.worker.empty() ? findWorker() : std::optional<fs::path>(options.worker);
    if (!worker)
        throw IoError("dpstudio-worker not found: set DPSTUDIO_WORKER, or install it next to dpstudio or in "
                      "../libexec relative to it");
    return worker->string();
}

/// `dpstudio-worker --probe-compute` at `shapes` for `seconds` under OpenBLAS core `core` ("" = the environment's
/// own choice), its profile written to `file` and read back; nullopt (with `why`) when it fails.
std::optional<CpuProfile> runComputeProbe(const ProbeRun& run, const std::vector<ProbeShape>& shapes,
    const std::string& core, double seconds, const fs::path& file, std::string& why)
{
    return runProbeMode({ run.workerPath, "--probe-compute", "--shapes", shapeListText(shapes), "--threads",
                            run.threadText, "--seconds", secondsText(seconds), "-o", file.string() },
        core.empty() ? environmentWith({}) : environmentWith({ "OPENBLAS_CORETYPE=" + core }), file, seconds, why);
}

/// The machine key and the kernel candidates, from the worker (it links OpenBLAS; dpstudio does not).
/// Throws IoError when the worker fails.
CpuProfile probeInfo(const ProbeRun& run)
{
    std::string why;
    const fs::path infoFile = run.scratch / "info.json";
    const std::optional<CpuProfile> info
        = runProbeMode({ run.workerPath, "--probe-info", "--threads", run.threadText, "-o", infoFile.string() },
            environmentWith({}), infoFile, 0, why);
    if (!info || !info->kernelChoice)
        throw IoError(run.workerPath + " --probe-info failed: " + (why.empty() ? "no kernel information" : why));
    return *info;
}

/// Ends a probe: the project's missing transformer stages timed into `profile`, its time stamp and duration
/// set, then kept as the result and written to the cache.
void finishProfile(const ProbeRun& run, CpuProfile profile, CpuProbeResult& result)
{
    run.addStages(profile, result.notes);
    profile.probedAt = utcTimestamp();
    profile.probeSeconds = run.elapsedS();
    result.profile = std::move(profile);
    saveToCache(result);
}

/// Extends this machine's cached profile with only the missing shapes, under the kernel its figures are for
/// (the kernel choice and the p2p fit are the machine's, not the shapes'). Returns false, with a note, when
/// the worker cannot time them under that kernel (the caller then probes in full).
bool extendCached(const ProbeRun& run, CpuProfile& cached, CpuProbeResult& result)
{
    std::vector<ProbeShape> missing;
    for (const ProbeShape& shape : run.options.shapes)
        if (!profileCoversShapes(cached, { shape }))
            missing.push_back(shape);
    const double seconds = run.budget * 0.7;
    const std::string core = run.userCore.empty() ? cached.kernel : std::string();
    run.log << "dpstudio: timing " << cached.kernel << " kernels at " << shapeListText(missing) << " ("
            << secondsText(seconds) << " s): this machine's profile does not hold them yet\n"
            << std::flush;
    std::string why;
    const std::optional<CpuProfile> p
        = runComputeProbe(run, missing, core, seconds, run.scratch / "compute-extend.json", why);
    if (!p || lower(p->kernel) != lower(cached.kernel)) {
        result.notes.push_back("the cached profile could not be extended ("
            + (p ? "the worker loaded " + p->kernel + ", not " + cached.kernel : why) + "): probing in full");
        return false;
    }
    CpuProfile extended = std::move(cached);
    std::vector<ShapeMeasure> kept = p->shapes; // the new shapes first, then the cache's, at most 8
    for (ShapeMeasure& s : extended.shapes)
        if (kept.size() < kMaxCachedShapes)
            kept.push_back(std::move(s));
    extended.shapes = std::move(kept);
    finishProfile(run, std::move(extended), result);
    return true;
}

/// `shape`'s GEMMs timed for kDriftCheckSeconds under OpenBLAS core `core` in `processes` worker processes at once;
/// their GEMM throughputs (FLOP/s), or nullopt with `why` when one failed or loaded another kernel than `kernel`.
std::optional<std::vector<double>> timeCheckProcesses(const ProbeRun& run, int processes, const ProbeShape& shape,
    const std::string& core, const std::string& kernel, std::string& why)
{
    std::vector<std::future<std::pair<std::optional<CpuProfile>, std::string>>> started;
    for (int i = 0; i < processes; ++i)
        started.push_back(std::async(std::launch::async, [&run, &shape, &core, i] {
            std::string failed;
            std::optional<CpuProfile> p = runComputeProbe(run, { shape }, core, kDriftCheckSeconds,
                run.scratch / ("compute-check-" + std::to_string(i) + ".json"), failed);
            return std::make_pair(std::move(p), failed);
        }));
    std::vector<double> rates;
    for (auto& s : started) {
        const auto [p, failed] = s.get();
        if (!p || p->shapes.empty() || lower(p->kernel) != lower(kernel))
            why = p ? "the worker loaded " + p->kernel + ", not " + kernel : failed;
        else
            rates.push_back(p->shapes.front().gemmFlopsPerSecond());
    }
    if (rates.size() != started.size())
        return std::nullopt;
    return rates;
}

/// CpuProbeOptions::checkDrift: `cached`'s GEMMs at the first shape asked for, timed again for kDriftCheckSeconds
/// under the kernel its figures are for, in checkProcesses processes at once; their mean throughput now ÷ the
/// profile's − 1. Unset, with a note, when the worker cannot time them under that kernel.
std::optional<double> measureDrift(const ProbeRun& run, const CpuProfile& cached, CpuProbeResult& result)
{
    const ProbeShape& shape = run.options.shapes.front();
    const auto then = std::find_if(
        cached.shapes.begin(), cached.shapes.end(), [&](const ShapeMeasure& s) { return s.shape == shape; });
    if (then == cached.shapes.end() || then->gemmFlopsPerSecond() <= 0.0)
        return std::nullopt;
    const std::string core = run.userCore.empty() ? cached.kernel : std::string();
    const int processes = std::max(1, run.options.checkProcesses);
    run.log << "dpstudio: checking this machine's profile (probed " << cached.probedAt << "): " << cached.kernel
            << " GEMMs at " << shapeListText({ shape }) << " (" << secondsText(kDriftCheckSeconds) << " s"
            << (processes > 1 ? ", " + std::to_string(processes) + " processes at once, as the ranks will run" : "")
            << ")\n"
            << std::flush;
    std::string why;
    const std::optional<std::vector<double>> rates
        = timeCheckProcesses(run, processes, shape, core, cached.kernel, why);
    if (!rates) {
        result.notes.push_back("the cached profile was not checked (" + why + ")");
        return std::nullopt;
    }
    const double mean = std::accumulate(rates->begin(), rates->end(), 0.0) / static_cast<double>(rates->size());
    return mean / then->gemmFlopsPerSecond() - 1.0;
}

/// The check of CpuProbeOptions::checkDrift: measureDrift, and when that is beyond kProfileDriftLimit a second
/// time in a new process, keeping the smaller drift. The speed of one process's GEMMs varies with where its pages
/// fall (at a tiny model's shapes by up to 18 % here, docs/cpu-profile.md), so one process alone would have the
/// profile probed again for nothing now and then.
std::optional<double> checkProfile(const ProbeRun& run, const CpuProfile& cached, CpuProbeResult& result)
{
    const std::optional<double> first = measureDrift(run, cached, result);
    if (!first || std::abs(*first) <= kProfileDriftLimit)
        return first;
    const std::optional<double> second = measureDrift(run, cached, result);
    return second && std::abs(*second) < std::abs(*first) ? second : first;
}

/// "this machine's GEMMs now run 21.3 % faster than its profile (probed …) says"
std::string driftText(double drift, const CpuProfile& cached)
{
    return "this machine's GEMMs now run " + formatPercent(std::abs(drift)) + (drift >= 0 ? " faster" : " slower")
        + " than its profile (probed " + cached.probedAt + ") says";
}

/// The OPENBLAS_CORETYPE values to time ("" = OpenBLAS's own choice): only the user's when set, else the
/// candidates and OpenBLAS's own when it is not one of them.
std::vector<std::string> kernelCores(const ProbeRun& run, const KernelChoice& infoChoice, CpuProbeResult& result)
{
    std::vector<std::string> cores;
    if (!run.userCore.empty()) {
        cores.push_back("");
        result.notes.push_back(
            "OPENBLAS_CORETYPE=" + run.userCore + " is set: only that kernel was measured, and the worker keeps it");
        return cores;
    }
    cores = infoChoice.candidates;
    const bool ownIsCandidate = std::any_of(
        cores.begin(), cores.end(), [&](const std::string& c) { return lower(c) == lower(infoChoice.openblasOwn); });
    if (!ownIsCandidate)
        cores.push_back("");
    return cores;
}

/// The compute part under each candidate kernel. Throws IoError when none could be measured.
std::vector<std::pair<KernelMeasure, CpuProfile>> measureKernels(
    const ProbeRun& run, const KernelChoice& infoChoice, const std::vector<ProbeShape>& shapes, CpuProbeResult& result)
{
    const std::vector<std::string> cores = kernelCores(run, infoChoice, result);
    const std::string shapeList = shapeListText(shapes);
    const double perCore = run.budget * 0.7 / static_cast<double>(cores.size());
    std::vector<std::pair<KernelMeasure, CpuProfile>> measured;
    std::string lastFailure;
    for (std::size_t i = 0; i < cores.size(); ++i) {
        const std::string& core = cores[i];
        const std::string shown = core.empty() ? "OpenBLAS's own (" + infoChoice.openblasOwn + ")" : core;
        run.log << "dpstudio: timing " << shown << " kernels at " << shapeList << " (" << secondsText(perCore)
                << " s)\n"
                << std::flush;
        std::string why;
        const std::optional<CpuProfile> p = runComputeProbe(
            run, shapes, core, perCore, run.scratch / ("compute-" + std::to_string(i) + ".json"), why);
        if (!p) {
            lastFailure = shown + ": " + why;
            result.notes.push_back("the " + shown + " kernels could not be measured: " + why);
            continue;
        }
        measured.push_back({ KernelMeasure { core, p->kernel, gemmThroughput(*p) }, *p });
    }
    if (measured.empty())
        throw IoError(run.workerPath + " --probe-compute failed: " + lastFailure);
    return measured;
}

/// The kernel choice over the measured kernels, and the profile with the figures of the kernel the worker
/// will load (the chosen core's, or OpenBLAS's own; the fastest measured when that one failed to run).
CpuProfile chooseKernel(const ProbeRun& run, const KernelChoice& infoChoice,
    const std::vector<std::pair<KernelMeasure, CpuProfile>>& measured, CpuProbeResult& result)
{
    KernelChoice choice;
    choice.openblasOwn = infoChoice.openblasOwn;
    choice.candidates = infoChoice.candidates;
    for (const auto& [m, p] : measured)
        choice.measured.push_back(m);
    choice.winner = kernelWinner(choice.measured);
    if (!run.userCore.empty()) {
        choice.chosen = "";
        choice.reason = "OPENBLAS_CORETYPE=" + run.userCore + " set by the user is left alone";
    } else {
        const BlasCoreDecision decision = chooseBlasCore(hostCpuFeatures(), infoChoice.openblasOwn, choice.winner);
        choice.chosen = decision.core;
        choice.reason = decision.reason;
    }
    const std::string loads = lower(choice.chosen.empty() ? infoChoice.openblasOwn : choice.chosen);
    const CpuProfile* figures = nullptr;
    for (const auto& [m, p] : measured)
        if (lower(m.core.empty() ? m.loaded : m.core) == loads)
            figures = &p;
    if (!figures) {
        result.notes.push_back("the chosen kernel was not measured; the figures are those of " + choice.winner);
        for (const auto& [m, p] : measured)
            if ((m.core.empty() ? m.loaded : m.core) == choice.winner)
                figures = &p;
    }
    if (!figures)
        figures = &measured.front().second;
    CpuProfile profile;
    profile.kernel = figures->kernel;
    profile.shapes = figures->shapes;
    profile.kernelChoice = choice;
    return profile;
}

/// p2p between two ranks, started as a run on this machine starts its ranks; a failure or an implausible
/// fit is a note.
void measureP2p(const ProbeRun& run, const std::vector<ProbeShape>& shapes, CpuProfile& profile, CpuProbeResult& result)
{
    const std::optional<fs::path> mpirun = findMpirun();
    if (!mpirun || ::access(mpirun->c_str(), X_OK) != 0) {
        result.notes.push_back("p2p not measured: mpirun not found (install openmpi-bin or set DPSTUDIO_MPIRUN)");
        return;
    }
    RunOptions runOptions;
    runOptions.threads = std::max(run.options.threads, 1);
    const std::vector<std::string> mpiOptions = mpirunOptions(runOptions);
    const double p2pSeconds = run.budget * 0.15;
    run.log << "dpstudio: timing MPI ping-pong between 2 ranks (" << secondsText(p2pSeconds) << " s)\n" << std::flush;
    const fs::path file = run.scratch / "p2p.json";
    std::vector<std::string> argv { mpirun->string(), "-np", "2" };
    argv.insert(argv.end(), mpiOptions.begin(), mpiOptions.end());
    argv.insert(argv.end(),
        { run.workerPath, "--probe-p2p", "--bytes", byteListText(shapes), "--seconds", secondsText(p2pSeconds), "-o",
            file.string() });
    std::string why;
    const std::optional<CpuProfile> p
        = runProbeMode(argv, environmentWith(mpirunEnvironment(::geteuid() == 0)), file, p2pSeconds, why);
    if (p && p->p2p && !implausibleP2p(*p->p2p).empty()) {
        result.notes.push_back("p2p not kept: " + implausibleP2p(*p->p2p));
    } else if (p && p->p2p) {
        profile.p2p = *p->p2p;
        profile.p2p->mpirunOptions = mpiOptions;
    } else {
        result.notes.push_back("p2p not measured: mpirun -np 2 failed: " + (p ? "no p2p figures" : why));
    }
}

/// The full probe a drifted cached profile gets (CpuProbeOptions::checkDrift), saying why; with the ranks computing
/// together (checkProcesses > 1), the check again against the fresh profile (CpuProbeResult::speedCheck).
CpuProbeResult probeAgainForDrift(const ProbeRun& run, double drift, const CpuProfile& cached)
{
    run.log << "dpstudio: " << driftText(drift, cached) << ", more than " << formatPercent(kProfileDriftLimit)
            << ": probing again\n"
            << std::flush;
    CpuProbeOptions again = run.options;
    again.reprobe = true;
    again.checkDrift = false;
    CpuProbeResult result = probeCpu(again, run.log);
    result.drift = drift;
    result.reprobedForDrift = true;
    if (run.options.checkProcesses > 1)
        result.speedCheck = measureDrift(run, result.profile, result);
    return result;
}

} // namespace

std::string utcTimestamp()
{
    const std::time_t now = std::time(nullptr);
    std::tm tm {};
    gmtime_r(&now, &tm);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buffer;
}

CpuProbeResult probeCpu(const CpuProbeOptions& options, std::ostream& log)
{
    if (options.shapes.empty())
        throw FormatError("the CPU probe needs at least one shape");
    const auto started = Clock::now();
    std::string workerPath = workerPathOf(options);
    const ScratchDir scratch;
    const char* userCore = std::getenv("OPENBLAS_CORETYPE");
    const ProbeRun run { options, log, std::move(workerPath), std::to_string(std::max(options.threads, 1)),
        scratch.path(), std::max(options.budgetS, 0.5), started, userCore ? userCore : "" };
    CpuProbeResult result;

    // 1. The machine key and the kernel candidates; this machine's cached profile when it holds the shapes
    // (with the project's transformer stages added).
    const CpuProfile info = probeInfo(run);
    const MachineKey key = info.machine;
    result.cachePath = cpuProfileCachePath(key);
    std::optional<CpuProfile> cached = cachedCpuProfile(key);
    std::vector<ProbeShape> shapes = options.shapes;
    if (!options.reprobe && cached
        && (options.extendCache ? profileCoversShapes(*cached, shapes) : profileHasShapes(*cached, shapes))) {
        if (options.checkDrift && options.extendCache) {
            result.drift = checkProfile(run, *cached, result);
            if (result.drift && std::abs(*result.drift) > kProfileDriftLimit)
                return probeAgainForDrift(run, *result.drift, *cached);
            result.speedCheck = result.drift;
        }
        result.profile = std::move(*cached);
        result.fromCache = true;
        if (run.addStages(result.profile, result.notes)) {
            result.fromCache = false;
            result.profile.probeSeconds = run.elapsedS();
            saveToCache(result);
        }
        return result;
    }
    if (options.extendCache && cached)
        for (const ShapeMeasure& s : cached->shapes)
            if (shapes.size() < kMaxCachedShapes && std::find(shapes.begin(), shapes.end(), s.shape) == shapes.end())
                shapes.push_back(s.shape);

    // 1b. Extending this machine's profile: only the missing shapes.
    if (options.extendCache && cached && !options.reprobe && cached->kernelChoice && !cached->kernel.empty()) {
        if (extendCached(run, *cached, result))
            return result; // (cached moved into the result)
    }

    // 2. The compute part under each candidate kernel, and the kernel the worker will load.
    const auto measured = measureKernels(run, *info.kernelChoice, shapes, result);
    CpuProfile profile = chooseKernel(run, *info.kernelChoice, measured, result);
    profile.machine = key;

    // 3. p2p between two ranks.
    measureP2p(run, shapes, profile, result);

    // 4. Transformer stages: the machine's, kept from the cache whatever shapes it held; the project's missing
    // ones (every one of them with --reprobe) timed under the kernel just chosen.
    if (cached)
        profile.transformerStages = cached->transformerStages;
    finishProfile(run, std::move(profile), result);
    return result;
}

MachineProfile machineProfile(const std::vector<ProbeShape>& shapes, int threads, const std::string& profileFile,
    double budgetS, std::ostream& log, const Project* project, const std::vector<std::string>& variants,
    bool checkDrift, int checkProcesses)
{
    MachineProfile result;
    const bool transformer = project && project->model.kind == ModelKind::Transformer;
    if (!profileFile.empty()) {
        result.profile = machine::loadCpuProfile(profileFile);
        result.file = profileFile;
        if (result.profile.machine.blasThreads != threads)
            throw FormatError(profileFile + ": measured with " + std::to_string(result.profile.machine.blasThreads)
                + " BLAS threads, the run uses " + std::to_string(threads));
        if (transformer)
            machine::requireTransformerStages(result.profile, *project, variants, profileFile);
        else
            machine::requireProfileShapes(result.profile, shapes, profileFile);
        return result;
    }
    CpuProbeOptions options;
    options.shapes = shapes;
    options.threads = threads;
    options.budgetS = budgetS;
    options.extendCache = true;
    options.checkDrift = checkDrift;
    options.checkProcesses = checkProcesses;
    if (transformer) {
        options.project = *project;
        options.variants = variants;
    }
    CpuProbeResult probe = probeCpu(options, log);
    result.profile = std::move(probe.profile);
    result.file = probe.cachePath.string();
    result.probed = true;
    result.fresh = !probe.fromCache;
    result.drift = probe.drift;
    result.reprobedForDrift = probe.reprobedForDrift;
    if (probe.speedCheck && std::abs(*probe.speedCheck) <= kProfileDriftLimit) {
        // The check timed the machine as it is now: predict at that speed (docs/cpu-profile.md).
        machine::scaleComputeTimes(result.profile, 1.0 / (1.0 + *probe.speedCheck));
        result.scaledBy = probe.speedCheck;
    }
    for (const std::string& note : probe.notes)
        log << "dpstudio: note: " << note << "\n";
    if (result.file.empty())
        result.file = "(not cached)";
    return result;
}

} // namespace dps::launch
