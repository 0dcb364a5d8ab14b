#include "transformercost.h"

#include "base/checked.h"
#include "base/errors.h"
#include "modelcost.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

// Formulas and their sources: docs/model-library.md, sections "Placement rule", "Devices and links", "Stage
// costs and the overlapped F&B slot" and "Training memory".

namespace dps {

namespace {

/// The expert-parallel group size the placement uses: model.moe.ep of an MoE transformer, else 1.
int epOf(const Project& project)
{
    const model::Transformer& t = project.model.transformer;
    return project.model.kind == ModelKind::Transformer && t.isMoe() ? std::max(1, t.moe.ep) : 1;
}

/// One link: latency (µs) and bandwidth (bytes/µs, 0 = unlimited).
struct Link {
    double latencyUs = 0.0;
    double bandwidthBytesPerUs = 0.0;
    const char* bandwidthField = "";

    double wireUs(double bytes) const { return bandwidthBytesPerUs > 0.0 ? bytes / bandwidthBytesPerUs : 0.0; }
};

/// Time of one all-to-all exchange (µs) of `bytes` leaving a device, `interBytes` of them to other nodes: the
/// intra-node part on the intra-node link and the inter-node part on the inter-node link, in parallel; each
/// part takes latency + bytes / bandwidth and the exchange ends with the slower (0 when nothing is sent).
double a2aUs(double bytes, double interBytes, const Link& intra, const Link& inter)
{
    const double intraBytes = std::max(0.0, bytes - interBytes);
    double us = 0.0;
    if (intraBytes > 0.0)
        us = std::max(us, intra.latencyUs + intra.wireUs(intraBytes));
    if (interBytes > 0.0)
        us = std::max(us, inter.latencyUs + inter.wireUs(interBytes));
    return us;
}

/// Builds a chain of chunks: consecutive compute pieces merge into one chunk (their FLOPs summed, turned into
/// µs once); a merged chunk carries the layer of its last piece that belongs to a layer (−1 if none).
class ChainBuilder {
public:
    explicit ChainBuilder(const ClusterDesc& cluster)
        : m_cluster(cluster)
    {
    }

    void compute(double flops, int layer)
    {
        if (m_pieces.empty() || m_pieces.back().lane != Chunk::Compute)
            m_pieces.push_back({ Chunk::Compute, 0.0, -1 });
        Piece& p = m_pieces.back();
        p.amount += flops;
        if (layer >= 0)
            p.layer = layer;
    }

    void comm(double us, int layer) { m_pieces.push_back({ Chunk::Comm, us, layer }); }

    /// The chunks in order: compute pieces in µs at the cluster's sustained rate.
    std::vector<Chunk> chunks() const
    {
        std::vector<Chunk> out;
        out.reserve(m_pieces.size());
        for (const Piece& p : m_pieces)
            out.push_back({ p.lane, p.lane == Chunk::Compute ? flopsToUs(p.amount, m_cluster) : p.amount, p.layer });
        return out;
    }

private:
    struct Piece {
        Chunk::Lane lane;
        double amount; ///< FLOPs (compute) or µs (communication)
        int layer;
    };
    const ClusterDesc& m_cluster;
    std::vector<Piece> m_pieces;
};

/// Σ of the chunks' µs, left to right (the sum the cost model's chains promise).
double chainSum(const std::vector<Chunk>& chain)
{
    double sum = 0.0;
    for (const Chunk& c : chain)
        sum += c.us;
    return sum;
}

/// Splits `total` (B, the backward chain's sum, µs) into I and W with I + W == total exactly, W within half a
/// unit in the last place of `total` of `w`: W is rounded to a multiple of that unit u, so I = total − W is a
/// multiple of u below total (exact), and the sum I + W, representable, is exact too. (Taking I = total − w alone
/// cannot always be completed to total: w may have bits finer than u.)
std::pair<double, double> splitBackward(double total, double w)
{
    if (!(total > 0.0) || !std::isfinite(total))
        return { std::max(0.0, total - w), w };
    const double unit = std::nextafter(total, INFINITY) - total;
    const double snapped = std::min(total, std::max(0.0, std::round(w / unit) * unit));
    return { total - snapped, snapped };
}

/// Throws FormatError when the compute time of `flops` exceeds 2^53 µs, naming the device's rate.
void checkComputeUs(
    double flops, const ClusterDesc& cluster, std::string_view what, std::string_view layersField, int layers)
{
    const double us = flopsToUs(flops, cluster);
    if (!(us <= kMaxCostUs))
        throw FormatError("cluster.device_flops: " + shown(cluster.deviceFlops) + " FLOP/s × cluster.efficiency "
            + shown(cluster.efficiency) + " is too slow: " + std::string(what) + " of " + std::string(layersField)
            + " (" + std::to_string(layers) + (layers == 1 ? " layer" : " layers") + ") takes " + shown(flops)
            + " FLOPs, " + shown(us) + " µs, more than " + kMaxCostText);
}

/// Throws FormatError when one all-to-all exchange takes more than 2^53 µs, naming the slower link's bandwidth.
void checkA2aUs(double bytes, double interBytes, const Link& intra, const Link& inter, std::string_view layersField)
{
    const double intraUs = intra.latencyUs + intra.wireUs(std::max(0.0, bytes - interBytes));
    const double interUs = inter.latencyUs + inter.wireUs(interBytes);
    const bool interSlower = interBytes > 0.0 && interUs >= intraUs;
    const Link& link = interSlower ? inter : intra;
    const double us = interSlower ? interUs : intraUs;
    if (!(us <= kMaxCostUs))
        throw FormatError(std::string(link.bandwidthField) + ": " + shown(link.bandwidthBytesPerUs)
            + " bytes/µs is too slow: an expert all-to-all of " + std::string(layersField) + " sends "
            + shown(interSlower ? interBytes : bytes - interBytes) + " bytes on this link, " + shown(us)
            + " µs, more than " + kMaxCostText);
}

/// Throws FormatError when a byte size of the stage exceeds 2^53, naming the stage's layer field and the
/// model sizes it grows with.
void checkBytes(double bytes, std::string_view what, std::string_view layersField, int layers, std::string_view sizes)
{
    if (!(bytes <= kMaxExactBytes))
        throw FormatError(std::string(layersField) + ": " + std::to_string(layers)
            + (layers == 1 ? " layer" : " layers") + " of " + std::string(sizes) + " hold " + shown(bytes) + " "
            + std::string(what) + ", more than " + kMaxBytesText);
}

} // namespace

model::Recompute recomputeOf(const Project& project, const Variant& variant)
{
    return variant.recompute.value_or(project.model.recompute);
}

int microbatchSizeOf(const Project& project, const Variant& variant)
{
    return variant.microbatchSize > 0 ? variant.microbatchSize : project.model.microbatchSize;
}

DevicePlacement placementOf(const Project& project, const Variant& variant)
{
    const int ep = epOf(project);
    const int dp = std::max(1, variant.dp);
    if (dp > 1 && dp % ep != 0)
        throw FormatError(detail::variantField(project, variant, "dp") + ": " + std::to_string(dp)
            + " is not a multiple of model.moe.ep " + std::to_string(ep)
            + " (an expert-parallel group is formed across the data-parallel replicas of one stage)");
    DevicePlacement placement;
    placement.replicas = std::max(dp, ep);
    // Every device must have an int index: ranks × D devices.
    checkedProduct({ { detail::variantField(project, variant, "ranks"), variant.ranks },
                       { dp >= ep ? detail::variantField(project, variant, "dp") : std::string("model.moe.ep"),
                           placement.replicas } },
        "devices", kIntRange);
    const int gpusPerNode = project.cluster.gpusPerNode;
    if (gpusPerNode <= 0) {
        // One node holds every device: no pipeline hop and no expert peer crosses nodes.
        placement.ep.peersInNode = ep - 1;
        placement.ep.nodesSpanned = 1;
        return placement;
    }
    placement.rankNode.resize(static_cast<std::size_t>(std::max(0, variant.ranks)));
    for (int r = 0; r < variant.ranks; ++r)
        placement.rankNode[static_cast<std::size_t>(r)]
            = static_cast<int>(static_cast<std::int64_t>(r) * placement.replicas / gpusPerNode);
    // The EP group of device 0 (ep consecutive devices from a multiple of ep): exact for every group when
    // gpusPerNode divides ep or ep divides gpusPerNode.
    placement.ep.peersInNode = std::min(ep, gpusPerNode) - 1;
    placement.ep.nodesSpanned = static_cast<int>((static_cast<std::int64_t>(ep) + gpusPerNode - 1) / gpusPerNode);
    return placement;
}

StageCost transformerStageCost(const Project& project, const Variant& variant, const DevicePlacement& placement,
    int firstLayer, int layers, bool firstStage, bool lastStage, std::string_view layersField)
{
    const ClusterDesc& cluster = project.cluster;
    const int microbatchSize = microbatchSizeOf(project, variant);
    const std::string mbField = variant.microbatchSize > 0 ? detail::variantField(project, variant, "microbatch_size")
                                                           : std::string("model.microbatch_size");
    const model::Transformer m = transformerOf(project.model, microbatchSize);
    const model::Recompute recompute = recomputeOf(project, variant);
    const int e = m.dtypeBytes;

    // Sizes first, as the block model checks them: one T×h tensor (a layer's input, the message between
    // stages) within 2^53 bytes, T within an int (the GEMMs' rows).
    const std::int64_t messageBytes
        = checkedProduct({ { "model.hidden", m.hidden }, { "model.seq_len", m.seqLen }, { mbField, microbatchSize },
                             { "", e,
                                 e == 2       ? "bytes per bf16 element"
                                     : e == 4 ? "bytes per fp32 element"
                                              : "bytes per element" } },
            "activation bytes (one T×h tensor: a layer's input, the message between stages)", kExactCount);
    checkedProduct({ { "model.seq_len", m.seqLen }, { mbField, microbatchSize } }, "tokens per microbatch", kIntRange);
    const std::string sizes = "model.hidden " + std::to_string(m.hidden) + ", model.seq_len " + std::to_string(m.seqLen)
        + " and " + mbField + " " + std::to_string(microbatchSize);

    const Link intra { cluster.latencyUs, cluster.bandwidthBytesPerUs, "cluster.bandwidth_bytes_per_us" };
    const Link inter { cluster.interNodeLatencyUs, cluster.interNodeBandwidthBytesPerUs,
        "cluster.inter_node_bandwidth_bytes_per_us" };

    StageCost cost;
    cost.activationBytes = 0.0;
    cost.weightGradKeptBytes = 0.0;
    ChainBuilder forward(cluster);
    ChainBuilder backward(cluster);
    double fFlops = 0.0, iFlops = 0.0, wFlops = 0.0;
    double parameters = 0.0, expertParameters = 0.0;
    bool communicates = false;

    const model::EdgeCost embedding = model::embeddingCost(m);
    const model::EdgeCost head = model::headCost(m, recompute);
    if (firstStage) {
        forward.compute(embedding.flops.f, -1);
        fFlops += embedding.flops.f;
        iFlops += embedding.flops.i;
        wFlops += embedding.flops.w;
        parameters += embedding.parameters;
        cost.activationBytes += embedding.activationBytes;
        cost.weightGradKeptBytes += embedding.weightGradKeptBytes;
    }
    std::vector<model::LayerCost> layerCosts;
    layerCosts.reserve(static_cast<std::size_t>(std::max(0, layers)));
    for (int k = 0; k < layers; ++k) {
        const int layer = firstLayer + k;
        const model::LayerCost lc = model::layerCost(m, layer, recompute, placement.ep);
        fFlops += lc.attention.f + lc.mlp.f;
        iFlops += lc.attention.i + lc.mlp.i + lc.recomputeFlops;
        wFlops += lc.attention.w + lc.mlp.w;
        parameters += lc.parameters;
        expertParameters += lc.expertParameters;
        cost.activationBytes += lc.activationBytes;
        cost.weightGradKeptBytes += lc.weightGradKeptBytes;
        cost.a2aBytes += lc.dispatchBytes + lc.combineBytes;
        if (lc.dispatchBytes > 0.0 || lc.combineBytes > 0.0) {
            communicates = true;
            checkA2aUs(lc.dispatchBytes, lc.dispatchInterNodeBytes, intra, inter, layersField);
            checkA2aUs(lc.combineBytes, lc.combineInterNodeBytes, intra, inter, layersField);
            forward.compute(lc.attention.f, layer);
            forward.comm(a2aUs(lc.dispatchBytes, lc.dispatchInterNodeBytes, intra, inter), layer);
            forward.compute(lc.mlp.f, layer);
            forward.comm(a2aUs(lc.combineBytes, lc.combineInterNodeBytes, intra, inter), layer);
        } else {
            forward.compute(lc.attention.f + lc.mlp.f, layer);
        }
        layerCosts.push_back(lc);
    }
    if (lastStage) {
        forward.compute(head.flops.f, -1);
        fFlops += head.flops.f;
        iFlops += head.flops.i;
        wFlops += head.flops.w;
        // A tied head on a stage that also holds the embedding is the same matrix: only its final norm is new.
        parameters += head.parameters - (firstStage && m.tiedEmbeddings ? embedding.parameters : 0.0);
        cost.activationBytes += head.activationBytes;
        cost.weightGradKeptBytes += head.weightGradKeptBytes;
        backward.compute(head.flops.i + head.flops.w, -1);
    }
    // The backward runs the layers in reverse: per MoE layer the combine's gradient comes back, the experts'
    // backward runs, the dispatch's gradient goes back, then the attention's backward. Both return exchanges
    // carry BF16 gradients, so both are sized at the combine's dtype (combineBytes). The recompute runs just
    // before the first backward chunk that needs it: selective (the attention core) before the attention's
    // backward, full (the whole layer) before the layer's first backward chunk.
    for (int k = layers - 1; k >= 0; --k) {
        const int layer = firstLayer + k;
        const model::LayerCost& lc = layerCosts[static_cast<std::size_t>(k)];
        if (lc.dispatchBytes > 0.0 || lc.combineBytes > 0.0) {
            const double gradUs = a2aUs(lc.combineBytes, lc.combineInterNodeBytes, intra, inter);
            const bool full = recompute == model::Recompute::Full;
            backward.comm(gradUs, layer);
            backward.compute(lc.mlp.i + lc.mlp.w + (full ? lc.recomputeFlops : 0.0), layer);
            backward.comm(gradUs, layer);
            backward.compute(lc.attention.i + lc.attention.w + (full ? 0.0 : lc.recomputeFlops), layer);
        } else {
            backward.compute(lc.attention.i + lc.attention.w + lc.mlp.i + lc.mlp.w + lc.recomputeFlops, layer);
        }
    }
    if (firstStage)
        backward.compute(embedding.flops.i + embedding.flops.w, -1);

    // Times: compute at the device's sustained rate; with communication the chains are the truth and F and
    // I + W are their sums exactly.
    checkComputeUs(fFlops, cluster, "F", layersField, layers);
    checkComputeUs(iFlops, cluster, "I (with its recompute)", layersField, layers);
    checkComputeUs(wFlops, cluster, "W", layersField, layers);
    cost.weightGradUs = flopsToUs(wFlops, cluster);
    if (communicates) {
        cost.forwardChain = forward.chunks();
        cost.backwardChain = backward.chunks();
        cost.forwardUs = chainSum(cost.forwardChain);
        std::tie(cost.inputGradUs, cost.weightGradUs) = splitBackward(chainSum(cost.backwardChain), cost.weightGradUs);
    } else {
        cost.forwardUs = flopsToUs(fFlops, cluster);
        cost.inputGradUs = flopsToUs(iFlops, cluster);
    }
    if (!(cost.forwardUs <= kMaxCostUs) || !(cost.backward() <= kMaxCostUs))
        throw FormatError(std::string(layersField) + ": F of " + shown(cost.forwardUs) + " µs or B of "
            + shown(cost.backward()) + " µs (compute and expert all-to-all) is more than " + kMaxCostText);

    // Memory of one device.
    cost.parameterCount = parameters;
    cost.parameterBytes = parameters * e;
    const int gradientBytes = project.training.present ? dtypeBytes(project.training.gradientDtype) : e;
    cost.gradientBytes = parameters * gradientBytes;
    cost.expertGradientBytes = expertParameters * gradientBytes;
    cost.messageBytes = static_cast<double>(messageBytes);
    checkBytes(cost.activationBytes, "activation bytes kept from F until I", layersField, layers, sizes);
    checkBytes(cost.weightGradKeptBytes, "activation bytes kept from I until W", layersField, layers, sizes);
    const std::string weightSizes = "model.hidden " + std::to_string(m.hidden) + ", model.ffn " + std::to_string(m.ffn)
        + (m.isMoe() ? ", model.moe.experts " + std::to_string(m.moe.experts) + " over model.moe.ep "
                    + std::to_string(m.moe.ep)
                     : std::string());
    checkBytes(cost.parameterBytes + cost.gradientBytes, "bytes of parameters and gradients", layersField, layers,
        weightSizes);
    if (project.training.present) {
        const TrainingDesc& t = project.training;
        const double perParameter
            = (t.masterWeights && project.model.dtype != DType::FP32 ? 4.0 : 0.0) + 2.0 * t.momentBytes;
        // ZeRO-1 shards the state over the replicas that hold the same parameters: dp for dense parameters,
        // dp / ep for routed experts (each expert lives on dp / ep devices); dp = 1 shards nothing.
        const int dp = std::max(1, variant.dp);
        const int ep = epOf(project);
        const double denseShards = t.zero >= 1 ? dp : 1.0;
        const double expertShards = t.zero >= 1 ? std::max(1, dp / ep) : 1.0;
        cost.optimizerBytes = perParameter * (parameters - expertParameters) / denseShards
            + perParameter * expertParameters / expertShards;
        if (!(cost.parameterBytes + cost.gradientBytes + *cost.optimizerBytes <= kMaxExactBytes))
            throw FormatError("training.moment_dtype: " + shown(perParameter)
                + " bytes of optimizer state per parameter (moments and training.master_weights) make "
                + shown(*cost.optimizerBytes) + " bytes for " + std::string(layersField) + ", with its "
                + shown(cost.parameterBytes + cost.gradientBytes) + " bytes of parameters and gradients more than "
                + kMaxBytesText);
    }
    // Inter-node pipeline hops carry the same message on the inter-node link.
    if (!placement.rankNode.empty() && inter.bandwidthBytesPerUs > 0.0
        && !(cost.messageBytes / inter.bandwidthBytesPerUs <= kMaxCostUs))
        throw FormatError(std::string(inter.bandwidthField) + ": " + shown(inter.bandwidthBytesPerUs)
            + " bytes/µs is too slow: a message of " + shown(cost.messageBytes) + " bytes takes "
            + shown(cost.messageBytes / inter.bandwidthBytesPerUs) + " µs, more than " + kMaxCostText);
    return cost;
}

} // namespace dps
