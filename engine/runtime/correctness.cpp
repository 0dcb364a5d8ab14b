#include "correctness.h"

#include "stagemath.h"
#include "transformerstage.h"
#include "wire.h"

#include "base/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace dps::runtime {

namespace {

template <typename X, typename Y> double metric(const X* x, const Y* y, std::size_t n)
{
    double dot = 0.0;
    double norms = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double a = static_cast<double>(x[i]);
        const double b = static_cast<double>(y[i]);
        dot += a * b;
        norms += a * a + b * b;
    }
    return norms == 0.0 ? 0.0 : 1.0 - 2.0 * dot / norms;
}

std::vector<int> microbatchesOf(int rank, int ranks, int microbatches)
{
    std::vector<int> mine;
    for (int m = rank; m < microbatches; m += ranks)
        mine.push_back(m);
    return mine;
}

void putLosses(ByteWriter& w, const std::map<int, double>& losses)
{
    w.put(static_cast<std::uint64_t>(losses.size()));
    for (const auto& [m, loss] : losses) {
        w.put(m);
        w.put(loss);
    }
}

void getLosses(ByteReader& r, std::map<int, double>& into)
{
    const auto n = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < n; ++i) {
        const int m = r.get<int>();
        into[m] = r.get<double>();
    }
}

/// Compares the stages this rank owns (first holder) with the reference summed over all ranks.
std::vector<ParameterCheck> compareGradients(
    Comm& comm, Backend& backend, const ModelSpec& spec, const RankExecutor& executor, const Reference& ref)
{
    // The reference holds every expert (ep 1); with expert parallelism each member of a group holds some, so the
    // first holder of each member compares its parameters (the dense ones and its experts) by layer and name.
    ModelSpec whole = spec;
    whole.ep = 1;
    whole.epMember = 0;
    std::vector<ParameterCheck> checks;
    for (int s = 0; s < spec.stages(); ++s) {
        const auto& holders = executor.holders()[static_cast<std::size_t>(s)];
        const StageParams& reference = *ref.stages[static_cast<std::size_t>(s)];
        const std::size_t n = reference.gradients().elements();
        if (n == 0)
            continue;
        if (holders.empty())
            throw RuntimeError("stage " + std::to_string(s) + " is held by no rank");
        std::vector<float> local(n);
        backend.downloadFloats(0, local.data(), reference.gradients().data(), n);
        const std::vector<double> mine(local.begin(), local.end());
        for (int member = 0; member < std::max(1, spec.ep); ++member) {
            int root = -1;
            for (int holder : holders)
                if (root < 0 && executor.expertMemberOf(holder) == member)
                    root = holder;
            if (root < 0)
                throw RuntimeError(
                    "stage " + std::to_string(s) + ": no holder of expert member " + std::to_string(member));
            std::vector<double> sum = mine;
            comm.reduceSum(sum.data(), n, root);
            if (comm.rank() != root)
                continue;
            std::map<std::pair<int, std::string>, StageParameter> byName;
            for (const StageParameter& p : reference.parameters(whole))
                byName.emplace(std::make_pair(p.layer, p.name), p);
            const StageParams& params = executor.stageParams(s);
            std::vector<float> got(params.gradients().elements());
            backend.downloadFloats(0, got.data(), params.gradients().data(), got.size());
            for (const StageParameter& p : params.parameters(spec)) {
                const auto it = byName.find({ p.layer, p.name });
                if (it == byName.end() || it->second.elements != p.elements)
                    throw RuntimeError("stage " + std::to_string(s) + ": parameter " + p.name + " of layer "
                        + std::to_string(p.layer) + " is not the reference's");
                checks.push_back(ParameterCheck {
                    s, p.layer, p.name, metric(got.data() + p.offset, sum.data() + it->second.offset, p.elements) });
            }
        }
    }
    return checks;
}

void putChecks(ByteWriter& w, const std::vector<ParameterCheck>& checks)
{
    w.put(static_cast<std::uint64_t>(checks.size()));
    for (const auto& c : checks) {
        w.put(c.stage);
        w.put(c.layer);
        w.putString(c.parameter);
        w.put(c.error);
    }
}

void getChecks(ByteReader& r, std::vector<ParameterCheck>& into)
{
    const auto n = r.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < n; ++i) {
        ParameterCheck c;
        c.stage = r.get<int>();
        c.layer = r.get<int>();
        c.parameter = r.getString();
        c.error = r.get<double>();
        into.push_back(c);
    }
}

/// Rank 0: the verdict from all losses and all parameter checks. The failure named is a missing loss,
/// else the loss furthest over its threshold, else the gradient furthest over its threshold.
void judge(CorrectnessReport& report, const std::map<int, double>& losses, const std::map<int, double>& reference,
    int microbatches)
{
    const Thresholds& t = report.thresholds;
    std::string missing;
    std::string lossFailure;
    std::string gradFailure;
    double worstLoss = t.loss;
    double worstGrad = t.grad;
    for (int m = 0; m < microbatches; ++m) {
        const auto got = losses.find(m);
        const auto want = reference.find(m);
        if (got == losses.end() || want == reference.end()) {
            if (missing.empty())
                missing = "microbatch " + std::to_string(m) + ": no loss was computed";
            continue;
        }
        const LossCheck c { m, got->second, want->second, relativeError(got->second, want->second) };
        report.losses.push_back(c);
        report.maxLossError = std::max(report.maxLossError, c.error);
        if (c.error > worstLoss || std::isnan(c.error)) {
            worstLoss = std::isnan(c.error) ? INFINITY : c.error;
            lossFailure = "microbatch " + std::to_string(m) + ": loss " + formatSignificant(c.loss) + " vs reference "
                + formatSignificant(c.reference) + ", relative error " + formatSignificant(c.error) + " > "
                + formatSignificant(t.loss);
        }
    }
    for (const auto& c : report.parameters) {
        report.maxGradError = std::max(report.maxGradError, c.error);
        if (c.error > worstGrad || std::isnan(c.error)) {
            worstGrad = std::isnan(c.error) ? INFINITY : c.error;
            gradFailure = "stage " + std::to_string(c.stage)
                + (c.layer >= 0 ? " (layer " + std::to_string(c.layer) + ") " : std::string(" ")) + c.parameter
                + ": gradient metric " + formatSignificant(c.error) + " > " + formatSignificant(t.grad);
        }
    }
    report.failure = !missing.empty() ? missing : !lossFailure.empty() ? lossFailure : gradFailure;
    report.passed = report.failure.empty();
}

} // namespace

Thresholds thresholdsFor(std::string_view backend, DType computeDtype)
{
    struct Row {
        std::string_view backend;
        DType dtype;
        Thresholds thresholds;
    };
    static constexpr Row kTable[] = {
        { "cpu", DType::FP32, { 1e-6, 1e-10 } },
        { "cuda", DType::FP32, { 1e-5, 1e-8 } },
        { "cpu", DType::BF16, { 1e-2, 1e-3 } },
        { "cuda", DType::BF16, { 1e-2, 1e-3 } },
    };
    for (const Row& row : kTable)
        if (row.backend == backend && row.dtype == computeDtype)
            return row.thresholds;
    throw RuntimeError("no correctness thresholds for backend '" + std::string(backend) + "'");
}

double gradientMetric(const std::vector<float>& x, const std::vector<float>& y)
{
    if (x.size() != y.size())
        throw RuntimeError("gradient metric of vectors of different sizes");
    return metric(x.data(), y.data(), x.size());
}

double relativeError(const std::vector<float>& value, const std::vector<float>& reference)
{
    if (value.size() != reference.size())
        return std::numeric_limits<double>::infinity();
    double diff = 0.0;
    double norm = 0.0;
    for (std::size_t i = 0; i < value.size(); ++i) {
        const double d = static_cast<double>(value[i]) - reference[i];
        diff += d * d;
        norm += static_cast<double>(reference[i]) * reference[i];
    }
    return norm == 0.0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

double relativeError(double value, double reference)
{
    const double diff = std::fabs(value - reference);
    return reference == 0.0 ? diff : diff / std::fabs(reference);
}

Reference runReference(Backend& backend, const ModelSpec& spec, const std::vector<int>& microbatches)
{
    Reference ref;
    for (int s = 0; s < spec.stages(); ++s)
        ref.stages.push_back(std::make_unique<StageParams>(backend, spec, s));
    if (spec.transformer) {
        for (int m : microbatches) {
            const MicrobatchTokens tokens = microbatchTokens(*spec.transformer, spec.seed, m);
            std::vector<SavedActivations> saved(static_cast<std::size_t>(spec.stages()));
            double loss = 0.0;
            Tensor x;
            for (std::size_t s = 0; s < ref.stages.size(); ++s) {
                StageParams& p = *ref.stages[s];
                x = p.transformer()->forward(
                    0, p.weights().data(), p.gradients().data(), std::move(x), tokens, saved[s], &loss);
            }
            Tensor grad;
            for (std::size_t s = ref.stages.size(); s-- > 0;) {
                StageParams& p = *ref.stages[s];
                grad = p.transformer()->backward(
                    0, p.weights().data(), p.gradients().data(), saved[s], std::move(grad), tokens);
            }
            backend.synchronize();
            ref.losses[m] = loss;
        }
        return ref;
    }
    const StageMath math(backend, spec);
    const auto t = static_cast<std::size_t>(spec.tokens);
    const auto h = static_cast<std::size_t>(spec.hidden);
    for (int m : microbatches) {
        Tensor x(backend, t, h, MemoryCategory::Workspace);
        backend.uploadFloats(0, x.data(), microbatchInput(spec, m).data(), x.elements());
        Tensor target(backend, t, h, MemoryCategory::Workspace);
        backend.uploadFloats(0, target.data(), microbatchTarget(spec, m).data(), target.elements());
        std::vector<SavedActivations> saved(static_cast<std::size_t>(spec.stages()));
        double loss = 0.0;
        const int last = spec.stages() - 1;
        for (int s = 0; s <= last; ++s)
            x = math.forward(0, *ref.stages[static_cast<std::size_t>(s)], std::move(x),
                saved[static_cast<std::size_t>(s)], s == last, &target, &loss);
        Tensor grad;
        for (int s = last; s >= 0; --s)
            grad = math.backward(0, *ref.stages[static_cast<std::size_t>(s)], saved[static_cast<std::size_t>(s)],
                std::move(grad), s > 0);
        backend.synchronize();
        ref.losses[m] = loss;
    }
    return ref;
}

CorrectnessReport checkCorrectness(Comm& comm, Backend& backend, const ModelSpec& spec, const RankExecutor& executor,
    int microbatches, const Thresholds& thresholds)
{
    CorrectnessReport report;
    report.thresholds = thresholds;
    ModelSpec whole = spec; // the reference holds every expert
    whole.ep = 1;
    whole.epMember = 0;
    const Reference ref = runReference(backend, whole, microbatchesOf(comm.rank(), comm.size(), microbatches));

    ByteWriter lossesOut;
    putLosses(lossesOut, executor.losses());
    putLosses(lossesOut, ref.losses);
    const auto lossesIn = comm.gather(lossesOut.bytes(), 0);

    ByteWriter checksOut;
    putChecks(checksOut, compareGradients(comm, backend, spec, executor, ref));
    const auto checksIn = comm.gather(checksOut.bytes(), 0);

    ByteWriter verdict;
    if (comm.rank() == 0) {
        std::map<int, double> losses;
        std::map<int, double> reference;
        for (const auto& bytes : lossesIn) {
            ByteReader r(bytes);
            getLosses(r, losses);
            getLosses(r, reference);
        }
        for (const auto& bytes : checksIn) {
            ByteReader r(bytes);
            getChecks(r, report.parameters);
        }
        judge(report, losses, reference, microbatches);
        verdict.put(report.passed);
        verdict.put(report.maxLossError);
        verdict.put(report.maxGradError);
        verdict.putString(report.failure);
    }
    comm.broadcast(verdict.bytes(), 0);
    ByteReader r(verdict.bytes());
    report.passed = r.get<bool>();
    report.maxLossError = r.get<double>();
    report.maxGradError = r.get<double>();
    report.failure = r.getString();
    return report;
}

} // namespace dps::runtime
