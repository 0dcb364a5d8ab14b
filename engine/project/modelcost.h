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
// Transient workspaces and communication buffers are not counted.
// Message per stage boundary: T × h × dtype bytes (the same for the gradient coming back).
// Parameters per layer: 2·h·f; gradients the same size.
#include "project.h"

namespace dps {

/// FLOPs of one F (also of one I and of one W) of one layer for one microbatch: 4·T·h·f.
double layerForwardFlops(const ModelDesc& model);
/// Bytes per element the engine computes in for `dtype` on `backend` ("cpu" always 4).
int computeBytes(const ModelDesc& model, bool cpuBackend);

/// Costs of a stage holding `layers` layers; `lastStage` adds the loss gradient to the activation ledger.
/// bytesPerElement: dtype bytes of the prediction (dtypeBytes(model.dtype), or 4 for a CPU run).
StageCost blockStageCost(const ModelDesc& model, const ClusterDesc& cluster, int layers, bool lastStage,
    int bytesPerElement);

} // namespace dps
