#include "calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>

namespace dps::launch {

namespace {

/// Busy times of single-op slots by stage and kind.
using Durations = std::vector<std::array<std::vector<double>, 4>>;

Durations collectDurations(const MeasuredTrace& trace, int stages)
{
    Durations d(static_cast<std::size_t>(stages));
    for (const MeasuredRank& r : trace.ranks)
        for (const MeasuredAction& a : r.actions) {
            const Op& op = a.action.op;
            if (a.action.overlapped || op.stage < 0 || op.stage >= stages)
                continue;
            d[static_cast<std::size_t>(op.stage)][static_cast<std::size_t>(op.kind)].push_back(a.busyUs());
        }
    return d;
}

/// Rounds to 1/scale (fitted numbers are written with a sensible precision: 1 ns for times); dividing
/// last gives the double nearest the decimal, so it prints short.
double rounded(double value, double scale)
{
    return std::round(value * scale) / scale;
}

std::optional<double> medianOf(const std::vector<double>& values)
{
    if (values.empty())
        return std::nullopt;
    return rounded(median(values), 1e3);
}

void fitStages(const Durations& d, Calibration& c)
{
    for (const auto& kinds : d) {
        StageCostOverride s;
        s.forwardUs = medianOf(kinds[static_cast<std::size_t>(OpKind::F)]);
        s.inputGradUs = medianOf(kinds[static_cast<std::size_t>(OpKind::I)]);
        s.weightGradUs = medianOf(kinds[static_cast<std::size_t>(OpKind::W)]);
        s.backwardUs = medianOf(kinds[static_cast<std::size_t>(OpKind::B)]);
        c.costs.stages.push_back(s);
        std::array<int, 4> counts {};
        for (std::size_t k = 0; k < 4; ++k)
            counts[k] = static_cast<int>(kinds[k].size());
        c.samples.push_back(counts);
    }
}

/// Fitted full-backward time of a stage: B, else I + W (the simulator's F&B slot uses B whichever half
/// the slot runs).
std::optional<double> backwardTime(const StageCostOverride& s)
{
    if (s.backwardUs)
        return s.backwardUs;
    if (s.inputGradUs && s.weightGradUs)
        return *s.inputGradUs + *s.weightGradUs;
    return std::nullopt;
}

void fitOverlap(const MeasuredTrace& trace, Calibration& c)
{
    const auto& stages = c.costs.stages;
    auto inRange = [&](int s) { return s >= 0 && static_cast<std::size_t>(s) < stages.size(); };
    std::vector<double> ratios;
    for (const MeasuredRank& r : trace.ranks)
        for (const MeasuredAction& a : r.actions) {
            const Op& f = a.action.op;
            const Op& b = a.action.backward;
            if (!a.action.overlapped || !inRange(f.stage) || !inRange(b.stage))
                continue;
            const auto forward = stages[static_cast<std::size_t>(f.stage)].forwardUs;
            const auto backward = backwardTime(stages[static_cast<std::size_t>(b.stage)]);
            if (forward && backward && *forward + *backward > 0.0)
                ratios.push_back(a.busyUs() / (*forward + *backward));
        }
    c.overlapSamples = static_cast<int>(ratios.size());
    if (!ratios.empty())
        c.costs.overlapFactor = rounded(median(ratios), 1e4);
}

// ------------------------------------------------------------------------------------------ p2p

struct Produced {
    int rank;
    double endUs;
};
/// (step, stage, microbatch, is-backward) → where and when the op ended.
using ProducerKey = std::tuple<int, int, int, bool>;

std::map<ProducerKey, Produced> producers(const MeasuredTrace& trace)
{
    std::map<ProducerKey, Produced> map;
    for (const MeasuredRank& r : trace.ranks)
        for (const MeasuredAction& a : r.actions)
            for (int i = 0; i < a.action.size(); ++i) {
                const Op& op = a.action.at(i);
                if (op.kind == OpKind::W)
                    continue;
                map[{ a.step, op.stage, op.microbatch, op.kind != OpKind::F }] = { r.rank, a.endUs };
            }
    return map;
}

/// The slot whose output `op` consumes, if it has one: F(s−1) for a forward, the backward of s+1
/// for I/B.
std::optional<ProducerKey> producerOf(int step, const Op& op, int stages)
{
    if (op.kind == OpKind::F && op.stage > 0)
        return ProducerKey { step, op.stage - 1, op.microbatch, false };
    if ((op.kind == OpKind::I || op.kind == OpKind::B) && op.stage + 1 < stages)
        return ProducerKey { step, op.stage + 1, op.microbatch, true };
    return std::nullopt;
}

/// Transfer-time samples (median per message size): bytes → µs.
std::map<std::int64_t, std::vector<double>> transferSamples(const MeasuredTrace& trace, int stages)
{
    const auto produced = producers(trace);
    std::map<std::int64_t, std::vector<double>> bySize;
    for (const MeasuredRank& r : trace.ranks)
        for (const MeasuredAction& a : r.actions) {
            if (a.action.overlapped || a.waitUs <= 0.0 || a.bytesReceived <= 0)
                continue;
            const auto key = producerOf(a.step, a.action.op, stages);
            const auto it = key ? produced.find(*key) : produced.end();
            if (it == produced.end() || it->second.rank == r.rank)
                continue;
            bySize[a.bytesReceived].push_back(a.startUs + a.waitUs - it->second.endUs);
        }
    return bySize;
}

void fitP2p(const MeasuredTrace& trace, int stages, Calibration& c)
{
    const auto bySize = transferSamples(trace, stages);
    std::vector<std::pair<double, double>> points; // (bytes, median µs)
    for (const auto& [bytes, times] : bySize) {
        points.emplace_back(double(bytes), median(times));
        c.p2pSamples += static_cast<int>(times.size());
    }
    c.p2pSizes = static_cast<int>(points.size());
    if (points.empty()) {
        c.notes.push_back(
            "no slot waited for a message from another rank: latency and bandwidth kept from the project");
        return;
    }
    if (points.size() == 1) {
        c.costs.latencyUs = rounded(std::max(0.0, points.front().second), 1e3);
        c.costs.bandwidthBytesPerUs = 0.0;
        c.notes.push_back("one message size: its whole transfer time taken as latency, bandwidth unlimited");
        return;
    }
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& [x, y] : points) {
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    const double n = double(points.size());
    const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    c.costs.latencyUs = rounded(std::max(0.0, (sy - slope * sx) / n), 1e3);
    c.costs.bandwidthBytesPerUs = slope > 0.0 ? rounded(1.0 / slope, 1e3) : 0.0;
    if (slope <= 0.0)
        c.notes.push_back("transfer time does not grow with message size: bandwidth unlimited");
}

int largestStage(const MeasuredTrace& trace)
{
    int largest = -1;
    for (const MeasuredRank& r : trace.ranks)
        for (const MeasuredAction& a : r.actions)
            for (int i = 0; i < a.action.size(); ++i)
                largest = std::max(largest, a.action.at(i).stage);
    return largest;
}

std::string optionalText(const std::optional<double>& value, const char* format)
{
    if (!value)
        return "-";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, format, *value);
    return buffer;
}

} // namespace

double median(std::vector<double> values)
{
    if (values.empty())
        return 0.0;
    const std::size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
    const double upper = values[mid];
    if (values.size() % 2 == 1)
        return upper;
    const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
    return (lower + upper) / 2.0;
}

Calibration calibrate(const MeasuredTrace& trace, int stages)
{
    if (stages <= 0)
        stages = largestStage(trace) + 1;
    Calibration c;
    fitStages(collectDurations(trace, stages), c);
    for (std::size_t s = 0; s < c.samples.size(); ++s)
        if (c.samples[s][0] + c.samples[s][1] + c.samples[s][2] + c.samples[s][3] == 0)
            c.notes.push_back("stage " + std::to_string(s) + ": no slot of it ran alone; its costs are kept");
    fitOverlap(trace, c);
    if (c.overlapSamples == 0 && !c.costs.overlapFactor)
        c.notes.push_back("no overlapped slot could be fitted: overlap factor kept");
    fitP2p(trace, stages, c);
    return c;
}

int measuredStageCount(const MeasuredTrace& trace, const Project* project)
{
    std::optional<Project> recorded;
    if (!project && !trace.projectJson.empty()) {
        recorded = parseProject(trace.projectJson, "the project recorded in the measured trace");
        project = &*recorded;
    }
    if (!project)
        return largestStage(trace) + 1;
    const Variant* variant = trace.variant.empty() ? nullptr : project->find(trace.variant);
    return stageCount(variant ? *variant : project->active());
}

std::string formatCalibration(const Calibration& c)
{
    std::string text = "stage        F µs        I µs        W µs        B µs   samples F/I/W/B\n";
    for (std::size_t s = 0; s < c.costs.stages.size(); ++s) {
        const StageCostOverride& o = c.costs.stages[s];
        char line[256];
        std::snprintf(line, sizeof line, "%5zu %11s %11s %11s %11s   %d/%d/%d/%d\n", s,
            optionalText(o.forwardUs, "%.2f").c_str(), optionalText(o.inputGradUs, "%.2f").c_str(),
            optionalText(o.weightGradUs, "%.2f").c_str(), optionalText(o.backwardUs, "%.2f").c_str(), c.samples[s][0],
            c.samples[s][1], c.samples[s][2], c.samples[s][3]);
        text += line;
    }
    text += "overlap factor: " + optionalText(c.costs.overlapFactor, "%.3f") + " (" + std::to_string(c.overlapSamples)
        + " overlapped slots)\n";
    text += "p2p latency: " + optionalText(c.costs.latencyUs, "%.2f µs") + ", bandwidth: "
        + (c.costs.bandwidthBytesPerUs && *c.costs.bandwidthBytesPerUs == 0.0
                ? std::string("unlimited")
                : optionalText(c.costs.bandwidthBytesPerUs, "%.1f bytes/µs"))
        + " (" + std::to_string(c.p2pSamples) + " messages, " + std::to_string(c.p2pSizes) + " sizes)\n";
    for (const std::string& note : c.notes)
        text += "note: " + note + "\n";
    return text;
}

} // namespace dps::launch
