#pragma once
// The transformer and MoE model library: shapes, parameter counts, FLOPs, activation bytes and expert
// all-to-all volumes of one layer, the embedding and the LM head. Pure arithmetic on the model's
// description; times (which need a device) are made from these in engine/project/transformercost.*.
// Every formula and its source is in docs/model-library.md (Narayanan et al. 2021 and the zero-bubble paper
// for F/I/W FLOPs, Korthikanti et al. 2022 for activations, DeepSeek-V2/V3 reports for MLA and MoE).
#include <string>
#include <string_view>
#include <vector>

namespace dps::model {

enum class Attention { MHA, GQA, MLA };
std::string_view attentionName(Attention a); ///< "mha", "gqa", "mla"

/// What the backward recomputes instead of keeping (Korthikanti et al. 2022).
enum class Recompute {
    None, ///< keep every activation the backward needs
    Selective, ///< recompute the attention core (the sequence-squared softmax/score activations)
    Full, ///< keep only each layer's input; the backward reruns the layer's forward
    /// DeepSeek-V3 report §3.2.3: the RMSNorm outputs and the MLA up-projections (queries, keys and values
    /// from their latent vectors) are recomputed; everything else is kept
    NormUpProjection,
};
std::string_view recomputeName(Recompute r); ///< "none", "selective", "full", "norm-up-projection"

/// Multi-head latent attention (DeepSeek-V2 §2.1): low-rank query and key-value projections with
/// decoupled rotary dimensions. Shapes with heads n_h: q: h → q_lora_rank → n_h·(nope + rope);
/// kv: h → kv_lora_rank + rope (the shared rotary key), kv_lora_rank → n_h·(nope + v); out: n_h·v → h.
struct Mla {
    int qLoraRank = 0; ///< 0 = the query is projected directly (h → n_h·(nope + rope))
    int kvLoraRank = 512;
    int qkNopeHeadDim = 128;
    int qkRopeHeadDim = 64;
    int vHeadDim = 128;
};

/// Mixture of experts (DeepSeek-V3 report §2.1.2; Mixtral). A layer with index < denseLayers is a dense
/// SwiGLU MLP of size denseFfn; the others route each token to topK of `experts` routed experts of size
/// expertFfn, plus `sharedExperts` always-active experts of the same size, through a linear router.
struct Moe {
    int experts = 0; ///< routed experts per MoE layer; 0 = a dense model
    int topK = 0; ///< routed experts per token
    int expertFfn = 0; ///< intermediate size of one expert (SwiGLU)
    int sharedExperts = 0;
    int denseLayers = 0; ///< the first k layers are dense
    int denseFfn = 0; ///< intermediate size of those dense layers; 0 = the model's ffn
    int ep = 1; ///< expert-parallel group size; 1 = no all-to-all
    int dispatchBytes = 2; ///< bytes per element of the dispatch (DeepSeek-V3: FP8 = 1)
    int combineBytes = 2; ///< bytes per element of the combine (DeepSeek-V3: BF16 = 2)
    int maxNodesPerToken = 0; ///< node-limited routing: a token reaches at most this many nodes; 0 = no limit
    /// Tokens the busiest device of an EP group receives over the balanced share T·top_k (1.0 = balanced).
    /// Scales the routed experts' compute, kept activations and all-to-all volume of that device.
    double imbalance = 1.0;
    /// Where the routing probability scales a routed expert: false = its output, in the combine (our engine's
    /// MoE; the output is kept for the probability's gradient), true = the SwiGLU's output before W_down
    /// (Megatron-Core's weighted SwiGLU: only the fp32 probability is kept). JSON model.moe.prob_scaling.
    bool probsOnSwiglu = false;
};

/// A decoder-only transformer: embedding, `layers` × (RMSNorm, attention, RMSNorm, SwiGLU MLP or MoE), final
/// RMSNorm, LM head (tied to the embedding or not). Tokens per microbatch T = microbatchSize × seqLen.
struct Transformer {
    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kvHeads = 0; ///< GQA groups; = heads for MHA
    int headDim = 0; ///< per-head size of q, k, v (MHA/GQA); usually hidden / heads
    int ffn = 0; ///< SwiGLU intermediate size of a dense layer
    int vocab = 0;
    bool tiedEmbeddings = false;
    Attention attention = Attention::GQA;
    Mla mla;
    Moe moe;
    int seqLen = 0;
    int microbatchSize = 1;
    int dtypeBytes = 2; ///< bytes per parameter and activation element (bf16 = 2)
    // How one layer is split over devices besides the pipeline and the experts (layerCost gives one device's
    // share; Megatron-LM's placement, Narayanan et al. 2021 §2.3 and Korthikanti et al. 2022 §4.2).
    int tp = 1; ///< tensor-parallel degree: heads, MLP columns, experts' columns and the vocabulary split tp ways
    int cp = 1; ///< context-parallel degree: the sequence split cp ways (ring attention)
    bool sequenceParallel = false; ///< with tp > 1, the residual stream (norms' inputs and outputs) split tp ways
    /// Bytes per element of the activations kept for a GEMM's backward (its inputs: norm outputs, the context,
    /// the SwiGLU's and W_down's inputs, a routed token's input); 0 = dtypeBytes (DeepSeek-V3 report §3.3.1: FP8)
    int activationCacheBytes = 0;
    /// Bytes per element of the weight GEMMs' operands; 0 = dtypeBytes. With 1 (FP8), W's operands (the input
    /// X and the output gradient dY) are kept from I until W as the FP8 copies the Wgrad GEMM reads (DeepSeek-V3
    /// report §3.3, Figure 6).
    int gemmBytes = 0;

    bool isMoe() const { return moe.experts > 0; }
    /// Whether global layer `layer` (0-based) is an MoE layer.
    bool isMoeLayer(int layer) const { return isMoe() && layer >= moe.denseLayers; }
    double tokens() const { return static_cast<double>(microbatchSize) * seqLen; }
};

/// FLOPs split the way the zero-bubble paper splits a backward: I (gradients of the inputs) and W
/// (gradients of the weights). F of a GEMM is 2·m·n·k, I and W each 2·m·n·k too; the attention core
/// (scores and values) has no weights, so its backward is all I (2 × its forward), causal masking counted at
/// half the full square.
struct Flops {
    double f = 0.0;
    double i = 0.0;
    double w = 0.0;
};

/// One weight GEMM of a forward on one device: [rows × inner] · [inner × cols], 2·rows·inner·cols FLOPs. Its I
/// (input gradient) is [rows × cols] · [cols × inner] and its W (weight gradient) [inner × rows] · [rows × cols],
/// the same FLOPs each. A grouped GEMM (the routed experts a device holds) is `groups` GEMMs of rows ÷ groups
/// rows each, with a weight of its own each.
struct Gemm {
    double rows = 0.0; ///< tokens (routed experts: the token-expert pairs of every group together)
    double inner = 0.0;
    double cols = 0.0;
    double groups = 1.0;
    /// Whether it may run in FP8 with training.gemm_dtype "fp8"; the router and the LM head stay in BF16
    /// (DeepSeek-V3 report §3.3: embedding, output head, MoE gating, norms and attention keep their precision).
    bool lowPrecision = true;
    bool attention = true; ///< of the attention block; false: of the MLP (or the head)
    bool upProjection = false; ///< an MLA up-projection (rerun by recompute "norm-up-projection")
    /// In FP8 (training.gemm_dtype "fp8"), the rows of its forward input (rows × inner) it quantizes itself
    /// before it runs, and the rows of its output gradient (rows × cols) its I quantizes: −1 = all its rows,
    /// 0 = it reads an FP8 copy another operation made, fewer = a copy made once per token before an all-to-all.
    double quantizedInputRows = -1.0;
    double quantizedGradRows = -1.0;
    double flops() const { return 2.0 * rows * inner * cols; }
    double inputRowsQuantized() const { return quantizedInputRows < 0.0 ? rows : quantizedInputRows; }
    double gradRowsQuantized() const { return quantizedGradRows < 0.0 ? rows : quantizedGradRows; }
};

/// One layer for one microbatch on one device of its expert-parallel group (balanced routing: each device
/// computes T·top_k tokens' worth of routed experts, whatever ep is).
struct LayerCost {
    bool moe = false;
    double parameters = 0.0; ///< elements this device holds (routed experts: experts / ep of them)
    double parametersTotal = 0.0; ///< elements of the whole layer (every expert)
    double parametersActive = 0.0; ///< elements one token uses (top_k routed experts, shared, attention, router)
    double expertParameters = 0.0; ///< of `parameters`, the routed experts' (ZeRO-1 shards them over dp / ep)
    Flops attention; ///< RMSNorm, projections, rotary, attention core (with its sequence term)
    Flops mlp; ///< RMSNorm, dense SwiGLU or router + shared + routed experts
    double attentionCoreFlops = 0.0; ///< of attention.f, the core's (scores and values; no weights, not a GEMM)
    double recomputeFlops = 0.0; ///< forward FLOPs the backward reruns (selective: attention core; full: all F;
                                 ///< norm-up-projection: MLA's up-projection GEMMs)
    double activationBytes = 0.0; ///< kept from F until I (or B), after the recompute policy
    double weightGradKeptBytes = 0.0; ///< kept from I until W (the inputs of every weight GEMM and the
                                      ///< gradients of its outputs)
    double dispatchBytes = 0.0; ///< all-to-all bytes leaving the device in one dispatch (0 without EP)
    double combineBytes = 0.0; ///< in one combine; the backward sends the same two volumes back
    double dispatchInterNodeBytes = 0.0; ///< of dispatchBytes, those crossing nodes (given the placement)
    double combineInterNodeBytes = 0.0;
    /// The forward's weight GEMMs (Σ flops() = attention.f − attentionCoreFlops + mlp.f)
    std::vector<Gemm> gemms;
    /// Bytes the forward's memory-bound operations move through device memory (RMSNorms, residual adds, rotary,
    /// SwiGLU, the router's softmax and the routed tokens' permutes); the backward moves twice as many
    double attentionMemoryBytes = 0.0;
    double mlpMemoryBytes = 0.0;
    /// Of those, what the recompute policy reruns in the backward besides recomputeFlops (the norms, the MoE
    /// SwiGLUs under "norm-up-projection"; everything under "full")
    double recomputeMemoryBytes = 0.0;
    /// Bytes the attention core's backward moves outside its FLOP-bound kernel, besides the 2 × attentionMemoryBytes
    /// of the backward: flash-attention's preprocessing (D = rowsum(dO ∘ O) of FlashAttention-2, Dao 2023,
    /// Algorithm 2, with the log-sum-exp rescaled and the FP32 dQ accumulator cleared) and postprocessing (the FP32
    /// dQ accumulator read back, dQ written in the model's dtype); docs/model-library.md "Device efficiency per
    /// operation"
    double attentionBackwardMemoryBytes = 0.0;
    double tensorAllReduceBytes = 0.0; ///< tp > 1: bytes of each of the 2 all-reduces in F and 2 in B (T/cp × h)
    double contextKvBytes = 0.0; ///< cp > 1: bytes of one ring-attention step (one device's K and V block)
};

/// The embedding (on the first model stage) or the LM head with the final norm and the loss (last stage).
struct EdgeCost {
    double parameters = 0.0; ///< elements the stage holds (a tied head: the embedding's copy on the last
                             ///< stage, as Megatron-LM keeps it; Totals count it once)
    Flops flops;
    std::vector<Gemm> gemms; ///< the head's projection (none for the embedding)
    double memoryBytes = 0.0; ///< forward bytes of memory-bound work (the lookup; the final norm and softmax)
    double activationBytes = 0.0; ///< kept from F until I (the head: logits for the loss gradient)
    double weightGradKeptBytes = 0.0;
};

/// Where a layer's expert-parallel peers sit: how many of the ep − 1 peers are on this device's node. With
/// nodesSpanned 1 (the default) the whole group is on one node and nothing crosses nodes (peersInNode is then
/// not read); with nodesSpanned > 1, peersInNode must lie in [0, ep − 1].
struct EpPlacement {
    int peersInNode = 0; ///< of ep − 1
    int nodesSpanned = 1; ///< nodes the EP group spans
};

/// Bytes per element of a tensor quantized to `bytes`-byte elements as it is sent or stored: FP8 (1) carries one
/// FP32 scale per 1×128 tile besides (DeepSeek-V3 report §3.3.1, fine-grained quantization; DeepEP's
/// tests/test_internode.py counts an FP8 dispatch at the same 1 + 4/128 bytes per element), so 1.03125; wider
/// types are sent as they are.
double wireBytesPerElement(int bytes);

/// Cost of global layer `layer` (0-based) of a model check() accepts. Throws std::out_of_range for a layer
/// out of range, std::invalid_argument for a placement outside the rule of EpPlacement (read only
/// for an MoE layer with ep > 1).
LayerCost layerCost(const Transformer& m, int layer, Recompute recompute, const EpPlacement& placement = {});
/// The embedding: vocab × h parameters, no FLOPs (a lookup; its weight gradient is a scatter-add of the
/// output gradient, not a GEMM), nothing kept F→I, the output gradient T·h kept I→W.
EdgeCost embeddingCost(const Transformer& m);
/// The final RMSNorm, the LM head (its own vocab × h, or the embedding's copy when tied) and the loss. The
/// head is not recomputed under any policy (as Megatron-LM), so `recompute` does not change the result.
EdgeCost headCost(const Transformer& m, Recompute recompute);

/// Whole-model figures.
struct Totals {
    double parametersTotal = 0.0; ///< every parameter (embedding and head once each, or once when tied)
    double parametersActive = 0.0; ///< those one token uses
    double flopsPerTokenTraining = 0.0; ///< 3 × forward FLOPs per token incl. attention and LM head, excl.
                                        ///< the embedding lookup
};
Totals totals(const Transformer& m);

/// Checks the description; throws FormatError (base/errors.h) whose message names the field and the values
/// ("model.heads: 7 does not divide model.hidden 4096 (give model.head_dim)"; "model.moe.top_k: 9 exceeds
/// model.moe.experts 8"; "model.moe.experts: must not be negative, got -1"). Sizes only: the bounds on
/// products of sizes (2^53) are engine/project's.
void check(const Transformer& m);

} // namespace dps::model
