#include "measuredoutput.h"
#include "base/fileio.h"

#include "project/project.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace dps::runtime {

namespace {

using ojson = nlohmann::ordered_json;

ojson correctnessJson(const CorrectnessReport& c)
{
    ojson j;
    j["passed"] = c.passed;
    j["max_loss_error"] = c.maxLossError;
    j["max_grad_error"] = c.maxGradError;
    j["thresholds"] = { { "loss", c.thresholds.loss }, { "grad", c.thresholds.grad } };
    if (!c.failure.empty())
        j["message"] = c.failure;
    ojson losses = ojson::array();
    for (const LossCheck& l : c.losses)
        losses.push_back(
            { { "microbatch", l.microbatch }, { "loss", l.loss }, { "reference", l.reference }, { "error", l.error } });
    j["losses"] = losses;
    return j;
}

ojson actionJson(const ActionRecord& r, const std::string& action)
{
    return ojson { { "action", action }, { "step", r.step }, { "start_us", r.startUs }, { "end_us", r.endUs },
        { "wait_us", r.waitUs }, { "compute_us", r.computeUs }, { "bytes_sent", r.bytesSent },
        { "bytes_received", r.bytesReceived }, { "memory_bytes", r.memoryBytes },
        { "activation_bytes", r.activationBytes } };
}

ojson ranksJson(const MeasuredRun& run, const Schedule& schedule)
{
    ojson ranks = ojson::array();
    for (std::size_t r = 0; r < run.records.size(); ++r) {
        ojson actions = ojson::array();
        for (const ActionRecord& rec : run.records[r])
            actions.push_back(actionJson(rec, toString(schedule.order[r][static_cast<std::size_t>(rec.index)])));
        ranks.push_back({ { "rank", static_cast<int>(r) }, { "actions", actions } });
    }
    return ranks;
}

TimelineSlice opSlice(const Op& op, const ActionRecord& r)
{
    TimelineSlice s;
    s.action = toString(op);
    s.kind = std::string(1, kindLetter(op.kind));
    s.stage = op.stage;
    s.microbatch = op.microbatch;
    s.startUs = r.startUs;
    s.endUs = r.endUs;
    return s;
}

TimelineSlice actionSlice(const Action& a, const ActionRecord& r)
{
    TimelineSlice s = opSlice(a.op, r);
    if (a.overlapped) {
        s.action = toString(a);
        s.kind = "OVERLAP_F_B";
        s.halves = { opSlice(a.op, r), opSlice(a.backward, r) };
    }
    s.args = { { "wait_us", r.waitUs }, { "compute_us", r.computeUs }, { "bytes_sent", r.bytesSent },
        { "bytes_received", r.bytesReceived }, { "memory_bytes", r.memoryBytes },
        { "activation_bytes", r.activationBytes } };
    return s;
}

/// Where (rank, slice index in the step) each producing op ran: key (stage, microbatch, backward).
using OpKey = std::tuple<int, int, bool>;
using OpWhere = std::map<OpKey, std::pair<int, int>>;

void addFlows(Timeline& t, const Schedule& schedule, const OpWhere& where, double bytesPerMessage)
{
    for (const auto& [key, consumer] : where) {
        const auto [stage, microbatch, backward] = key;
        const int from = backward ? stage + 1 : stage - 1;
        if (from < 0 || from >= schedule.stages)
            continue;
        const auto producer = where.find(OpKey { from, microbatch, backward });
        if (producer == where.end() || producer->second.first == consumer.first)
            continue;
        const auto& p = producer->second;
        const auto& out = t.ranks[static_cast<std::size_t>(p.first)].slices[static_cast<std::size_t>(p.second)];
        const auto& in
            = t.ranks[static_cast<std::size_t>(consumer.first)].slices[static_cast<std::size_t>(consumer.second)];
        TimelineFlow f;
        f.category = backward ? "gradient" : "activation";
        f.name = f.category + " " + toString(Op { from, microbatch, backward ? OpKind::B : OpKind::F }) + " → "
            + toString(Op { stage, microbatch, backward ? OpKind::B : OpKind::F });
        f.fromRank = p.first;
        f.fromSlice = p.second;
        f.toRank = consumer.first;
        f.toSlice = consumer.second;
        f.sendUs = out.endUs;
        f.arriveUs = std::max(out.endUs, in.startUs + in.args.value("wait_us", 0.0));
        f.bytes = bytesPerMessage;
        t.flows.push_back(f);
    }
}

double messageBytes(const MeasuredRun& run)
{
    for (const auto& rank : run.records)
        for (const ActionRecord& r : rank)
            if (r.bytesSent > 0)
                return static_cast<double>(r.bytesSent);
    return 0.0;
}

} // namespace

std::vector<double> stepMakespans(const std::vector<std::vector<ActionRecord>>& records)
{
    std::vector<double> makespans;
    for (const auto& rank : records) {
        for (const ActionRecord& r : rank) {
            if (static_cast<std::size_t>(r.step) >= makespans.size())
                makespans.resize(static_cast<std::size_t>(r.step) + 1, 0.0);
            makespans[static_cast<std::size_t>(r.step)]
                = std::max(makespans[static_cast<std::size_t>(r.step)], r.endUs);
        }
    }
    return makespans;
}

int medianStep(const std::vector<double>& makespans)
{
    if (makespans.empty())
        return 0;
    std::vector<int> steps(makespans.size());
    std::iota(steps.begin(), steps.end(), 0);
    std::stable_sort(steps.begin(), steps.end(),
        [&](int a, int b) { return makespans[static_cast<std::size_t>(a)] < makespans[static_cast<std::size_t>(b)]; });
    return steps[(steps.size() - 1) / 2];
}

nlohmann::ordered_json measuredJson(const MeasuredRun& run, const Schedule& schedule)
{
    const std::vector<double> makespans = stepMakespans(run.records);
    ojson j;
    j["format_version"] = kMeasuredFormatVersion;
    j["command"] = run.command;
    j["host"] = run.host;
    j["cpu"] = run.cpu;
    j["device"] = run.device;
    j["mpi_version"] = run.mpiVersion;
    j["backend"] = run.backend;
    j["comm"] = run.comm;
    if (!run.backendChoice.empty())
        j["backend_choice"] = run.backendChoice;
    j["variant"] = run.variant;
    j["threads"] = run.threads;
    j["warmup"] = run.warmup;
    j["correctness"] = correctnessJson(run.correctness);
    ojson steps = ojson::array();
    for (std::size_t s = 0; s < makespans.size(); ++s)
        steps.push_back({ { "step", static_cast<int>(s) }, { "makespan_us", makespans[s] } });
    j["steps"] = steps;
    j["median_step"] = medianStep(makespans);
    j["warnings"] = run.warnings;
    j["ranks"] = ranksJson(run, schedule);
    j["project"] = run.project;
    return j;
}

Timeline measuredTimeline(const MeasuredRun& run, const Schedule& schedule, int step)
{
    Timeline t;
    t.source = "measured";
    t.backend = run.comm;
    t.ranks.resize(run.records.size());
    OpWhere where;
    for (std::size_t r = 0; r < run.records.size(); ++r) {
        RankTimeline& rank = t.ranks[r];
        for (const ActionRecord& rec : run.records[r]) {
            if (rec.step != step)
                continue;
            const Action& a = schedule.order[r][static_cast<std::size_t>(rec.index)];
            const int slice = static_cast<int>(rank.slices.size());
            rank.slices.push_back(actionSlice(a, rec));
            rank.memory.push_back(TimelineMemorySample {
                rec.endUs, static_cast<double>(rec.memoryBytes), static_cast<double>(rec.activationBytes), -1 });
            for (int i = 0; i < a.size(); ++i)
                if (a.at(i).kind != OpKind::W)
                    where[OpKey { a.at(i).stage, a.at(i).microbatch, a.at(i).kind != OpKind::F }]
                        = { static_cast<int>(r), slice };
        }
    }
    addFlows(t, schedule, where, messageBytes(run));
    t.info = { { "step", step }, { "host", run.host }, { "cpu", run.cpu }, { "device", run.device },
        { "backend", run.backend }, { "comm", run.comm }, { "mpi_version", run.mpiVersion }, { "variant", run.variant },
        { "command", run.command }, { "schedule", std::string(kindName(schedule.kind)) }, { "ranks", schedule.ranks },
        { "microbatches", schedule.microbatches }, { "stages", schedule.stages } };
    return t;
}

void writeMeasuredOutputs(const MeasuredRun& run, const Schedule& schedule, const std::filesystem::path& output,
    const std::filesystem::path& traceDir)
{
    writeFileAtomic(output, measuredJson(run, schedule).dump(2, ' ', false, ojson::error_handler_t::replace) + "\n");
    if (traceDir.empty())
        return;
    const Timeline timeline = measuredTimeline(run, schedule, medianStep(stepMakespans(run.records)));
    writeChromeTracePerRank(timeline, traceDir);
    writeChromeTrace(timeline, traceDir / "combined.trace.json");
}

} // namespace dps::runtime
