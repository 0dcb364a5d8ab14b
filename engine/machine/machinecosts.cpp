#include "machinecosts.h"

#include "base/errors.h"
#include "base/format.h"
#include "base/hostinfo.h"
#include "project/transformercost.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <tuple>

namespace dps::machine {

namespace fs = std::filesystem;

namespace {

/// The profile's measurements at `shape`; FormatError naming what it holds instead.
const ShapeMeasure& shapeOf(const CpuProfile& profile, const ProbeShape& shape, const std::string& source)
{
    for (const ShapeMeasure& s : profile.shapes)
        if (s.shape == shape)
            return s;
    std::vector<ProbeShape> held;
    for (const ShapeMeasure& s : profile.shapes)
        held.push_back(s.shape);
    throw FormatError(source + " holds " + (held.empty() ? std::string("no shape") : shapeListText(held))
        + ", not the variant's " + shapeText(shape)
        + ": probe again at the project's shapes (dpstudio devices --probe --project P)");
}

/// The median µs of the GEMM C (m×n) = op(A)·op(B) with these transposes and sizes.
double gemmUs(const ShapeMeasure& s, bool transA, bool transB, int m, int n, int k, const std::string& source)
{
    for (const GemmMeasure& g : s.gemms)
        if (g.transA == transA && g.transB == transB && g.m == m && g.n == n && g.k == k)
            return g.timeUs;
    throw FormatError(source + ": shape " + shapeText(s.shape) + " has no GEMM " + (transA ? "T" : "N")
        + (transB ? "T" : "N") + " " + std::to_string(m) + "×" + std::to_string(n) + "×" + std::to_string(k)
        + ": probe again (dpstudio devices --probe --reprobe)");
}

/// The median µs of one call of a memory-bound op.
double opUs(const ShapeMeasure& s, const std::string& op, const std::string& source)
{
    for (const ElementwiseMeasure& e : s.elementwise)
        if (e.op == op)
            return e.timeUs;
    throw FormatError(source + ": shape " + shapeText(s.shape) + " has no " + op
        + " measurement: probe again (dpstudio devices --probe --reprobe)");
}

/// The calls of one layer at one shape (stagemath.cpp), µs each.
struct LayerCalls {
    double fc1 = 0; ///< F: H = X·W1ᵀ, T×f×h, NT
    double fc2 = 0; ///< F: Y = A·W2ᵀ, T×h×f, NT
    double dA = 0; ///< I: dA = dY·W2, T×f×h, NN
    double dX = 0; ///< I: dX = dH·W1, T×h×f, NN
    double dW2 = 0; ///< W: dW2 += dYᵀ·A, h×f×T, TN
    double dW1 = 0; ///< W: dW1 += dHᵀ·X, f×h×T, TN
    double geluForward = 0;
    double geluBackward = 0;
    double loss = 0;
};

LayerCalls layerCalls(const ShapeMeasure& s, const std::string& source)
{
    const int t = s.shape.tokens, h = s.shape.hidden, f = s.shape.ffn;
    LayerCalls c;
    c.fc1 = gemmUs(s, false, true, t, f, h, source);
    c.fc2 = gemmUs(s, false, true, t, h, f, source);
    c.dA = gemmUs(s, false, false, t, f, h, source);
    c.dX = gemmUs(s, false, false, t, h, f, source);
    c.dW2 = gemmUs(s, true, false, h, f, t, source);
    c.dW1 = gemmUs(s, true, false, f, h, t, source);
    c.geluForward = opUs(s, "gelu_forward", source);
    c.geluBackward = opUs(s, "gelu_backward", source);
    c.loss = opUs(s, "mse_loss", source);
    return c;
}

MachineStageCost stageCost(const LayerCalls& c, int stage, int layers, bool first, bool last)
{
    const double n = layers;
    MachineStageCost m;
    m.stage = stage;
    m.layers = layers;
    m.forwardGemmUs = n * (c.fc1 + c.fc2);
    m.geluForwardUs = n * c.geluForward;
    m.lossUs = last ? c.loss : 0.0;
    // StageMath::inputGrad skips dX of layer 0 when the stage's input gradient is not wanted (stage 0).
    const double dxCalls = std::max(0.0, n - (first ? 1.0 : 0.0));
    m.inputGemmUs = n * c.dA + dxCalls * c.dX;
    m.geluBackwardUs = n * c.geluBackward;
    m.geluRecomputeUs = n * c.geluForward;
    m.weightGemmUs = n * (c.dW2 + c.dW1);
    return m;
}

bool positive(double v)
{
    return v > 0.0;
}

/// One exchange of `bytes` leaving a device over the p2p link: latency + bytes ÷ bandwidth (0 = unlimited), µs.
double exchangeUs(double bytes, double latencyUs, double bandwidthBytesPerUs)
{
    return latencyUs + (bandwidthBytesPerUs > 0.0 ? bytes / bandwidthBytesPerUs : 0.0);
}

/// A transformer stage's costs from its measurement: the compute as measured, and with exchanges the chains
/// F = c0, x, c1, x, … and B = c0, x, c1, … (the MoE layers in order for F, in reverse for B). Per MoE layer the
/// measured chunks say how many exchanges the runtime makes (engine/runtime/layers/moe_ep.cpp: F sends the row
/// counts, then the rows (dispatch), then the experts' outputs back (combine); B the outputs' gradients, then
/// the rows' gradients): the last two of F are the dispatch and the combine volume, those of B the combine's
/// and the dispatch's, any before them (the counts) latency only. `exchanges`: per MoE layer of the stage in
/// order, (layer, dispatch µs, combine µs); empty without exchanges. `latencyUs`: of one exchange.
MachineStageCost transformerStage(const TransformerStageMeasure& t, int stage, int layers,
    const std::vector<std::tuple<int, double, double>>& exchanges, double latencyUs, const std::string& source)
{
    const std::size_t moeLayers = exchanges.size();
    const auto perLayer = [&](std::size_t chunks) -> std::size_t {
        if (moeLayers == 0)
            return chunks == 1 ? 0 : std::size_t(-1);
        return (chunks - 1) % moeLayers == 0 && (chunks - 1) / moeLayers >= 2 ? (chunks - 1) / moeLayers
                                                                              : std::size_t(-1);
    };
    const std::size_t forwardPerLayer = perLayer(t.forwardChunksUs.size());
    const std::size_t backwardPerLayer = perLayer(t.backwardChunksUs.size());
    if (forwardPerLayer == std::size_t(-1) || backwardPerLayer == std::size_t(-1))
        throw FormatError(source + ": transformer stage " + t.key.text() + " holds "
            + std::to_string(t.forwardChunksUs.size()) + " F and " + std::to_string(t.backwardChunksUs.size())
            + " B compute chunks, which do not fit its " + std::to_string(moeLayers)
            + " MoE layers exchanging (at least twice each): probe again (dpstudio devices --probe --reprobe "
              "--project P)");
    MachineStageCost m;
    m.stage = stage;
    m.layers = layers;
    m.stageComputeForwardUs = t.forwardUs();
    m.stageComputeInputUs = t.inputGradUs;
    m.stageComputeWeightUs = t.weightGradUs;
    m.stageComputeBackwardUs = t.backwardUs();
    if (exchanges.empty())
        return m;
    // One half's chain: its compute chunks with, after chunk i, exchange i of its layer (the layers in `order`).
    const auto chain = [&](const std::vector<double>& chunks, std::size_t per, bool forward, double& a2a) {
        std::vector<Chunk> out;
        std::size_t c = 0;
        for (std::size_t k = 0; k < moeLayers; ++k) {
            const auto& [layer, dispatchUs, combineUs] = exchanges[forward ? k : moeLayers - 1 - k];
            for (std::size_t x = 0; x < per; ++x) {
                const std::size_t fromEnd = per - x; // 2: the first volume, 1: the second, more: the counts
                const double us = fromEnd > 2 ? latencyUs
                    : forward                 ? (fromEnd == 2 ? dispatchUs : combineUs)
                                              : (fromEnd == 2 ? combineUs : dispatchUs);
                out.push_back({ Chunk::Compute, chunks[c++], layer });
                out.push_back({ Chunk::Comm, us, layer });
                a2a += us;
            }
        }
        out.push_back({ Chunk::Compute, chunks[c], std::get<0>(forward ? exchanges.back() : exchanges.front()) });
        return out;
    };
    m.forwardChain = chain(t.forwardChunksUs, forwardPerLayer, true, m.a2aForwardUs);
    m.backwardChain = chain(t.backwardChunksUs, backwardPerLayer, false, m.a2aBackwardUs);
    return m;
}

} // namespace

bool ranksBoundToCores(int ranks, int cores, int threads)
{
    // mpirunOptions passes --bind-to none with more than one BLAS thread (tests/launch/test_machinecosts.cpp
    // checks the two agree); without it Open MPI's default applies.
    if (threads > 1)
        return false;
    return ranks <= 2 && ranks <= cores;
}

bool halvesRunConcurrently(int ranks, int cores, int threads)
{
    const double perRank = ranksBoundToCores(ranks, cores, threads)
        ? 1.0
        : static_cast<double>(cores) / static_cast<double>(std::max(1, ranks));
    return perRank >= 2.0 * std::max(1, threads);
}

ProbeShape variantShape(const Project& project, const Variant& variant)
{
    Project one;
    one.model = project.model;
    one.variants = { variant };
    return projectShapes(one).front();
}

MachineCosts machineCosts(
    const CpuProfile& profile, const Project& project, const Variant& variant, const std::string& source)
{
    MachineCosts costs;
    costs.source = source;
    costs.shape = variantShape(project, variant);
    costs.cores = profile.machine.cores;
    costs.threads = profile.machine.blasThreads;
    costs.transformer = project.model.kind == ModelKind::Transformer;
    // The profile's p2p fit, unless it is not the link's (implausibleP2p): then the project's link.
    const std::optional<P2pProfile> p2p
        = profile.p2p && implausibleP2p(*profile.p2p).empty() ? profile.p2p : std::nullopt;
    const std::vector<int> partition = effectivePartition(project, variant);
    const int stages = static_cast<int>(partition.size());
    if (costs.transformer) {
        // Each stage as measured whole (probe.h), plus its exchanges over the p2p link (the project's without one).
        const std::vector<TransformerStageKey> keys = transformerStageKeys(project, variant);
        const DevicePlacement placement = placementOf(project, variant);
        const model::Transformer m = transformerOf(project.model, microbatchSizeOf(project, variant));
        const double latency = p2p ? p2p->latencyUs : project.cluster.latencyUs;
        const double bandwidth = p2p ? p2p->bandwidthBytesPerUs : project.cluster.bandwidthBytesPerUs;
        // The model library sizes an exchange at the project's dispatch and combine dtypes; a CPU run sends fp32.
        constexpr double kCpuElementBytes = 4.0;
        int layer = 0;
        for (int s = 0; s < stages; ++s) {
            const TransformerStageKey& key = keys[static_cast<std::size_t>(s)];
            const TransformerStageMeasure* measured = profile.transformerStage(key);
            if (!measured)
                throw FormatError(source + " has no transformer stage " + key.text()
                    + ": probe it (dpstudio devices --probe --project P)");
            std::vector<std::tuple<int, double, double>> exchanges;
            const int layers = partition[static_cast<std::size_t>(s)];
            for (int k = 0; k < layers; ++k, ++layer)
                if (key.ep > 1 && m.isMoeLayer(layer)) {
                    const model::LayerCost lc = model::layerCost(m, layer, model::Recompute::None, placement.ep);
                    const double dispatch = lc.dispatchBytes / m.moe.dispatchBytes * kCpuElementBytes;
                    const double combine = lc.combineBytes / m.moe.combineBytes * kCpuElementBytes;
                    exchanges.emplace_back(
                        layer, exchangeUs(dispatch, latency, bandwidth), exchangeUs(combine, latency, bandwidth));
                }
            costs.stages.push_back(transformerStage(*measured, s, layers, exchanges, latency, source));
        }
    } else {
        const ShapeMeasure& measured = shapeOf(profile, costs.shape, source);
        const LayerCalls calls = layerCalls(measured, source);
        for (int s = 0; s < stages; ++s)
            costs.stages.push_back(
                stageCost(calls, s, partition[static_cast<std::size_t>(s)], s == 0, s == stages - 1));
    }

    // The overlapped slots: for each forward stage, the mean over its pairs of max(F, B of the paired stage) when
    // the halves run on two threads, else of F + B (one after the other).
    // With dp replicas the job has ranks × dp processes (the launcher's binding rule sees them all), and the
    // replicas share the machine's cores: each replica is predicted on an equal share of them (at least one).
    const int dp = std::max(1, variant.dp);
    const int processes = variant.ranks * dp;
    costs.boundToCores = ranksBoundToCores(processes, costs.cores, costs.threads);
    costs.halvesConcurrent = halvesRunConcurrently(processes, costs.cores, costs.threads);
    if (dp > 1) {
        costs.notes.push_back("dp " + std::to_string(dp) + ": the replicas share the " + std::to_string(costs.cores)
            + " cores; one replica is predicted on " + std::to_string(std::max(1, costs.cores / dp)));
        costs.cores = std::max(1, costs.cores / dp);
    }
    const Schedule schedule = buildSchedule(project, variant);
    std::map<int, std::pair<double, int>> pairs; // forward stage → (Σ max(F, B), count)
    std::set<int> chained; // forward stages with a pair that has exchanges: laid on two lanes by the cost model
    for (const auto& order : schedule.order)
        for (const Action& a : order) {
            if (!a.overlapped || a.op.stage < 0 || a.op.stage >= stages || a.backward.stage < 0
                || a.backward.stage >= stages)
                continue;
            const MachineStageCost& f = costs.stages[static_cast<std::size_t>(a.op.stage)];
            const MachineStageCost& b = costs.stages[static_cast<std::size_t>(a.backward.stage)];
            if (!f.forwardChain.empty() || !b.backwardChain.empty())
                chained.insert(a.op.stage);
            auto& [sum, count] = pairs[a.op.stage];
            sum += costs.halvesConcurrent ? std::max(f.forwardUs(), b.backwardUs()) : f.forwardUs() + b.backwardUs();
            ++count;
        }
    costs.overlapUs.assign(static_cast<std::size_t>(stages), std::nullopt);
    for (const auto& [stage, total] : pairs)
        if (!chained.count(stage))
            costs.overlapUs[static_cast<std::size_t>(stage)] = total.first / total.second;

    if (p2p) {
        costs.latencyUs = p2p->latencyUs;
        costs.bandwidthBytesPerUs = p2p->bandwidthBytesPerUs;
    } else if (profile.p2p) {
        costs.notes.push_back(source + "'s p2p part is not used: " + implausibleP2p(*profile.p2p)
            + "; the project's latency and bandwidth are kept");
    } else {
        costs.notes.push_back(source + " has no p2p part: the project's latency and bandwidth are kept");
    }
    return costs;
}

void applyMachineCosts(CostModel& model, const MachineCosts& costs, const CostSettings& typed)
{
    const bool typedFactor = typed.overlapFactor != 1.0;
    for (std::size_t s = 0; s < model.stages.size() && s < costs.stages.size(); ++s) {
        StageCost& stage = model.stages[s];
        const MachineStageCost& m = costs.stages[s];
        const StageCostOverride none;
        const StageCostOverride& t = s < typed.stages.size() ? typed.stages[s] : none;
        stage.forwardChain = t.forwardUs ? std::vector<Chunk>() : m.forwardChain;
        stage.backwardChain = t.inputGradUs || t.weightGradUs || t.backwardUs ? std::vector<Chunk>() : m.backwardChain;
        if (!t.forwardUs)
            stage.forwardUs = m.forwardUs();
        if (!t.inputGradUs)
            stage.inputGradUs = m.inputGradUs();
        if (!t.weightGradUs)
            stage.weightGradUs = m.weightGradUs();
        if (!t.backwardUs)
            stage.backwardUs = t.inputGradUs || t.weightGradUs ? std::nullopt : std::optional<double>(m.backwardUs());
        if (!t.overlapUs && !typedFactor && s < costs.overlapUs.size())
            stage.overlapUs = costs.overlapUs[s];
    }
    if (!typed.latencyUs && costs.latencyUs)
        model.latencyUs = *costs.latencyUs;
    if (!typed.bandwidthBytesPerUs && costs.bandwidthBytesPerUs)
        model.bandwidthBytesPerUs = *costs.bandwidthBytesPerUs;
    model.commComputeShare = 0.0;
}

PredictOptions machinePredictOptions(
    const MachineCosts& costs, const CostSettings& typed, bool timeline, CostAdjuster then)
{
    PredictOptions options = timeline ? PredictOptions {} : PredictOptions::peaksOnly();
    options.fp32Tensors = true;
    options.engineRun = true;
    options.cores = costs.cores;
    options.adjustCosts = [costs, typed, then = std::move(then)](CostModel& model) {
        applyMachineCosts(model, costs, typed);
        if (then)
            then(model);
    };
    return options;
}

std::string MachineProfile::description() const
{
    // The home folder as "~": the cache file's name is long enough.
    std::string shown = file;
    const char* home = std::getenv("HOME");
    if (home && *home && home[1] != '\0' && shown.starts_with(std::string(home) + "/"))
        shown = "~" + shown.substr(std::strlen(home));
    std::string text = (probed ? "probed CPU profile, " : "CPU profile ") + shown;
    if (!drift)
        return text;
    if (!reprobedForDrift)
        return text + "; checked now: this machine's GEMMs " + formatSignedPercent(*drift) + " against it"
            + (scaledBy ? ", its times scaled to that" : "");
    text += "; probed again now: this machine's GEMMs ran " + formatSignedPercent(*drift)
        + " against the cached profile";
    if (scaledBy)
        text += ", and " + formatSignedPercent(*scaledBy)
            + " against the new one as the ranks compute together, its times scaled to that";
    return text;
}

void requireProfileShapes(const CpuProfile& profile, const std::vector<ProbeShape>& shapes, const std::string& source)
{
    for (const ProbeShape& shape : shapes)
        (void)shapeOf(profile, shape, source); // throws naming the shapes it holds
}

void requireTransformerStages(const CpuProfile& profile, const Project& project,
    const std::vector<std::string>& variants, const std::string& source)
{
    if (project.model.kind != ModelKind::Transformer)
        return;
    for (const Variant& v : project.variants)
        if (variants.empty() || std::find(variants.begin(), variants.end(), v.name) != variants.end())
            for (const TransformerStageKey& key : transformerStageKeys(project, v))
                if (!profile.transformerStage(key))
                    throw FormatError(source + " has no transformer stage " + key.text()
                        + ": probe it (dpstudio devices --probe --project P)");
}

std::optional<MachineProfile> cachedMachineProfile(int threads)
{
    try {
        const fs::path dir = cpuProfileCacheDir();
        std::error_code ec;
        if (dir.empty() || !fs::is_directory(dir, ec))
            return std::nullopt;
        const std::string model = cpuModelName();
        const int cores = cpuCoreCount();
        const std::string flags = cpuFlagsHash(cpuInfoField("flags"));
        std::optional<MachineProfile> newest;
        for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
            const std::string name = entry.path().filename().string();
            if (!name.starts_with("cpu-") || !name.ends_with(".json"))
                continue;
            try {
                CpuProfile profile = loadCpuProfile(entry.path());
                const MachineKey& k = profile.machine;
                if (k.cpuModel != model || k.cores != cores || k.cpuFlagsHash != flags || k.blasThreads != threads
                    || profile.shapes.empty())
                    continue;
                if (!newest || profile.probedAt > newest->profile.probedAt) {
                    newest = MachineProfile {};
                    newest->profile = std::move(profile);
                    newest->file = entry.path().string();
                    newest->probed = true;
                }
            } catch (const std::exception&) { // a damaged cache file counts as absent
            }
        }
        return newest;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::string formatMachineCosts(const MachineCosts& costs)
{
    std::vector<std::vector<std::string>> rows;
    std::string measuredAs;
    if (costs.transformer) {
        measuredAs = "transformer stages timed whole";
        rows.push_back(
            { "stage", "layers", "F", "I", "W", "B", "F&B slot", "F: compute + a2a", "B: compute + a2a", "chunks" });
        for (std::size_t s = 0; s < costs.stages.size(); ++s) {
            const MachineStageCost& m = costs.stages[s];
            const bool hasSlot = s < costs.overlapUs.size() && costs.overlapUs[s].has_value();
            rows.push_back({ std::to_string(m.stage), std::to_string(m.layers), formatTime(m.forwardUs()),
                formatTime(m.inputGradUs()), formatTime(m.weightGradUs()), formatTime(m.backwardUs()),
                hasSlot ? formatTime(costs.overlapUs[s].value_or(0.0))
                        : (m.forwardChain.empty() ? std::string("-") : std::string("two lanes")),
                formatTime(m.stageComputeForwardUs) + " + " + formatTime(m.a2aForwardUs),
                formatTime(m.stageComputeBackwardUs.value_or(0.0)) + " + " + formatTime(m.a2aBackwardUs),
                m.forwardChain.empty() ? std::string("-") : std::to_string(m.forwardChain.size()) });
        }
    } else {
        measuredAs = "T×h×f = " + shapeText(costs.shape);
        rows.push_back(
            { "stage", "layers", "F", "I", "W", "B", "F&B slot", "F: GEMMs + GELU + loss", "I: GEMMs + GELU' + GELU" });
        for (std::size_t s = 0; s < costs.stages.size(); ++s) {
            const MachineStageCost& m = costs.stages[s];
            const bool hasSlot = s < costs.overlapUs.size() && costs.overlapUs[s].has_value();
            rows.push_back({ std::to_string(m.stage), std::to_string(m.layers), formatTime(m.forwardUs()),
                formatTime(m.inputGradUs()), formatTime(m.weightGradUs()), formatTime(m.backwardUs()),
                hasSlot ? formatTime(costs.overlapUs[s].value_or(0.0)) : std::string("-"),
                formatTime(m.forwardGemmUs) + " + " + formatTime(m.geluForwardUs) + " + " + formatTime(m.lossUs),
                formatTime(m.inputGemmUs) + " + " + formatTime(m.geluBackwardUs) + " + "
                    + formatTime(m.geluRecomputeUs) });
        }
    }
    std::string text = "costs for this machine (" + costs.source + ", " + measuredAs + ", "
        + formatCountOf(static_cast<std::size_t>(costs.cores), "core") + ", "
        + formatCountOf(static_cast<std::size_t>(costs.threads), "BLAS thread") + " per rank"
        + (costs.boundToCores ? ", each rank bound to a core" : "")
        + (costs.halvesConcurrent ? ", F&B halves on two threads" : ", F&B halves in turn") + ")\n" + formatTable(rows);
    if (costs.latencyUs)
        text += "p2p: latency " + formatTime(*costs.latencyUs) + ", bandwidth "
            + (costs.bandwidthBytesPerUs && positive(*costs.bandwidthBytesPerUs)
                    ? formatBytes(*costs.bandwidthBytesPerUs * 1e6) + "/s"
                    : std::string("unlimited"))
            + "\n";
    for (const std::string& note : costs.notes)
        text += "note: " + note + "\n";
    return text;
}

} // namespace dps::machine
