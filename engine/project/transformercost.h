#pragma once
// Stage costs of a transformer model (ModelDesc::kind Transformer) on the project's cluster: times of F, I,
// W and B from engine/model's FLOPs at the device's sustained rate, the expert all-to-all on the link the
// placement rule picks, the chains an overlapped F&B slot is laid out from, and memory per device
// (parameters, gradients, optimizer state with ZeRO-1, activations by recompute policy). Formulas and
// sources: docs/model-library.md.
#include "project.h"

#include <string>
#include <vector>

namespace dps {

/// Where a variant's devices sit. Devices are numbered node by node; device(r, d, t) = (r × D + d) × tp + t for
/// pipeline rank r, replica d and tensor rank t, D = max(dp × cp, ep), replica d = dp index × cp + cp index:
/// tp innermost, then cp, then ep and dp (an EP group is ep consecutive replicas), then pp. With dp × cp = 1 the
/// EP group is still formed of ep replicas laid out that way.
struct DevicePlacement {
    int replicas = 1; ///< D
    std::vector<int> rankNode; ///< node of replica 0 of each pipeline rank
    model::EpPlacement ep; ///< where the EP peers of a device sit (the same for every rank)
    int tp = 1; ///< devices of one replica (its tensor ranks, consecutive)
    bool tpInterNode = false; ///< tp exceeds the GPUs of a node: the tensor-parallel collectives cross nodes
};
/// Throws FormatError naming variants[i].dp / model.moe.ep when ep does not divide dp × cp (dp × cp > 1).
DevicePlacement placementOf(const Project& project, const Variant& variant);

/// The variant's transformer: the model's with the variant's microbatch size, tp, cp and sequence parallelism
/// (sequence_parallel only counts with tp > 1).
model::Transformer transformerFor(const Project& project, const Variant& variant);

/// The variant's effective recompute policy and microbatch size.
model::Recompute recomputeOf(const Project& project, const Variant& variant);
int microbatchSizeOf(const Project& project, const Variant& variant);

/// Costs of a model stage holding global layers [firstLayer, firstLayer + layers), with the embedding when
/// firstStage and the LM head and loss when lastStage. `layersField` names the layer count in messages.
/// Fills every StageCost field including the chains (an MoE layer: attention → dispatch → experts →
/// combine in F; the reverse in B, consecutive compute merged into one chunk that carries the layer of its
/// last piece) and optimizerBytes (only when project.training.present). The chains stay empty when the stage
/// exchanges nothing (dense, or ep = 1); otherwise forwardUs is exactly the sum of forwardChain and
/// inputGradUs + weightGradUs exactly that of backwardChain (backwardUs stays unset; W is rounded to the last
/// bit of B for that). Throws FormatError naming
/// the fields when a size or a time exceeds its limit.
StageCost transformerStageCost(const Project& project, const Variant& variant, const DevicePlacement& placement,
    int firstLayer, int layers, bool firstStage, bool lastStage, std::string_view layersField);

/// The three passes of a weight GEMM: F writes rows × cols, I (dX = dY·Wᵀ) rows × inner, W (dW = Xᵀ·dY)
/// inner × cols per group.
enum class GemmPass { F, I, W };

/// The rates one GEMM runs at under cluster.kernels.
struct GemmRates {
    double flopsPerSecond = 0.0; ///< the large-GEMM rate: peak × gemm efficiency, FLOP/s
    int smCount = 1; ///< output tiles of 128 × 128 one wave computes
    double memoryBytesPerUs = 0.0; ///< hbm bandwidth × memory efficiency, bytes/µs
    double operandBytes = 2.0; ///< bytes per element of the inputs (FP8: 1)
    double outputBytes = 2.0; ///< bytes per element of the output
};

/// µs of one pass of `g` (docs/model-library.md "Device efficiency per operation"): its FLOPs at
/// flopsPerSecond × the wave efficiency of its output tiles, n ÷ (⌈n / smCount⌉ × smCount) for n tiles, and
/// never less than its inputs' and output's bytes at memoryBytesPerUs.
double gemmPassUs(const model::Gemm& g, GemmPass pass, const GemmRates& rates);

namespace detail {
/// How messages name a field of `variant`: "variants[i].<field>" for a variant of the project (matched by
/// address or name), else "variant \"name\", <field>" (a variant built in code).
std::string variantField(const Project& project, const Variant& variant, const char* field);
} // namespace detail

} // namespace dps
