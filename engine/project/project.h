#pragma once
// The project: model, cluster, named schedule variants, cost overrides and seed. File format
// `*.dpstudio.json`, documented in docs/project-format.md.
#include "model/transformer.h"
#include "schedule/schedule.h"
#include "sim/costmodel.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dps {

/// Newest project format this build reads and writes (it reads every version from 1; docs/project-format.md).
inline constexpr int kProjectFormatVersion = 2;

enum class DType { FP32, BF16 };
std::string_view dtypeName(DType dtype); ///< "fp32", "bf16"
int dtypeBytes(DType dtype); ///< 4, 2

enum class ModelKind { Block, Transformer };
std::string_view modelKindName(ModelKind kind); ///< "block", "transformer"

/// The model. `kind` Block (the default, what `run` executes on CPUs): `layers` blocks
/// Linear(hidden→ffn)–GELU(erf)–Linear(ffn→hidden), no biases, MSE loss on the last stage. `kind`
/// Transformer: the decoder of `transformer` (engine/model/transformer.h), whose layers, hidden, ffn,
/// seq_len, microbatch_size and dtype are the fields below (the other fields are its own).
/// Tokens per microbatch = microbatchSize × seqLen.
struct ModelDesc {
    ModelKind kind = ModelKind::Block;
    int layers = 16;
    int hidden = 512;
    int ffn = 2048;
    int seqLen = 128;
    int microbatchSize = 2;
    DType dtype = DType::FP32;
    std::string preset; ///< the preset it was made from ("deepseek-v3"), informational; "" = typed by hand
    model::Recompute recompute = model::Recompute::None; ///< `model.recompute`; a variant may override it
    /// `model.recompute_layers`: with recompute "full", the layers of each stage that are recomputed (the
    /// first ones; Megatron-LM's --recompute-method block --recompute-num-layers); the rest keep everything.
    /// 0 = every layer. A variant may override it.
    int recomputeLayers = 0;
    /// Transformer-only fields (heads, kv_heads, head_dim, vocab, tied embeddings, attention, mla, moe);
    /// its layers/hidden/ffn/seqLen/microbatchSize/dtypeBytes are filled from the fields above by
    /// transformerOf().
    model::Transformer transformer;
};

/// The model's transformer description with the shared fields filled in, for `microbatchSize` sequences
/// per microbatch (a variant's override, or the model's own when 0).
model::Transformer transformerOf(const ModelDesc& model, int microbatchSize = 0);

/// Training state kept besides parameters (Adam; ZeRO-1: Rajbhandari et al. 2020; DeepSeek-V3 report §3.3).
struct TrainingDesc {
    bool present = false; ///< the project has a `training` object (format 2); else costs.optimizer_bytes_per_parameter
    bool masterWeights = true; ///< an fp32 master copy of every parameter (when the dtype is not fp32)
    int momentBytes = 4; ///< bytes of each of Adam's two moments (fp32 = 4; DeepSeek-V3 keeps them in bf16 = 2)
    DType gradientDtype = DType::FP32; ///< gradients (accumulated in fp32 by default)
    /// ZeRO stage (Rajbhandari et al. 2020): 0 every replica holds all state; 1 optimizer state sharded over
    /// the replicas that hold the same parameters (dense: dp × cp; routed experts: dp × cp / ep); 2 gradients
    /// too; 3 (FSDP) parameters too, gathered layer by layer in F and B.
    int zero = 0;
    /// Bytes per element the GEMMs read: 1 = FP8 (DeepSeek-V3 report §3.3; the device's FP8 peak), else the
    /// model's dtype bytes; 0 = the model's dtype (`training.gemm_dtype` absent).
    int gemmBytes = 0;
    /// Bytes per element of the activations kept for a GEMM's backward (its input): 1 = cached in FP8 (DeepSeek-V3
    /// report §3.3.1, "low-precision storage"); 0 = the model's dtype.
    int activationCacheBytes = 0;
    bool emaOnCpu = false; ///< an EMA copy of the parameters kept in CPU memory (DeepSeek-V3 report §3.2.3);
                           ///< false: no EMA
};

/// The devices the prediction is for. Devices are numbered node by node (gpusPerNode each); the placement
/// rule (docs/model-library.md) puts the dp replicas of one pipeline rank on consecutive devices.
/// How long each kind of operation takes on the device (docs/model-library.md "Device efficiency per
/// operation"): a weight GEMM by its shape (wave quantization over the SMs, and never faster than its operands
/// move through memory), the attention core at flash-attention's share of the peak, memory-bound operations by
/// the memory bandwidth. Without it every FLOP runs at ClusterDesc::efficiency.
struct KernelModel {
    int smCount = 0; ///< streaming multiprocessors (compute units): one 128 × 128 output tile each per wave
    double hbmBandwidthBytesPerUs = 0.0; ///< device memory bandwidth, bytes/µs
    double gemmEfficiency = 0.8; ///< of device_flops, a large GEMM's (the best shape's) rate
    double gemmEfficiencyFp8 = 0.7; ///< of device_flops_fp8, a large FP8 GEMM's rate
    /// Of device_flops_fp8, an FP8 weight-gradient GEMM's rate (W: K is the tokens, the result accumulated in
    /// FP32), where a device's measured Wgrad kernels run below its other FP8 GEMMs; 0 = gemmEfficiencyFp8.
    double wgradEfficiencyFp8 = 0.0;
    double attentionForwardEfficiency = 0.6; ///< of device_flops, the flash-attention forward's rate
    double attentionBackwardEfficiency = 0.45; ///< of device_flops, its backward's rate
    double memoryEfficiency = 0.9; ///< of hbm bandwidth, what a memory-bound kernel reaches
    /// The expert all-to-all's measured rate on the inter-node part of a dispatch (and of the combine's backward,
    /// a dispatch too), bytes/µs per device; 0 = the inter-node link's bandwidth. Pipeline hops and the other
    /// collectives keep the link's bandwidth.
    double dispatchInterNodeBytesPerUs = 0.0;
    /// The same for a combine (and the dispatch's backward), bytes/µs; 0 = the inter-node link's bandwidth.
    double combineInterNodeBytesPerUs = 0.0;
};

struct ClusterDesc {
    std::string device; ///< the device preset it was made from ("h800"), informational; "" = typed by hand
    double deviceFlops = 50e12; ///< peak FLOP/s of one device at the model's dtype
    double deviceFlopsFp8 = 0.0; ///< dense FP8 peak FLOP/s of one device, informational (not used by the
                                 ///< costs); 0 = not given (a device without FP8)
    double efficiency = 0.5; ///< fraction of peak the GEMMs reach
    double memoryPerDeviceBytes = 80e9;
    double latencyUs = 5.0; ///< p2p latency inside a node, µs
    double bandwidthBytesPerUs = 25e3; ///< p2p bandwidth inside a node, bytes/µs (25e3 = 25 GB/s)
    int gpusPerNode = 0; ///< devices per node; 0 = one node holds every device (format 1)
    int nodes = 0; ///< nodes available (informational for the planner); 0 = as many as a job needs
    double interNodeLatencyUs = 5.0; ///< µs
    double interNodeBandwidthBytesPerUs = 25e3; ///< per device (its NIC), bytes/µs
    double commComputeShare = 20.0 / 132.0; ///< compute share the all-to-all takes in an overlapped slot
                                            ///< (DeepSeek-V3 report §3.2.2: 20 of 132 SMs)
    std::optional<KernelModel> kernels; ///< per-operation rates; unset = `efficiency` for every FLOP
};

/// One schedule variant of a project.
struct Variant {
    std::string name; ///< unique within the project
    ScheduleKind kind = ScheduleKind::DualPipe;
    int ranks = 8;
    int microbatches = 20;
    int stagesPerRank = 0; ///< 0 = the kind's default
    std::vector<int> layerPartition; ///< layers per stage; empty = even split of the model's layers
    std::optional<std::vector<std::vector<Action>>> order; ///< hand-edited order; unset = generated
    /// `comm_order`: a hand-placed program in PyTorch's whole action language (compute_comms), per rank its steps in
    /// order: exactly the variant's compute actions (`order` or the generated one) with sends, receives, UNSHARD,
    /// RESHARD and REDUCE_GRAD among them. Unset = PyTorch's lowering (lowerToComms) when sends and receives are asked
    /// for. Set: every prediction of the variant times these sends and receives where they sit (commProgramOf).
    std::optional<std::vector<std::vector<Step>>> commOrder;
    int dp = 1; ///< data-parallel replicas of the pipeline; the job uses ranks × tp × cp × dp devices
    int microbatchSize = 0; ///< sequences per microbatch; 0 = the model's
    std::optional<model::Recompute> recompute; ///< unset = the model's
    std::optional<int> recomputeLayers; ///< unset = model.recompute_layers
    int tp = 1; ///< tensor-parallel degree (Megatron-LM column/row split of attention and MLP)
    int cp = 1; ///< context-parallel degree (ring attention over the sequence)
    bool sequenceParallel = false; ///< with tp > 1: norms and dropout split over the sequence, all-reduce
                                   ///< replaced by reduce-scatter + all-gather (Korthikanti et al. 2022)
};

struct CostSettings {
    std::vector<StageCostOverride> stages; ///< by stage index; may be shorter than the stage count
    double overlapFactor = 1.0;
    double optimizerBytesPerParameter = 0.0;
    std::optional<double> latencyUs; ///< overrides the cluster's (e.g. from calibration)
    std::optional<double> bandwidthBytesPerUs;
    std::vector<double> slotVariation; ///< `slot_variation`: CostModel::slotVariation (a calibration's); empty = none
};

struct Project {
    int formatVersion = kProjectFormatVersion;
    std::string name; ///< free text shown in titles; may be empty
    ModelDesc model;
    ClusterDesc cluster;
    std::vector<Variant> variants;
    std::string activeVariant; ///< name of the active variant
    CostSettings costs;
    TrainingDesc training;
    std::uint64_t seed = 233;

    /// The active variant; throws FormatError when activeVariant names none.
    const Variant& active() const;
    /// Variant by name, nullptr if none.
    const Variant* find(const std::string& name) const;
};

/// The embedded default project: 16 layers, hidden 512, FFN 2048, sequence 128, microbatch 2, fp32;
/// variants "dualpipe" (8 ranks, active) and "dualpipev" (4 ranks), both 8 stages of 2 layers, 20
/// microbatches, seed 233.
Project defaultProject();

/// Parses project JSON text. Throws FormatError naming the field at fault (e.g. "variants[1].ranks: must
/// be a positive integer") or, for a newer format_version, naming both versions. `source` names the file
/// in messages.
Project parseProject(const std::string& text, const std::string& source = "project");
/// Reads and parses a file. Throws IoError when it cannot be read, FormatError as parseProject.
Project loadProject(const std::filesystem::path& path);
/// What parseProject checks beyond the grammar, for a project built in code (e.g. from `dpstudio init` flags)
/// before it is written: stage counts, partitions and hand-edited orders fit their variants, cluster.kernels'
/// rates are positive (its efficiencies at most 1), and every size and product of sizes is within its limit
/// (modelcost.h, docs/project-format.md "Limits"). Throws FormatError naming the field, without a file name.
void validateProject(const Project& project);
/// Serialises (stable key order, 2-space indent, lists of plain values on one line, final newline). Writes
/// format_version 2 only when the project uses something format 1 cannot say (a transformer model, a preset
/// name, recompute, training, node fields of the cluster, dp / microbatch_size / recompute on a variant);
/// otherwise format 1, byte for byte as a build before format 2 wrote it.
std::string serializeProject(const Project& project);
/// The JSON object serializeProject writes (keys in file order).
nlohmann::ordered_json projectToJson(const Project& project);
/// Atomic save (writeFileAtomic: temporary file beside `path`, fsync, rename). Throws IoError.
void saveProject(const Project& project, const std::filesystem::path& path);
/// True when the text looks like a project file (a JSON object with "format_version" and "variants").
bool looksLikeProject(const std::string& text);

/// Number of model stages of a variant (stageCountFor of its kind, ranks and stages per rank). Throws
/// FormatError when ranks × the kind's stages per rank exceeds 2^31 − 1.
int stageCount(const Variant& variant);
/// The variant's layer partition, the even split when it is empty (earlier stages get the remainder).
/// Throws FormatError when it does not cover the model's layers or has a stage with < 0 layers.
std::vector<int> effectivePartition(const Project& project, const Variant& variant);

/// The variant's schedule: its hand-edited order (validated for sizes only) or the generated one.
/// Throws ConstraintError for an invalid size, FormatError for an order that does not fit.
Schedule buildSchedule(const Project& project, const Variant& variant);

/// The variant's hand-placed communication program (Variant::commOrder) as a TorchSchedule, checked against
/// `schedule`, the variant's compute order (buildSchedule); nullopt when the variant has none. Throws FormatError
/// naming the field and the action at fault: a row count other than the ranks ("variants[0].comm_order: has 3 rows,
/// the variant has 4 ranks"), an idle step, compute actions that are not the variant's order on that rank
/// ("variants[0].comm_order[1][5]: 1B0 where the variant's order has 1F2 (rank 1's compute action 3)"), and a send or
/// receive the placement refuses (validate(TorchSchedule)'s comm.* rules: "variants[0].comm_order[2][0]: 1RECV_F0 is
/// on rank 2 but stage 1 runs microbatch 0 on rank 1"). Where the sends and receives sit (a receive after the compute
/// that needs it, an order that deadlocks) is not refused: the prediction reports it. O(actions).
std::optional<TorchSchedule> commProgramOf(const Project& project, const Variant& variant, const Schedule& schedule);

/// The cost model of a variant: per-stage costs from the model description summed over the layer
/// partition (block: modelcost.h; transformer: transformercost.h, with the chains, the placement's rankNode and
/// inter-node link, and commComputeShare when a stage exchanges tokens), then the project's overrides;
/// latency/bandwidth from the cluster (or overrides). Bytes use the model's dtype. Throws FormatError as
/// effectivePartition and placementOf, and naming the fields when a size, a product of sizes or a time exceeds
/// its limit (modelcost.h, transformercost.h).
CostModel buildCostModel(const Project& project, const Variant& variant);
/// The same with `bytesPerElement` bytes per tensor element (4 for a CPU run of a bf16 project) for a block
/// model; a transformer (never run on CPUs) keeps its dtype.
CostModel buildCostModel(const Project& project, const Variant& variant, int bytesPerElement);

/// Applies the settings to a cost model: each set per-stage field replaces the stage's time (stages beyond
/// the model's are ignored), then overlap factor and optimizer bytes, then latency/bandwidth when set.
void applyCostSettings(CostModel& model, const CostSettings& settings);

/// Newest cost-file format (`costs.json`, written by `dpstudio calibrate`) this build reads and writes.
inline constexpr int kCostsFormatVersion = 1;

// Cost files (struct CostsFile, in sim/costmodel.h; docs/project-format.md):
// {"format_version":1, "stages":[{"stage":0,"f_us":..,"i_us":..,"w_us":..,"b_us":..,"fb_us":..}],
//  "overlap_factor":.., "latency_us":.., "bandwidth_bytes_per_us":..}; every field but format_version
// optional.

/// Parses a cost file. Throws FormatError naming `source` and the field (newer format_version refused
/// naming both versions).
CostsFile parseCostsFile(const std::string& text, const std::string& source = "costs");
/// Serialises a cost file (2-space indent, final newline).
std::string serializeCostsFile(const CostsFile& costs);
/// Lays a cost file over project cost settings: set stage fields replace, unset ones are kept.
void applyCostsFile(CostSettings& settings, const CostsFile& costs);

} // namespace dps
