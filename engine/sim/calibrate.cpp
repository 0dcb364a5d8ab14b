#include "calibrate.h"

#include "base/format.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

namespace dps {

namespace {

/// Busy times of single-op slots by stage and kind.
using Durations = std::vector<std::array<std::vector<double>, 4>>;

Durations collectDurations(const std::vector<MeasuredSlot>& slots, int stages)
{
    Durations d(static_cast<std::size_t>(stages));
    for (const MeasuredSlot& a : slots) {
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

/// The share of a slot kind's samples left out at each end before they are averaged (fitOf).
constexpr double kTrimmedShare = 0.1;

/// Quantiles of the residuals kept as the fit's slot variation (CostsFile::slotVariation): every percentile, so
/// that a single slot far out (one in some hundreds) stands for no more than its share of the draws.
constexpr int kVariationQuantiles = 101;

/// The fitted time of a slot kind: the mean of its busy times without the lowest and highest 10 % (trimmedMean).
/// A step's makespan is a sum of slot times, so the time that predicts the median step is a slot's mean, not its
/// median: a slot's times lean right (a slot is slowed far more often than sped up), and fitted on medians the
/// fits of six runs here predicted their own median step 1.1–5 % low, every one of them; the trimmed mean, with
/// a slot that other work held up left out, 0–3.5 % either way (docs/running.md, "Calibration's check").
std::optional<double> fitOf(const std::vector<double>& values)
{
    if (values.empty())
        return std::nullopt;
    return rounded(trimmedMean(values, kTrimmedShare), 1e3);
}

void fitStages(const Durations& d, Calibration& c)
{
    for (const auto& kinds : d) {
        StageCostOverride s;
        s.forwardUs = fitOf(kinds[static_cast<std::size_t>(OpKind::F)]);
        s.inputGradUs = fitOf(kinds[static_cast<std::size_t>(OpKind::I)]);
        s.weightGradUs = fitOf(kinds[static_cast<std::size_t>(OpKind::W)]);
        s.backwardUs = fitOf(kinds[static_cast<std::size_t>(OpKind::B)]);
        c.costs.stages.push_back(s);
        std::array<int, 5> counts {};
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

void fitOverlap(const std::vector<MeasuredSlot>& slots, Calibration& c)
{
    auto& stages = c.costs.stages;
    auto inRange = [&](int s) { return s >= 0 && static_cast<std::size_t>(s) < stages.size(); };
    std::vector<double> ratios;
    std::vector<std::vector<double>> byForward(stages.size()); // busy of the overlapped slots, by forward stage
    for (const MeasuredSlot& a : slots) {
        const Op& f = a.action.op;
        const Op& b = a.action.backward;
        if (!a.action.overlapped || !inRange(f.stage) || !inRange(b.stage))
            continue;
        byForward[static_cast<std::size_t>(f.stage)].push_back(a.busyUs());
        const auto forward = stages[static_cast<std::size_t>(f.stage)].forwardUs;
        const auto backward = backwardTime(stages[static_cast<std::size_t>(b.stage)]);
        if (forward && backward && *forward + *backward > 0.0)
            ratios.push_back(a.busyUs() / (*forward + *backward));
    }
    for (std::size_t s = 0; s < stages.size(); ++s) {
        stages[s].overlapUs = fitOf(byForward[s]);
        c.samples[s][4] = static_cast<int>(byForward[s].size());
    }
    c.overlapSamples = static_cast<int>(ratios.size());
    if (!ratios.empty())
        c.costs.overlapFactor = rounded(median(ratios), 1e4);
}

/// The fitted time a slot stands for: its F&B time, or its op's kind of its stage; unset when not fitted.
std::optional<double> fittedTime(const MeasuredSlot& a, const Calibration& c)
{
    const auto& stages = c.costs.stages;
    const Op& op = a.action.op;
    if (op.stage < 0 || static_cast<std::size_t>(op.stage) >= stages.size())
        return std::nullopt;
    const StageCostOverride& s = stages[static_cast<std::size_t>(op.stage)];
    if (a.action.overlapped)
        return s.overlapUs;
    switch (op.kind) {
    case OpKind::F:
        return s.forwardUs;
    case OpKind::I:
        return s.inputGradUs;
    case OpKind::W:
        return s.weightGradUs;
    case OpKind::B:
        return s.backwardUs;
    }
    return std::nullopt;
}

/// The residuals of the slots against their fitted times, and their quantiles as the fit's slot variation
/// (kVariationQuantiles of them, p0 … p100; none from fewer than 2 residuals).
void keepResiduals(const std::vector<MeasuredSlot>& slots, Calibration& c)
{
    for (const MeasuredSlot& a : slots)
        if (const auto fitted = fittedTime(a, c); fitted && *fitted > 0.0)
            c.residuals.push_back(a.busyUs() / *fitted - 1.0);
    if (c.residuals.size() < 2)
        return;
    std::vector<double> sorted = c.residuals;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < kVariationQuantiles; ++i)
        c.costs.slotVariation.push_back(
            rounded(quantileOfSorted(sorted, static_cast<double>(i) / (kVariationQuantiles - 1)), 1e4));
}

// ------------------------------------------------------------------------------------------ p2p

struct Produced {
    int rank;
    double endUs;
};
/// (step, stage, microbatch, is-backward) → where and when the op ended.
using ProducerKey = std::tuple<int, int, int, bool>;

std::map<ProducerKey, Produced> producers(const std::vector<MeasuredSlot>& slots)
{
    std::map<ProducerKey, Produced> map;
    for (const MeasuredSlot& a : slots)
        for (int i = 0; i < a.action.size(); ++i) {
            const Op& op = a.action.at(i);
            if (op.kind == OpKind::W)
                continue;
            map[{ a.step, op.stage, op.microbatch, op.kind != OpKind::F }] = { a.rank, a.endUs };
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
std::map<std::int64_t, std::vector<double>> transferSamples(const std::vector<MeasuredSlot>& slots, int stages)
{
    const auto produced = producers(slots);
    std::map<std::int64_t, std::vector<double>> bySize;
    for (const MeasuredSlot& a : slots) {
        if (a.action.overlapped || a.waitUs <= 0.0 || a.bytesReceived <= 0)
            continue;
        const auto key = producerOf(a.step, a.action.op, stages);
        const auto it = key ? produced.find(*key) : produced.end();
        if (it == produced.end() || it->second.rank == a.rank)
            continue;
        // Only a slot that started before its producer ended waited for the transfer itself. One that started
        // later found the message there and "waited" only for the receive call (in a real run: copying it out
        // of the sender's memory), and start + wait − producer end would be the idle gap between the two.
        if (a.startUs >= it->second.endUs)
            continue;
        bySize[a.bytesReceived].push_back(a.startUs + a.waitUs - it->second.endUs);
    }
    return bySize;
}

void fitP2p(const std::vector<MeasuredSlot>& slots, int stages, Calibration& c)
{
    const auto bySize = transferSamples(slots, stages);
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

/// A fitted time (µs) for the table, "-" when it was not fitted.
std::string timeCell(const std::optional<double>& us)
{
    return padded(us ? formatTime(*us) : "-", 11, true);
}

/// The fitted bandwidth: "unlimited" for 0, "-" when it was not fitted.
std::string bandwidthText(const std::optional<double>& bytesPerUs)
{
    if (!bytesPerUs)
        return "-";
    return *bytesPerUs == 0.0 ? "unlimited" : formatNumber(*bytesPerUs, 3) + " bytes/µs";
}

} // namespace

int slotStageCount(const std::vector<MeasuredSlot>& slots)
{
    int largest = -1;
    for (const MeasuredSlot& a : slots)
        for (int i = 0; i < a.action.size(); ++i)
            largest = std::max(largest, a.action.at(i).stage);
    return largest + 1;
}

Calibration calibrate(const std::vector<MeasuredSlot>& slots, int stages)
{
    if (stages <= 0)
        stages = slotStageCount(slots);
    Calibration c;
    fitStages(collectDurations(slots, stages), c);
    for (std::size_t s = 0; s < c.samples.size(); ++s)
        if (c.samples[s][0] + c.samples[s][1] + c.samples[s][2] + c.samples[s][3] == 0)
            c.notes.push_back("stage " + std::to_string(s) + ": no slot of it ran alone; its costs are kept");
    fitOverlap(slots, c);
    if (c.overlapSamples == 0 && !c.costs.overlapFactor)
        c.notes.push_back("no overlapped slot could be fitted: overlap factor kept");
    fitP2p(slots, stages, c);
    keepResiduals(slots, c);
    return c;
}

std::string formatCalibration(const Calibration& c)
{
    std::string text = "stage " + padded("F", 11, true) + " " + padded("I", 11, true) + " " + padded("W", 11, true)
        + " " + padded("B", 11, true) + " " + padded("F&B", 11, true) + "   samples F/I/W/B/F&B\n";
    for (std::size_t s = 0; s < c.costs.stages.size(); ++s) {
        const StageCostOverride& o = c.costs.stages[s];
        const auto& n = c.samples[s];
        text += padded(std::to_string(s), 5, true) + " " + timeCell(o.forwardUs) + " " + timeCell(o.inputGradUs) + " "
            + timeCell(o.weightGradUs) + " " + timeCell(o.backwardUs) + " " + timeCell(o.overlapUs) + "   "
            + std::to_string(n[0]) + "/" + std::to_string(n[1]) + "/" + std::to_string(n[2]) + "/"
            + std::to_string(n[3]) + "/" + std::to_string(n[4]) + "\n";
    }
    text += "overlap factor: " + (c.costs.overlapFactor ? formatNumber(*c.costs.overlapFactor, 4) : "-") + " ("
        + formatCountOf(static_cast<std::size_t>(c.overlapSamples), "overlapped slot") + ")\n";
    text += "p2p latency: " + (c.costs.latencyUs ? formatTime(*c.costs.latencyUs) : "-")
        + ", bandwidth: " + bandwidthText(c.costs.bandwidthBytesPerUs) + " ("
        + formatCountOf(static_cast<std::size_t>(c.p2pSamples), "message") + ", "
        + formatCountOf(static_cast<std::size_t>(c.p2pSizes), "size") + ")\n";
    for (const std::string& note : c.notes)
        text += "note: " + note + "\n";
    return text;
}

} // namespace dps
