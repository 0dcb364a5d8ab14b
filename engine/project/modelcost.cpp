#include "modelcost.h"

namespace dps {

namespace {

/// Tokens per microbatch: T = microbatch size × sequence length.
double tokens(const ModelDesc& model)
{
    return static_cast<double>(model.microbatchSize) * static_cast<double>(model.seqLen);
}

/// µs for `flops` on one device at its sustained rate (peak × efficiency).
double flopsToUs(double flops, const ClusterDesc& cluster)
{
    const double rate = cluster.deviceFlops * cluster.efficiency;
    return rate > 0.0 ? flops / rate * 1e6 : 0.0;
}

} // namespace

double layerForwardFlops(const ModelDesc& model)
{
    return 4.0 * tokens(model) * static_cast<double>(model.hidden) * static_cast<double>(model.ffn);
}

int computeBytes(const ModelDesc& model, bool cpuBackend)
{
    return cpuBackend ? 4 : dtypeBytes(model.dtype);
}

StageCost blockStageCost(
    const ModelDesc& model, const ClusterDesc& cluster, int layers, bool lastStage, int bytesPerElement)
{
    const double t = tokens(model);
    const double h = model.hidden;
    const double f = model.ffn;
    const double n = layers;
    const double bytes = bytesPerElement;
    const double opUs = flopsToUs(n * layerForwardFlops(model), cluster);

    StageCost cost;
    cost.forwardUs = opUs;
    cost.inputGradUs = opUs;
    cost.weightGradUs = opUs;
    // After F: X (T×h) and H (T×f) per layer; the last stage also keeps dL/dY (T×h) until I or B.
    cost.activationBytes = (n * t * (h + f) + (lastStage ? t * h : 0.0)) * bytes;
    // After I until W: X, A = GELU(H), dH and dY per layer.
    cost.weightGradKeptBytes = n * 2.0 * t * (h + f) * bytes;
    cost.parameterCount = n * 2.0 * h * f;
    cost.parameterBytes = cost.parameterCount * bytes;
    cost.gradientBytes = cost.parameterBytes;
    cost.messageBytes = t * h * bytes;
    return cost;
}

} // namespace dps
