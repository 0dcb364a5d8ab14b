#include "planner.h"

#include "base/checked.h"
#include "base/errors.h"
#include "base/format.h"
#include "schedule/generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <tuple>

// The search, its bounds and the pruning rule: docs/planner.md.

namespace dps {

std::vector<int> minMaxPartition(const std::vector<double>& layerCost, int stages)
{
    const int layers = static_cast<int>(layerCost.size());
    if (stages < 1 || stages > layers)
        return {};
    const std::size_t width = static_cast<std::size_t>(layers) + 1;
    std::vector<double> prefix(width, 0.0);
    for (std::size_t l = 0; l < layerCost.size(); ++l)
        prefix[l + 1] = prefix[l] + layerCost[l];
    const auto sum = [&](int from, int to) {
        return prefix[static_cast<std::size_t>(to)] - prefix[static_cast<std::size_t>(from)];
    };
    const double inf = std::numeric_limits<double>::infinity();
    const auto at = [width](int k, int l) { return static_cast<std::size_t>(k) * width + static_cast<std::size_t>(l); };
    // Pass 1: best[k][l], the least largest stage sum splitting the first l layers into k stages.
    std::vector<double> best((static_cast<std::size_t>(stages) + 1) * width, inf);
    best[0] = 0.0;
    for (int k = 1; k <= stages; ++k)
        for (int l = k; l <= layers - (stages - k); ++l)
            for (int j = k - 1; j < l; ++j)
                best[at(k, l)] = std::min(best[at(k, l)], std::max(best[at(k - 1, j)], sum(j, l)));
    // Pass 2: among the splits whose stages all stay within that optimum, the one with the least sum of squared
    // stage sums (the most even), the earliest cut on a tie.
    const double cap = best[at(stages, layers)] * (1.0 + 1e-12);
    std::vector<double> squares((static_cast<std::size_t>(stages) + 1) * width, inf);
    std::vector<int> cut((static_cast<std::size_t>(stages) + 1) * width, 0);
    squares[0] = 0.0;
    for (int k = 1; k <= stages; ++k)
        for (int l = k; l <= layers - (stages - k); ++l)
            for (int j = k - 1; j < l; ++j) {
                const double stage = sum(j, l);
                if (stage > cap || squares[at(k - 1, j)] == inf)
                    continue;
                const double v = squares[at(k - 1, j)] + stage * stage;
                if (v < squares[at(k, l)]) {
                    squares[at(k, l)] = v;
                    cut[at(k, l)] = j;
                }
            }
    std::vector<int> partition(static_cast<std::size_t>(stages));
    int l = layers;
    for (int k = stages; k >= 1; --k) {
        const int from = cut[at(k, l)];
        partition[static_cast<std::size_t>(k) - 1] = l - from;
        l = from;
    }
    return partition;
}

double parseMemorySize(const std::string& text, const std::string& field)
{
    const char* begin = text.c_str();
    char* end = nullptr;
    const double value = std::strtod(begin, &end);
    const auto fail = [&]() -> double {
        throw ConstraintError("plan.memory-limit",
            field + ": '" + text + "' is not a memory size (bytes such as 80e9, or 80GB, 80GiB, 512MiB)");
    };
    // A decimal number only (strtod would also take hex, "inf" and "nan").
    const std::string number(begin, static_cast<std::size_t>(end - begin));
    if (end == begin || number.find_first_not_of("0123456789.eE+-") != std::string::npos || !std::isfinite(value))
        return fail();
    const auto outOfRange = [&](double bytes) -> double {
        if (bytes < 1.0 || bytes > kMaxExactDouble)
            throw ConstraintError(
                "plan.memory-limit", field + ": '" + text + "' is outside 1 byte to 2^53 bytes (8 PiB)");
        return bytes;
    };
    std::string unit(end);
    while (!unit.empty() && unit.front() == ' ')
        unit.erase(unit.begin());
    static const std::pair<const char*, double> units[]
        = { { "", 1.0 }, { "B", 1.0 }, { "kB", 1e3 }, { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
              { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 }, { "TiB", 1099511627776.0 } };
    for (const auto& [name, scale] : units)
        if (unit == name)
            return outOfRange(value * scale);
    return fail();
}

std::vector<std::size_t> paretoFront(const std::vector<std::pair<double, double>>& points)
{
    std::vector<std::size_t> front;
    for (std::size_t i = 0; i < points.size(); ++i) {
        bool dominated = false;
        for (std::size_t j = 0; j < points.size() && !dominated; ++j)
            dominated = j != i && points[j].first <= points[i].first && points[j].second <= points[i].second
                && (points[j].first < points[i].first || points[j].second < points[i].second);
        if (!dominated)
            front.push_back(i);
    }
    return front;
}

std::string planVariantName(const Variant& variant, const Project& project, std::optional<int> zero)
{
    std::string name = std::string(kindName(variant.kind)) + "-pp" + std::to_string(variant.ranks);
    if (variant.kind == ScheduleKind::Interleaved1F1B && variant.stagesPerRank > 0)
        name += "-v" + std::to_string(variant.stagesPerRank);
    if (variant.tp > 1)
        name += "-tp" + std::to_string(variant.tp);
    if (variant.cp > 1)
        name += "-cp" + std::to_string(variant.cp);
    const int mbs = variant.microbatchSize > 0 ? variant.microbatchSize : project.model.microbatchSize;
    name += "-dp" + std::to_string(std::max(1, variant.dp)) + "-mb" + std::to_string(variant.microbatches) + "x"
        + std::to_string(mbs);
    if (project.model.kind == ModelKind::Transformer)
        name += "-" + std::string(model::recomputeName(variant.recompute.value_or(project.model.recompute)));
    if (zero && *zero != (project.training.present ? project.training.zero : 0))
        name += "-z" + std::to_string(*zero);
    return name;
}

Project withPlanVariants(Project project, const PlanResult& result, int top)
{
    const std::size_t count = std::min(result.candidates.size(), static_cast<std::size_t>(std::max(0, top)));
    if (count > 0 && project.training.present)
        project.training.zero = result.candidates.front().zero; // the project's, so the first candidate's
    for (std::size_t i = 0; i < count; ++i) {
        if (project.training.present && result.candidates[i].zero != project.training.zero)
            continue; // predicted with another ZeRO stage than the project now has
        Variant v = result.candidates[i].variant;
        const std::string base = v.name;
        for (int n = 2; project.find(v.name); ++n)
            v.name = base + "-" + std::to_string(n);
        if (i == 0)
            project.activeVariant = v.name;
        project.variants.push_back(std::move(v));
    }
    validateProject(project);
    return project;
}

namespace {

/// Per-layer figures of one (dp, microbatch size, recompute): layer l alone as a stage (stage 0 with the
/// embedding, the last with the head), from buildCostModel of a GPipe variant of one layer per rank.
struct LayerFigures {
    std::vector<double> balance; ///< F + B of each layer (what the partition balances), µs
    std::vector<double> work; ///< a lower bound of a rank's busy time per microbatch of the layer, plain slots, µs
    std::vector<double> workOverlapped; ///< the same inside an overlapped F&B slot (DualPipe, DualPipeV), µs
    std::vector<double> staticBytes; ///< parameters + gradients + optimizer state, bytes
    std::vector<double> activationBytes; ///< kept from F until I or B for one microbatch, bytes
    std::string error; ///< why the model cannot be costed at these sizes ("" = fine)
};

/// The sizes one set of layer figures is for.
struct FigureSizes {
    int tp = 1;
    int cp = 1;
    int dp = 1;
    int microbatchSize = 0;
    std::optional<model::Recompute> recompute;
};

/// Under ZeRO-3 a stage holds its parameters' shard and one gathered layer (transformercost.h): the gathered
/// layer does not add up over the layers of a stage, so a layer's parameter bytes count its shard only here,
/// parameterBytes − parameterCount × dtype bytes ≤ the shard (a lower bound of what any stage holds).
double boundParameterBytes(const Project& project, const StageCost& c)
{
    if (!project.training.present || project.training.zero < 3 || project.model.kind != ModelKind::Transformer)
        return c.parameterBytes;
    return std::max(0.0, c.parameterBytes - c.parameterCount * dtypeBytes(project.model.dtype));
}

LayerFigures layerFigures(const Project& project, const FigureSizes& sizes)
{
    LayerFigures f;
    const int layers = project.model.layers;
    Variant v;
    v.name = "layers";
    v.kind = ScheduleKind::GPipe;
    v.ranks = layers;
    v.microbatches = 1;
    v.layerPartition.assign(static_cast<std::size_t>(layers), 1);
    v.dp = sizes.dp;
    v.tp = sizes.tp;
    v.cp = sizes.cp;
    v.sequenceParallel = sizes.tp > 1;
    v.microbatchSize = project.model.kind == ModelKind::Transformer ? sizes.microbatchSize : 0;
    v.recompute = sizes.recompute;
    try {
        const CostModel costs = buildCostModel(project, v);
        for (const StageCost& c : costs.stages) {
            f.balance.push_back(c.forwardUs + c.backward());
            // A rank runs a microbatch's backward as B or as I and W (zero-bubble kinds): the smaller counts.
            const double full = c.forwardUs + std::min(c.backward(), c.inputGradUs + c.weightGradUs);
            f.work.push_back(full);
            // In an overlapped slot: the flat factor × (F + B) when below 1, or only the compute of the chains
            // (their communication may hide behind the other half's compute; compute is never faster alone).
            double overlapped = std::min(full, costs.overlapFactor * full);
            if (!c.forwardChain.empty() || !c.backwardChain.empty())
                overlapped = std::min(
                    overlapped, laneUs(c.forwardChain, Chunk::Compute) + laneUs(c.backwardChain, Chunk::Compute));
            if (c.overlapUs)
                overlapped = 0.0; // a typed slot time: no bound
            f.workOverlapped.push_back(std::max(0.0, overlapped));
            // With the engine's buffers (the block model) the peak is the runtime's high-water mark
            // (docs/memory.md), not the ledger's activations: only the static bytes bound it then.
            f.activationBytes.push_back(c.engine ? 0.0 : c.activationBytes);
            f.staticBytes.push_back(boundParameterBytes(project, c) + c.gradientBytes
                + c.optimizerBytes.value_or(c.parameterCount * costs.optimizerBytesPerParameter));
        }
    } catch (const Error& e) {
        f.error = e.what();
    }
    return f;
}

/// Whether the memory bound counts activations (the ledger's; not a block model's engine buffers).
bool hasActivations(const LayerFigures& f)
{
    return std::any_of(f.activationBytes.begin(), f.activationBytes.end(), [](double a) { return a > 0.0; });
}

/// One point of the search space before its partition is chosen.
struct Spec {
    ScheduleKind kind = ScheduleKind::DualPipe;
    int pp = 0;
    int dp = 1;
    int tp = 1;
    int cp = 1;
    int zero = 0; ///< training.zero of `project`
    const Project* project = nullptr; ///< the searched project with this ZeRO stage
    int stagesPerRank = 0; ///< as the variant holds it (0 = the kind's default)
    int stages = 0;
    int microbatches = 0;
    int microbatchSize = 0;
    std::optional<model::Recompute> recompute;
    const LayerFigures* layers = nullptr;
    double timeBound = 0.0; ///< µs, ≤ the step time of any partition
    double memoryBound = 0.0; ///< bytes, ≤ the peak memory of any partition
};

bool overlapsSlots(ScheduleKind kind)
{
    return kind == ScheduleKind::DualPipe || kind == ScheduleKind::DualPipeV;
}

bool oneStagePerRank(ScheduleKind kind)
{
    return kind == ScheduleKind::GPipe || kind == ScheduleKind::OneFOneB || kind == ScheduleKind::ZBH1;
}

double maxOf(const std::vector<double>& values, const std::vector<int>& partition)
{
    double most = 0.0;
    std::size_t l = 0;
    for (int n : partition) {
        double sum = 0.0;
        for (int i = 0; i < n; ++i)
            sum += values[l++];
        most = std::max(most, sum);
    }
    return most;
}

/// The bounds of docs/planner.md "Pruning": every microbatch passes every stage once, so the busiest rank
/// works at least the average; a kind with one stage per rank works at least the min-max stage (any partition);
/// static memory likewise (DualPipe holds every stage twice). Step ≥ makespan ≥ busy; peak ≥ static.
void setBounds(Spec& s, bool timeBoundValid)
{
    const LayerFigures& f = *s.layers;
    const std::vector<double>& work = overlapsSlots(s.kind) ? f.workOverlapped : f.work;
    double total = 0.0, bytes = 0.0;
    for (double w : work)
        total += w;
    for (double b : f.staticBytes)
        bytes += b;
    const double copies = s.kind == ScheduleKind::DualPipe ? 2.0 : 1.0;
    double activations = 0.0;
    for (double a : f.activationBytes)
        activations += a;
    double time = s.microbatches * total / s.pp;
    double memory = copies * bytes / s.pp;
    // Activations: a rank of a one-stage-per-rank kind holds at least one microbatch of its stage after its first
    // F (GPipe: every microbatch, all F come before any B), so the ranks' peaks sum to at least the static
    // bytes plus one (GPipe: m) microbatch of every layer's activations.
    if (oneStagePerRank(s.kind))
        memory = std::max(memory, (bytes + (s.kind == ScheduleKind::GPipe ? s.microbatches : 1) * activations) / s.pp);
    if (oneStagePerRank(s.kind)) {
        time = std::max(time, s.microbatches * maxOf(work, minMaxPartition(work, s.stages)));
        memory = std::max(memory, maxOf(f.staticBytes, minMaxPartition(f.staticBytes, s.stages)));
    }
    constexpr double kSlack = 1.0 - 1e-9; // the sums of per-layer figures round differently from a stage's own
    s.timeBound = timeBoundValid ? time * kSlack : 0.0;
    s.memoryBound = memory * kSlack;
}

/// The divisors of n ≥ 1, ascending: O(√n), and no overflow at INT_MAX.
std::vector<int> divisors(int n)
{
    std::vector<int> small;
    std::vector<int> large;
    for (long long d = 1; d * d <= n; ++d)
        if (n % d == 0) {
            small.push_back(static_cast<int>(d));
            if (d * d != n)
                large.push_back(static_cast<int>(n / d));
        }
    small.insert(small.end(), large.rbegin(), large.rend());
    return small;
}

/// A simulated candidate: the variant and its prediction's figures.
struct Tried {
    Variant variant;
    Prediction prediction;
};

Tried predictVariant(const Project& project, Variant variant, int& counter, ValidationMemo& validations)
{
    ++counter;
    PredictOptions options = PredictOptions::peaksOnly();
    options.validationMemo = &validations;
    Prediction p = predict(project, variant, options);
    return { std::move(variant), std::move(p) };
}

bool better(const Prediction& a, const Prediction& b)
{
    return a.valid() && (!b.valid() || a.stepUs < b.stepUs);
}

/// Moves one layer off the critical stage (the stage with the largest F + B on the rank with the most busy
/// time) to a neighbour while that shortens the step (and the result fits when the current one does).
Tried refine(const Project& project, Tried current, const PlanRequest& request, double limit, int& refinements,
    ValidationMemo& validations)
{
    for (int step = 0; step < request.refineSteps && current.prediction.valid(); ++step) {
        const Prediction& p = current.prediction;
        int busiest = 0;
        for (std::size_t r = 1; r < p.sim.ranks.size(); ++r)
            if (p.sim.ranks[r].busyUs > p.sim.ranks[static_cast<std::size_t>(busiest)].busyUs)
                busiest = static_cast<int>(r);
        int critical = -1;
        double most = -1.0;
        for (int s = 0; s < p.schedule->stages && s < static_cast<int>(p.costs.stages.size()); ++s) {
            bool held = false;
            for (int m = 0; m < p.schedule->microbatches && !held; ++m)
                held = p.schedule->placement.rankOf(s, m) == busiest;
            const StageCost& c = p.costs.stages[static_cast<std::size_t>(s)];
            if (held && c.forwardUs + c.backward() > most) {
                most = c.forwardUs + c.backward();
                critical = s;
            }
        }
        if (critical < 0 || current.variant.layerPartition[static_cast<std::size_t>(critical)] <= 1)
            break;
        std::optional<Tried> best;
        for (int neighbour : { critical - 1, critical + 1 }) {
            if (neighbour < 0 || neighbour >= static_cast<int>(current.variant.layerPartition.size()))
                continue;
            Variant moved = current.variant;
            moved.layerPartition[static_cast<std::size_t>(critical)] -= 1;
            moved.layerPartition[static_cast<std::size_t>(neighbour)] += 1;
            Tried t = predictVariant(project, std::move(moved), refinements, validations);
            if (!best || better(t.prediction, best->prediction))
                best = std::move(t);
        }
        const bool fits = current.prediction.peakMemoryBytes <= limit;
        if (!best || !better(best->prediction, current.prediction)
            || (fits && best->prediction.peakMemoryBytes > limit))
            break;
        current = std::move(*best);
    }
    return current;
}

PlanCandidate candidateOf(const Tried& t, const Spec& s)
{
    const Prediction& p = t.prediction;
    PlanCandidate c;
    c.variant = t.variant;
    c.kind = s.kind;
    c.pp = s.pp;
    c.dp = s.dp;
    c.tp = s.tp;
    c.cp = s.cp;
    c.sequenceParallel = t.variant.sequenceParallel;
    c.zero = s.zero;
    c.mfu = p.mfu;
    c.stagesPerRank = s.kind == ScheduleKind::DualPipe ? 1 : s.stages / s.pp;
    c.microbatches = s.microbatches;
    c.microbatchSize = s.microbatchSize;
    c.layerPartition = t.variant.layerPartition;
    c.recompute = s.recompute.value_or(model::Recompute::None);
    c.stepUs = p.stepUs;
    c.makespanUs = p.makespanUs;
    c.exposedAllReduceUs = p.exposedAllReduceUs;
    c.bubbleRate = p.bubbleRate;
    c.peakMemoryBytes = p.peakMemoryBytes;
    c.peakMemoryRank = p.peakMemoryRank;
    for (const RankResult& r : p.sim.ranks)
        c.peakMemoryPerRank.push_back(r.peakMemoryBytes);
    c.tokensPerSecond = p.tokensPerSecond();
    c.tokensPerSecondPerDevice = p.tokensPerSecondPerDevice();
    return c;
}

void drop(PlanResult& result, std::string candidate, std::string reason)
{
    if (result.drops.size() < 200)
        result.drops.push_back({ std::move(candidate), std::move(reason) });
}

} // namespace

namespace {

/// Throws ConstraintError naming the flag when the request's sizes are out of range or do not fit the model.
void checkRequest(const Project& project, const PlanRequest& request)
{
    if (request.devices < 1)
        throw ConstraintError(
            "plan.devices", "--devices: must be at least 1 (got " + std::to_string(request.devices) + ")");
    if (request.globalBatch < 1)
        throw ConstraintError("plan.global-batch",
            "--global-batch: must be at least 1 (got " + std::to_string(request.globalBatch) + ")");
    if (!(request.memoryLimitBytes >= 0.0))
        throw ConstraintError("plan.memory-limit", "--memory-limit: must not be negative");
    const bool transformer = project.model.kind == ModelKind::Transformer;
    const model::Transformer& t = project.model.transformer;
    const auto fail = [](const char* flag, int value, const std::string& why) {
        throw ConstraintError(
            std::string("plan.") + (flag + 2), std::string(flag) + ": " + std::to_string(value) + " " + why);
    };
    for (int tp : request.tps) {
        if (tp < 1)
            fail("--tp", tp, "is not a positive size");
        if (tp > 1 && !transformer)
            fail("--tp", tp, "needs a transformer model (the block model runs whole layers on one device)");
        if (transformer && t.heads % tp != 0)
            fail("--tp", tp, "does not divide model.heads " + std::to_string(t.heads));
        if (transformer && t.attention != model::Attention::MLA && t.kvHeads % tp != 0)
            fail("--tp", tp, "does not divide model.kv_heads " + std::to_string(t.kvHeads));
    }
    for (int cp : request.cps) {
        if (cp < 1)
            fail("--cp", cp, "is not a positive size");
        if (cp > 1 && !transformer)
            fail("--cp", cp, "needs a transformer model (the block model runs whole layers on one device)");
        if (project.model.seqLen % cp != 0)
            fail("--cp", cp, "does not divide model.seq_len " + std::to_string(project.model.seqLen));
    }
    for (int zero : request.zeros) {
        if (zero < 0 || zero > 3)
            fail("--zero", zero, "is not a ZeRO stage (0, 1, 2 or 3)");
        if (!project.training.present)
            fail("--zero", zero,
                "needs a project with a training object (this one sets costs.optimizer_bytes_per_parameter)");
    }
}

/// The recompute kinds searched: the request's, else none, selective, full and the model's own (DeepSeek-V3's
/// norm-up-projection); a block model has none.
std::vector<std::optional<model::Recompute>> recomputeChoices(
    bool transformer, model::Recompute modelsOwn, const PlanRequest& request)
{
    std::vector<std::optional<model::Recompute>> recomputes;
    if (!transformer) {
        recomputes.push_back(std::nullopt);
    } else if (request.recomputes.empty()) {
        recomputes = { model::Recompute::None, model::Recompute::Selective, model::Recompute::Full };
        if (modelsOwn == model::Recompute::NormUpProjection)
            recomputes.push_back(modelsOwn);
    } else
        for (model::Recompute r : request.recomputes)
            recomputes.push_back(r);
    return recomputes;
}

/// Each value once, ascending.
std::vector<int> uniqueSorted(std::vector<int> values)
{
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
}

/// The tensor-parallel sizes searched: the request's, else 1 and each divisor of the GPUs of a node (all devices
/// when the cluster has no node size) that divides the heads (and kv_heads) and leaves hidden ÷ tp ≥ 1024, so that
/// a tensor rank's GEMMs stay large (Megatron-LM's TP 8 for hidden 8192 is the smallest share searched).
std::vector<int> tpChoices(const Project& project, const PlanRequest& request)
{
    if (!request.tps.empty())
        return uniqueSorted(request.tps);
    if (project.model.kind != ModelKind::Transformer)
        return { 1 };
    const model::Transformer& t = project.model.transformer;
    std::vector<int> tps;
    const int node = project.cluster.gpusPerNode > 0 ? project.cluster.gpusPerNode : request.devices;
    for (int tp : divisors(std::max(1, node))) {
        const bool splits = t.heads % tp == 0 && (t.attention == model::Attention::MLA || t.kvHeads % tp == 0);
        if (tp == 1 || (splits && project.model.hidden / tp >= 1024))
            tps.push_back(tp);
    }
    return tps;
}

/// The context-parallel sizes searched: the request's, else 1, and 2, 4 and 8 dividing the sequence when it is at
/// least 16384 tokens (shorter sequences keep attention small next to the rest of a layer).
std::vector<int> cpChoices(const Project& project, const PlanRequest& request)
{
    if (!request.cps.empty())
        return uniqueSorted(request.cps);
    std::vector<int> cps { 1 };
    if (project.model.kind == ModelKind::Transformer && project.model.seqLen >= 16384)
        for (int cp : { 2, 4, 8 })
            if (project.model.seqLen % cp == 0)
                cps.push_back(cp);
    return cps;
}

/// The ZeRO stages searched: the request's, else the project's and 1; a project without a training object only
/// its own setting (stage 0).
std::vector<int> zeroChoices(const Project& project, const PlanRequest& request)
{
    if (!project.training.present)
        return { 0 };
    if (!request.zeros.empty())
        return uniqueSorted(request.zeros);
    return uniqueSorted({ project.training.zero, 1 });
}

/// One search: its inputs, the candidates enumerated and those kept.
struct Search {
    Search(const Project& p, const PlanRequest& r, PlanResult& out)
        : project(p)
        , request(r)
        , result(out)
    {
    }

    const Project& project;
    const PlanRequest& request;
    PlanResult& result;
    double limit = 0.0; ///< bytes per device
    bool transformer = false;
    bool timeBoundValid = true; ///< typed per-stage costs replace the model's whatever the partition
    std::vector<ScheduleKind> kinds;
    std::vector<std::optional<model::Recompute>> recomputes;
    std::vector<int> tps, cps, zeros;
    std::map<int, Project> zeroProjects; ///< the project with training.zero set, by stage
    /// by (zero, tp, cp, dp, microbatch size, recompute)
    std::map<std::tuple<int, int, int, int, int, int>, LayerFigures> figures;
    std::map<ScheduleKind, int> failedEarly; ///< candidates whose sizes the model cannot be costed at
    std::vector<Spec> specs;
    std::vector<Tried> kept;
    std::vector<Spec> keptSpecs;
    std::vector<std::pair<double, double>> keptPoints; ///< (step, peak) of the candidates that fit
    double smallestBound = std::numeric_limits<double>::infinity();
    std::string smallestBoundName;
    ValidationMemo validations; ///< every candidate's schedule validated once per distinct schedule
};

/// The kind's summary row, added when it has none yet.
PlanKindSummary& summaryOf(PlanResult& result, ScheduleKind kind)
{
    for (PlanKindSummary& k : result.kinds)
        if (k.kind == kind)
            return k;
    return result.kinds.emplace_back(PlanKindSummary { kind });
}

/// The searched project with training.zero = zero (itself without a training object), made once.
const Project& projectFor(Search& search, int zero)
{
    auto it = search.zeroProjects.find(zero);
    if (it == search.zeroProjects.end()) {
        Project p = search.project;
        if (p.training.present)
            p.training.zero = zero;
        it = search.zeroProjects.emplace(zero, std::move(p)).first;
    }
    return it->second;
}

/// The layer figures of (zero, sizes), computed once. Under ZeRO-3 the times are ZeRO-2's: the parameter
/// all-gathers a stage does not hide are a stage's, not a sum over its layers (one layer's exposed gather can
/// exceed its share of a stage's), and removing them never lengthens a stage, so the bounds stay bounds.
const LayerFigures& figuresOf(Search& search, int zero, const FigureSizes& sizes)
{
    const auto key = std::make_tuple(zero, sizes.tp, sizes.cp, sizes.dp, sizes.microbatchSize,
        sizes.recompute ? static_cast<int>(*sizes.recompute) : -1);
    auto it = search.figures.find(key);
    if (it != search.figures.end())
        return it->second;
    LayerFigures f = layerFigures(projectFor(search, zero), sizes);
    if (zero >= 3 && f.error.empty()) {
        const LayerFigures& unsharded = figuresOf(search, 2, sizes);
        f.balance = unsharded.balance;
        f.work = unsharded.work;
        f.workOverlapped = unsharded.workOverlapped;
        f.error = unsharded.error;
    }
    return search.figures.emplace(key, std::move(f)).first->second;
}

/// One point of the space before its kind: sizes of every parallel dimension and of the batch.
struct Shape {
    int tp = 1;
    int cp = 1;
    int pp = 1;
    int dp = 1;
    int microbatchSize = 1;
    int microbatches = 1;
};

/// The variant of a shape and kind without its partition (named by planVariantName).
Variant variantOfShape(const Shape& shape, ScheduleKind kind, int stagesPerRank,
    const std::optional<model::Recompute>& rc, bool transformer)
{
    Variant v;
    v.kind = kind;
    v.ranks = shape.pp;
    v.microbatches = shape.microbatches;
    v.stagesPerRank = stagesPerRank;
    v.dp = shape.dp;
    v.tp = shape.tp;
    v.cp = shape.cp;
    v.sequenceParallel = shape.tp > 1;
    v.microbatchSize = transformer ? shape.microbatchSize : 0;
    v.recompute = rc;
    return v;
}

/// Every kind, chunk count, recompute and ZeRO stage at one shape: sizes the generators refuse and more stages
/// than layers left out, candidates the model cannot cost counted as failed.
void addSpecs(Search& search, const Shape& shape)
{
    for (ScheduleKind kind : search.kinds) {
        const std::vector<int> chunks
            = kind == ScheduleKind::Interleaved1F1B ? search.request.interleavedChunks : std::vector<int> { 0 };
        for (int v : chunks) {
            const int stages = stageCountFor(kind, shape.pp, v > 0 ? v : defaultStagesPerRank(kind));
            if (stages < 1 || stages > search.project.model.layers)
                continue;
            try {
                checkConstraints({ kind, shape.pp, shape.microbatches, v });
            } catch (const ConstraintError&) {
                continue;
            }
            for (int zero : search.zeros)
                for (const auto& rc : search.recomputes) {
                    const FigureSizes sizes { shape.tp, shape.cp, shape.dp, shape.microbatchSize, rc };
                    const LayerFigures& figures = figuresOf(search, zero, sizes);
                    Spec s { kind, shape.pp, shape.dp, shape.tp, shape.cp, zero, &projectFor(search, zero), v, stages,
                        shape.microbatches, shape.microbatchSize, rc, &figures };
                    if (!figures.error.empty()) {
                        ++search.result.enumerated;
                        ++search.result.failed;
                        ++search.failedEarly[kind];
                        drop(search.result,
                            planVariantName(
                                variantOfShape(shape, kind, v, rc, search.transformer), search.project, zero),
                            figures.error);
                        continue;
                    }
                    setBounds(s, search.timeBoundValid);
                    search.specs.push_back(s);
                }
        }
    }
}

/// Each microbatch size dividing a replica's share of the global batch (up to the request's largest), at tp × cp ×
/// pp × dp devices: addSpecs of each.
void addBatchShapes(Search& search, Shape shape)
{
    const PlanRequest& request = search.request;
    if (request.globalBatch % shape.dp != 0)
        return;
    const int perReplica = request.globalBatch / shape.dp;
    for (int mbs : divisors(perReplica)) {
        if (mbs > request.maxMicrobatchSize)
            break;
        if (!search.transformer && mbs != search.project.model.microbatchSize)
            continue; // a block model's microbatch size is the model's (variants cannot override it)
        if (perReplica / mbs > request.maxMicrobatches)
            continue;
        shape.microbatchSize = mbs;
        shape.microbatches = perReplica / mbs;
        addSpecs(search, shape);
    }
}

/// The space: tp × cp × p × d = devices (ep divides d × cp), microbatches × size × d = global batch, then addSpecs;
/// sorted best-first by the time bound, so that the fast candidates are found early and bound the rest.
void enumerateSpecs(Search& search)
{
    const PlanRequest& request = search.request;
    const model::Transformer& t = search.project.model.transformer;
    const int ep = search.transformer && t.isMoe() ? std::max(1, t.moe.ep) : 1;
    for (int tp : search.tps)
        for (int cp : search.cps) {
            if (request.devices % (static_cast<long long>(tp) * cp) != 0)
                continue;
            const int rest = request.devices / (tp * cp);
            for (int pp : divisors(rest)) {
                const int dp = rest / pp;
                if (ep > 1 && (static_cast<long long>(dp) * cp) % ep != 0)
                    continue; // the placement rule needs ep | dp × cp (an EP group inside the replicas of a stage)
                addBatchShapes(search, Shape { tp, cp, pp, dp, 1, 1 });
            }
        }
    search.result.enumerated += static_cast<int>(search.specs.size());
    std::stable_sort(search.specs.begin(), search.specs.end(), [](const Spec& a, const Spec& b) {
        return a.timeBound != b.timeBound ? a.timeBound < b.timeBound : a.memoryBound < b.memoryBound;
    });
    for (ScheduleKind kind : generatedKinds())
        if (std::find(search.kinds.begin(), search.kinds.end(), kind) != search.kinds.end())
            search.result.kinds.push_back({ kind });
    for (const Spec& s : search.specs)
        summaryOf(search.result, s.kind).enumerated++;
    for (const auto& [kind, count] : search.failedEarly) {
        summaryOf(search.result, kind).enumerated += count;
        summaryOf(search.result, kind).failed += count;
    }
}

/// The variant a spec describes, with its DP-balanced partition.
Variant variantOfSpec(const Spec& s, const Project& project, bool transformer)
{
    Variant v = variantOfShape(Shape { s.tp, s.cp, s.pp, s.dp, s.microbatchSize, s.microbatches }, s.kind,
        s.stagesPerRank, s.recompute, transformer);
    v.layerPartition = minMaxPartition(s.layers->balance, s.stages);
    v.name = planVariantName(v, project, s.zero);
    return v;
}

/// Whether a sound lower bound rules the spec out: its static memory alone over the limit, or a kept candidate
/// at least as good in both time and memory. Counts and explains it.
bool prunedByBounds(Search& search, const Spec& s, const std::string& name)
{
    PlanResult& result = search.result;
    if (s.memoryBound > search.limit) {
        ++result.pruned;
        summaryOf(result, s.kind).pruned++;
        drop(result, name,
            "pruned: its peak memory is at least " + formatBytes(s.memoryBound) + " (static memory"
                + (oneStagePerRank(s.kind) && hasActivations(*s.layers) ? std::string(" and activations")
                                                                        : std::string())
                + " on the busiest rank), over the limit " + formatBytes(search.limit));
        return true;
    }
    for (const auto& [step, peak] : search.keptPoints)
        if (step <= s.timeBound && peak <= s.memoryBound && (step < s.timeBound || peak < s.memoryBound)) {
            ++result.pruned;
            summaryOf(result, s.kind).pruned++;
            return true;
        }
    return false;
}

/// The candidate with the model's even layer split (refined) instead of its time-balanced one, kept when it fits
/// and the balanced one does not, or when both fit and it is faster. A balanced split gives the cheap stages
/// (dense layers, the embedding) more layers, and so more kept activations, than the even one a published run
/// uses (DeepSeek-V3's 16 stages); and it balances the stages' F + B, which an overlapped F&B slot does not take
/// (its all-to-alls run beside the compute), so the even split can also be the faster once simulated.
void tryEvenSplit(Search& search, const Spec& s, Tried& tried)
{
    const Prediction& p = tried.prediction;
    if (!p.valid())
        return;
    Variant even = tried.variant;
    even.layerPartition.clear();
    try {
        even.layerPartition = effectivePartition(*s.project, even);
    } catch (const Error&) {
        return;
    }
    if (even.layerPartition == tried.variant.layerPartition)
        return;
    Tried t = predictVariant(*s.project, std::move(even), search.result.refinements, search.validations);
    if (search.request.refine && t.prediction.valid() && t.prediction.peakMemoryBytes <= search.limit)
        t = refine(
            *s.project, std::move(t), search.request, search.limit, search.result.refinements, search.validations);
    const bool fits = t.prediction.valid() && t.prediction.peakMemoryBytes <= search.limit;
    if (fits && (p.peakMemoryBytes > search.limit || better(t.prediction, p)))
        tried = std::move(t);
}

/// Predicts (and refines) a candidate and keeps it when it is valid and fits the limit; counts it either way.
void tryCandidate(Search& search, const Spec& s, Variant v)
{
    PlanResult& result = search.result;
    Tried tried = predictVariant(*s.project, std::move(v), result.simulated, search.validations);
    if (search.request.refine && tried.prediction.valid())
        tried = refine(
            *s.project, std::move(tried), search.request, search.limit, result.refinements, search.validations);
    tryEvenSplit(search, s, tried);
    const Prediction& p = tried.prediction;
    PlanKindSummary& kindSummary = summaryOf(result, s.kind);
    kindSummary.simulated++;
    if (!p.valid()) {
        ++result.failed;
        kindSummary.failed++;
        drop(result, tried.variant.name, p.error);
        return;
    }
    if (result.smallestPeakRank < 0 || p.peakMemoryBytes < result.smallestPeakBytes) {
        result.smallestPeakBytes = p.peakMemoryBytes;
        result.smallestPeakCandidate = tried.variant.name;
        result.smallestPeakRank = p.peakMemoryRank;
    }
    if (kindSummary.smallestPeakBytes <= 0.0 || p.peakMemoryBytes < kindSummary.smallestPeakBytes)
        kindSummary.smallestPeakBytes = p.peakMemoryBytes;
    if (p.peakMemoryBytes > search.limit) {
        ++result.overLimit;
        kindSummary.overLimit++;
        drop(result, tried.variant.name,
            "peak memory " + formatBytes(p.peakMemoryBytes) + " on rank " + std::to_string(p.peakMemoryRank)
                + " exceeds the limit " + formatBytes(search.limit));
        return;
    }
    kindSummary.fitting++;
    search.keptPoints.emplace_back(p.stepUs, p.peakMemoryBytes);
    search.keptSpecs.push_back(s);
    search.kept.push_back(std::move(tried));
}

/// Goes through the specs best-first, pruning by the bounds (when asked) and trying the rest; stops early when
/// the progress callback cancels.
void searchSpecs(Search& search)
{
    const int total = static_cast<int>(search.specs.size());
    for (int i = 0; i < total; ++i) {
        if (search.request.progress && !search.request.progress(i, total)) {
            search.result.cancelled = true;
            break;
        }
        const Spec& s = search.specs[static_cast<std::size_t>(i)];
        Variant v = variantOfSpec(s, search.project, search.transformer);
        if (s.memoryBound < search.smallestBound) {
            search.smallestBound = s.memoryBound;
            search.smallestBoundName = v.name;
        }
        if (search.request.prune && prunedByBounds(search, s, v.name))
            continue;
        tryCandidate(search, s, std::move(v));
    }
    if (!search.result.cancelled && search.request.progress)
        search.request.progress(total, total); // the end (its answer no longer matters)
}

/// The result's candidates (sorted by step time, the Pareto front marked) and its smallest peak.
void finishResult(Search& search)
{
    PlanResult& result = search.result;
    if (result.smallestPeakRank < 0 && std::isfinite(search.smallestBound)) {
        // Nothing simulated (every candidate's static memory over the limit): the least static bound.
        result.smallestPeakBytes = search.smallestBound;
        result.smallestPeakCandidate = search.smallestBoundName + " (static memory alone, a lower bound)";
    }
    for (std::size_t i = 0; i < search.kept.size(); ++i)
        result.candidates.push_back(candidateOf(search.kept[i], search.keptSpecs[i]));
    for (std::size_t i : paretoFront(search.keptPoints))
        result.candidates[i].pareto = true;
    std::stable_sort(
        result.candidates.begin(), result.candidates.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
            return std::tie(a.stepUs, a.peakMemoryBytes, a.variant.name)
                < std::tie(b.stepUs, b.peakMemoryBytes, b.variant.name);
        });
}

} // namespace

PlanResult plan(const Project& project, const PlanRequest& request)
{
    const auto started = std::chrono::steady_clock::now();
    checkRequest(project, request);
    PlanResult result;
    Search search(project, request, result);
    search.limit = request.memoryLimitBytes > 0.0 ? request.memoryLimitBytes : project.cluster.memoryPerDeviceBytes;
    result.memoryLimitBytes = search.limit;
    search.transformer = project.model.kind == ModelKind::Transformer;
    search.timeBoundValid = project.costs.stages.empty();
    search.kinds = request.kinds.empty() ? generatedKinds() : request.kinds;
    search.recomputes = recomputeChoices(search.transformer, project.model.recompute, request);
    search.tps = tpChoices(project, request);
    search.cps = cpChoices(project, request);
    search.zeros = zeroChoices(project, request);
    enumerateSpecs(search);
    searchSpecs(search);
    finishResult(search);
    result.searchMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return result;
}

} // namespace dps
