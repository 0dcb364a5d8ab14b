#pragma once
// Costs of the built-in block Linear(h→f)–GELU–Linear(f→h) (no biases) from the model description.
//
// FLOPs per layer and microbatch, T = microbatchSize × seqLen tokens (2 FLOPs per multiply-add):
//   F = 2·T·h·f (first GEMM) + 2·T·f·h (second)                = 4·T·h·f
//   I = 4·T·h·f (dA = dY·W2, dX = dH·W1)   W = 4·T·h·f (dW2 = dYᵀ·A, dW1 = dHᵀ·X)
// Time (µs) = FLOPs / (deviceFlops × efficiency) × 1e6. (GELU and the loss are not counted.)
//
// Activation ledger — exactly the tensors the engine keeps at action boundaries, in elements per
// layer (bytes = elements × dtype bytes, where the CPU backend always computes in fp32):
//   after F, until I or B:  X (T×h, the layer input) + H (T×f, the pre-GELU)        = T·(h+f)
//   after I, until W:       X (T×h) + A = GELU(H) (T×f) + dH (T×f) + dY (T×h)       = 2·T·(h+f)
//   last stage, extra:      dL/dY of the final output (T×h), made in F (the loss), freed by I or B
// Beyond the ledger, the runtime's own buffers (StageCost::engine, blockEngineBuffers below): each op's
// workspaces and messages, the inputs and targets, the receive buffers posted ahead, the send buffers until
// their release and the replica gradient sum. With them a prediction's peak is the run's measured peak to the
// byte (docs/memory.md defines both; tests/runtime checks it on every schedule kind).
// Message per stage boundary: T × h × dtype bytes (the same for the gradient coming back).
// Parameters per layer: 2·h·f; gradients the same size.
//
// Limits (docs/project-format.md, "Limits"): every product of sizes is formed here with overflow detection
// (base/checked.h) and refused with a FormatError naming its fields when it is too large. Byte sizes and
// counts stay within 2^53 (a double holds them exactly), tokens within 2^31 − 1 (the runtime's rows and GEMM
// sizes are int), every time within 2^53 µs (≈ 285 years: the simulator's sums of times stay finite).
#include "base/checked.h"
#include "project.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dps {

/// Largest time a cost may take: 2^53 µs (≈ 285 years).
inline constexpr double kMaxCostUs = kMaxExactDouble;
/// Largest byte size or count a cost may hold: 2^53 (a double holds every integer up to it).
inline constexpr double kMaxExactBytes = kMaxExactDouble;
/// How messages name the two bounds.
inline constexpr const char* kMaxCostText = "2^53 µs (≈ 285 years)";
inline constexpr const char* kMaxBytesText = "2^53 bytes (the largest exact count)";

/// Shortest text that reads back as `value` ("1e+300", "0.5", "inf"): how messages show a number.
std::string shown(double value);
/// µs for `flops` on one device of `cluster` at its sustained rate (device_flops × efficiency); 0 for 0 FLOPs,
/// infinite when the rate is 0.
double flopsToUs(double flops, const ClusterDesc& cluster);

/// The FFN size of a model whose file gives none: 4 × hidden. Throws FormatError
/// "model.hidden: <h> × 4 (model.ffn defaults to 4 × model.hidden) FFN units exceed 2^31 − 1 (the largest int)".
int defaultFfn(int hidden);

/// FLOPs of one F (also of one I and of one W) of one layer for one microbatch: 4·T·h·f. A FLOP count is
/// only divided into a time, so it has no bound of its own (the time has).
double layerForwardFlops(const ModelDesc& model);
/// Bytes per element the engine computes in for `dtype` on `backend` ("cpu" always 4).
int computeBytes(const ModelDesc& model, bool cpuBackend);

/// Costs of a stage holding `layers` layers; `lastStage` adds the loss gradient to the activation ledger.
/// bytesPerElement: dtype bytes of the prediction (dtypeBytes(model.dtype), or 4 for a CPU run).
/// `layersField` names the layer count in messages ("variants[0].layer_partition[3]").
/// Checks, in this order, and throws FormatError naming the fields of the first one too large:
///   T·h·e bytes (one activation: a layer's input, the message between stages) ≤ 2^53, e.g. "model.hidden:
///   1000000000 × model.seq_len 100000000 × model.microbatch_size 1000 × 4 (bytes per fp32 element)
///   activation bytes (…) exceed 2^53 (the largest exact count)";
///   T = seq_len × microbatch_size ≤ 2^31 − 1;
///   n·2·T·(h+f)·e bytes kept from I until W ≤ 2^53 (it bounds the activation live after F as well);
///   n·2·h·f·2e bytes of parameters and gradients ≤ 2^53;
///   F = I = W time ≤ 2^53 µs (names cluster.device_flops and cluster.efficiency).
/// Sets StageCost::engine to blockEngineBuffers of the stage (the runtime's buffers in `bytesPerElement`).
StageCost blockStageCost(const ModelDesc& model, const ClusterDesc& cluster, int layers, bool lastStage,
    int bytesPerElement, std::string_view layersField = "layers");

/// Throws FormatError when `dpstudio run` cannot execute `model`: tied embeddings ("model.tied_embeddings: …").
/// Block models and other transformers run (an MoE with model.moe.ep > 1 on dp replicas, a multiple of ep:
/// the worker checks that). The launcher checks before starting ranks, the worker again on start.
void checkEngineRunsModel(const ModelDesc& model);

/// What the runtime allocates per op of a block-model stage of `layers` layers beyond the ledger (the
/// StageCost::engine of blockStageCost; rules and the code each follows: docs/memory.md). th = bytes of one T×h
/// tensor (input, output, message, dY), tf = of one T×f tensor (H, GELU(H), dH); n = layers ≥ 1, dx = th on a
/// stage after the first (I and B make the input gradient), 0 on the first:
///   F: high-water n(tf+th) + tf (last stage: n(tf+th) + max(tf, th), dL/dY made while Y is live); net n(tf+th)
///   I: high-water (n−1)(tf+th) + tf + max(tf, dx);  net n·tf + (n−1)·th + dx
///   W: high-water 0;  net −2n(th+tf)
///   B: high-water tf + (n > 1 ? th : dx);  net −n(tf+th) − th + dx
/// A stage without layers passes its messages on: F high-water th on the last stage (dL/dY), else 0, net 0;
/// I and B net dx − th. Never throws.
EngineBuffers blockEngineBuffers(int layers, bool lastStage, double tokenHiddenBytes, double tokenFfnBytes);

/// Checks what the project's cost settings add to a stage built by blockStageCost: a message's wire time
/// (message bytes ÷ bandwidth, the costs' bandwidth when set, else the cluster's) ≤ 2^53 µs, and parameters,
/// gradients and optimizer state (parameters × costs.optimizer_bytes_per_parameter) ≤ 2^53 bytes. Throws
/// FormatError naming the bandwidth field or costs.optimizer_bytes_per_parameter and `layersField`.
void checkStageSettings(const StageCost& stage, const Project& project, std::string_view layersField);

/// Checks typed cost numbers: every time of `stages` (indexed by stage) and `latencyUs` is at most 2^53 µs
/// (so not infinite or NaN) and `overlapFactor` at most 2^53. `prefix` leads the field names ("costs." in a
/// project, "" in a cost file). Throws FormatError, e.g. "costs.stages: stage 3's f_us: must be at most 2^53 µs
/// (≈ 285 years), got 1e+300".
void checkCostNumbers(const std::vector<StageCostOverride>& stages, std::optional<double> overlapFactor,
    std::optional<double> latencyUs, const std::string& prefix);

/// Checks the project-wide numbers: cluster.latency_us ≤ 2^53 µs, cluster.memory_per_device_bytes ≤ 2^53
/// bytes, and the costs' typed numbers (checkCostNumbers with "costs."). Throws FormatError naming the field.
void checkClusterAndCosts(const Project& project);

} // namespace dps
