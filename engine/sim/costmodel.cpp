#include "costmodel.h"

#include <algorithm>

namespace dps {

namespace {

/// Lane index of a chunk: 0 compute, 1 communication.
int laneIndex(const Chunk& c)
{
    return c.lane == Chunk::Comm ? 1 : 0;
}

/// Whether the slot of forward half `f` and backward half `b` is laid out on two lanes (not flat).
bool laidOnLanes(const StageCost& f, const StageCost& b)
{
    return !f.overlapUs && (hasCommunication(f.forwardChain) || hasCommunication(b.backwardChain));
}

/// The flat slot time: a typed overlapUs, else overlapFactor × (F + B) (µs).
double flatTime(const CostModel& costs, const StageCost& f, const StageCost& b)
{
    if (f.overlapUs)
        return *f.overlapUs;
    return costs.overlapFactor * (f.forwardUs + b.backward());
}

/// Lays the forward chain (half 0) and the backward chain (half 1) on the compute lane and the communication
/// lane, as time goes on: whenever a lane is free it takes the next chunk of a half whose previous chunk has
/// ended and that belongs on that lane (the forward half first when both do). A communication chunk runs at
/// its own speed; a compute chunk runs at full speed alone and at (1 − share) of it while the communication
/// lane is busy (the all-to-all kernels hold that share of the SMs only while they run). Calls
/// onSegment(startUs, endUs, chunk, backwardHalf) as each chunk ends (each lane's chunks in time order) and
/// returns the slot's duration (µs).
template <class OnSegment>
double listSchedule(const Chunk* const chain[2], const std::size_t count[2], double share, OnSegment&& onSegment)
{
    struct Running {
        int half = -1; ///< −1: the lane is free
        const Chunk* chunk = nullptr;
        double remainingUs = 0.0; ///< work left, in µs at full speed
        double startUs = 0.0;
    };
    std::size_t next[2] = { 0, 0 };
    bool halfBusy[2] = { false, false };
    Running lane[2];
    double now = 0.0;
    for (;;) {
        for (int l = 0; l < 2; ++l) {
            for (int h = 0; h < 2 && lane[l].half < 0; ++h) {
                if (halfBusy[h] || next[h] >= count[h] || laneIndex(chain[h][next[h]]) != l)
                    continue;
                const Chunk& c = chain[h][next[h]++];
                lane[l] = Running { h, &c, c.us, now };
                halfBusy[h] = true;
            }
        }
        if (lane[0].half < 0 && lane[1].half < 0)
            return now; // a free lane always takes a ready chunk, so nothing is left
        const double rate[2] = { lane[1].half >= 0 ? 1.0 - share : 1.0, 1.0 };
        double step = 0.0;
        bool first = true;
        for (int l = 0; l < 2; ++l)
            if (lane[l].half >= 0 && (first || lane[l].remainingUs / rate[l] < step)) {
                step = lane[l].remainingUs / rate[l];
                first = false;
            }
        now += step;
        for (int l = 0; l < 2; ++l) {
            if (lane[l].half < 0)
                continue;
            const double left = lane[l].remainingUs - step * rate[l];
            // Ends now (up to rounding): the lane that set the step, and any that ends at the same time.
            if (left <= 1e-12 * lane[l].chunk->us) {
                onSegment(lane[l].startUs, now, *lane[l].chunk, lane[l].half == 1);
                halfBusy[lane[l].half] = false;
                lane[l] = Running {};
            } else {
                lane[l].remainingUs = left;
            }
        }
    }
}

/// The two chains of a slot laid on lanes; a half without a chain is one compute chunk of its time.
struct SlotChains {
    Chunk single[2];
    const Chunk* chain[2];
    std::size_t count[2];

    SlotChains(const StageCost& f, const StageCost& b)
    {
        single[0] = Chunk { Chunk::Compute, f.forwardUs, -1 };
        single[1] = Chunk { Chunk::Compute, b.backward(), -1 };
        const std::vector<Chunk>* chains[2] = { &f.forwardChain, &b.backwardChain };
        for (int h = 0; h < 2; ++h) {
            const bool own = !chains[h]->empty();
            chain[h] = own ? chains[h]->data() : &single[h];
            count[h] = own ? chains[h]->size() : 1;
        }
    }
};

/// Communication time of `layout` during which the compute lane was busy too (µs): the intersection of the
/// two lanes' segments, each lane's segments being in time order and disjoint.
double hiddenCommunication(const std::vector<LaneSegment>& segments)
{
    std::vector<const LaneSegment*> lanes[2];
    for (const LaneSegment& s : segments)
        lanes[s.lane == Chunk::Comm ? 1 : 0].push_back(&s);
    double hidden = 0.0;
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < lanes[0].size() && j < lanes[1].size()) {
        const LaneSegment& compute = *lanes[0][i];
        const LaneSegment& comm = *lanes[1][j];
        hidden += std::max(0.0, std::min(compute.endUs, comm.endUs) - std::max(compute.startUs, comm.startUs));
        if (compute.endUs < comm.endUs)
            ++i;
        else
            ++j;
    }
    return hidden;
}

} // namespace

bool hasCommunication(const std::vector<Chunk>& chain)
{
    return std::any_of(chain.begin(), chain.end(), [](const Chunk& c) { return c.lane == Chunk::Comm; });
}

double laneUs(const std::vector<Chunk>& chain, Chunk::Lane lane)
{
    double us = 0.0;
    for (const Chunk& c : chain)
        if (c.lane == lane)
            us += c.us;
    return us;
}

double CostModel::overlapTime(int fStage, int bStage) const
{
    return overlapTime(stages.at(static_cast<std::size_t>(fStage)), stages.at(static_cast<std::size_t>(bStage)));
}

double CostModel::overlapTime(const StageCost& f, const StageCost& b) const
{
    if (!laidOnLanes(f, b))
        return flatTime(*this, f, b);
    const SlotChains slot(f, b);
    return listSchedule(slot.chain, slot.count, commComputeShare, [](double, double, const Chunk&, bool) {});
}

OverlapLayout CostModel::overlapLayout(int fStage, int bStage) const
{
    return overlapLayout(stages.at(static_cast<std::size_t>(fStage)), stages.at(static_cast<std::size_t>(bStage)));
}

OverlapLayout CostModel::overlapLayout(const StageCost& f, const StageCost& b) const
{
    OverlapLayout layout;
    if (!laidOnLanes(f, b)) {
        layout.durationUs = flatTime(*this, f, b);
        return layout;
    }
    const SlotChains slot(f, b);
    layout.segments.reserve(slot.count[0] + slot.count[1]);
    layout.durationUs = listSchedule(
        slot.chain, slot.count, commComputeShare, [&layout](double start, double end, const Chunk& c, bool backward) {
            layout.segments.push_back(LaneSegment { start, end, c.lane, backward, c.layer });
            if (c.lane == Chunk::Comm)
                layout.commUs += end - start;
        });
    // In start order, the forward half first at equal starts (the order the chunks were taken).
    std::stable_sort(layout.segments.begin(), layout.segments.end(), [](const LaneSegment& x, const LaneSegment& y) {
        return x.startUs < y.startUs || (x.startUs == y.startUs && !x.backwardHalf && y.backwardHalf);
    });
    layout.hiddenCommUs = hiddenCommunication(layout.segments);
    return layout;
}

double CostModel::transferTime(double bytes) const
{
    const double wire = bandwidthBytesPerUs > 0.0 ? bytes / bandwidthBytesPerUs : 0.0;
    return latencyUs + wire;
}

bool CostModel::crossesNodes(int from, int to) const
{
    const auto listed = [this](int r) { return r >= 0 && static_cast<std::size_t>(r) < rankNode.size(); };
    return listed(from) && listed(to)
        && rankNode[static_cast<std::size_t>(from)] != rankNode[static_cast<std::size_t>(to)];
}

double CostModel::transferTime(double bytes, int from, int to) const
{
    if (!crossesNodes(from, to))
        return transferTime(bytes);
    const double wire = interNodeBandwidthBytesPerUs > 0.0 ? bytes / interNodeBandwidthBytesPerUs : 0.0;
    return interNodeLatencyUs + wire;
}

void applyOverride(StageCost& stage, const StageCostOverride& o)
{
    // A typed time replaces the chain's sum, so the chain it came from no longer describes the slot.
    if (o.forwardUs)
        stage.forwardChain.clear();
    if (o.inputGradUs || o.weightGradUs || o.backwardUs)
        stage.backwardChain.clear();
    stage.forwardUs = o.forwardUs.value_or(stage.forwardUs);
    stage.inputGradUs = o.inputGradUs.value_or(stage.inputGradUs);
    stage.weightGradUs = o.weightGradUs.value_or(stage.weightGradUs);
    if (o.backwardUs)
        stage.backwardUs = o.backwardUs;
    if (o.overlapUs)
        stage.overlapUs = o.overlapUs;
}

CostModel uniformCostModel(int stages, const UniformCosts& costs)
{
    StageCost stage;
    stage.forwardUs = costs.f;
    stage.inputGradUs = costs.i;
    stage.weightGradUs = costs.w;
    stage.backwardUs = costs.b;
    stage.overlapUs = costs.fb;
    stage.activationBytes = 1.0;
    stage.weightGradKeptBytes = 0.0;
    stage.messageBytes = 1.0;

    CostModel model;
    model.stages.assign(static_cast<std::size_t>(stages > 0 ? stages : 0), stage);
    model.latencyUs = costs.latencyUs;
    model.bandwidthBytesPerUs = costs.bandwidthBytesPerUs;
    model.overlapFactor = costs.overlapFactor;
    return model;
}

} // namespace dps
