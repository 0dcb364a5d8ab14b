#include "measuredoutput.h"
#include "base/fileio.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace dps::runtime {

namespace {

TimelineSlice opSlice(const Op& op, const MeasuredAction& r)
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

TimelineSlice actionSlice(const MeasuredAction& r)
{
    const Action& a = r.action;
    TimelineSlice s = opSlice(a.op, r);
    if (a.overlapped) {
        s.action = toString(a);
        s.kind = "OVERLAP_F_B";
        s.halves = { opSlice(a.op, r), opSlice(a.backward, r) };
    }
    s.args = { { "wait_us", r.waitUs }, { "compute_us", r.computeUs }, { "bytes_sent", r.bytesSent },
        { "bytes_received", r.bytesReceived }, { "memory_bytes", r.memoryBytes },
        { "activation_bytes", r.activationBytes } };
    if (r.a2aUs > 0.0) {
        s.args["a2a_us"] = r.a2aUs;
        s.args["a2a_hidden_us"] = r.a2aHiddenUs;
    }
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

double messageBytes(const MeasuredTrace& trace)
{
    for (const MeasuredRank& rank : trace.ranks)
        for (const MeasuredAction& a : rank.actions)
            if (a.bytesSent > 0)
                return static_cast<double>(a.bytesSent);
    return 0.0;
}

MeasuredAction measuredAction(const ActionRecord& r, const Action& action)
{
    MeasuredAction a;
    a.action = action;
    a.step = r.step;
    a.startUs = r.startUs;
    a.endUs = r.endUs;
    a.waitUs = r.waitUs;
    a.computeUs = r.computeUs;
    a.a2aUs = r.a2aUs;
    a.a2aHiddenUs = std::min(r.a2aHiddenUs, r.a2aUs);
    a.bytesSent = static_cast<std::int64_t>(r.bytesSent);
    a.bytesReceived = static_cast<std::int64_t>(r.bytesReceived);
    a.memoryBytes = static_cast<std::int64_t>(r.memoryBytes);
    a.activationBytes = static_cast<std::int64_t>(r.activationBytes);
    return a;
}

} // namespace

MeasuredTrace measuredTrace(const std::vector<std::vector<ActionRecord>>& records, const Schedule& schedule)
{
    MeasuredTrace trace;
    for (std::size_t r = 0; r < records.size(); ++r) {
        MeasuredRank rank;
        rank.rank = static_cast<int>(r);
        for (const ActionRecord& rec : records[r])
            rank.actions.push_back(measuredAction(rec, schedule.order.at(r).at(static_cast<std::size_t>(rec.index))));
        trace.ranks.push_back(std::move(rank));
    }
    setStepsFromActions(trace);
    return trace;
}

MeasuredCorrectness measuredCorrectness(const CorrectnessReport& report)
{
    MeasuredCorrectness c;
    c.passed = report.passed;
    c.maxLossError = report.maxLossError;
    c.maxGradError = report.maxGradError;
    c.lossThreshold = report.thresholds.loss;
    c.gradThreshold = report.thresholds.grad;
    c.message = report.failure;
    for (const LossCheck& l : report.losses)
        c.losses.push_back({ l.microbatch, l.loss, l.reference, l.error });
    return c;
}

Timeline measuredTimeline(const MeasuredTrace& trace, const Schedule& schedule, int step)
{
    Timeline t;
    t.source = "measured";
    t.backend = trace.comm;
    t.ranks.resize(trace.ranks.size());
    OpWhere where;
    for (std::size_t r = 0; r < trace.ranks.size(); ++r) {
        RankTimeline& rank = t.ranks[r];
        for (const MeasuredAction& rec : trace.ranks[r].actions) {
            if (rec.step != step)
                continue;
            const Action& a = rec.action;
            const int slice = static_cast<int>(rank.slices.size());
            rank.slices.push_back(actionSlice(rec));
            rank.memory.push_back(TimelineMemorySample {
                rec.endUs, static_cast<double>(rec.memoryBytes), static_cast<double>(rec.activationBytes), -1 });
            for (int i = 0; i < a.size(); ++i)
                if (a.at(i).kind != OpKind::W)
                    where[OpKey { a.at(i).stage, a.at(i).microbatch, a.at(i).kind != OpKind::F }]
                        = { static_cast<int>(r), slice };
        }
    }
    addFlows(t, schedule, where, messageBytes(trace));
    t.info = { { "step", step }, { "host", trace.host }, { "cpu", trace.cpu }, { "device", trace.device },
        { "backend", trace.backend }, { "comm", trace.comm }, { "mpi_version", trace.mpiVersion },
        { "variant", trace.variant }, { "command", trace.command },
        { "schedule", std::string(kindName(schedule.kind)) }, { "ranks", schedule.ranks },
        { "microbatches", schedule.microbatches }, { "stages", schedule.stages } };
    // Each rank's host, when recorded: a flow between ranks of different hosts crossed hosts.
    if (std::any_of(trace.ranks.begin(), trace.ranks.end(), [](const MeasuredRank& r) { return !r.host.empty(); })) {
        nlohmann::json hosts = nlohmann::json::array();
        for (const MeasuredRank& r : trace.ranks)
            hosts.push_back(r.host);
        t.info["hosts"] = std::move(hosts);
    }
    return t;
}

void writeMeasuredOutputs(const MeasuredTrace& trace, const Schedule& schedule, const std::filesystem::path& output,
    const std::filesystem::path& traceDir)
{
    writeFileAtomic(output, serializeMeasured(trace));
    if (traceDir.empty())
        return;
    const Timeline timeline = measuredTimeline(trace, schedule, trace.medianStep);
    writeChromeTracePerRank(timeline, traceDir);
    writeChromeTrace(timeline, traceDir / "combined.trace.json");
}

} // namespace dps::runtime
