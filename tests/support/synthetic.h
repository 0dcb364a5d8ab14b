#pragma once
// A measured trace made from the simulator's timeline: each slot starts when its rank is free, waits until
// its inputs arrived, then runs exactly its modelled time. Calibrating it must give the model back.
#include "trace/measured.h"
#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace dps::test {

/// Uniform costs F, I, W (B = I + W, no p2p cost).
inline UniformCosts fiw(double f, double i, double w)
{
    UniformCosts costs;
    costs.f = f;
    costs.i = i;
    costs.w = w;
    return costs;
}

/// Bytes a slot receives from other ranks under `costs` (the simulator's message sizes).
inline std::int64_t receivedBytes(const Schedule& schedule, const CostModel& costs, const Action& action, int rank)
{
    double bytes = 0.0;
    for (int i = 0; i < action.size(); ++i) {
        const Op& op = action.at(i);
        if (op.kind == OpKind::F && op.stage > 0 && schedule.placement.rankOf(op.stage - 1, op.microbatch) != rank)
            bytes += costs.stages[static_cast<std::size_t>(op.stage - 1)].messageBytes;
        const bool backward = op.kind == OpKind::I || op.kind == OpKind::B;
        if (backward && op.stage + 1 < schedule.stages
            && schedule.placement.rankOf(op.stage + 1, op.microbatch) != rank)
            bytes += costs.stages[static_cast<std::size_t>(op.stage)].messageBytes;
    }
    return static_cast<std::int64_t>(bytes);
}

/// `steps` identical measured steps of the simulated timeline; median step steps / 2.
inline MeasuredTrace syntheticTrace(const Schedule& schedule, const CostModel& costs, int steps)
{
    const SimResult sim = simulate(schedule, costs);
    MeasuredTrace t;
    t.command = "synthetic";
    t.host = "test";
    t.cpu = "none";
    t.mpiVersion = "none";
    t.backend = "cpu";
    t.comm = "mpi";
    t.correctness = { true, 1e-9, 1e-12, 1e-6, 1e-10, "", {} };
    for (int s = 0; s < steps; ++s)
        t.steps.push_back({ s, sim.makespanUs });
    t.medianStep = steps / 2;
    for (int r = 0; r < schedule.ranks; ++r) {
        MeasuredRank rank { r, {} };
        for (int s = 0; s < steps; ++s) {
            double free = 0.0;
            for (std::size_t i = 0; i < schedule.order[r].size(); ++i) {
                const SlotTiming& timing = sim.timing[r][i];
                MeasuredAction a;
                a.action = schedule.order[r][i];
                a.step = s;
                a.startUs = free;
                a.waitUs = timing.startUs - free;
                a.endUs = timing.endUs;
                a.bytesReceived = receivedBytes(schedule, costs, a.action, r);
                a.activationBytes = 64 * static_cast<std::int64_t>(i);
                a.memoryBytes = 1000 + a.activationBytes;
                rank.actions.push_back(a);
                free = timing.endUs;
            }
        }
        t.ranks.push_back(std::move(rank));
    }
    return t;
}

} // namespace dps::test
