#pragma once
// One decoder layer of a model-library transformer (engine/model/transformer.h) as runtime layers: its attention
// block (GQA/MHA or MLA) and its MLP block (dense SwiGLU, or MoE for the model's MoE layers), each
// y = x + f(RMSNorm(x)), run one after the other (docs/layers.md).
#include "runtime/layers/attention.h"
#include "runtime/layers/moe.h"
#include "runtime/layers/swiglu.h"

#include <memory>

namespace dps::runtime::layers {

/// The two blocks of one decoder layer, in the order F runs them.
struct TransformerLayer {
    std::unique_ptr<Layer> attention;
    std::unique_ptr<Layer> mlp;
};

/// The blocks of global layer `layer` (0-based) of `m`, an MoE layer's router with `gating` (the model library
/// does not carry the gating function). Throws FormatError for a model model::check refuses, RuntimeError for
/// a layer outside [0, m.layers) or a backend the layers cannot run on (requireFp32).
/// `ep`/`member`: an MoE layer's experts split over an expert-parallel group (MoeConfig::ep, member).
TransformerLayer makeTransformerLayer(Backend& backend, const model::Transformer& m, int layer,
    const MoeGating& gating = MoeGating::deepSeekV3(), int ep = 1, int member = 0);

} // namespace dps::runtime::layers
