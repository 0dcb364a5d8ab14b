#include "modelcost.h"

#include "base/checked.h"
#include "base/errors.h"
#include "base/format.h"

#include <algorithm>
#include <charconv>

namespace dps {

namespace {

std::string_view elementNote(int bytesPerElement)
{
    return bytesPerElement == 2 ? "bytes per bf16 element"
        : bytesPerElement == 4  ? "bytes per fp32 element"
                                : "bytes per element";
}

std::string_view parameterNote(int bytesPerElement)
{
    return bytesPerElement == 2 ? "bytes per bf16 parameter and its gradient"
        : bytesPerElement == 4  ? "bytes per fp32 parameter and its gradient"
                                : "bytes per parameter and its gradient";
}

void checkTime(std::optional<double> us, const std::string& field)
{
    if (us && !(*us <= kMaxCostUs))
        throw FormatError(field + ": must be at most " + kMaxCostText + ", got " + shown(*us));
}

} // namespace

std::string shown(double value)
{
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

double flopsToUs(double flops, const ClusterDesc& cluster)
{
    const double rate = cluster.deviceFlops * cluster.efficiency;
    return flops == 0.0 ? 0.0 : flops / rate * 1e6;
}

int defaultFfn(int hidden)
{
    return static_cast<int>(checkedProduct(
        { { "model.hidden", hidden }, { "", 4, "model.ffn defaults to 4 × model.hidden" } }, "FFN units", kIntRange));
}

double layerForwardFlops(const ModelDesc& model)
{
    const double tokens = static_cast<double>(model.microbatchSize) * static_cast<double>(model.seqLen);
    return 4.0 * tokens * static_cast<double>(model.hidden) * static_cast<double>(model.ffn);
}

int computeBytes(const ModelDesc& model, bool cpuBackend)
{
    return cpuBackend ? 4 : dtypeBytes(model.dtype);
}

StageCost blockStageCost(const ModelDesc& model, const ClusterDesc& cluster, int layers, bool lastStage,
    int bytesPerElement, std::string_view layersField)
{
    const std::int64_t h = model.hidden;
    const std::int64_t f = model.ffn;
    const std::int64_t seq = model.seqLen;
    const std::int64_t mb = model.microbatchSize;
    const std::int64_t n = layers;
    const std::int64_t e = bytesPerElement;

    // One T×h tensor: a layer's input X, its output, dY, the loss gradient and the message between stages.
    const std::int64_t messageBytes
        = checkedProduct({ { "model.hidden", h }, { "model.seq_len", seq }, { "model.microbatch_size", mb },
                             { "", e, elementNote(bytesPerElement) } },
            "activation bytes (one T×h tensor: a layer's input, the message between stages)", kExactCount);
    // The runtime's ModelSpec::tokens and every GEMM's row count are int.
    checkedProduct({ { "model.seq_len", seq }, { "model.microbatch_size", mb } }, "tokens per microbatch", kIntRange);
    // After I until W: X and dY (T×h), A and dH (T×f) per layer. Half of it, plus the last stage's loss
    // gradient (T×h, at most the other half), is what F leaves live: bounded by this too.
    const std::int64_t keptBytes
        = checkedProduct({ { layersField, n }, { "", 2, "X and dY, A and dH" }, { "model.seq_len", seq },
                             { "model.microbatch_size", mb }, { "model.hidden + model.ffn", h + f },
                             { "", e, elementNote(bytesPerElement) } },
            "bytes kept from I until W", kExactCount);
    const std::int64_t weightBytes
        = checkedProduct({ { layersField, n }, { "", 2, "matrices W1 and W2" }, { "model.hidden", h },
                             { "model.ffn", f }, { "", 2 * e, parameterNote(bytesPerElement) } },
            "parameter and gradient bytes", kExactCount);

    const double flops = static_cast<double>(layers) * layerForwardFlops(model);
    const double opUs = flopsToUs(flops, cluster);
    if (!(opUs <= kMaxCostUs))
        throw FormatError("cluster.device_flops: " + shown(cluster.deviceFlops) + " FLOP/s × cluster.efficiency "
            + shown(cluster.efficiency) + " is too slow: F, I and W of " + std::string(layersField) + " ("
            + formatCountOf(static_cast<std::size_t>(layers), "layer") + ") take " + shown(flops) + " FLOPs each, "
            + shown(opUs) + " µs, more than " + kMaxCostText);

    StageCost cost;
    cost.forwardUs = opUs;
    cost.inputGradUs = opUs;
    cost.weightGradUs = opUs;
    // After F: X (T×h) and H (T×f) per layer; the last stage also keeps dL/dY (T×h) until I or B.
    cost.activationBytes = static_cast<double>(keptBytes / 2 + (lastStage ? messageBytes : 0));
    // After I until W: X, A = GELU(H), dH and dY per layer.
    cost.weightGradKeptBytes = static_cast<double>(keptBytes);
    cost.parameterBytes = static_cast<double>(weightBytes / 2);
    cost.parameterCount = static_cast<double>(checkedProduct(
        { { layersField, n }, { "", 2, "matrices W1 and W2" }, { "model.hidden", h }, { "model.ffn", f } },
        "parameters", kExactCount));
    cost.gradientBytes = cost.parameterBytes;
    cost.messageBytes = static_cast<double>(messageBytes);
    // One T×f tensor (H, GELU(H), dH): within keptBytes when the stage has a layer, so exact; unused without.
    const double ffnTensorBytes
        = static_cast<double>(seq) * static_cast<double>(mb) * static_cast<double>(f) * static_cast<double>(e);
    cost.engine = blockEngineBuffers(layers, lastStage, static_cast<double>(messageBytes), ffnTensorBytes);
    return cost;
}

EngineBuffers blockEngineBuffers(int layers, bool lastStage, double tokenHiddenBytes, double tokenFfnBytes)
{
    const double n = layers;
    const double th = tokenHiddenBytes;
    const double tf = tokenFfnBytes;
    constexpr int kF = static_cast<int>(OpKind::F);
    constexpr int kI = static_cast<int>(OpKind::I);
    constexpr int kW = static_cast<int>(OpKind::W);
    constexpr int kB = static_cast<int>(OpKind::B);
    EngineBuffers b;
    b.inputBytes = th;
    b.targetBytes = lastStage ? th : 0.0;
    for (const bool first : { false, true }) {
        OpBuffers* ops = first ? b.firstStageOps : b.ops;
        const double dx = first ? 0.0 : th; // the input gradient I and B make and send back
        if (layers == 0) {
            // F passes its input on (the last stage makes dL/dY, then frees the input); I and B pass dY on.
            ops[kF] = { lastStage ? th : 0.0, 0.0 };
            ops[kI] = { 0.0, dx - th };
            ops[kW] = { 0.0, 0.0 };
            ops[kB] = { 0.0, dx - th };
            continue;
        }
        // F, per layer: H (T×f, kept), GELU(H) (T×f, workspace), Y (T×h); then GELU(H) is freed. The last
        // layer peaks at (n−1)(tf+th) + 2tf + th; the last stage then makes dL/dY (th) while Y is live.
        ops[kF] = { n * (tf + th) + (lastStage ? std::max(tf, th) : tf), n * (tf + th) };
        // I, per layer from the top: dH (tf), A = GELU(H) (tf), H freed (tf), dX (th, except the first stage's
        // first layer): each layer adds tf + th, the last one peaks at + 2tf, or tf + dx after its dX.
        ops[kI] = { (n - 1) * (tf + th) + tf + std::max(tf, dx), n * tf + (n - 1) * th + dx };
        // W frees everything I kept (2n(th+tf)); it allocates nothing.
        ops[kW] = { 0.0, -2.0 * n * (th + tf) };
        // B, per layer from the top: GELU(H) then dA/dH in place (tf), dX (th, except the first stage's first
        // layer), then X, H, dY and that buffer are freed: only the top layer reaches tf + its dX.
        ops[kB] = { tf + (layers > 1 ? th : dx), -n * (tf + th) - th + dx };
    }
    return b;
}

void checkStageSettings(const StageCost& stage, const Project& project, std::string_view layersField)
{
    const bool typedBandwidth = project.costs.bandwidthBytesPerUs.has_value();
    const double bandwidth = typedBandwidth ? *project.costs.bandwidthBytesPerUs : project.cluster.bandwidthBytesPerUs;
    if (bandwidth > 0.0) { // 0 = unlimited
        const double wireUs = stage.messageBytes / bandwidth;
        if (!(wireUs <= kMaxCostUs))
            throw FormatError(std::string(typedBandwidth ? "costs" : "cluster")
                + ".bandwidth_bytes_per_us: " + shown(bandwidth) + " bytes/µs is too slow: a message of "
                + shown(stage.messageBytes) + " bytes takes " + shown(wireUs) + " µs, more than " + kMaxCostText);
    }
    const double optimizer = project.costs.optimizerBytesPerParameter;
    const double weights = stage.parameterBytes + stage.gradientBytes;
    if (!(weights + stage.parameterCount * optimizer <= kMaxExactBytes))
        throw FormatError("costs.optimizer_bytes_per_parameter: " + shown(optimizer) + " × "
            + shown(stage.parameterCount) + " parameters of " + std::string(layersField) + ", with their "
            + shown(weights) + " bytes of parameters and gradients, exceed " + kMaxBytesText);
}

void checkCostNumbers(const std::vector<StageCostOverride>& stages, std::optional<double> overlapFactor,
    std::optional<double> latencyUs, const std::string& prefix)
{
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const StageCostOverride& o = stages[s];
        const std::string stage = prefix + "stages: stage " + std::to_string(s) + "'s ";
        checkTime(o.forwardUs, stage + "f_us");
        checkTime(o.inputGradUs, stage + "i_us");
        checkTime(o.weightGradUs, stage + "w_us");
        checkTime(o.backwardUs, stage + "b_us");
        checkTime(o.overlapUs, stage + "fb_us");
    }
    checkTime(latencyUs, prefix + "latency_us");
    if (overlapFactor && !(*overlapFactor <= kMaxExactBytes))
        throw FormatError(prefix + "overlap_factor: must be at most 2^53, got " + shown(*overlapFactor));
}

void checkClusterAndCosts(const Project& project)
{
    checkTime(project.cluster.latencyUs, "cluster.latency_us");
    if (!(project.cluster.memoryPerDeviceBytes <= kMaxExactBytes))
        throw FormatError("cluster.memory_per_device_bytes: must be at most " + std::string(kMaxBytesText) + ", got "
            + shown(project.cluster.memoryPerDeviceBytes));
    checkCostNumbers(project.costs.stages, project.costs.overlapFactor, project.costs.latencyUs, "costs.");
}

void checkEngineRunsModel(const ModelDesc& model)
{
    if (model.kind == ModelKind::Block)
        return;
    if (model.transformer.tiedEmbeddings)
        throw FormatError("model.tied_embeddings: the engine does not run tied embeddings yet (the first and last "
                          "stages would share the embedding)");
}

} // namespace dps
