#pragma once
// The block model the runtime trains: `layers` blocks Linear(h→f)–GELU(erf)–Linear(f→h) without biases,
// split over stages by a layer partition, MSE loss on the last stage. Weights, inputs and targets are
// deterministic functions of the seed so any process can rebuild any stage or microbatch.
#include "backend.h"

#include <cstdint>
#include <vector>

namespace dps::runtime {

/// Sizes of the model and of one microbatch.
struct ModelSpec {
    int hidden = 0; ///< h
    int ffn = 0; ///< f
    int tokens = 0; ///< T = microbatch size × sequence length: rows of every activation
    std::vector<int> partition; ///< layers per stage (entries may be 0)
    std::uint64_t seed = 0;

    int stages() const { return static_cast<int>(partition.size()); }
    int totalLayers() const;
    /// Global index of the first layer of `stage`.
    int firstLayer(int stage) const;
    int layersOf(int stage) const { return partition.at(static_cast<std::size_t>(stage)); }
    /// Elements of an activation or gradient between stages: T × h.
    std::size_t messageElements() const { return static_cast<std::size_t>(tokens) * static_cast<std::size_t>(hidden); }
    /// Parameters of one layer: 2 × h × f.
    std::size_t layerParameters() const
    {
        return 2u * static_cast<std::size_t>(hidden) * static_cast<std::size_t>(ffn);
    }
};

/// Which matrix of a block: W1 is the first Linear's weight (f × h), W2 the second's (h × f), as
/// PyTorch stores Linear(in→out) weights (out × in).
enum class Matrix { W1, W2 };

/// The initial weights of a global layer: uniform(−1/√fan_in, 1/√fan_in) from a counter-based hash of
/// (seed, layer, matrix, element index); W1 is f × h (fan_in h), W2 is h × f (fan_in f); row-major.
std::vector<float> initialWeights(const ModelSpec& spec, int globalLayer, Matrix matrix);
/// The input of microbatch m (T × h), uniform(−1, 1).
std::vector<float> microbatchInput(const ModelSpec& spec, int microbatch);
/// The target of microbatch m (T × h), uniform(−1, 1).
std::vector<float> microbatchTarget(const ModelSpec& spec, int microbatch);

/// The weights and gradients of one layer, views into the stage's contiguous buffers.
struct LayerParams {
    void* w1 = nullptr; ///< f × h
    void* w2 = nullptr; ///< h × f
    void* dw1 = nullptr; ///< f × h
    void* dw2 = nullptr; ///< h × f
};

/// One stage's parameters on a backend: all weights in one buffer and all gradients in another (so that a
/// replica exchange is one message), laid out layer by layer as [W1, W2].
class StageParams {
public:
    /// Allocates and initialises the weights of `stage`; gradients start at zero.
    StageParams(Backend& backend, const ModelSpec& spec, int stage);

    int stage() const { return m_stage; }
    int layerCount() const { return static_cast<int>(m_layers.size()); }
    const LayerParams& layer(int i) const { return m_layers.at(static_cast<std::size_t>(i)); }
    /// The contiguous gradient buffer (layerCount × 2hf elements); empty for a stage without layers.
    Tensor& gradients() { return m_gradients; }
    const Tensor& gradients() const { return m_gradients; }
    /// Sets every gradient to zero.
    void zeroGradients(Backend& backend);
    /// The gradient of one layer's matrix, downloaded as floats.
    std::vector<float> gradient(Backend& backend, int layer, Matrix matrix) const;

private:
    int m_stage = 0;
    Tensor m_weights;
    Tensor m_gradients;
    std::vector<LayerParams> m_layers;
};

} // namespace dps::runtime
