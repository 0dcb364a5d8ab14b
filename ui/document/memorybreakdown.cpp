#include "document/memorybreakdown.h"

#include "base/format.h"
#include "base/stats.h"

#include <algorithm>

namespace dps::ui {

const char* memoryPartName(RankMemoryParts::Part part)
{
    switch (part) {
    case RankMemoryParts::Parameters:
        return "parameters";
    case RankMemoryParts::Gradients:
        return "gradients";
    case RankMemoryParts::Optimizer:
        return "optimizer state";
    case RankMemoryParts::Buffers:
        return "buffers";
    case RankMemoryParts::Activations:
    case RankMemoryParts::PartCount:
        break;
    }
    return "activations";
}

std::vector<RankMemoryParts> memoryParts(const SimulationSnapshot& snapshot)
{
    std::vector<RankMemoryParts> result;
    if (!snapshot.timed)
        return result;
    const int ranks = static_cast<int>(snapshot.sim.ranks.size());
    result.resize(ranks);
    for (int r = 0; r < ranks; ++r) {
        const StaticMemory sm
            = r < static_cast<int>(snapshot.staticMemory.size()) ? snapshot.staticMemory[r] : StaticMemory {};
        RankMemoryParts& p = result[r];
        p.bytes[RankMemoryParts::Parameters] = sm.parameters;
        p.bytes[RankMemoryParts::Gradients] = sm.gradients;
        p.bytes[RankMemoryParts::Optimizer] = sm.optimizer;
        p.bytes[RankMemoryParts::Activations] = snapshot.sim.ranks[r].peakActivationBytes;
        p.bytes[RankMemoryParts::Buffers] = std::max(
            0.0, snapshot.sim.ranks[r].peakMemoryBytes - sm.total() - snapshot.sim.ranks[r].peakActivationBytes);
    }
    return result;
}

HeaviestRank heaviestRank(const std::vector<RankMemoryParts>& ranks)
{
    HeaviestRank h;
    if (ranks.empty())
        return h;
    h.rank = 0;
    int lightest = 0;
    for (int r = 1; r < static_cast<int>(ranks.size()); ++r) {
        if (ranks[r].total() > ranks[h.rank].total())
            h.rank = r;
        if (ranks[r].total() < ranks[lightest].total())
            lightest = r;
    }
    const RankMemoryParts& heavy = ranks[h.rank];
    h.peakBytes = heavy.total();
    const double tolerance = 1e-3 * h.peakBytes;
    for (int r = 0; r < static_cast<int>(ranks.size()); ++r)
        if (r != h.rank && ranks[r].total() >= h.peakBytes - tolerance)
            ++h.sharedWith;
    std::vector<double> totals;
    for (const auto& r : ranks)
        totals.push_back(r.total());
    const double medianTotal = median(totals);
    h.referenceRank = h.peakBytes - medianTotal > tolerance ? -1 : lightest;
    h.excessBytes = h.peakBytes - (h.referenceRank < 0 ? medianTotal : ranks[lightest].total());
    for (int part = 0; part < RankMemoryParts::PartCount; ++part) {
        double reference = ranks[lightest].bytes[part];
        if (h.referenceRank < 0) {
            std::vector<double> values;
            for (const auto& r : ranks)
                values.push_back(r.bytes[part]);
            reference = median(values);
        }
        const double over = heavy.bytes[part] - reference;
        if (over > 0.0)
            h.byPart.emplace_back(static_cast<RankMemoryParts::Part>(part), over);
    }
    std::stable_sort(
        h.byPart.begin(), h.byPart.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    return h;
}

std::string describeHeaviest(const HeaviestRank& h)
{
    if (h.rank < 0)
        return {};
    const double tolerance = 1e-3 * h.peakBytes;
    if (h.excessBytes <= tolerance)
        return "every rank peaks at " + formatBytes(h.peakBytes);
    std::string text = "rank " + std::to_string(h.rank) + " heaviest";
    if (h.sharedWith > 0)
        text += ", with " + formatCountOf(static_cast<std::size_t>(h.sharedWith), "other rank");
    text += ": peak " + formatBytes(h.peakBytes) + ", +" + formatBytes(h.excessBytes) + " over the "
        + (h.referenceRank < 0 ? std::string("median rank") : "lightest, rank " + std::to_string(h.referenceRank));
    std::string parts;
    for (std::size_t i = 0; i < h.byPart.size() && i < 2; ++i) {
        if (h.byPart[i].second < tolerance)
            break;
        parts += (parts.empty() ? "" : ", ") + std::string(memoryPartName(h.byPart[i].first)) + " +"
            + formatBytes(h.byPart[i].second);
    }
    return parts.empty() ? text : text + " (" + parts + ")";
}

} // namespace dps::ui
