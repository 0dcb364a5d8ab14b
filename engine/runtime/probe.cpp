#include "probe.h"

#include "cpubackend.h"
#include "layers/expertcomm.h"
#include "mpicomm.h"
#include "stagemath.h"
#include "threadcomm.h"
#include "transformerstage.h"
#include "worker.h"

#include "project/modelcost.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "base/stats.h"
#include "protocol/exitcodes.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <numeric>
#include <ostream>
#include <set>
#include <thread>
#include <tuple>

namespace dps::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double microsecondsSince(Clock::time_point start)
{
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

/// µs of CPU time this thread has used (CLOCK_THREAD_CPUTIME_ID: while it ran, in user and kernel mode).
double threadCpuMicroseconds()
{
    timespec t {};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) * 1e-3;
}

/// µs on the steady clock.
double wallMicroseconds()
{
    return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}

/// Runs every call on another backend and times the compute calls (GEMMs and the elementwise ops), one
/// entry per distinct call: the probe sees exactly the calls StageMath makes in a run. With one BLAS thread a
/// call runs on the calling thread and is timed by that thread's CPU time: the time other processes had the
/// core is left out, so a probe on a busy machine measures what a call costs when it runs, as on a quiet one
/// (on this 2-core machine at load 5, a 4 ms GEMM's median wall time was 8–24 ms, its CPU time 4.0–4.4 ms).
/// With more threads the work is on other threads too: wall time.
class TimingBackend final : public Backend {
public:
    struct Call {
        std::string phase; ///< the phase in which the call was first seen
        bool gemm = false;
        Transpose transA = Transpose::No;
        Transpose transB = Transpose::No;
        int m = 0, n = 0, k = 0;
        float beta = 0;
        std::string op; ///< elementwise op name
        std::size_t elements = 0;
        std::uint64_t bytesPerElement = 0;
        std::vector<double> us;
    };

    TimingBackend(Backend& inner, bool cpuTime)
        : m_inner(inner)
        , m_cpuTime(cpuTime)
    {
    }

    void setPhase(std::string phase) { m_phase = std::move(phase); }
    void setRecording(bool on) { m_recording = on; }
    const std::vector<Call>& calls() const { return m_calls; }

    std::string name() const override { return m_inner.name(); }
    std::string deviceDescription() const override { return m_inner.deviceDescription(); }
    int elementBytes() const override { return m_inner.elementBytes(); }
    bool hostAccessible() const override { return m_inner.hostAccessible(); }
    /// Memory is counted here (Tensor::recategorize moves bytes in this backend's counters); the inner
    /// backend's per-category counts are not read.
    void* allocate(std::size_t bytes, MemoryCategory category) override
    {
        void* p = m_inner.allocate(bytes, category);
        m_memory.add(category, bytes);
        return p;
    }
    void deallocate(void* ptr, std::size_t bytes, MemoryCategory category) override
    {
        m_inner.deallocate(ptr, bytes, category);
        m_memory.remove(category, bytes);
    }

    void gemm(Lane lane, Transpose transA, Transpose transB, int m, int n, int k, float alpha, const void* a,
        const void* b, float beta, void* c) override
    {
        const double start = now();
        m_inner.gemm(lane, transA, transB, m, n, k, alpha, a, b, beta, c);
        const double us = now() - start;
        if (!m_recording)
            return;
        for (Call& call : m_calls)
            if (call.gemm && call.transA == transA && call.transB == transB && call.m == m && call.n == n && call.k == k
                && call.beta == beta) {
                call.us.push_back(us);
                return;
            }
        Call call;
        call.phase = m_phase;
        call.gemm = true;
        call.transA = transA;
        call.transB = transB;
        call.m = m;
        call.n = n;
        call.k = k;
        call.beta = beta;
        call.us.push_back(us);
        m_calls.push_back(std::move(call));
    }
    void geluForward(Lane lane, const void* in, void* out, std::size_t n) override
    {
        const double start = now();
        m_inner.geluForward(lane, in, out, n);
        recordOp("gelu_forward", n, 8, now() - start);
    }
    void geluBackward(Lane lane, const void* in, const void* gradOut, void* gradIn, std::size_t n) override
    {
        const double start = now();
        m_inner.geluBackward(lane, in, gradOut, gradIn, n);
        recordOp("gelu_backward", n, 12, now() - start);
    }
    void mseLoss(Lane lane, const void* y, const void* target, std::size_t n, void* grad, double* lossHost) override
    {
        const double start = now();
        m_inner.mseLoss(lane, y, target, n, grad, lossHost);
        recordOp("mse_loss", n, 12, now() - start);
    }
    void axpy(Lane lane, std::size_t n, float alpha, const void* x, void* y) override
    {
        const double start = now();
        m_inner.axpy(lane, n, alpha, x, y);
        recordOp("grad_accumulate", n, 12, now() - start);
    }
    void setZero(Lane lane, void* ptr, std::size_t bytes) override { m_inner.setZero(lane, ptr, bytes); }
    void copyHostToDevice(Lane lane, void* dst, const void* src, std::size_t bytes) override
    {
        m_inner.copyHostToDevice(lane, dst, src, bytes);
    }
    void copyDeviceToHost(Lane lane, void* dst, const void* src, std::size_t bytes) override
    {
        m_inner.copyDeviceToHost(lane, dst, src, bytes);
    }
    void copyDeviceToDevice(Lane lane, void* dst, const void* src, std::size_t bytes) override
    {
        m_inner.copyDeviceToDevice(lane, dst, src, bytes);
    }
    void uploadFloats(Lane lane, void* dst, const float* src, std::size_t n) override
    {
        m_inner.uploadFloats(lane, dst, src, n);
    }
    void downloadFloats(Lane lane, float* dst, const void* src, std::size_t n) override
    {
        m_inner.downloadFloats(lane, dst, src, n);
    }
    void runConcurrently(const std::function<void(Lane)>& first, const std::function<void(Lane)>& second) override
    {
        m_inner.runConcurrently(first, second);
    }
    void synchronize() override { m_inner.synchronize(); }

private:
    double now() const { return m_cpuTime ? threadCpuMicroseconds() : wallMicroseconds(); }
    /// `bytesPerElement`: bytes read and written per element (fp32).
    void recordOp(const char* op, std::size_t n, std::uint64_t bytesPerElement, double us)
    {
        if (!m_recording)
            return;
        for (Call& call : m_calls)
            if (!call.gemm && call.op == op && call.elements == n) {
                call.us.push_back(us);
                return;
            }
        Call call;
        call.phase = m_phase;
        call.op = op;
        call.elements = n;
        call.bytesPerElement = bytesPerElement;
        call.us.push_back(us);
        m_calls.push_back(std::move(call));
    }

    Backend& m_inner;
    bool m_cpuTime = false;
    std::string m_phase;
    bool m_recording = true;
    std::vector<Call> m_calls;
};

/// Layers of the stage the compute probe runs: enough that their weights fill kProbeWeightBytes, at most 16.
/// In a run a rank cycles through the weights, gradients and activations of its stages (the default project's
/// machine-sized variant: 2 stages of 4 layers, 64 MiB of weights and as much of gradients), so a call finds its
/// operands in memory, not in the cache. One layer repeated keeps them cached: at 256×512×2048 on this machine
/// its gelu_backward took 0.59 ms instead of 1.36 ms (H, written by F, is cold in a run) and its GEMMs 3–5 %
/// less (docs/cpu-profile.md).
constexpr double kProbeWeightBytes = 64.0 * 1024 * 1024;

int probeLayers(const machine::ProbeShape& shape)
{
    const double layerBytes = 2.0 * shape.hidden * shape.ffn * 4.0;
    return static_cast<int>(std::clamp(std::ceil(kProbeWeightBytes / layerBytes), 1.0, 16.0));
}

machine::ShapeMeasure measureShape(CpuBackend& cpu, const machine::ProbeShape& shape, double seconds)
{
    TimingBackend timed(cpu, cpu.blasThreads() == 1);
    ModelSpec spec;
    spec.hidden = shape.hidden;
    spec.ffn = shape.ffn;
    spec.tokens = shape.tokens;
    spec.partition = { probeLayers(shape) };
    spec.seed = 1;
    const auto t = static_cast<std::size_t>(shape.tokens);
    const auto h = static_cast<std::size_t>(shape.hidden);
    StageParams params(timed, spec, 0);
    const StageMath math(timed, spec);
    const std::vector<float> input = microbatchInput(spec, 0);
    const std::vector<float> targetHost = microbatchTarget(spec, 0);
    Tensor target(timed, t, h, MemoryCategory::Data);
    timed.uploadFloats(0, target.data(), targetHost.data(), targetHost.size());
    // The gradients another replica sends, added by the replica sum (RankExecutor::sumReplicaGradients): one
    // layer's 2·h·f, the size the profile reports it at.
    const std::size_t layerGradients = 2 * h * static_cast<std::size_t>(shape.ffn);
    Tensor replica(timed, 1, layerGradients, MemoryCategory::Communication);
    timed.setZero(0, replica.data(), replica.bytes());

    const auto repetition = [&] {
        Tensor in(timed, t, h, MemoryCategory::Communication);
        timed.uploadFloats(0, in.data(), input.data(), input.size());
        SavedActivations saved;
        double loss = 0;
        timed.setPhase("F");
        math.forward(0, params, std::move(in), saved, true, &target, &loss);
        timed.setPhase("I");
        const Tensor dx = math.inputGrad(0, params, saved, Tensor(), true);
        timed.setPhase("W");
        math.weightGrad(0, params, saved);
        timed.axpy(0, layerGradients, 1.0f, replica.data(), params.gradients().data());
    };
    timed.setRecording(false);
    const auto warmupStart = Clock::now();
    repetition(); // warm-up: first touches, OpenBLAS's buffers
    // A shape whose one repetition outlasts the budget (a large model on a small CPU) is timed once.
    const int minimum = microsecondsSince(warmupStart) >= seconds * 1e6 ? 1 : 3;
    timed.setRecording(true);
    const auto start = Clock::now();
    int repetitions = 0;
    while (repetitions < minimum || (microsecondsSince(start) < seconds * 1e6 && repetitions < 10000)) {
        repetition();
        if (++repetitions % 16 == 0) // keep the accumulated gradients small
            params.zeroGradients(timed);
    }

    machine::ShapeMeasure out;
    out.shape = shape;
    out.repetitions = repetitions;
    for (const TimingBackend::Call& call : timed.calls()) {
        if (call.gemm) {
            machine::GemmMeasure g;
            g.phase = call.phase;
            g.transA = call.transA == Transpose::Yes;
            g.transB = call.transB == Transpose::Yes;
            g.m = call.m;
            g.n = call.n;
            g.k = call.k;
            g.beta = call.beta;
            g.timeUs = std::max(median(call.us), 1e-3);
            out.gemms.push_back(g);
        } else {
            machine::ElementwiseMeasure e;
            e.op = call.op;
            e.elements = call.elements;
            e.bytes = call.elements * call.bytesPerElement;
            e.timeUs = std::max(median(call.us), 1e-3);
            out.elementwise.push_back(e);
        }
    }
    return out;
}

// ------------------------------------------------------------------ transformer stages

/// The clock of the transformer probe: the calling thread's CPU time with one BLAS thread (the work of a call
/// runs on the calling thread), else wall time; µs.
double probeClock(bool cpuTime)
{
    return cpuTime ? threadCpuMicroseconds() : wallMicroseconds();
}

/// One timed action of one member: the compute between its exchanges (`comm`, µs from the action's start, which
/// ends at `end`), µs (exchanges + 1 chunks).
std::vector<double> computeChunks(double end, const std::vector<LaneActivity::Interval>& comm)
{
    std::vector<double> chunks;
    double from = 0.0;
    for (const LaneActivity::Interval& c : comm) {
        chunks.push_back(std::max(0.0, c.startUs - from));
        from = c.endUs;
    }
    chunks.push_back(std::max(0.0, end - from));
    return chunks;
}

/// The per-chunk medians of repetitions (all of one length); throws RuntimeError when they differ.
std::vector<double> chunkMedians(const std::vector<std::vector<double>>& samples, const char* action)
{
    std::vector<double> out;
    if (samples.empty())
        return out;
    for (const std::vector<double>& s : samples)
        if (s.size() != samples.front().size())
            throw RuntimeError(std::string("transformer probe: ") + action
                + " exchanged a different number of times in two repetitions");
    for (std::size_t c = 0; c < samples.front().size(); ++c) {
        std::vector<double> values;
        for (const std::vector<double>& s : samples)
            values.push_back(s[c]);
        out.push_back(std::max(median(values), 1e-3));
    }
    return out;
}

/// What one expert-parallel member of a probed stage measured.
struct MemberTimes {
    std::vector<std::vector<double>> forward, backward; ///< per repetition, compute chunks
    std::vector<std::vector<double>> input; ///< per repetition, compute chunks of I (summed)
    std::vector<double> weight;
    double warmupWallUs = 0;
};

/// One member per expert-parallel process of a run: its own backend, stage (E/ep experts) and microbatch.
struct ProbeMember {
    std::unique_ptr<CpuBackend> backend;
    ModelSpec spec;
    std::unique_ptr<StageParams> params;
    layers::ExpertGroup group;
    MicrobatchTokens tokens;
    std::vector<float> input, gradOutput;
    MemberTimes times;
};

/// Builds member `m` of `ep` of stage `stage` in place (its expert group points into it and at `comm`).
void setUpMember(
    ProbeMember& member, const ModelSpec& base, int stage, int m, int ep, int threads, bool cpuTime, Comm& comm)
{
    const auto t = static_cast<std::size_t>(base.tokens);
    const auto h = static_cast<std::size_t>(base.hidden);
    member.backend = std::make_unique<CpuBackend>(threads);
    member.spec = base;
    if (ep > 1) {
        member.spec.ep = ep;
        member.spec.epMember = m;
    }
    member.params = std::make_unique<StageParams>(*member.backend, member.spec, stage);
    // The expert group's exchanges are recorded by the backend's lane activity, on the probe's clock.
    member.backend->laneActivity().setClock([cpuTime] { return probeClock(cpuTime); });
    member.group.comm = &comm;
    for (int r = 0; r < ep; ++r)
        member.group.members.push_back(r);
    member.group.me = m;
    member.group.backend = member.backend.get();
    if (ep > 1)
        member.params->transformer()->setExpertGroup(&member.group);
    // Replica m's microbatch 0, as a run's replicas compute different data; numbered 0 on every member.
    member.tokens = microbatchTokens(*base.transformer, base.seed, m);
    member.tokens.microbatch = 0;
    member.input = seededUniform(base.seed, 7, static_cast<std::uint64_t>(2 * m), t * h, 1.0);
    member.gradOutput = seededUniform(base.seed, 7, static_cast<std::uint64_t>(2 * m + 1), t * h, 1e-3);
}

/// One repetition of a member: F, I, W (a zero-bubble schedule's three actions), then F and B (DualPipe's),
/// each timed as its compute chunks; recorded into the member's times when `record`.
void probeRepetition(ProbeMember& member, bool first, bool last, bool record)
{
    Backend& b = *member.backend;
    TransformerStage& st = *member.params->transformer();
    void* w = member.params->weights().data();
    void* g = member.params->gradients().data();
    const auto t = static_cast<std::size_t>(member.spec.tokens);
    const auto h = static_cast<std::size_t>(member.spec.hidden);
    const auto tensorOf = [&](const std::vector<float>& host, bool wanted) {
        if (!wanted)
            return Tensor();
        Tensor x(b, t, h, MemoryCategory::Communication);
        b.uploadFloats(0, x.data(), host.data(), host.size());
        return x;
    };
    const auto timed = [&](const std::function<void()>& body) {
        LaneActivity& activity = b.laneActivity();
        activity.begin();
        body();
        return computeChunks(activity.elapsedUs(), activity.lane(0).comm);
    };
    double loss = 0;
    for (int pass = 0; pass < 2; ++pass) {
        SavedActivations saved;
        Tensor in = tensorOf(member.input, !first);
        const std::vector<double> f = timed([&] { st.forward(0, w, g, std::move(in), member.tokens, saved, &loss); });
        if (record)
            member.times.forward.push_back(f);
        Tensor dy = tensorOf(member.gradOutput, !last);
        if (pass == 0) {
            const std::vector<double> i = timed([&] { st.inputGrad(0, w, g, saved, std::move(dy), member.tokens); });
            const std::vector<double> wt = timed([&] { st.weightGrad(0, w, g, saved, member.tokens); });
            if (record) {
                member.times.input.push_back(i);
                member.times.weight.push_back(std::accumulate(wt.begin(), wt.end(), 0.0));
            }
        } else {
            const std::vector<double> bw = timed([&] { st.backward(0, w, g, saved, std::move(dy), member.tokens); });
            if (record)
                member.times.backward.push_back(bw);
        }
    }
}

/// Warm-up (first touches, OpenBLAS's buffers), then as many repetitions as fit in `seconds` (3 to 1000; 1
/// when the warm-up alone takes longer), the same on every member. Returns the repetitions.
int runRepetitions(ThreadWorld& world, std::vector<ProbeMember>& members, bool first, bool last, double seconds)
{
    world.run([&](Comm& comm) {
        ProbeMember& member = members[static_cast<std::size_t>(comm.rank())];
        const auto start = Clock::now();
        probeRepetition(member, first, last, false);
        member.times.warmupWallUs = microsecondsSince(start);
    });
    double warmup = 0;
    for (const ProbeMember& m : members)
        warmup = std::max(warmup, m.times.warmupWallUs);
    const int repetitions = warmup >= seconds * 1e6
        ? 1
        : static_cast<int>(std::clamp(seconds * 1e6 / std::max(warmup, 1.0), 3.0, 1000.0));
    world.run([&](Comm& comm) {
        ProbeMember& member = members[static_cast<std::size_t>(comm.rank())];
        for (int r = 0; r < repetitions; ++r) {
            probeRepetition(member, first, last, true);
            if ((r + 1) % 16 == 0) // keep the accumulated gradients small
                member.params->zeroGradients(*member.backend);
        }
    });
    return repetitions;
}

/// The stage's figures over the members: each chunk the largest over the members (an exchange ends when the
/// slowest member reaches it), I the largest sum, W the mean of the medians. Throws RuntimeError when the
/// members exchanged different numbers of times.
void mergeMembers(const std::vector<ProbeMember>& members, machine::TransformerStageMeasure& out)
{
    double weight = 0;
    for (const ProbeMember& m : members) {
        const std::vector<double> f = chunkMedians(m.times.forward, "F");
        const std::vector<double> b = chunkMedians(m.times.backward, "B");
        const std::vector<double> i = chunkMedians(m.times.input, "I");
        if (out.forwardChunksUs.empty()) {
            out.forwardChunksUs = f;
            out.backwardChunksUs = b;
        } else if (f.size() != out.forwardChunksUs.size() || b.size() != out.backwardChunksUs.size()) {
            throw RuntimeError("transformer probe: the expert-parallel members exchanged different numbers of times");
        }
        for (std::size_t c = 0; c < f.size(); ++c)
            out.forwardChunksUs[c] = std::max(out.forwardChunksUs[c], f[c]);
        for (std::size_t c = 0; c < b.size(); ++c)
            out.backwardChunksUs[c] = std::max(out.backwardChunksUs[c], b[c]);
        out.inputGradUs = std::max(out.inputGradUs, std::accumulate(i.begin(), i.end(), 0.0));
        weight += std::max(median(m.times.weight), 1e-3);
    }
    out.weightGradUs = weight / static_cast<double>(members.size());
}

machine::TransformerStageMeasure measureTransformerStage(const Project& project, const Variant& variant, int stage,
    const machine::TransformerStageKey& key, int threads, double seconds)
{
    const ModelSpec base = modelSpec(project, variant);
    const int ep = key.ep;
    const bool cpuTime = threads == 1;
    ThreadWorld world(ep);
    std::vector<ProbeMember> members(static_cast<std::size_t>(ep));
    for (int m = 0; m < ep; ++m)
        setUpMember(members[static_cast<std::size_t>(m)], base, stage, m, ep, threads, cpuTime, world.comm(m));
    machine::TransformerStageMeasure out;
    out.key = key;
    out.repetitions = runRepetitions(world, members, stage == 0, stage == base.stages() - 1, seconds);
    mergeMembers(members, out);
    return out;
}

int intValue(const std::string& flag, const std::string& text, int minimum, int maximum)
{
    int v = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (error != std::errc() || end != text.data() + text.size() || v < minimum || v > maximum)
        throw UsageError(flag + ": expected an integer from " + std::to_string(minimum) + " to "
            + std::to_string(maximum) + ", got '" + text + "'");
    return v;
}

std::vector<std::uint64_t> byteList(const std::string& text)
{
    std::vector<std::uint64_t> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, comma - start);
        std::uint64_t v = 0;
        const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || error != std::errc() || end != item.data() + item.size() || v < 1 || v > (1u << 30))
            throw UsageError("--bytes: expected sizes from 1 to 1073741824 separated by commas, got '" + text + "'");
        out.push_back(v);
        start = comma + 1;
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<std::pair<int, int>> stageList(const std::string& text)
{
    std::vector<std::pair<int, int>> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, comma - start);
        const std::size_t colon = item.find(':');
        int v = -1, s = -1;
        const bool ok = colon != std::string::npos
            && std::from_chars(item.data(), item.data() + colon, v).ptr == item.data() + colon
            && std::from_chars(item.data() + colon + 1, item.data() + item.size(), s).ptr == item.data() + item.size()
            && v >= 0 && s >= 0;
        if (!ok)
            throw UsageError(
                "--stages: expected VARIANT:STAGE indices separated by commas (e.g. 0:0,0:1), got '" + text + "'");
        out.push_back({ v, s });
        start = comma + 1;
    }
    return out;
}

void emit(const machine::CpuProfile& profile, const std::string& output, std::ostream& out)
{
    const std::string text = machine::serializeCpuProfile(profile);
    if (output.empty() || output == "-")
        out << text << std::flush;
    else
        writeFileAtomic(output, text);
}

} // namespace

bool isProbeMode(const std::vector<std::string>& args)
{
    return !args.empty()
        && (args[0] == "--probe-info" || args[0] == "--probe-compute" || args[0] == "--probe-p2p"
            || args[0] == "--probe-transformer");
}

ProbeOptions parseProbeArgs(const std::vector<std::string>& args)
{
    if (!isProbeMode(args))
        throw UsageError("expected --probe-info, --probe-compute, --probe-p2p or --probe-transformer first");
    ProbeOptions o;
    o.mode = args[0] == "--probe-info"     ? ProbeOptions::Mode::Info
        : args[0] == "--probe-compute"     ? ProbeOptions::Mode::Compute
        : args[0] == "--probe-transformer" ? ProbeOptions::Mode::Transformer
                                           : ProbeOptions::Mode::P2p;
    o.bytes = { 8, 1024, 65536, 262144, 1048576, 4194304 };
    for (std::size_t i = 1; i < args.size(); ++i) {
        std::string flag;
        std::string value;
        takeFlag(args, i, flag, value);
        if (flag == "--shapes") {
            try {
                o.shapes = machine::parseShapeList(value);
            } catch (const Error& e) {
                throw UsageError(std::string("--") + e.what());
            }
        } else if (flag == "--bytes") {
            o.bytes = byteList(value);
        } else if (flag == "--threads") {
            o.threads = intValue(flag, value, 1, 1024);
        } else if (flag == "--seconds") {
            char* end = nullptr;
            o.seconds = std::strtod(value.c_str(), &end);
            if (value.empty() || end != value.c_str() + value.size() || !(o.seconds > 0) || o.seconds > 600)
                throw UsageError("--seconds: expected a number above 0 and at most 600, got '" + value + "'");
        } else if (flag == "-o" || flag == "--output") {
            o.output = value;
        } else if (flag == "--project") {
            o.project = value;
        } else if (flag == "--stages") {
            o.stages = stageList(value);
        } else {
            throw UsageError("unknown option '" + flag + "'");
        }
    }
    if (o.mode == ProbeOptions::Mode::Compute && o.shapes.empty())
        throw UsageError("--probe-compute needs --shapes TxHxF[,TxHxF...]");
    if (o.mode == ProbeOptions::Mode::Transformer && o.project.empty())
        throw UsageError("--probe-transformer needs --project FILE");
    return o;
}

std::string probeUsage()
{
    return "       dpstudio-worker --probe-info [--threads N] [-o FILE]\n"
           "       dpstudio-worker --probe-compute --shapes TxHxF[,...] [--threads N] [--seconds S] [-o FILE]\n"
           "       mpirun -np 2 ... dpstudio-worker --probe-p2p [--bytes B[,...]] [--seconds S] [-o FILE]\n"
           "       dpstudio-worker --probe-transformer --project FILE [--stages V:S[,...]] [--threads N] [--seconds S] "
           "[-o FILE]";
}

std::vector<machine::ShapeMeasure> measureCompute(
    const std::vector<machine::ProbeShape>& shapes, int threads, double seconds)
{
    std::vector<machine::ShapeMeasure> out;
    if (shapes.empty())
        return out;
    CpuBackend cpu(threads);
    for (const machine::ProbeShape& shape : shapes)
        out.push_back(measureShape(cpu, shape, seconds / static_cast<double>(shapes.size())));
    return out;
}

std::vector<machine::TransformerStageMeasure> measureTransformerStages(
    const Project& project, const std::vector<std::pair<int, int>>& stages, int threads, double seconds)
{
    checkEngineRunsModel(project.model);
    if (project.model.kind != ModelKind::Transformer)
        throw FormatError("model.kind: the transformer probe needs a transformer model, got "
            + std::string(modelKindName(project.model.kind)));
    std::vector<std::pair<int, int>> wanted = stages;
    if (wanted.empty())
        for (std::size_t v = 0; v < project.variants.size(); ++v)
            for (std::size_t s = 0; s < effectivePartition(project, project.variants[v]).size(); ++s)
                wanted.push_back({ static_cast<int>(v), static_cast<int>(s) });
    std::vector<std::tuple<int, int, machine::TransformerStageKey>> distinct;
    for (const auto& [v, s] : wanted) {
        if (v >= static_cast<int>(project.variants.size()))
            throw FormatError("--stages: variant index " + std::to_string(v) + " out of range (the project has "
                + std::to_string(project.variants.size()) + " variants)");
        const std::vector<machine::TransformerStageKey> keys
            = machine::transformerStageKeys(project, project.variants[static_cast<std::size_t>(v)]);
        if (s >= static_cast<int>(keys.size()))
            throw FormatError("--stages: stage " + std::to_string(s) + " out of range (variant "
                + project.variants[static_cast<std::size_t>(v)].name + " has " + std::to_string(keys.size())
                + " stages)");
        const machine::TransformerStageKey& key = keys[static_cast<std::size_t>(s)];
        if (std::none_of(distinct.begin(), distinct.end(), [&](const auto& d) { return std::get<2>(d) == key; }))
            distinct.emplace_back(v, s, key);
    }
    std::vector<machine::TransformerStageMeasure> out;
    for (const auto& [v, s, key] : distinct)
        out.push_back(measureTransformerStage(project, project.variants[static_cast<std::size_t>(v)], s, key, threads,
            seconds / static_cast<double>(distinct.size())));
    return out;
}

std::vector<machine::P2pSample> measurePingPong(Comm& comm, const std::vector<std::uint64_t>& bytes, double seconds)
{
    if (comm.size() < 2)
        throw RuntimeError("the p2p probe needs 2 ranks, got " + std::to_string(comm.size()));
    constexpr int kTag = 7;
    const int rank = comm.rank();
    std::vector<machine::P2pSample> out;
    const double perSize = seconds / static_cast<double>(std::max<std::size_t>(bytes.size(), 1));
    for (const std::uint64_t size : bytes) {
        std::vector<char> buffer(static_cast<std::size_t>(size), 1);
        const auto roundTrip = [&]() -> double {
            const auto start = Clock::now();
            if (rank == 0) {
                comm.wait(comm.isend(buffer.data(), buffer.size(), 1, kTag));
                comm.wait(comm.irecv(buffer.data(), buffer.size(), 1, kTag));
            } else if (rank == 1) {
                comm.wait(comm.irecv(buffer.data(), buffer.size(), 0, kTag));
                comm.wait(comm.isend(buffer.data(), buffer.size(), 0, kTag));
            }
            return microsecondsSince(start);
        };
        roundTrip();
        roundTrip();
        double sizing = 0;
        for (int i = 0; i < 3; ++i)
            sizing += roundTrip();
        std::vector<char> count(sizeof(int));
        if (rank == 0) {
            const double perTrip = std::max(sizing / 3.0, 0.1);
            const int n = static_cast<int>(std::clamp(perSize * 1e6 / perTrip, 5.0, 2000.0));
            std::memcpy(count.data(), &n, sizeof n);
        }
        comm.broadcast(count, 0);
        int trips = 0;
        std::memcpy(&trips, count.data(), sizeof trips);
        std::vector<double> oneWay;
        for (int i = 0; i < trips; ++i)
            oneWay.push_back(roundTrip() / 2.0);
        if (rank == 0)
            out.push_back({ size, std::max(median(oneWay), 1e-3) });
    }
    return out;
}

int runProbe(const ProbeOptions& options, int* argc, char*** argv, std::ostream& out, std::ostream& err)
{
    std::unique_ptr<MpiComm> comm;
    try {
        machine::CpuProfile profile;
        profile.machine = blasMachineKey(options.threads);
        profile.kernel = loadedBlasCore();
        switch (options.mode) {
        case ProbeOptions::Mode::Info: {
            machine::KernelChoice choice;
            choice.openblasOwn = profile.machine.blasCore;
            choice.candidates = machine::blasCoreCandidates(machine::hostCpuFeatures());
            if (const auto cached = machine::cachedCpuProfile(profile.machine); cached && cached->kernelChoice) {
                choice.measured = cached->kernelChoice->measured;
                choice.winner = cached->kernelChoice->winner;
            }
            const machine::BlasCoreDecision decision = preferredBlasCore(options.threads);
            choice.chosen = decision.core;
            choice.reason = decision.reason;
            profile.kernelChoice = choice;
            break;
        }
        case ProbeOptions::Mode::Compute:
            profile.shapes = measureCompute(options.shapes, options.threads, options.seconds);
            break;
        case ProbeOptions::Mode::Transformer: {
            const Project project = parseProject(readTextFile(options.project), options.project);
            profile.transformerStages
                = measureTransformerStages(project, options.stages, options.threads, options.seconds);
            break;
        }
        case ProbeOptions::Mode::P2p: {
            comm = std::make_unique<MpiComm>(argc, argv);
            const std::vector<machine::P2pSample> samples = measurePingPong(*comm, options.bytes, options.seconds);
            if (comm->rank() != 0)
                return kExitOk;
            machine::P2pProfile p2p;
            p2p.ranks = comm->size();
            p2p.samples = samples;
            machine::fitP2p(p2p);
            profile.p2p = p2p;
            break;
        }
        }
        emit(profile, options.output, out);
        return kExitOk;
    } catch (const std::exception& e) {
        err << "dpstudio-worker: probe failed: " << e.what() << "\n" << std::flush;
        if (comm && comm->size() > 1)
            comm->abort(kExitRunFailed);
        return kExitRunFailed;
    }
}

} // namespace dps::runtime
