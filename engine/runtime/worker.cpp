#include "worker.h"
#include "base/fileio.h"
#include "base/format.h"
#include "protocol/backends.h"

#include "base/hostinfo.h"
#include "correctness.h"
#include "cpubackend.h"
#include "executor.h"
#include "machine/cpuprofile.h"
#include "measuredoutput.h"
#include "project/modelcost.h"
#include "project/project.h"
#include "project/transformercost.h"
#include "protocol/progress.h"
#include "schedule/validator.h"
#include "wire.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace dps::runtime {

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------ command line

int parseCount(const std::string& flag, const std::string& value, int minimum)
{
    std::size_t used = 0;
    int n = 0;
    try {
        n = std::stoi(value, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != value.size() || value.empty() || n < minimum)
        throw UsageError(flag + ": expected an integer ≥ " + std::to_string(minimum) + ", got '" + value + "'");
    return n;
}

/// Sets the option named by `flag` from `value`; false when the flag is unknown.
bool applyFlag(WorkerOptions& o, const std::string& flag, const std::string& value)
{
    const std::map<std::string, std::function<void()>> setters {
        { "--project", [&] { o.project = value; } },
        { "--variant", [&] { o.variant = value; } },
        { "--backend", [&] { o.backend = value; } },
        { "--steps", [&] { o.steps = parseCount(flag, value, 1); } },
        { "--warmup", [&] { o.warmup = parseCount(flag, value, 0); } },
        { "--threads", [&] { o.threads = parseCount(flag, value, 1); } },
        { "--output", [&] { o.output = value; } },
        { "-o", [&] { o.output = value; } },
        { "--trace-dir", [&] { o.traceDir = value; } },
        { "--command", [&] { o.command = value; } },
        { "--recv-window", [&] { o.receiveWindow = parseCount(flag, value, 1); } },
    };
    const auto it = setters.find(flag);
    if (it == setters.end())
        return false;
    it->second();
    return true;
}

// ------------------------------------------------------------------ output streams

/// The JSON-lines progress stream; one object per line, flushed at once; thread-safe.
class Events {
public:
    explicit Events(std::ostream& out)
        : m_out(out)
    {
    }
    void emit(const json& event)
    {
        const std::string line = event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
        std::lock_guard lock(m_mutex);
        m_out << line << std::flush;
    }
    void error(int rank, const std::string& message)
    {
        emit({ { "event", protocol::kEventError }, { "rank", rank }, { "message", message } });
    }

private:
    std::ostream& m_out;
    std::mutex m_mutex;
};

/// Human log lines on stderr, prefixed with the rank.
class Log {
public:
    Log(std::ostream& out, int rank)
        : m_out(out)
        , m_prefix("[dpstudio-worker rank " + std::to_string(rank) + "] ")
    {
    }
    void line(const std::string& text) { m_out << (m_prefix + text + "\n") << std::flush; }

private:
    std::ostream& m_out;
    std::string m_prefix;
};

/// Progress events of one rank, throttled by ProgressThrottle (worker.h).
class ProgressReporter {
public:
    ProgressReporter(Events& events, int rank)
        : m_events(events)
        , m_rank(rank)
    {
    }
    void report(int step, int done, int total)
    {
        if (!m_throttle.admit(done, total, Clock::now()))
            return;
        m_events.emit({ { "event", protocol::kEventProgress }, { "rank", m_rank }, { "step", step }, { "done", done },
            { "total", total } });
    }

private:
    Events& m_events;
    int m_rank;
    ProgressThrottle m_throttle;
};

// ------------------------------------------------------------------ fault injection

int envRank(const char* name)
{
    const char* value = std::getenv(name);
    if (!value || !*value)
        return -1;
    char* end = nullptr;
    const long r = std::strtol(value, &end, 10);
    return *end == '\0' ? static_cast<int>(r) : -1;
}

/// The hook that injects the faults named by DPSTUDIO_WORKER_{CRASH,HANG,THROW}_RANK in the middle
/// of the first step of this rank.
std::function<void(int, int)> faultHook(int rank, int actions)
{
    const int crash = envRank("DPSTUDIO_WORKER_CRASH_RANK");
    const int hang = envRank("DPSTUDIO_WORKER_HANG_RANK");
    const int fail = envRank("DPSTUDIO_WORKER_THROW_RANK");
    if (rank != crash && rank != hang && rank != fail)
        return {};
    const int at = actions / 2;
    return [=](int step, int index) {
        if (step != 0 || index != at)
            return;
        if (rank == crash)
            ::kill(::getpid(), SIGKILL);
        while (rank == hang)
            std::this_thread::sleep_for(std::chrono::seconds(1));
        throw RuntimeError("rank " + std::to_string(rank) + ": failure injected by DPSTUDIO_WORKER_THROW_RANK");
    };
}

// ------------------------------------------------------------------ setup

/// Everything a rank needs to run, built before the first step.
struct RunState {
    std::string projectText;
    Project project;
    Variant variant;
    Schedule schedule;
    ModelSpec spec;
    JobChoice choice;
    DType computeDtype = DType::FP32;
    int replicas = 1; ///< the variant's data-parallel replicas: comm rank c runs pipeline rank c / replicas
    std::vector<std::string> warnings;
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Comm> ownComm; ///< the platform's comm (NCCL, MPI renamed); null when the job's serves
    Comm* comm = nullptr; ///< what the executor talks through: ownComm or the job's comm
    std::unique_ptr<RankExecutor> executor; ///< declared last: it goes before the comm and the backend
};

/// A failure while setting up, with the worker's exit status for it.
struct SetupFailure {
    int code = kExitOk;
    std::string message;
};

/// Throws UsageError unless `requested` is a backend name the worker knows.
void checkBackendName(const std::string& requested)
{
    if (!isBackendName(requested))
        throw UsageError("--backend: expected " + backendNameList() + ", got '" + requested + "'");
}

/// `replicas`: the variant's data-parallel replicas (dp); the job must have schedule ranks × replicas processes.
void checkSchedule(const Schedule& schedule, int replicas, int worldSize)
{
    const ValidationReport report = validate(schedule);
    if (!report.valid()) {
        for (const Diagnostic& d : report.diagnostics)
            if (d.severity == Severity::Error)
                throw FormatError("the schedule is invalid: " + format(d));
    }
    if (static_cast<long long>(schedule.ranks) * replicas != worldSize)
        throw FormatError("the variant has " + std::to_string(schedule.ranks) + " ranks"
            + (replicas > 1 ? " × dp " + std::to_string(replicas) : std::string()) + " but the job has "
            + std::to_string(worldSize) + " processes (mpirun -np must equal the variant's ranks"
            + (replicas > 1 ? " × dp" : "") + ")");
}

/// Reads the project, builds and checks the schedule and creates this rank's backend (not collective).
void loadProject(const WorkerOptions& options, int worldRank, int worldSize, WorkerPlatform& platform, RunState& s)
{
    s.projectText = readTextFile(options.project);
    s.project = parseProject(s.projectText, options.project);
    checkEngineRunsModel(s.project.model);
    const Variant* variant = options.variant.empty() ? &s.project.active() : s.project.find(options.variant);
    if (!variant)
        throw FormatError("the project has no variant named '" + options.variant + "'");
    s.variant = *variant;
    s.schedule = buildSchedule(s.project, s.variant);
    s.replicas = std::max(1, s.variant.dp);
    checkSchedule(s.schedule, s.replicas, worldSize);
    s.spec = modelSpec(s.project, s.variant);
    const bool bf16 = s.project.model.dtype == DType::BF16;
    s.computeDtype = s.choice.backend == "cpu" ? DType::FP32 : s.project.model.dtype;
    if (bf16 && s.choice.backend == "cpu")
        s.warnings.push_back("the project asks for bf16: the CPU backend computes in fp32");
    if (s.spec.transformer && recomputeOf(s.project, s.variant) != model::Recompute::None)
        s.warnings.push_back(std::string("the project asks for recompute \"")
            + std::string(model::recomputeName(recomputeOf(s.project, s.variant)))
            + "\": the engine keeps every activation (no recompute), so it holds more than the prediction");
    // Replicas on the cuda backend: through host buffers (mpi-host) as on the cpu; over NCCL the transfer order
    // carries each replica's pipeline and the gradient sum after the step (jobsetup.h's ncclTransfersOf), but not
    // the expert all-to-all, which exchanges host buffers in the middle of a step. docs/gpu.md.
    const int expertRanks = s.spec.transformer && s.spec.transformer->isMoe() ? s.spec.transformer->moe.ep : 1;
    if (s.replicas > 1 && expertRanks > 1 && s.choice.comm == "nccl")
        throw RuntimeError("variant " + s.variant.name + ": model.moe.ep " + std::to_string(expertRanks)
            + " over NCCL: the expert all-to-all exchanges host buffers in the middle of a step, which NCCL's "
              "transfer order does not carry yet; let the ranks share GPUs (MPI through host buffers, e.g. "
              "CUDA_VISIBLE_DEVICES=0) or run with --backend cpu");
    if (s.spec.transformer && s.spec.transformer->isMoe() && s.spec.transformer->moe.ep > 1) {
        // Expert parallelism: the ep consecutive replicas of a pipeline rank hold its experts between them.
        const int ep = s.spec.transformer->moe.ep;
        if (s.replicas % ep != 0)
            throw FormatError("variant " + s.variant.name + ": dp " + std::to_string(s.replicas)
                + " is not a multiple of model.moe.ep " + std::to_string(ep)
                + " (the expert-parallel group is formed across the data-parallel replicas of a stage)");
        s.spec.ep = ep;
        s.spec.epMember = (worldRank % s.replicas) % ep;
    }
    s.backend = platform.createBackend(bf16, options.threads);
    // Expert parallelism: each half of an overlapped slot exchanges its tokens from its own thread, the one's
    // all-to-all while the other computes (DeepSeek-V3 report §3.2.2), also where the rank has one core for both
    // (Alternating: they take turns on the compute). DPSTUDIO_CPU_LANES still decides when given.
    const char* forcedLanes = std::getenv("DPSTUDIO_CPU_LANES");
    if (s.spec.ep > 1 && !(forcedLanes && *forcedLanes))
        if (auto* cpu = dynamic_cast<CpuBackend*>(s.backend.get()); cpu && cpu->laneMode() == LaneMode::InTurn)
            cpu->setLaneMode(LaneMode::Alternating);
}

/// Creates the executor's comm (collective) and the executor itself.
void connect(
    const WorkerOptions& options, Comm& comm, WorkerPlatform& platform, ExecutorOptions executorOptions, RunState& s)
{
    s.ownComm = platform.createComm(comm, *s.backend);
    s.comm = s.ownComm ? s.ownComm.get() : &comm;
    if (s.spec.ep > 1)
        s.comm->shareBetweenThreads(); // the two halves of an overlapped slot exchange tokens at once
    executorOptions.receiveWindow = options.receiveWindow;
    executorOptions.replicas = s.replicas;
    s.executor = std::make_unique<RankExecutor>(*s.backend, *s.comm, s.spec, s.schedule, executorOptions);
}

/// Hands the schedule's transfer order to the comm (collective) and installs the fault injection.
void prepare(WorkerPlatform& platform, RunState& s)
{
    const RankExecutor& executor = *s.executor;
    platform.prepareTransfers(
        *s.comm, s.schedule,
        [&executor](int stage, int microbatch, bool gradient) {
            return executor.messageTag(stage, microbatch, gradient ? 1 : 0);
        },
        s.spec.messageElements() * static_cast<std::size_t>(s.backend->elementBytes()));
    const auto& order = s.schedule.order[static_cast<std::size_t>(s.comm->rank() / s.replicas)];
    s.executor->setBeforeAction(faultHook(s.comm->rank(), static_cast<int>(order.size())));
}

SetupFailure classify(const std::function<void()>& body)
{
    try {
        body();
        return {};
    } catch (const IoError& e) {
        return { kExitRunFailed, e.what() };
    } catch (const UsageError& e) {
        return { kExitUsage, e.what() };
    } catch (const RuntimeError& e) {
        return { kExitRunFailed, e.what() };
    } catch (const Error& e) {
        return { kExitContent, e.what() };
    } catch (const std::exception& e) {
        return { kExitRunFailed, e.what() };
    }
}

/// Collective: every rank's setup outcome; the first failing rank's (lowest) wins on every rank.
std::pair<SetupFailure, int> agree(Comm& comm, const SetupFailure& mine)
{
    ByteWriter out;
    out.put(mine.code);
    out.putString(mine.message);
    const auto all = comm.gather(out.bytes(), 0);
    ByteWriter verdict;
    if (comm.rank() == 0) {
        SetupFailure first;
        int rank = -1;
        for (std::size_t r = 0; r < all.size() && rank < 0; ++r) {
            ByteReader in(all[r]);
            first.code = in.get<int>();
            first.message = in.getString();
            if (first.code != kExitOk)
                rank = static_cast<int>(r);
        }
        verdict.put(rank < 0 ? kExitOk : first.code);
        verdict.put(rank);
        verdict.putString(rank < 0 ? std::string() : first.message);
    }
    comm.broadcast(verdict.bytes(), 0);
    ByteReader in(verdict.bytes());
    SetupFailure result;
    result.code = in.get<int>();
    const int rank = in.get<int>();
    result.message = in.getString();
    return { result, rank };
}

// ------------------------------------------------------------------ the run

std::vector<char> packRecords(const std::vector<ActionRecord>& records)
{
    ByteWriter w;
    w.put(static_cast<std::uint64_t>(records.size()));
    for (const ActionRecord& r : records)
        w.put(r);
    return std::move(w.bytes());
}

std::vector<ActionRecord> unpackRecords(const std::vector<char>& bytes)
{
    ByteReader r(bytes);
    std::vector<ActionRecord> records(static_cast<std::size_t>(r.get<std::uint64_t>()));
    for (ActionRecord& rec : records)
        rec = r.get<ActionRecord>();
    return records;
}

std::string correctnessLine(const CorrectnessReport& c)
{
    return std::string("correctness: ") + (c.passed ? "passed" : "FAILED") + " (max loss relative error "
        + formatSignificant(c.maxLossError) + " ≤ " + formatSignificant(c.thresholds.loss, 1) + ", max gradient metric "
        + formatSignificant(c.maxGradError) + " ≤ " + formatSignificant(c.thresholds.grad, 1) + ")"
        + (c.passed ? "" : ": " + c.failure);
}

json correctnessEvent(const CorrectnessReport& c)
{
    json j { { "passed", c.passed }, { "max_loss_error", c.maxLossError }, { "max_grad_error", c.maxGradError },
        { "thresholds", { { "loss", c.thresholds.loss }, { "grad", c.thresholds.grad } } } };
    if (!c.passed)
        j["message"] = c.failure;
    return j;
}

/// Runs warm-up and measured steps; returns this rank's records of the measured steps.
std::vector<ActionRecord> runSteps(const WorkerOptions& options, RunState& s, Log& log)
{
    std::vector<ActionRecord> measured;
    for (int step = 0; step < options.warmup + options.steps; ++step) {
        const auto start = Clock::now();
        std::vector<ActionRecord> records = s.executor->runStep(step);
        s.executor->sumReplicaGradients(&records); // the step's memory covers the sum
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        log.line("step " + std::to_string(step) + (step < options.warmup ? " (warm-up)" : "") + ": "
            + formatTime(ms * 1e3) + " on this rank");
        if (step < options.warmup)
            continue;
        for (ActionRecord& r : records) {
            r.step = step - options.warmup;
            measured.push_back(r);
        }
    }
    return measured;
}

int finish(const WorkerOptions& options, Comm& comm, RunState& s, const CorrectnessReport& report,
    const std::vector<ActionRecord>& mine, Events& events, Log& log)
{
    const auto all = comm.gather(packRecords(mine), 0);
    const std::string host = hostName();
    const auto hosts = comm.gather(std::vector<char>(host.begin(), host.end()), 0);
    if (comm.rank() != 0)
        return report.passed ? kExitOk : kExitContent;
    // The trace holds the pipeline of replica 0 (comm ranks 0, dp, 2·dp, ...): the replicas run the same
    // schedule, and the measured format has one row per pipeline rank (docs/worker-protocol.md).
    std::vector<std::vector<ActionRecord>> records;
    const auto replica0 = [&s](std::size_t rank) { return rank * static_cast<std::size_t>(s.replicas); };
    for (std::size_t r = 0; replica0(r) < all.size(); ++r)
        records.push_back(unpackRecords(all[replica0(r)]));
    MeasuredTrace run = measuredTrace(records, s.schedule);
    for (std::size_t r = 0; r < run.ranks.size() && replica0(r) < hosts.size(); ++r)
        run.ranks[r].host.assign(hosts[replica0(r)].begin(), hosts[replica0(r)].end()); // which transfers crossed hosts
    run.command = options.command;
    run.host = hostName();
    run.cpu = cpuModelName();
    run.device = s.backend->deviceDescription();
    run.mpiVersion = comm.version();
    run.backend = s.choice.backend;
    run.comm = s.comm->name();
    run.backendChoice = s.choice.description;
    run.variant = s.variant.name;
    run.threads = options.threads;
    run.warmup = options.warmup;
    run.correctness = measuredCorrectness(report);
    run.projectJson = s.projectText;
    run.warnings = s.warnings;
    writeMeasuredOutputs(run, s.schedule, options.output, options.traceDir);
    std::vector<double> makespans;
    for (const MeasuredStep& step : run.steps)
        makespans.push_back(step.makespanUs);
    const int median = run.medianStep;
    log.line("median step " + std::to_string(median) + ": makespan " + formatTime(run.medianMakespanUs()) + "; wrote "
        + options.output);
    log.line(correctnessLine(report));
    if (!report.passed) {
        events.error(0, "correctness check failed: " + report.failure);
        return kExitContent;
    }
    events.emit({ { "event", protocol::kEventDone }, { "format_version", protocol::kProgressFormatVersion },
        { "output", options.output }, { "correctness", correctnessEvent(report) }, { "median_step", median },
        { "step_makespan_us", makespans } });
    return kExitOk;
}

int execute(const WorkerOptions& options, Comm& comm, RunState& s, Events& events, Log& log)
{
    for (const std::string& w : s.warnings)
        log.line("warning: " + w);
    const std::vector<ActionRecord> mine = runSteps(options, s, log);
    const CorrectnessReport report = checkCorrectness(comm, *s.backend, s.spec, *s.executor,
        s.schedule.microbatches * s.replicas, thresholdsFor(s.choice.backend, s.computeDtype));
    return finish(options, comm, s, report, mine, events, log);
}

} // namespace

ModelSpec modelSpec(const Project& project, const Variant& variant)
{
    ModelSpec spec;
    spec.hidden = project.model.hidden;
    spec.ffn = project.model.ffn;
    spec.tokens = microbatchSizeOf(project, variant) * project.model.seqLen;
    spec.partition = effectivePartition(project, variant);
    spec.seed = project.seed;
    if (project.model.kind == ModelKind::Transformer) {
        spec.transformer = transformerOf(project.model, microbatchSizeOf(project, variant));
        // The model library does not record the router's gating: DeepSeek's presets use DeepSeek-V3's (sigmoid,
        // normalised over the top-k, × 2.5), every other MoE Mixtral's (softmax over the top-k). docs/layers.md. The
        // rule is machine::transformerGatingOf's, which the CPU profile's transformer stages are keyed by.
        spec.gating = machine::transformerGatingOf(project.model) == "deepseek-v3" ? layers::MoeGating::deepSeekV3()
                                                                                   : layers::MoeGating::mixtral();
        return spec;
    }
    if (spec.hidden < 1 || spec.ffn < 1 || spec.tokens < 1)
        throw FormatError("model: hidden, ffn, seq_len and microbatch_size must be positive");
    return spec;
}

void takeFlag(const std::vector<std::string>& args, std::size_t& i, std::string& flag, std::string& value)
{
    flag = args[i];
    value.clear();
    const auto eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = flag.substr(eq + 1);
        flag.resize(eq);
    } else if (i + 1 < args.size()) {
        value = args[++i];
    } else {
        throw UsageError(flag + ": missing value");
    }
}

WorkerOptions parseWorkerArgs(const std::vector<std::string>& args)
{
    WorkerOptions o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string flag;
        std::string value;
        takeFlag(args, i, flag, value);
        if (!applyFlag(o, flag, value))
            throw UsageError("unknown option '" + flag + "'");
    }
    if (o.project.empty())
        throw UsageError("--project is required");
    if (o.output.empty())
        throw UsageError("--output is required");
    checkBackendName(o.backend);
    return o;
}

std::string workerUsage()
{
    return "usage: dpstudio-worker --project FILE [--variant NAME] [--backend cpu|cuda|auto] [--steps K] "
           "[--warmup K] [--threads N] --output measured.json [--trace-dir DIR] [--command TEXT]";
}

bool ProgressThrottle::admit(int done, int total, Clock::time_point now)
{
    if (done != total && now - m_last < m_interval)
        return false;
    m_last = now;
    return true;
}

JobChoice CpuPlatform::choose(Comm& mpi, const std::string& backend)
{
    checkBackendName(backend);
    if (backend == "cuda")
        throw RuntimeError("--backend cuda: cuda: not built into this dpstudio-worker");
    const std::string reason = backend == "cpu" ? "cpu (--backend cpu)" : "cpu (auto: cuda: not built)";
    return JobChoice { "cpu", mpi.name(), "backend cpu, comm " + mpi.name() + ": " + reason };
}

std::unique_ptr<Backend> CpuPlatform::createBackend(bool bf16, int cpuThreads)
{
    return std::make_unique<CpuBackend>(cpuThreads);
}

std::unique_ptr<Comm> CpuPlatform::createComm(Comm& mpi, Backend& backend)
{
    return nullptr;
}

int runWorker(const WorkerOptions& options, Comm& comm, const WorkerStreams& streams, WorkerPlatform& platform)
{
    Events events(streams.events);
    Log log(streams.log, comm.rank());
    // Every phase ends with the ranks agreeing on its outcome, so that a rank that failed never leaves the
    // others waiting in the next phase's collectives; the first failing rank's message wins everywhere.
    const auto failed = [&](const SetupFailure& failure, int failedRank) {
        if (failure.code == kExitOk)
            return false;
        if (comm.rank() == failedRank)
            log.line("error: " + failure.message);
        if (comm.rank() == 0)
            events.error(failedRank, failure.message);
        return true;
    };
    auto state = std::make_unique<RunState>();
    const auto [chooseFailure, chooseRank]
        = agree(comm, classify([&] { state->choice = platform.choose(comm, options.backend); }));
    if (comm.rank() == 0) {
        const bool chosen = chooseFailure.code == kExitOk;
        events.emit({ { "event", protocol::kEventHello }, { "format_version", protocol::kProgressFormatVersion },
            { "ranks", comm.size() }, { "steps", options.steps }, { "warmup", options.warmup },
            { "backend", chosen ? state->choice.backend : options.backend },
            { "comm", chosen ? state->choice.comm : comm.name() } });
        if (chosen)
            log.line(state->choice.description);
    }
    if (failed(chooseFailure, chooseRank))
        return chooseFailure.code;
    ProgressReporter progress(events, comm.rank());
    ExecutorOptions executorOptions;
    executorOptions.progress = [&](int step, int done, int total) { progress.report(step, done, total); };
    executorOptions.firstStageInputGrad = envRank("DPSTUDIO_WORKER_FIRST_STAGE_INPUT_GRAD") == 1;
    for (const std::function<void()>& phase : std::vector<std::function<void()>> {
             [&] { loadProject(options, comm.rank(), comm.size(), platform, *state); },
             [&] { connect(options, comm, platform, executorOptions, *state); },
             [&] { prepare(platform, *state); },
         }) {
        const auto [failure, failedRank] = agree(comm, classify(phase));
        if (failed(failure, failedRank))
            return failure.code;
    }
    try {
        return execute(options, comm, *state, events, log);
    } catch (const std::exception& e) {
        log.line("error: " + std::string(e.what()));
        events.error(comm.rank(), e.what());
        comm.abort(kExitRunFailed);
    }
    return kExitRunFailed; // not reached: abort() ends the job
}

int runWorker(const WorkerOptions& options, Comm& comm, const WorkerStreams& streams)
{
    CpuPlatform platform;
    return runWorker(options, comm, streams, platform);
}

} // namespace dps::runtime
