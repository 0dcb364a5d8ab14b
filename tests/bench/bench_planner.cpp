// Speed of the planner (engine/project/planner.h) over its whole default space (kinds, tp, cp, pp, dp, ZeRO,
// recompute): Llama 3 70B on 64 H100s (global batch 512 sequences, 80 GB; target < 3 s), DeepSeek-V3 on 2048 H800s
// (global batch 15,360 sequences, the batch DeepSeek-V3 ends its batch-size schedule at, report §4.2; 80 GB; target
// < 10 s, and a plan that fits) and Llama 3 405B on 16,384 H100s (global batch 2048 sequences of 8192 tokens, as
// Meta's pre-training, Llama 3 report §3.3.2; 80 GB; target < 10 s, and a plan that fits).
// Counters: candidates enumerated, simulated, pruned, over the limit, fitting, refinements, best step (µs), and the
// best plan's tp and MFU.
#include "project/planner.h"
#include "project/presets.h"

#include <benchmark/benchmark.h>

using namespace dps;

namespace {

Project presetProject(const char* modelId, const char* deviceId)
{
    Project p = defaultProject();
    ModelPreset preset = modelPreset(modelId);
    p.model = preset.model;
    p.model.preset = modelId;
    p.training = preset.training;
    p.cluster = devicePreset(deviceId);
    p.cluster.device = deviceId;
    p.costs = CostSettings {};
    p.variants.clear(); // the planner needs the model and the cluster only
    p.activeVariant.clear();
    return p;
}

void planBench(benchmark::State& state, const char* modelId, const char* deviceId, int devices, int globalBatch)
{
    const Project project = presetProject(modelId, deviceId);
    PlanRequest request;
    request.devices = devices;
    request.globalBatch = globalBatch;
    request.memoryLimitBytes = 80e9;
    PlanResult result;
    for (auto _ : state) {
        result = plan(project, request);
        benchmark::DoNotOptimize(result.candidates.data());
    }
    state.counters["candidates"] = result.enumerated;
    state.counters["simulated"] = result.simulated;
    state.counters["refinements"] = result.refinements;
    state.counters["pruned"] = result.pruned;
    state.counters["over_limit"] = result.overLimit;
    state.counters["fitting"] = static_cast<double>(result.candidates.size());
    state.counters["best_step_us"] = result.candidates.empty() ? 0.0 : result.candidates.front().stepUs;
    state.counters["best_tp"] = result.candidates.empty() ? 0.0 : result.candidates.front().tp;
    state.counters["best_mfu"] = result.candidates.empty() ? 0.0 : result.candidates.front().mfu;
    if (result.candidates.empty())
        state.SkipWithError("no plan fits 80 GB");
}

void llama70b64(benchmark::State& state)
{
    planBench(state, "llama3-70b", "h100-sxm", 64, 512);
}

void deepseek2048(benchmark::State& state)
{
    planBench(state, "deepseek-v3", "h800", 2048, 15360);
}

void llama405b16384(benchmark::State& state)
{
    planBench(state, "llama3-405b", "h100-sxm", 16384, 2048);
}

} // namespace

BENCHMARK(llama70b64)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(deepseek2048)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(llama405b16384)->Unit(benchmark::kMillisecond)->Iterations(1);
