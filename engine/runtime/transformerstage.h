#pragma once
// One pipeline stage of a model-library transformer (engine/model/transformer.h) on the runtime's layers
// (engine/runtime/layers/): the embedding on the first stage, the stage's decoder layers (each an attention block
// and an MLP or MoE block), the final norm, the LM head and the cross-entropy loss on the last stage. F, I and
// W are kept apart block by block, as the block model's StageMath does for its layers. docs/layers.md.
//
// The data of a microbatch are token ids drawn from the seed (microbatchTokens): each of its sequences is
// seq_len + 1 tokens, the stage-0 input its first seq_len and the labels its last seq_len (next-token
// prediction). Every parameter is initialised from the seed, the global layer and its name, so any process can
// build any stage (weights uniform in ±1/√fan_in, norm weights 1).
#include "backend.h"
#include "layers/common.h"
#include "layers/edges.h"
#include "layers/moe.h"
#include "model.h"
#include "model/transformer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dps::runtime {

struct SavedActivations;

/// A microbatch's tokens: `ids` (T, the first stage's input) and `labels` (T, the last stage's targets).
struct MicrobatchTokens {
    std::vector<int> ids;
    std::vector<int> labels;
    /// The microbatch's index in its replica's schedule (the same on every replica): numbers the expert
    /// all-to-all exchanges of its MoE layers.
    int microbatch = 0;
};

/// Tokens of microbatch `microbatch` of `model` (T = microbatch_size × seq_len of each), uniform over the
/// vocabulary, from `seed`.
MicrobatchTokens microbatchTokens(const model::Transformer& model, std::uint64_t seed, int microbatch);

/// The blocks of one stage and their computations. Stateless apart from the sizes: the weights and gradients
/// are the caller's (one contiguous buffer each, laid out as parameters() says).
class TransformerStage {
public:
    /// The stage of `layers` decoder layers from global layer `firstLayer`; `first`/`last`: it holds the
    /// embedding / the head. Throws FormatError for a model model::check refuses, RuntimeError for a backend the
    /// layers cannot run on or a tied embedding across stages (not supported yet).
    /// `ep`/`epMember`: the MoE layers' routed experts are split over an expert-parallel group, this stage
    /// holding member epMember's (setExpertGroup gives the group before the first action).
    TransformerStage(Backend& backend, const model::Transformer& model, const layers::MoeGating& gating, int firstLayer,
        int layers, bool first, bool last, int ep = 1, int epMember = 0);
    ~TransformerStage();

    /// The expert-parallel group of the stage's MoE layers (it must outlive the stage's use).
    void setExpertGroup(const layers::ExpertGroup* group);

    /// Every parameter of the stage, in buffer order.
    const std::vector<StageParameter>& parameters() const { return m_parameters; }
    /// Elements of the stage's weights (and of its gradients).
    std::size_t parameterElements() const { return m_elements; }
    /// The initial weights of the stage (parameterElements() values) for `seed`.
    std::vector<float> initialWeights(std::uint64_t seed) const;

    /// F of one microbatch. The first stage reads `tokens.ids` (and ignores `input`), the others consume `input`
    /// (T × h); the last stage writes the loss to *loss and returns nothing, the others return the output
    /// (T × h, Communication). What is kept is Activation.
    Tensor forward(Lane lane, void* weights, void* gradients, Tensor input, const MicrobatchTokens& tokens,
        SavedActivations& saved, double* loss) const;
    /// I: from the output gradient (T × h; ignored on the last stage) the input gradient (T × h, Communication),
    /// nothing on the first stage; keeps what W needs.
    Tensor inputGrad(Lane lane, void* weights, void* gradients, SavedActivations& saved, Tensor gradOutput,
        const MicrobatchTokens& tokens) const;
    /// W: accumulates the weight gradients from what I kept and frees it.
    void weightGrad(
        Lane lane, void* weights, void* gradients, SavedActivations& saved, const MicrobatchTokens& tokens) const;
    /// B: I and W at once; frees everything F kept.
    Tensor backward(Lane lane, void* weights, void* gradients, SavedActivations& saved, Tensor gradOutput,
        const MicrobatchTokens& tokens) const;

private:
    std::vector<layers::ParamSet> bind(void* weights, void* gradients) const;
    /// Numbers the exchanges of each block of `saved` for `tokens`' microbatch (Saved::tag).
    void numberExchanges(SavedActivations& saved, const MicrobatchTokens& tokens) const;
    Tensor backwardImpl(Lane lane, void* weights, void* gradients, SavedActivations& saved, Tensor gradOutput,
        const MicrobatchTokens& tokens, bool fused) const;

    Backend& m_backend;
    model::Transformer m_model;
    int m_firstLayer;
    std::unique_ptr<layers::Embedding> m_embedding; ///< first stage
    std::vector<std::unique_ptr<layers::Layer>> m_blocks; ///< attention, mlp, attention, mlp, …
    std::vector<int> m_blockLayer; ///< the global layer of each block
    std::unique_ptr<layers::LmHead> m_head; ///< last stage
    std::vector<std::vector<layers::ParamShape>> m_shapes; ///< per part: [embedding], blocks…, [head]
    std::vector<StageParameter> m_parameters;
    std::size_t m_elements = 0;
};

} // namespace dps::runtime
