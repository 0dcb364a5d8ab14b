#include "chrometrace.h"
#include "base/fileio.h"

#include "base/errors.h"
#include "base/version.h"
#include "project/project.h"

#include <algorithm>
#include <map>

namespace dps {

using json = nlohmann::json;

// ------------------------------------------------------------------------------ simulation adapter

namespace {

TimelineSlice opSlice(const Op& op, double startUs, double endUs)
{
    TimelineSlice slice;
    slice.action = toString(op);
    slice.kind = std::string(1, kindLetter(op.kind));
    slice.stage = op.stage;
    slice.microbatch = op.microbatch;
    slice.startUs = startUs;
    slice.endUs = endUs;
    return slice;
}

/// The layouts of overlapped slots, one per (forward stage, backward stage) pair met.
class LayoutCache {
public:
    explicit LayoutCache(const CostModel& costs)
        : m_costs(costs)
    {
    }
    const OverlapLayout& at(int fStage, int bStage)
    {
        const auto [it, inserted] = m_layouts.try_emplace({ fStage, bStage });
        if (inserted)
            it->second = m_costs.overlapLayout(stage(fStage), stage(bStage));
        return it->second;
    }

private:
    /// Stage s of the cost model, StageCost's defaults beyond it (as the simulator).
    const StageCost& stage(int s) const
    {
        static const StageCost defaults {};
        return s >= 0 && static_cast<std::size_t>(s) < m_costs.stages.size()
            ? m_costs.stages[static_cast<std::size_t>(s)]
            : defaults;
    }
    const CostModel& m_costs;
    std::map<std::pair<int, int>, OverlapLayout> m_layouts;
};

/// A lane segment of an overlapped slot starting at slotStartUs, named "L<layer> F compute" (layer −1: the
/// embedding, the head or the whole half: "F compute"), "L<layer> B all-to-all", ...
TimelineSlice laneSlice(const Op& op, const LaneSegment& segment, double slotStartUs)
{
    TimelineSlice slice = opSlice(op, slotStartUs + segment.startUs, slotStartUs + segment.endUs);
    slice.kind = segment.lane == Chunk::Comm ? "all-to-all" : "compute";
    const std::string layer = segment.layer >= 0 ? "L" + std::to_string(segment.layer) + " " : std::string {};
    slice.action = layer + (segment.backwardHalf ? "B " : "F ") + slice.kind;
    slice.args = { { "lane", slice.kind }, { "layer", segment.layer }, { "op", toString(op) } };
    return slice;
}

TimelineSlice slotSlice(const Action& action, const SlotTiming& timing, LayoutCache& layouts)
{
    if (!action.overlapped)
        return opSlice(action.op, timing.startUs, timing.endUs);
    TimelineSlice slot = opSlice(action.op, timing.startUs, timing.endUs);
    slot.action = toString(action);
    slot.kind = "OVERLAP_F_B";
    slot.args = { { "forward", toString(action.op) }, { "backward", toString(action.backward) } };
    slot.halves
        = { opSlice(action.op, timing.startUs, timing.endUs), opSlice(action.backward, timing.startUs, timing.endUs) };
    // Laid out as the simulator timed it: forward half action.op, backward half action.backward.
    for (const LaneSegment& segment : layouts.at(action.op.stage, action.backward.stage).segments)
        slot.halves[segment.backwardHalf ? 1 : 0].lanes.push_back(
            laneSlice(segment.backwardHalf ? action.backward : action.op, segment, timing.startUs));
    return slot;
}

/// Where each (stage, microbatch, forward/backward) op ran: rank and slot index.
class OpIndex {
public:
    OpIndex(const Schedule& schedule, int stages, int microbatches)
        : m_microbatches(microbatches)
        , m_where(static_cast<std::size_t>(stages) * static_cast<std::size_t>(microbatches) * 2, { -1, -1 })
    {
        for (std::size_t r = 0; r < schedule.order.size(); ++r)
            for (std::size_t i = 0; i < schedule.order[r].size(); ++i)
                for (int k = 0; k < schedule.order[r][i].size(); ++k) {
                    const Op& op = schedule.order[r][i].at(k);
                    if (op.kind != OpKind::W)
                        at(op.stage, op.microbatch, op.kind != OpKind::F)
                            = { static_cast<int>(r), static_cast<int>(i) };
                }
    }
    std::pair<int, int>& at(int stage, int microbatch, bool backward)
    {
        return m_where[(static_cast<std::size_t>(stage) * static_cast<std::size_t>(m_microbatches)
                           + static_cast<std::size_t>(microbatch))
                * 2
            + (backward ? 1 : 0)];
    }

private:
    int m_microbatches;
    std::vector<std::pair<int, int>> m_where;
};

int maxStage(const Schedule& schedule, bool microbatch)
{
    int n = 0;
    for (const auto& row : schedule.order)
        for (const auto& a : row)
            for (int k = 0; k < a.size(); ++k)
                n = std::max(n, (microbatch ? a.at(k).microbatch : a.at(k).stage) + 1);
    return n;
}

struct FlowContext {
    const Schedule& schedule;
    const CostModel& costs;
    const SimResult& result;
    OpIndex& index;
    int stages;
    std::vector<TimelineFlow>& flows;
};

double boundaryBytes(const CostModel& costs, int boundary)
{
    if (boundary < 0 || boundary >= static_cast<int>(costs.stages.size()))
        return StageCost {}.messageBytes;
    return costs.stages[static_cast<std::size_t>(boundary)].messageBytes;
}

/// Adds the flow of op (ran at rank r, slot i) to its consumer when that consumer runs on another rank.
void addFlow(FlowContext& c, const Op& op, int r, int i)
{
    const bool forward = op.kind == OpKind::F;
    if (op.kind == OpKind::W || (forward && op.stage + 1 >= c.stages) || (!forward && op.stage == 0))
        return;
    const int next = forward ? op.stage + 1 : op.stage - 1;
    const auto [toRank, toSlice] = c.index.at(next, op.microbatch, !forward);
    if (toRank < 0 || toRank == r)
        return;
    const auto& rankTiming = c.result.timing[static_cast<std::size_t>(r)];
    if (static_cast<std::size_t>(i) >= rankTiming.size()
        || static_cast<std::size_t>(toSlice) >= c.result.timing[static_cast<std::size_t>(toRank)].size())
        return;
    TimelineFlow flow;
    flow.category = forward ? "activation" : "gradient";
    const Action& consumer = c.schedule.order[static_cast<std::size_t>(toRank)][static_cast<std::size_t>(toSlice)];
    const Op& target
        = consumer.overlapped && (consumer.op.kind == OpKind::F) != forward ? consumer.backward : consumer.op;
    flow.name = flow.category + " " + toString(op) + " → " + toString(target);
    flow.fromRank = r;
    flow.fromSlice = i;
    flow.toRank = toRank;
    flow.toSlice = toSlice;
    flow.bytes = boundaryBytes(c.costs, forward ? op.stage : op.stage - 1);
    flow.sendUs = rankTiming[static_cast<std::size_t>(i)].endUs;
    flow.arriveUs = flow.sendUs + c.costs.transferTime(flow.bytes, r, toRank);
    c.flows.push_back(std::move(flow));
}

std::vector<TimelineMemorySample> memorySamples(const RankResult& rank)
{
    std::vector<TimelineMemorySample> samples;
    samples.reserve(rank.memory.size());
    for (const auto& p : rank.memory)
        samples.push_back({ p.timeUs, p.totalBytes, p.activationBytes, p.inflight });
    return samples;
}

} // namespace

Timeline timelineFromSimulation(const Schedule& schedule, const CostModel& costs, const SimResult& result)
{
    Timeline timeline;
    timeline.ranks.resize(schedule.order.size());
    LayoutCache layouts(costs);
    for (std::size_t r = 0; r < schedule.order.size(); ++r) {
        const auto& timing = r < result.timing.size() ? result.timing[r] : std::vector<SlotTiming> {};
        const std::size_t ran = std::min(timing.size(), schedule.order[r].size());
        for (std::size_t i = 0; i < ran; ++i)
            timeline.ranks[r].slices.push_back(slotSlice(schedule.order[r][i], timing[i], layouts));
        if (r < result.ranks.size())
            timeline.ranks[r].memory = memorySamples(result.ranks[r]);
    }
    const int stages = std::max(schedule.stages, maxStage(schedule, false));
    OpIndex index(schedule, stages, std::max(schedule.microbatches, maxStage(schedule, true)));
    FlowContext context { schedule, costs, result, index, stages, timeline.flows };
    for (std::size_t r = 0; r < schedule.order.size(); ++r)
        for (std::size_t i = 0; i < schedule.order[r].size(); ++i)
            for (int k = 0; k < schedule.order[r][i].size(); ++k)
                addFlow(context, schedule.order[r][i].at(k), static_cast<int>(r), static_cast<int>(i));
    timeline.info = { { "schedule", std::string(kindName(schedule.kind)) }, { "ranks", schedule.ranks },
        { "stages", schedule.stages }, { "microbatches", schedule.microbatches }, { "makespan_us", result.makespanUs },
        { "bubble_rate", result.bubbleRate }, { "deadlocked", result.deadlocked } };
    return timeline;
}

// ------------------------------------------------------------------------------------ Chrome JSON

namespace {

enum Track { kCompute = 0, kForwardHalf = 1, kBackwardHalf = 2, kIncoming = 3 };

json metadata(int pid, int tid, const char* what, json args)
{
    return { { "ph", "M" }, { "pid", pid }, { "tid", tid }, { "name", what }, { "args", std::move(args) } };
}

void addRankMetadata(json& events, int rank)
{
    events.push_back(metadata(rank, 0, "process_name", { { "name", "rank " + std::to_string(rank) } }));
    events.push_back(metadata(rank, 0, "process_sort_index", { { "sort_index", rank } }));
    const std::pair<int, const char*> tracks[] = { { kCompute, "compute" }, { kForwardHalf, "overlap: forward half" },
        { kBackwardHalf, "overlap: backward half" }, { kIncoming, "p2p: incoming" } };
    for (const auto& [tid, name] : tracks) {
        events.push_back(metadata(rank, tid, "thread_name", { { "name", name } }));
        events.push_back(metadata(rank, tid, "thread_sort_index", { { "sort_index", tid } }));
    }
}

json sliceEvent(const TimelineSlice& slice, int rank, int tid, bool lane = false)
{
    json args = { { "stage", slice.stage }, { "microbatch", slice.microbatch }, { "kind", slice.kind } };
    for (const auto& [key, value] : slice.args.items())
        args[key] = value;
    const char* category = lane ? "lane" : tid == kCompute ? "compute" : "overlap";
    return { { "ph", "X" }, { "name", lane ? slice.action : "PP:" + slice.action }, { "cat", category },
        { "pid", rank }, { "tid", tid }, { "ts", slice.startUs }, { "dur", std::max(0.0, slice.endUs - slice.startUs) },
        { "args", std::move(args) } };
}

/// Each slot on the compute track; an overlapped slot's halves on their tracks, each followed by its lane
/// chunks (children nested in the half, which spans the slot; a half's chunks run one after another).
void addSlices(json& events, const RankTimeline& rank, int r)
{
    for (const auto& slice : rank.slices) {
        events.push_back(sliceEvent(slice, r, kCompute));
        for (std::size_t h = 0; h < slice.halves.size() && h < 2; ++h) {
            const int tid = h == 0 ? kForwardHalf : kBackwardHalf;
            events.push_back(sliceEvent(slice.halves[h], r, tid));
            for (const TimelineSlice& chunk : slice.halves[h].lanes)
                events.push_back(sliceEvent(chunk, r, tid, true));
        }
    }
}

void addMemory(json& events, const RankTimeline& rank, int r)
{
    for (const auto& m : rank.memory) {
        events.push_back({ { "ph", "C" }, { "name", "memory (bytes)" }, { "pid", r }, { "tid", 0 }, { "ts", m.timeUs },
            { "args", { { "total", m.totalBytes }, { "activations", m.activationBytes } } } });
        if (m.inflight >= 0)
            events.push_back({ { "ph", "C" }, { "name", "in-flight microbatches" }, { "pid", r }, { "tid", 0 },
                { "ts", m.timeUs }, { "args", { { "in-flight", m.inflight } } } });
    }
}

const TimelineSlice* sliceAt(const Timeline& timeline, int rank, int index)
{
    if (rank < 0 || rank >= static_cast<int>(timeline.ranks.size()))
        return nullptr;
    const auto& slices = timeline.ranks[static_cast<std::size_t>(rank)].slices;
    return index >= 0 && index < static_cast<int>(slices.size()) ? &slices[static_cast<std::size_t>(index)] : nullptr;
}

/// The transfer as a slice on the receiving rank's "p2p: incoming" track.
json transferEvent(const Timeline& timeline, const TimelineFlow& flow)
{
    const TimelineSlice* from = sliceAt(timeline, flow.fromRank, flow.fromSlice);
    json args = { { "bytes", flow.bytes }, { "from_rank", flow.fromRank }, { "to_rank", flow.toRank },
        { "producer", from ? from->action : "" } };
    return { { "ph", "X" }, { "name", "recv " + flow.category + " from rank " + std::to_string(flow.fromRank) },
        { "cat", "p2p" }, { "pid", flow.toRank }, { "tid", kIncoming }, { "ts", flow.sendUs },
        { "dur", std::max(0.0, flow.arriveUs - flow.sendUs) }, { "args", std::move(args) } };
}

double midpoint(const TimelineSlice& slice)
{
    return slice.startUs + std::max(0.0, slice.endUs - slice.startUs) / 2.0;
}

/// Flow arrow from the producer slot to the consumer slot (both ends bound to their enclosing slice).
void addFlowArrow(json& events, const Timeline& timeline, const TimelineFlow& flow, std::size_t id)
{
    const TimelineSlice* from = sliceAt(timeline, flow.fromRank, flow.fromSlice);
    const TimelineSlice* to = sliceAt(timeline, flow.toRank, flow.toSlice);
    if (!from || !to)
        return;
    const json common = { { "name", flow.name }, { "cat", flow.category }, { "id", id } };
    json start = common;
    start.update({ { "ph", "s" }, { "pid", flow.fromRank }, { "tid", kCompute }, { "ts", midpoint(*from) } });
    json finish = common;
    finish.update(
        { { "ph", "f" }, { "bp", "e" }, { "pid", flow.toRank }, { "tid", kCompute }, { "ts", midpoint(*to) } });
    events.push_back(std::move(start));
    events.push_back(std::move(finish));
}

json otherData(const Timeline& timeline)
{
    json data = { { "format_version", kChromeTraceFormatVersion }, { "tool", "DualPipe Studio" },
        { "tool_version", DPS_VERSION }, { "timeline", timeline.source } };
    for (const auto& [key, value] : timeline.info.items())
        data[key] = value;
    return data;
}

json document(json events, const Timeline& timeline)
{
    return { { "traceEvents", std::move(events) }, { "displayTimeUnit", "ms" }, { "otherData", otherData(timeline) } };
}

void addRank(json& events, const Timeline& timeline, int r)
{
    const RankTimeline& rank = timeline.ranks[static_cast<std::size_t>(r)];
    addRankMetadata(events, r);
    addSlices(events, rank, r);
    addMemory(events, rank, r);
    for (const auto& flow : timeline.flows)
        if (flow.toRank == r)
            events.push_back(transferEvent(timeline, flow));
}

} // namespace

json chromeTrace(const Timeline& timeline)
{
    json events = json::array();
    for (int r = 0; r < static_cast<int>(timeline.ranks.size()); ++r)
        addRank(events, timeline, r);
    for (std::size_t f = 0; f < timeline.flows.size(); ++f)
        addFlowArrow(events, timeline, timeline.flows[f], f + 1);
    return document(std::move(events), timeline);
}

json chromeTraceForRank(const Timeline& timeline, int rank)
{
    json events = json::array();
    addRank(events, timeline, rank);
    json trace = document(std::move(events), timeline);
    const int world = static_cast<int>(timeline.ranks.size());
    trace["distributedInfo"]
        = { { "backend", timeline.backend }, { "rank", rank }, { "world_size", world }, { "pp_size", world } };
    return trace;
}

void writeChromeTrace(const Timeline& timeline, const std::filesystem::path& file)
{
    writeFileAtomic(file, chromeTrace(timeline).dump() + "\n");
}

std::string perRankTraceName(int rank)
{
    return "rank" + std::to_string(rank) + ".trace.json";
}

std::vector<std::filesystem::path> writeChromeTracePerRank(const Timeline& timeline, const std::filesystem::path& dir)
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw IoError(dir.string() + ": cannot create folder: " + (ec ? ec.message() : "not a folder"));
    std::vector<std::filesystem::path> files;
    for (int r = 0; r < static_cast<int>(timeline.ranks.size()); ++r) {
        files.push_back(dir / perRankTraceName(r));
        writeFileAtomic(files.back(), chromeTraceForRank(timeline, r).dump() + "\n");
    }
    return files;
}

} // namespace dps
