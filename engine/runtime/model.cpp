#include "model.h"

#include "transformerstage.h"

#include <cmath>
#include <numeric>

namespace dps::runtime {

namespace {

/// splitmix64's finaliser: a bijective mix of 64 bits.
std::uint64_t mix(std::uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Streams of values: weights of a layer's matrix, inputs and targets of a microbatch.
enum class Stream : std::uint64_t { W1 = 1, W2 = 2, Input = 3, Target = 4 };

/// n values uniform in [−bound, bound), element i from mix(key + i) — counter-based, so any element
/// can be produced independently of the others.
std::vector<float> uniformValues(std::uint64_t seed, Stream stream, std::uint64_t index, std::size_t n, double bound)
{
    const std::uint64_t key = mix(mix(mix(seed) ^ static_cast<std::uint64_t>(stream)) ^ index);
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) {
        const double unit = static_cast<double>(mix(key + i) >> 11) * 0x1.0p-53; // [0, 1)
        values[i] = static_cast<float>((2.0 * unit - 1.0) * bound);
    }
    return values;
}

std::size_t toSize(int n)
{
    return static_cast<std::size_t>(n);
}

} // namespace

std::vector<float> seededUniform(
    std::uint64_t seed, std::uint64_t stream, std::uint64_t index, std::size_t n, double bound)
{
    return uniformValues(seed, static_cast<Stream>(stream), index, n, bound);
}

int ModelSpec::totalLayers() const
{
    return std::accumulate(partition.begin(), partition.end(), 0);
}

int ModelSpec::firstLayer(int stage) const
{
    return std::accumulate(partition.begin(), partition.begin() + stage, 0);
}

std::vector<float> initialWeights(const ModelSpec& spec, int globalLayer, Matrix matrix)
{
    const int fanIn = matrix == Matrix::W1 ? spec.hidden : spec.ffn;
    const Stream stream = matrix == Matrix::W1 ? Stream::W1 : Stream::W2;
    return uniformValues(spec.seed, stream, static_cast<std::uint64_t>(globalLayer),
        toSize(spec.hidden) * toSize(spec.ffn), 1.0 / std::sqrt(static_cast<double>(fanIn)));
}

std::vector<float> microbatchInput(const ModelSpec& spec, int microbatch)
{
    return uniformValues(spec.seed, Stream::Input, static_cast<std::uint64_t>(microbatch), spec.messageElements(), 1.0);
}

std::vector<float> microbatchTarget(const ModelSpec& spec, int microbatch)
{
    return uniformValues(
        spec.seed, Stream::Target, static_cast<std::uint64_t>(microbatch), spec.messageElements(), 1.0);
}

StageParams::StageParams(Backend& backend, const ModelSpec& spec, int stage)
    : m_stage(stage)
{
    if (spec.transformer) {
        m_transformer
            = std::make_unique<TransformerStage>(backend, *spec.transformer, spec.gating, spec.firstLayer(stage),
                spec.layersOf(stage), stage == 0, stage == spec.stages() - 1, spec.ep, spec.epMember);
        const std::size_t n = m_transformer->parameterElements();
        if (n == 0)
            return;
        m_weights = Tensor(backend, 1, n, MemoryCategory::Parameter);
        m_gradients = Tensor(backend, 1, n, MemoryCategory::Gradient);
        backend.uploadFloats(0, m_weights.data(), m_transformer->initialWeights(spec.seed).data(), n);
        zeroGradients(backend);
        backend.synchronize();
        return;
    }
    const int layers = spec.layersOf(stage);
    const std::size_t matrix = toSize(spec.hidden) * toSize(spec.ffn);
    if (layers == 0)
        return;
    m_weights = Tensor(backend, toSize(layers), 2 * matrix, MemoryCategory::Parameter);
    m_gradients = Tensor(backend, toSize(layers), 2 * matrix, MemoryCategory::Gradient);
    const std::size_t elementBytes = static_cast<std::size_t>(backend.elementBytes());
    auto at
        = [&](const Tensor& t, std::size_t element) { return static_cast<char*>(t.data()) + element * elementBytes; };
    for (int l = 0; l < layers; ++l) {
        const std::size_t base = toSize(l) * 2 * matrix;
        m_layers.push_back(LayerParams {
            at(m_weights, base), at(m_weights, base + matrix), at(m_gradients, base), at(m_gradients, base + matrix) });
        const int global = spec.firstLayer(stage) + l;
        backend.uploadFloats(0, m_layers.back().w1, initialWeights(spec, global, Matrix::W1).data(), matrix);
        backend.uploadFloats(0, m_layers.back().w2, initialWeights(spec, global, Matrix::W2).data(), matrix);
    }
    zeroGradients(backend);
    backend.synchronize();
}

StageParams::~StageParams() = default;

std::vector<StageParameter> StageParams::parameters(const ModelSpec& spec) const
{
    if (m_transformer)
        return m_transformer->parameters();
    std::vector<StageParameter> result;
    const std::size_t matrix = toSize(spec.hidden) * toSize(spec.ffn);
    for (int l = 0; l < layerCount(); ++l) {
        const int global = spec.firstLayer(m_stage) + l;
        result.push_back({ "w1", global, toSize(l) * 2 * matrix, matrix });
        result.push_back({ "w2", global, toSize(l) * 2 * matrix + matrix, matrix });
    }
    return result;
}

void StageParams::zeroGradients(Backend& backend)
{
    if (!m_gradients.empty())
        backend.setZero(0, m_gradients.data(), m_gradients.bytes());
}

std::vector<float> StageParams::gradient(Backend& backend, int layer, Matrix matrix) const
{
    const LayerParams& p = this->layer(layer);
    const std::size_t n = m_gradients.cols() / 2;
    std::vector<float> values(n);
    backend.downloadFloats(0, values.data(), matrix == Matrix::W1 ? p.dw1 : p.dw2, n);
    return values;
}

} // namespace dps::runtime
