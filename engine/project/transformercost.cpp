#include "transformercost.h"

#include "base/checked.h"
#include "base/errors.h"
#include "dataparallel.h"
#include "modelcost.h"
#include "modelinfo.h"

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

using Pass = GemmPass;

/// The device's sustained rates: the GEMMs' (the FP8 peak with training.gemm_dtype "fp8", DeepSeek-V3 report
/// §3.3; a device without an FP8 peak, cluster.device_flops_fp8 0, runs them at device_flops) and everything else's
/// (the model dtype's peak: the attention core stays in BF16), both × efficiency.
class Rates {
public:
    explicit Rates(const Project& project)
        : m_other(project.cluster)
        , m_gemm(project.cluster)
        , m_fp8(fp8Gemms(project))
        , m_kernels(project.cluster.kernels)
        , m_elementBytes(dtypeBytes(project.model.dtype))
    {
        m_gemm.deviceFlops = gemmPeakFlops(project);
    }

    bool fp8() const { return m_fp8; }
    /// Whether the cluster times each operation by its kind (cluster.kernels), not every FLOP at one rate.
    bool perOperation() const { return m_kernels.has_value(); }

    /// µs of one pass of a forward GEMM (gemmPassUs at the rates its precision runs at).
    double gemmUs(const model::Gemm& g, Pass pass) const
    {
        const bool fp8 = m_fp8 && g.lowPrecision;
        const double fp8Efficiency = pass == Pass::W && m_kernels->wgradEfficiencyFp8 > 0.0
            ? m_kernels->wgradEfficiencyFp8
            : m_kernels->gemmEfficiencyFp8;
        GemmRates r;
        r.flopsPerSecond = fp8 ? m_gemm.deviceFlops * fp8Efficiency : m_other.deviceFlops * m_kernels->gemmEfficiency;
        r.smCount = m_kernels->smCount;
        r.memoryBytesPerUs = m_kernels->hbmBandwidthBytesPerUs * m_kernels->memoryEfficiency;
        r.operandBytes = fp8 ? 1.0 : m_elementBytes;
        r.outputBytes = m_elementBytes;
        return gemmPassUs(g, pass, r);
    }
    /// µs of the FP8 quantization around one pass of `g` (0 unless it runs in FP8), memory-bound: F quantizes its
    /// input, I its output gradient (each element read at the model's dtype, written in FP8 with its 1×128
    /// tile's scale), and W reads both FP8 copies and writes them transposed into 128×1 tiles, as the Wgrad GEMM
    /// needs them (DeepSeek-V3 report §3.5.2: quantization and the transposed re-quantization are passes of
    /// their own through device memory; §3.3.1 the tiles).
    double quantizeUs(const model::Gemm& g, Pass pass) const
    {
        if (!m_fp8 || !g.lowPrecision)
            return 0.0;
        const double fp8 = model::wireBytesPerElement(1);
        switch (pass) {
        case Pass::F:
            return memoryUs(g.inputRowsQuantized() * g.inner * (m_elementBytes + fp8));
        case Pass::I:
            return memoryUs(g.gradRowsQuantized() * g.cols * (m_elementBytes + fp8));
        case Pass::W:
            return memoryUs(2.0 * fp8 * g.rows * (g.inner + g.cols));
        }
        return 0.0;
    }
    /// µs of the attention core's `flops` (BF16, flash-attention's forward or backward share of the peak).
    double coreUs(double flops, bool backward) const
    {
        const double share = backward ? m_kernels->attentionBackwardEfficiency : m_kernels->attentionForwardEfficiency;
        return flops / (m_other.deviceFlops * share) * 1e6;
    }
    /// µs of memory-bound work moving `bytes` through device memory.
    double memoryUs(double bytes) const
    {
        return bytes / (m_kernels->hbmBandwidthBytesPerUs * m_kernels->memoryEfficiency);
    }
    /// µs of `flops`, `coreFlops` of them outside the GEMMs (one conversion when both rates are the same).
    double us(double flops, double coreFlops) const
    {
        return m_fp8 ? flopsToUs(flops - coreFlops, m_gemm) + flopsToUs(coreFlops, m_other) : flopsToUs(flops, m_other);
    }
    const ClusterDesc& cluster() const { return m_other; }

private:
    ClusterDesc m_other;
    ClusterDesc m_gemm;
    bool m_fp8;
    std::optional<KernelModel> m_kernels;
    double m_elementBytes;
};

/// Builds a chain of chunks: consecutive compute pieces merge into one chunk (their FLOPs summed, turned into
/// µs once, plus the µs of collectives that hold the compute stream); a merged chunk carries the layer of its
/// last piece that belongs to a layer (−1 if none).
class ChainBuilder {
public:
    explicit ChainBuilder(const Rates& rates)
        : m_rates(rates)
    {
    }

    /// `flops` of compute, `coreFlops` of them outside the GEMMs; with per-operation rates, `us` instead.
    void compute(double flops, int layer, double coreFlops = 0.0, double us = 0.0)
    {
        Piece& p = computePiece(layer);
        if (m_rates.perOperation()) {
            p.us += us;
            return;
        }
        p.amount += flops;
        p.core += coreFlops;
    }

    /// µs on the compute stream that are not FLOPs (a tensor-parallel all-reduce, the exposed part of a ring).
    void serial(double us, int layer)
    {
        if (us > 0.0)
            computePiece(layer).us += us;
    }

    void comm(double us, int layer) { m_pieces.push_back({ Chunk::Comm, us, 0.0, 0.0, layer }); }

    /// The chunks in order: compute pieces in µs at the device's rates.
    std::vector<Chunk> chunks() const
    {
        std::vector<Chunk> out;
        out.reserve(m_pieces.size());
        for (const Piece& p : m_pieces)
            out.push_back(
                { p.lane, p.lane == Chunk::Compute ? m_rates.us(p.amount, p.core) + p.us : p.amount, p.layer });
        return out;
    }

private:
    struct Piece {
        Chunk::Lane lane;
        double amount; ///< FLOPs (compute) or µs (communication)
        double core; ///< of the FLOPs, those outside the GEMMs
        double us; ///< compute: µs besides the FLOPs
        int layer;
    };

    Piece& computePiece(int layer)
    {
        if (m_pieces.empty() || m_pieces.back().lane != Chunk::Compute)
            m_pieces.push_back({ Chunk::Compute, 0.0, 0.0, 0.0, -1 });
        Piece& p = m_pieces.back();
        if (layer >= 0)
            p.layer = layer;
        return p;
    }

    const Rates& m_rates;
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

double gemmPassUs(const model::Gemm& g, GemmPass pass, const GemmRates& rates)
{
    constexpr double kTile = 128.0;
    const double perGroup = g.rows / g.groups;
    double outRows = perGroup, outCols = g.cols, inner = g.inner;
    if (pass == GemmPass::I) {
        outCols = g.inner;
        inner = g.cols;
    } else if (pass == GemmPass::W) {
        outRows = g.inner;
        inner = perGroup;
    }
    const double tiles = g.groups * std::ceil(outRows / kTile) * std::ceil(outCols / kTile);
    const double sms = std::max(1, rates.smCount);
    const double waveEfficiency = tiles / (std::ceil(tiles / sms) * sms);
    const double computeUs = g.flops() / (rates.flopsPerSecond * waveEfficiency) * 1e6;
    const double bytes
        = g.groups * ((outRows * inner + inner * outCols) * rates.operandBytes + outRows * outCols * rates.outputBytes);
    return std::max(computeUs, bytes / rates.memoryBytesPerUs);
}

model::Recompute recomputeOf(const Project& project, const Variant& variant)
{
    return variant.recompute.value_or(project.model.recompute);
}

int microbatchSizeOf(const Project& project, const Variant& variant)
{
    return variant.microbatchSize > 0 ? variant.microbatchSize : project.model.microbatchSize;
}

model::Transformer transformerFor(const Project& project, const Variant& variant)
{
    model::Transformer t = transformerOf(project.model, microbatchSizeOf(project, variant));
    t.tp = std::max(1, variant.tp);
    t.cp = std::max(1, variant.cp);
    t.sequenceParallel = variant.sequenceParallel && t.tp > 1;
    t.activationCacheBytes = project.training.present ? project.training.activationCacheBytes : 0;
    t.gemmBytes = project.training.present ? project.training.gemmBytes : 0;
    return t;
}

DevicePlacement placementOf(const Project& project, const Variant& variant)
{
    const int ep = epOf(project);
    const int tp = std::max(1, variant.tp);
    const int shards = std::max(1, variant.dp) * std::max(1, variant.cp); // dp × cp: EP is formed across them
    if (shards > 1 && shards % ep != 0)
        throw FormatError(detail::variantField(project, variant, "dp") + ": " + std::to_string(variant.dp)
            + (variant.cp > 1 ? " × cp " + std::to_string(variant.cp) : std::string()) + " is not a multiple of "
            + "model.moe.ep " + std::to_string(ep)
            + " (an expert-parallel group is formed across the data-parallel replicas of one stage)");
    DevicePlacement placement;
    placement.replicas = std::max(shards, ep);
    placement.tp = tp;
    // Every device must have an int index: ranks × tp × D devices.
    checkedProduct({ { detail::variantField(project, variant, "ranks"), variant.ranks },
                       { detail::variantField(project, variant, "tp"), tp },
                       { shards >= ep ? detail::variantField(project, variant, "dp") : std::string("model.moe.ep"),
                           placement.replicas } },
        "devices", kIntRange);
    const int gpusPerNode = project.cluster.gpusPerNode;
    placement.tpInterNode = gpusPerNode > 0 && tp > gpusPerNode;
    if (gpusPerNode <= 0) {
        // One node holds every device: no pipeline hop and no expert peer crosses nodes.
        placement.ep.peersInNode = ep - 1;
        placement.ep.nodesSpanned = 1;
        return placement;
    }
    const std::int64_t perRank = static_cast<std::int64_t>(placement.replicas) * tp;
    placement.rankNode.resize(static_cast<std::size_t>(std::max(0, variant.ranks)));
    for (int r = 0; r < variant.ranks; ++r)
        placement.rankNode[static_cast<std::size_t>(r)]
            = static_cast<int>(static_cast<std::int64_t>(r) * perRank / gpusPerNode);
    // The EP group of device 0: ep replicas tp devices apart, from a multiple of ep × tp; exact for every group
    // when gpusPerNode divides ep × tp or ep × tp divides gpusPerNode.
    const std::int64_t span = static_cast<std::int64_t>(ep) * tp;
    placement.ep.peersInNode = static_cast<int>(std::min<std::int64_t>(span, gpusPerNode) / tp) - 1;
    placement.ep.peersInNode = std::max(0, placement.ep.peersInNode);
    placement.ep.nodesSpanned = static_cast<int>((span + gpusPerNode - 1) / gpusPerNode);
    return placement;
}

namespace {

/// The variant's layers recomputed under recompute "full" on a stage (recompute_layers; 0 = every layer).
int recomputeLayersOf(const Project& project, const Variant& variant)
{
    return variant.recomputeLayers.value_or(project.model.recomputeLayers);
}

/// The links a stage's collectives use (placement rule of transformercost.h): the tensor ranks are the devices
/// of one replica (intra-node while tp ≤ GPUs per node), the context ranks tp devices apart, the data-parallel
/// (ZeRO-3) group of dp × cp replicas spread over replicas × tp devices.
struct StageLinks {
    Link intra;
    Link inter;
    /// The inter-node part of an expert dispatch (and of the combine's backward) and of a combine (and of the
    /// dispatch's backward): the inter-node link at cluster.kernels' measured all-to-all rate where it gives one
    Link dispatchInter;
    Link combineInter;
    Link tensor;
    Link context;
    Link shards;
};

StageLinks stageLinks(const Project& project, const Variant& variant, const DevicePlacement& placement)
{
    const ClusterDesc& c = project.cluster;
    StageLinks l;
    l.intra = { c.latencyUs, c.bandwidthBytesPerUs, "cluster.bandwidth_bytes_per_us" };
    l.inter = { c.interNodeLatencyUs, c.interNodeBandwidthBytesPerUs, "cluster.inter_node_bandwidth_bytes_per_us" };
    l.dispatchInter = l.inter;
    l.combineInter = l.inter;
    if (c.kernels && c.kernels->dispatchInterNodeBytesPerUs > 0.0)
        l.dispatchInter = { c.interNodeLatencyUs, c.kernels->dispatchInterNodeBytesPerUs,
            "cluster.kernels.dispatch_inter_node_bandwidth_bytes_per_us" };
    if (c.kernels && c.kernels->combineInterNodeBytesPerUs > 0.0)
        l.combineInter = { c.interNodeLatencyUs, c.kernels->combineInterNodeBytesPerUs,
            "cluster.kernels.combine_inter_node_bandwidth_bytes_per_us" };
    const auto within = [&](std::int64_t devices) { return c.gpusPerNode <= 0 || devices <= c.gpusPerNode; };
    const std::int64_t tp = placement.tp;
    l.tensor = within(tp) ? l.intra : l.inter;
    l.context = within(tp * std::max(1, variant.cp)) ? l.intra : l.inter;
    l.shards = within(tp * std::max(1, variant.dp) * std::max(1, variant.cp)) ? l.intra : l.inter;
    return l;
}

/// A ring all-gather (or reduce-scatter) of `bytes` over `participants`: half a ring all-reduce
/// ((n − 1)/n × bytes ÷ bandwidth + (n − 1) × latency; dataparallel.h).
double ringAllGatherUs(double bytes, int participants, const Link& link)
{
    return ringAllReduceUs(bytes, participants, link.latencyUs, link.bandwidthBytesPerUs) / 2.0;
}

/// One layer's compute µs at per-operation rates (zeros with the flat rate): F of its attention and MLP blocks,
/// I and W of each, and what its recompute reruns.
struct LayerUs {
    double attentionF = 0.0, mlpF = 0.0;
    double attentionI = 0.0, mlpI = 0.0;
    double attentionW = 0.0, mlpW = 0.0;
    double recompute = 0.0;
};

/// An edge's (embedding's or head's) µs at per-operation rates (zeros with the flat rate).
struct EdgeUs {
    double f = 0.0, i = 0.0, w = 0.0;
};

/// What a stage's layers add up to while the chains are built.
struct StageBuild {
    double fFlops = 0.0, iFlops = 0.0, wFlops = 0.0;
    double fCore = 0.0, iCore = 0.0; ///< of fFlops and iFlops, the attention core's (not at the GEMM rate)
    double fSerialUs = 0.0, iSerialUs = 0.0; ///< tensor- and context-parallel µs on the compute stream
    double fUs = 0.0, iUs = 0.0, wUs = 0.0; ///< with per-operation rates: the compute's µs (I with its recompute)
    std::vector<LayerUs> layerUs; ///< per layer of the stage, from the forward pass for the backward
    EdgeUs embeddingUs, headUs; ///< the edges', from the forward pass for the backward

    /// µs of the F, I (with recompute) and W compute, at whichever rates the cluster has.
    double forwardComputeUs(const Rates& r) const { return r.perOperation() ? fUs : r.us(fFlops, fCore); }
    double inputComputeUs(const Rates& r) const { return r.perOperation() ? iUs : r.us(iFlops, iCore); }
    double weightComputeUs(const Rates& r) const { return r.perOperation() ? wUs : r.us(wFlops, 0.0); }
    double parameters = 0.0, expertParameters = 0.0, largestLayerParameters = 0.0;
    bool communicates = false;
};

/// The tensor- and context-parallel µs one layer adds to F and to B (I) on the compute stream: two T×h
/// all-reduces each way with tp > 1 (and two more in B when the layer is rerun in full), and the part of the
/// ring attention's cp − 1 steps not hidden behind the attention core (F: K and V once; B: K, V and their
/// gradients, twice the bytes against twice the core; once more in B when the recompute reruns the core).
std::pair<double, double> parallelLayerUs(const model::LayerCost& lc, model::Recompute recompute,
    const model::Transformer& m, const StageLinks& links, const Rates& rates)
{
    const double allReduce
        = ringAllReduceUs(lc.tensorAllReduceBytes, m.tp, links.tensor.latencyUs, links.tensor.bandwidthBytesPerUs);
    double f = 2.0 * allReduce;
    double b = 2.0 * allReduce + (recompute == model::Recompute::Full ? 2.0 * allReduce : 0.0);
    if (m.cp > 1) {
        const double ring = (m.cp - 1.0) * (links.context.latencyUs + links.context.wireUs(lc.contextKvBytes));
        const double core = rates.perOperation() ? rates.coreUs(lc.attentionCoreFlops, false)
                                                 : rates.us(lc.attentionCoreFlops, lc.attentionCoreFlops);
        const double exposed = std::max(0.0, ring - core);
        f += exposed;
        b += std::max(0.0, 2.0 * ring - 2.0 * core)
            + (recompute == model::Recompute::Selective || recompute == model::Recompute::Full ? exposed : 0.0);
    }
    return { f, b };
}

} // namespace

namespace {

/// What every step of a stage's cost reads.
struct StageInputs {
    const model::Transformer& m;
    model::Recompute recompute;
    int recomputeLayers; ///< recompute "full" on the first this many layers of the stage only; 0 = every layer
    const DevicePlacement& placement;
    const StageLinks& links;
    const Rates& rates;
    std::string_view layersField;

    /// The recompute of the stage's k-th layer (Megatron-LM's block method: the first recompute_layers).
    model::Recompute layerRecompute(int k) const
    {
        return recompute == model::Recompute::Full && recomputeLayers > 0 && k >= recomputeLayers
            ? model::Recompute::None
            : recompute;
    }
};

/// FLOPs outside the GEMMs that one layer's I reruns or runs: the core's backward and its rerun.
double backwardCoreFlops(const model::LayerCost& lc, model::Recompute recompute)
{
    const bool rerun = recompute == model::Recompute::Selective || recompute == model::Recompute::Full;
    return 2.0 * lc.attentionCoreFlops + (rerun ? lc.attentionCoreFlops : 0.0);
}

LayerUs layerUs(const model::LayerCost& lc, model::Recompute recompute, const Rates& rates)
{
    LayerUs u;
    if (!rates.perOperation())
        return u;
    for (const model::Gemm& g : lc.gemms) {
        (g.attention ? u.attentionF : u.mlpF) += rates.gemmUs(g, Pass::F) + rates.quantizeUs(g, Pass::F);
        (g.attention ? u.attentionI : u.mlpI) += rates.gemmUs(g, Pass::I) + rates.quantizeUs(g, Pass::I);
        (g.attention ? u.attentionW : u.mlpW) += rates.gemmUs(g, Pass::W) + rates.quantizeUs(g, Pass::W);
    }
    const double coreF = rates.coreUs(lc.attentionCoreFlops, false);
    u.attentionF += coreF + rates.memoryUs(lc.attentionMemoryBytes);
    u.mlpF += rates.memoryUs(lc.mlpMemoryBytes);
    // The backward reads what the forward read and writes the gradients: twice its memory traffic; the core's
    // backward adds flash-attention's pre- and postprocessing.
    u.attentionI += rates.coreUs(2.0 * lc.attentionCoreFlops, true)
        + rates.memoryUs(2.0 * lc.attentionMemoryBytes + lc.attentionBackwardMemoryBytes);
    u.mlpI += rates.memoryUs(2.0 * lc.mlpMemoryBytes);
    switch (recompute) {
    case model::Recompute::None:
        break;
    case model::Recompute::Selective:
        u.recompute = coreF;
        break;
    case model::Recompute::Full:
        u.recompute = u.attentionF + u.mlpF;
        break;
    case model::Recompute::NormUpProjection:
        for (const model::Gemm& g : lc.gemms)
            if (g.upProjection)
                u.recompute += rates.gemmUs(g, Pass::F);
        u.recompute += rates.memoryUs(lc.recomputeMemoryBytes);
        break;
    }
    return u;
}

/// An edge's µs at per-operation rates: its GEMMs' passes and its memory-bound work (twice F's in I).
EdgeUs edgeUs(const model::EdgeCost& edge, const Rates& rates)
{
    EdgeUs u;
    if (!rates.perOperation())
        return u;
    u.f = rates.memoryUs(edge.memoryBytes);
    u.i = rates.memoryUs(2.0 * edge.memoryBytes);
    for (const model::Gemm& g : edge.gemms) {
        u.f += rates.gemmUs(g, Pass::F);
        u.i += rates.gemmUs(g, Pass::I);
        u.w += rates.gemmUs(g, Pass::W);
    }
    return u;
}

/// Adds an edge's FLOPs and per-operation µs to the stage's sums.
void addEdge(const model::EdgeCost& edge, const EdgeUs& u, StageBuild& b)
{
    b.fFlops += edge.flops.f;
    b.iFlops += edge.flops.i;
    b.wFlops += edge.flops.w;
    b.fUs += u.f;
    b.iUs += u.i;
    b.wUs += u.w;
}

/// The forward chain (embedding, layers with their all-to-alls and tensor/context collectives, head) and the
/// stage's FLOPs, parameters and kept activations; returns each layer's cost for the backward.
std::vector<model::LayerCost> buildForward(const StageInputs& in, int firstLayer, int layers, bool firstStage,
    bool lastStage, StageCost& cost, ChainBuilder& forward, StageBuild& b)
{
    const model::EdgeCost embedding = model::embeddingCost(in.m);
    if (firstStage) {
        b.embeddingUs = edgeUs(embedding, in.rates);
        forward.compute(embedding.flops.f, -1, 0.0, b.embeddingUs.f);
        addEdge(embedding, b.embeddingUs, b);
        b.parameters += embedding.parameters;
        cost.activationBytes += embedding.activationBytes;
        cost.weightGradKeptBytes += embedding.weightGradKeptBytes;
    }
    std::vector<model::LayerCost> layerCosts;
    layerCosts.reserve(static_cast<std::size_t>(std::max(0, layers)));
    b.layerUs.reserve(layerCosts.capacity());
    for (int k = 0; k < layers; ++k) {
        const int layer = firstLayer + k;
        const model::Recompute recompute = in.layerRecompute(k);
        const model::LayerCost lc = model::layerCost(in.m, layer, recompute, in.placement.ep);
        const double parallelFUs = parallelLayerUs(lc, recompute, in.m, in.links, in.rates).first;
        const LayerUs u = b.layerUs.emplace_back(layerUs(lc, recompute, in.rates));
        b.fUs += u.attentionF + u.mlpF;
        b.iUs += u.attentionI + u.mlpI + u.recompute;
        b.wUs += u.attentionW + u.mlpW;
        b.fFlops += lc.attention.f + lc.mlp.f;
        b.iFlops += lc.attention.i + lc.mlp.i + lc.recomputeFlops;
        b.wFlops += lc.attention.w + lc.mlp.w;
        b.fCore += lc.attentionCoreFlops;
        b.iCore += backwardCoreFlops(lc, recompute);
        b.fSerialUs += parallelFUs;
        b.parameters += lc.parameters;
        b.expertParameters += lc.expertParameters;
        b.largestLayerParameters = std::max(b.largestLayerParameters, lc.parameters);
        cost.activationBytes += lc.activationBytes;
        cost.weightGradKeptBytes += lc.weightGradKeptBytes;
        cost.a2aBytes += lc.dispatchBytes + lc.combineBytes;
        if (lc.dispatchBytes > 0.0 || lc.combineBytes > 0.0) {
            b.communicates = true;
            const StageLinks& l = in.links;
            checkA2aUs(lc.dispatchBytes, lc.dispatchInterNodeBytes, l.intra, l.dispatchInter, in.layersField);
            checkA2aUs(lc.combineBytes, lc.combineInterNodeBytes, l.intra, l.combineInter, in.layersField);
            forward.compute(lc.attention.f, layer, lc.attentionCoreFlops, u.attentionF);
            forward.serial(parallelFUs, layer);
            forward.comm(a2aUs(lc.dispatchBytes, lc.dispatchInterNodeBytes, l.intra, l.dispatchInter), layer);
            forward.compute(lc.mlp.f, layer, 0.0, u.mlpF);
            forward.comm(a2aUs(lc.combineBytes, lc.combineInterNodeBytes, l.intra, l.combineInter), layer);
        } else {
            forward.compute(lc.attention.f + lc.mlp.f, layer, lc.attentionCoreFlops, u.attentionF + u.mlpF);
            forward.serial(parallelFUs, layer);
        }
        layerCosts.push_back(lc);
    }
    if (lastStage) {
        const model::EdgeCost head = model::headCost(in.m, in.recompute);
        b.headUs = edgeUs(head, in.rates);
        forward.compute(head.flops.f, -1, 0.0, b.headUs.f);
        addEdge(head, b.headUs, b);
        // A tied head on a stage that also holds the embedding is the same matrix: only its final norm is new.
        b.parameters += head.parameters - (firstStage && in.m.tiedEmbeddings ? embedding.parameters : 0.0);
        cost.activationBytes += head.activationBytes;
        cost.weightGradKeptBytes += head.weightGradKeptBytes;
    }
    return layerCosts;
}

/// The backward chain: the head's backward, the layers in reverse, the embedding's. Per MoE layer the combine's
/// gradient goes to the experts, the experts' backward runs, the dispatch's gradient comes back, then the
/// attention's backward. The combine's gradient feeds the experts' down-projection Dgrad and travels at the
/// dispatch's dtype (dispatchBytes: DeepSeek-V3 report §3.3.3 quantizes the activation gradient sent to the MoE
/// down-projections to FP8, as the dispatch); the dispatch's gradient is summed back into the tokens like the
/// forward combine and travels at the combine's (combineBytes: the report keeps the combine in BF16 both ways).
/// The recompute runs just before the first backward chunk that needs it: selective and
/// norm-up-projection before the attention's backward, full (the whole layer) before the layer's first chunk.
void buildBackward(const StageInputs& in, int firstLayer, const std::vector<model::LayerCost>& layerCosts,
    bool firstStage, bool lastStage, ChainBuilder& backward, StageBuild& b)
{
    if (lastStage) {
        const model::EdgeCost head = model::headCost(in.m, in.recompute);
        backward.compute(head.flops.i + head.flops.w, -1, 0.0, b.headUs.i + b.headUs.w);
    }
    for (int k = static_cast<int>(layerCosts.size()) - 1; k >= 0; --k) {
        const int layer = firstLayer + k;
        const model::Recompute recompute = in.layerRecompute(k);
        const model::LayerCost& lc = layerCosts[static_cast<std::size_t>(k)];
        const double parallelBUs = parallelLayerUs(lc, recompute, in.m, in.links, in.rates).second;
        const double core = backwardCoreFlops(lc, recompute);
        const LayerUs& u = b.layerUs[static_cast<std::size_t>(k)];
        b.iSerialUs += parallelBUs;
        if (lc.dispatchBytes > 0.0 || lc.combineBytes > 0.0) {
            const bool full = recompute == model::Recompute::Full;
            backward.comm(
                a2aUs(lc.dispatchBytes, lc.dispatchInterNodeBytes, in.links.intra, in.links.dispatchInter), layer);
            backward.compute(lc.mlp.i + lc.mlp.w + (full ? lc.recomputeFlops : 0.0), layer,
                full ? lc.attentionCoreFlops : 0.0, u.mlpI + u.mlpW + (full ? u.recompute : 0.0));
            backward.comm(
                a2aUs(lc.combineBytes, lc.combineInterNodeBytes, in.links.intra, in.links.combineInter), layer);
            backward.compute(lc.attention.i + lc.attention.w + (full ? 0.0 : lc.recomputeFlops), layer,
                full ? core - lc.attentionCoreFlops : core, u.attentionI + u.attentionW + (full ? 0.0 : u.recompute));
            backward.serial(parallelBUs, layer);
        } else {
            backward.compute(lc.attention.i + lc.attention.w + lc.mlp.i + lc.mlp.w + lc.recomputeFlops, layer, core,
                u.attentionI + u.attentionW + u.mlpI + u.mlpW + u.recompute);
            backward.serial(parallelBUs, layer);
        }
    }
    if (firstStage) {
        const model::EdgeCost embedding = model::embeddingCost(in.m);
        backward.compute(embedding.flops.i + embedding.flops.w, -1, 0.0, b.embeddingUs.i + b.embeddingUs.w);
    }
}

/// The dense and expert parameters' shard counts under ZeRO: dp × cp replicas hold the same dense parameters,
/// dp × cp ÷ ep the same routed experts.
std::pair<double, double> zeroShards(const Project& project, const Variant& variant)
{
    const int shards = std::max(1, variant.dp) * std::max(1, variant.cp);
    return { static_cast<double>(shards), static_cast<double>(std::max(1, shards / epOf(project))) };
}

/// ZeRO-3 (FSDP): the stage's parameters are all-gathered over their shards before F and again before B, on the
/// shards' link; what the stage's compute does not hide (prefetch of the next layer's parameters while this one
/// runs) is added to F and to B. The gradients' reduce-scatter is the step end's (dataparallel.h).
void addShardGathers(const Project& project, const Variant& variant, const StageLinks& links, const Rates& rates,
    int lastLayer, ChainBuilder& forward, ChainBuilder& backward, StageBuild& b)
{
    if (!project.training.present || project.training.zero < 3)
        return;
    const auto [dense, expert] = zeroShards(project, variant);
    const double e = dtypeBytes(project.model.dtype);
    const double gatherUs
        = ringAllGatherUs((b.parameters - b.expertParameters) * e, static_cast<int>(dense), links.shards)
        + ringAllGatherUs(b.expertParameters * e, static_cast<int>(expert), links.shards);
    const double fExposed = std::max(0.0, gatherUs - b.forwardComputeUs(rates));
    const double bExposed = std::max(0.0, gatherUs - b.inputComputeUs(rates) - b.weightComputeUs(rates));
    forward.serial(fExposed, lastLayer);
    backward.serial(bExposed, -1);
    b.fSerialUs += fExposed;
    b.iSerialUs += bExposed;
}

/// F, I and W of the stage: compute at the device's rates plus the collectives on the compute stream; with
/// expert all-to-alls the chains are the truth and F and I + W are their sums exactly.
void stageTimes(const ClusterDesc& cluster, const Rates& rates, const StageBuild& b, const ChainBuilder& forward,
    const ChainBuilder& backward, std::string_view layersField, int layers, StageCost& cost)
{
    checkComputeUs(b.fFlops, cluster, "F", layersField, layers);
    checkComputeUs(b.iFlops, cluster, "I (with its recompute)", layersField, layers);
    checkComputeUs(b.wFlops, cluster, "W", layersField, layers);
    cost.weightGradUs = b.weightComputeUs(rates);
    if (b.communicates) {
        cost.forwardChain = forward.chunks();
        cost.backwardChain = backward.chunks();
        cost.forwardUs = chainSum(cost.forwardChain);
        std::tie(cost.inputGradUs, cost.weightGradUs) = splitBackward(chainSum(cost.backwardChain), cost.weightGradUs);
    } else {
        cost.forwardUs = b.forwardComputeUs(rates) + b.fSerialUs;
        cost.inputGradUs = b.inputComputeUs(rates) + b.iSerialUs;
    }
    if (!(cost.forwardUs <= kMaxCostUs) || !(cost.backward() <= kMaxCostUs))
        throw FormatError(std::string(layersField) + ": F of " + shown(cost.forwardUs) + " µs or B of "
            + shown(cost.backward()) + " µs (compute and expert all-to-all) is more than " + kMaxCostText);
}

/// Memory of one device: parameters (ZeRO-3: their shard and one gathered layer), gradients (ZeRO-2 and 3:
/// their shard), optimizer state (ZeRO-1 and up: its shard; Rajbhandari et al. 2020 §5).
void stageMemory(const Project& project, const Variant& variant, const model::Transformer& m, const StageBuild& b,
    std::string_view layersField, int layers, const std::string& sizes, StageCost& cost)
{
    const int e = m.dtypeBytes;
    const TrainingDesc& t = project.training;
    const int zero = t.present ? t.zero : 0;
    const auto [denseShards, expertShards] = zeroShards(project, variant);
    const double dense = b.parameters - b.expertParameters;
    const double shard = dense / denseShards + b.expertParameters / expertShards;
    cost.parameterCount = b.parameters;
    cost.parameterBytes = (zero >= 3 ? shard + b.largestLayerParameters : b.parameters) * e;
    const int gradientBytes = t.present ? dtypeBytes(t.gradientDtype) : e;
    cost.gradientBytes = (zero >= 2 ? shard : b.parameters) * gradientBytes;
    cost.expertGradientBytes = (zero >= 2 ? b.expertParameters / expertShards : b.expertParameters) * gradientBytes;
    checkBytes(cost.activationBytes, "activation bytes kept from F until I", layersField, layers, sizes);
    checkBytes(cost.weightGradKeptBytes, "activation bytes kept from I until W", layersField, layers, sizes);
    const std::string weightSizes = "model.hidden " + std::to_string(m.hidden) + ", model.ffn " + std::to_string(m.ffn)
        + (m.isMoe() ? ", model.moe.experts " + std::to_string(m.moe.experts) + " over model.moe.ep "
                    + std::to_string(m.moe.ep)
                     : std::string());
    checkBytes(cost.parameterBytes + cost.gradientBytes, "bytes of parameters and gradients", layersField, layers,
        weightSizes);
    if (!t.present)
        return;
    const double perParameter
        = (t.masterWeights && project.model.dtype != DType::FP32 ? 4.0 : 0.0) + 2.0 * t.momentBytes;
    const double denseState = zero >= 1 ? denseShards : 1.0;
    const double expertState = zero >= 1 ? expertShards : 1.0;
    cost.optimizerBytes = perParameter * dense / denseState + perParameter * b.expertParameters / expertState;
    if (!(cost.parameterBytes + cost.gradientBytes + *cost.optimizerBytes <= kMaxExactBytes))
        throw FormatError("training.moment_dtype: " + shown(perParameter)
            + " bytes of optimizer state per parameter (moments and training.master_weights) make "
            + shown(*cost.optimizerBytes) + " bytes for " + std::string(layersField) + ", with its "
            + shown(cost.parameterBytes + cost.gradientBytes) + " bytes of parameters and gradients more than "
            + kMaxBytesText);
}

} // namespace

StageCost transformerStageCost(const Project& project, const Variant& variant, const DevicePlacement& placement,
    int firstLayer, int layers, bool firstStage, bool lastStage, std::string_view layersField)
{
    const ClusterDesc& cluster = project.cluster;
    const int microbatchSize = microbatchSizeOf(project, variant);
    const std::string mbField = variant.microbatchSize > 0 ? detail::variantField(project, variant, "microbatch_size")
                                                           : std::string("model.microbatch_size");
    const model::Transformer m = transformerFor(project, variant);
    const model::Recompute recompute = recomputeOf(project, variant);
    const int recomputeLayers = recomputeLayersOf(project, variant);
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

    const StageLinks links = stageLinks(project, variant, placement);
    const Rates rates(project);
    StageCost cost;
    cost.activationBytes = 0.0;
    cost.weightGradKeptBytes = 0.0;
    ChainBuilder forward(rates);
    ChainBuilder backward(rates);
    StageBuild build;
    const std::vector<model::LayerCost> layerCosts
        = buildForward({ m, recompute, recomputeLayers, placement, links, rates, layersField }, firstLayer, layers,
            firstStage, lastStage, cost, forward, build);
    buildBackward({ m, recompute, recomputeLayers, placement, links, rates, layersField }, firstLayer, layerCosts,
        firstStage, lastStage, backward, build);
    addShardGathers(project, variant, links, rates, firstLayer + layers - 1, forward, backward, build);
    stageTimes(cluster, rates, build, forward, backward, layersField, layers, cost);
    cost.messageBytes = static_cast<double>(messageBytes);
    stageMemory(project, variant, m, build, layersField, layers, sizes, cost);
    // Inter-node pipeline hops carry the same message on the inter-node link.
    const Link& inter = links.inter;
    if (!placement.rankNode.empty() && inter.bandwidthBytesPerUs > 0.0
        && !(cost.messageBytes / inter.bandwidthBytesPerUs <= kMaxCostUs))
        throw FormatError(std::string(inter.bandwidthField) + ": " + shown(inter.bandwidthBytesPerUs)
            + " bytes/µs is too slow: a message of " + shown(cost.messageBytes) + " bytes takes "
            + shown(cost.messageBytes / inter.bandwidthBytesPerUs) + " µs, more than " + kMaxCostText);
    return cost;
}

} // namespace dps
