#pragma once
// The models the runtime trains. The block model: `layers` blocks Linear(h→f)–GELU(erf)–Linear(f→h) without
// biases, split over stages by a layer partition, MSE loss on the last stage. A transformer of the model library
// (ModelSpec::transformer set): its stages are transformerstage.h's. Weights, inputs and targets are
// deterministic functions of the seed so any process can rebuild any stage or microbatch.
#include "backend.h"
#include "layers/moe.h"
#include "model/transformer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dps::runtime {

/// Sizes of the model and of one microbatch.
struct ModelSpec {
    int hidden = 0; ///< h
    int ffn = 0; ///< f
    int tokens = 0; ///< T = microbatch size × sequence length: rows of every activation
    std::vector<int> partition; ///< layers per stage (entries may be 0)
    std::uint64_t seed = 0;
    /// Set: the model is this transformer (hidden and tokens are its h and T; ffn is not read); unset: blocks.
    std::optional<model::Transformer> transformer;
    layers::MoeGating gating; ///< the MoE router's gating (the model library does not carry it)
    /// Expert parallelism: the routed experts of every MoE layer are split over `ep` processes (the ep
    /// consecutive data-parallel replicas of a pipeline rank), this process holding the experts of member
    /// `epMember` (experts [member × E/ep, (member + 1) × E/ep)). 1: every expert here.
    int ep = 1;
    int epMember = 0;

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
/// n values uniform in [−bound, bound) for (seed, stream, index): element i depends only on them and i
/// (counter-based), so any process can produce any element. Streams 1–4 are the block model's (W1, W2, input,
/// target); transformerstage.cpp uses 5 (weights) and 6 (tokens).
std::vector<float> seededUniform(
    std::uint64_t seed, std::uint64_t stream, std::uint64_t index, std::size_t n, double bound);

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
class TransformerStage;

/// One named parameter of a stage: where it sits in the stage's buffers.
struct StageParameter {
    std::string
        name; ///< within its layer: "w1", "q_proj", "experts.7.up_proj"; "embed_tokens", "norm", "lm_head", "lm_head"
    int layer = -1; ///< the global decoder layer, −1 for the embedding, the final norm and the head
    std::size_t offset = 0; ///< elements from the start of the stage's weights (and gradients)
    std::size_t elements = 0;
    bool expert = false; ///< a routed expert's: summed only over the replicas that hold the same experts
};

class StageParams {
public:
    /// Allocates and initialises the weights of `stage`; gradients start at zero. For a transformer the stage's
    /// blocks are built too (transformer()). Throws as TransformerStage's constructor.
    StageParams(Backend& backend, const ModelSpec& spec, int stage);
    ~StageParams();

    int stage() const { return m_stage; }
    int layerCount() const { return static_cast<int>(m_layers.size()); }
    const LayerParams& layer(int i) const { return m_layers.at(static_cast<std::size_t>(i)); }
    /// The contiguous gradient buffer (layerCount × 2hf elements); empty for a stage without layers.
    Tensor& gradients() { return m_gradients; }
    const Tensor& gradients() const { return m_gradients; }
    /// Sets every gradient to zero.
    void zeroGradients(Backend& backend);
    /// The gradient of one layer's matrix, downloaded as floats (block model).
    std::vector<float> gradient(Backend& backend, int layer, Matrix matrix) const;
    /// The transformer stage (its blocks and computations); null for the block model.
    const TransformerStage* transformer() const { return m_transformer.get(); }
    TransformerStage* transformer() { return m_transformer.get(); }
    /// The weights' buffer (every parameter of the stage, contiguous).
    const Tensor& weights() const { return m_weights; }
    /// Every named parameter of the stage in buffer order: the block model's w1 (f × h) and w2 (h × f) of each
    /// layer, or the transformer stage's parameters.
    std::vector<StageParameter> parameters(const ModelSpec& spec) const;

private:
    int m_stage = 0;
    Tensor m_weights;
    Tensor m_gradients;
    std::vector<LayerParams> m_layers;
    std::unique_ptr<TransformerStage> m_transformer;
};

} // namespace dps::runtime
