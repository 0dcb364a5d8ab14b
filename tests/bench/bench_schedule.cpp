// Speed of what the GUI redoes after every edit (DualPipe 16 ranks × 128 microbatches: generate + validate
// + simulate, target < 5 ms) and of planning scale (1024 ranks × 8192 microbatches simulated in < 2 s,
// > 10 million simulated actions per second; items/s = simulated actions (slots) per second of CPU time), and
// the same with MoE chains (overlapped slots on two lanes) and ranks on several nodes.
// Run: dps_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true (the "min" rows).
#include "schedule/generator.h"
#include "schedule/validator.h"
#include "sim/simulator.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

using namespace dps;

namespace {

Schedule dualPipe(int ranks, int microbatches)
{
    return generate(GenerateOptions { ScheduleKind::DualPipe, ranks, microbatches, 0 });
}

/// Counters shared by the benchmarks: slots (actions) and ops per iteration; items/s = actions/s.
void countActions(benchmark::State& state, const Schedule& s)
{
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(s.slotCount()));
    state.counters["actions"] = static_cast<double>(s.slotCount());
    state.counters["ops"] = static_cast<double>(s.opCount());
}

void generateOnly(benchmark::State& state)
{
    const int ranks = static_cast<int>(state.range(0));
    const int microbatches = static_cast<int>(state.range(1));
    Schedule s;
    for (auto _ : state) {
        s = dualPipe(ranks, microbatches);
        benchmark::DoNotOptimize(s.order.data());
    }
    countActions(state, s);
}

void generateValidate(benchmark::State& state)
{
    const int ranks = static_cast<int>(state.range(0));
    const int microbatches = static_cast<int>(state.range(1));
    Schedule s;
    for (auto _ : state) {
        s = dualPipe(ranks, microbatches);
        const ValidationReport report = validate(s);
        if (!report.valid())
            state.SkipWithError("the generated schedule is invalid");
        benchmark::DoNotOptimize(report.diagnostics.data());
    }
    countActions(state, s);
}

void generateValidateSimulate(benchmark::State& state)
{
    const int ranks = static_cast<int>(state.range(0));
    const int microbatches = static_cast<int>(state.range(1));
    Schedule s;
    for (auto _ : state) {
        s = dualPipe(ranks, microbatches);
        const ValidationReport report = validate(s);
        const SimResult result = simulate(s, uniformCostModel(s.stages));
        if (!report.valid() || result.deadlocked)
            state.SkipWithError("the generated schedule is invalid");
        benchmark::DoNotOptimize(result.makespanUs);
    }
    countActions(state, s);
}

/// Simulation alone; range(2) = 1 records the full timeline and memory curves, 0 only the peaks.
void simulateOnly(benchmark::State& state)
{
    const Schedule s = dualPipe(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
    const CostModel costs = uniformCostModel(s.stages);
    const bool record = state.range(2) != 0;
    const SimOptions options { record, record };
    for (auto _ : state) {
        const SimResult result = simulate(s, costs, options);
        if (result.deadlocked)
            state.SkipWithError("deadlocked");
        benchmark::DoNotOptimize(result.makespanUs);
    }
    countActions(state, s);
}

/// Unit costs with MoE-like chains on every stage (F [C 0.3, M 0.2, C 0.3, M 0.2] = 1, B [M 0.2, C 0.8, M 0.2,
/// C 0.8] = 2, 20 of 132 SMs for the all-to-all) and ranks on nodes of 8: overlapped slots laid on two lanes
/// (one layout per distinct stage pair) and node-aware transfers.
CostModel chainCosts(const Schedule& s)
{
    UniformCosts u;
    u.latencyUs = 0.1;
    CostModel costs = uniformCostModel(s.stages, u);
    for (StageCost& st : costs.stages) {
        st.forwardChain = { { Chunk::Compute, 0.3, 0 }, { Chunk::Comm, 0.2, 0 }, { Chunk::Compute, 0.3, 1 },
            { Chunk::Comm, 0.2, 1 } };
        st.backwardChain = { { Chunk::Comm, 0.2, 1 }, { Chunk::Compute, 0.8, 1 }, { Chunk::Comm, 0.2, 0 },
            { Chunk::Compute, 0.8, 0 } };
    }
    costs.commComputeShare = 20.0 / 132.0;
    for (int r = 0; r < s.ranks; ++r)
        costs.rankNode.push_back(r / 8);
    costs.interNodeLatencyUs = 0.5;
    return costs;
}

/// Simulation of chainCosts; range(2) as simulateOnly.
void simulateChains(benchmark::State& state)
{
    const Schedule s = dualPipe(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
    const CostModel costs = chainCosts(s);
    const bool record = state.range(2) != 0;
    const SimOptions options { record, record };
    for (auto _ : state) {
        const SimResult result = simulate(s, costs, options);
        if (result.deadlocked)
            state.SkipWithError("deadlocked");
        benchmark::DoNotOptimize(result.makespanUs);
    }
    countActions(state, s);
}

/// The fastest repetition: on a shared machine the minimum is the figure that repeats.
double fastest(const std::vector<double>& v)
{
    return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

} // namespace

BENCHMARK(generateOnly)->Args({ 16, 128 })->Unit(benchmark::kMicrosecond)->ComputeStatistics("min", fastest);
BENCHMARK(generateValidate)->Args({ 16, 128 })->Unit(benchmark::kMicrosecond)->ComputeStatistics("min", fastest);
BENCHMARK(generateValidate)
    ->Args({ 1024, 8192 })
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->ComputeStatistics("min", fastest);
BENCHMARK(generateValidateSimulate)
    ->Args({ 16, 128 })
    ->Unit(benchmark::kMicrosecond)
    ->ComputeStatistics("min", fastest);
BENCHMARK(simulateOnly)
    ->Args({ 16, 128, 1 })
    ->Args({ 16, 128, 0 })
    ->Unit(benchmark::kMicrosecond)
    ->ComputeStatistics("min", fastest);
BENCHMARK(simulateOnly)
    ->Args({ 1024, 8192, 1 })
    ->Args({ 1024, 8192, 0 })
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->ComputeStatistics("min", fastest);
BENCHMARK(simulateChains)->Args({ 16, 128, 1 })->Unit(benchmark::kMicrosecond)->ComputeStatistics("min", fastest);
BENCHMARK(simulateChains)
    ->Args({ 1024, 8192, 0 })
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->ComputeStatistics("min", fastest);

BENCHMARK_MAIN();
