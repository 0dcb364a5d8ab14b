#include "runtime/layers/transformerlayer.h"

namespace dps::runtime::layers {

TransformerLayer makeTransformerLayer(
    Backend& backend, const model::Transformer& m, int layer, const MoeGating& gating, int ep, int member)
{
    model::check(m);
    if (layer < 0 || layer >= m.layers)
        throw RuntimeError("transformer layer " + std::to_string(layer) + " outside [0, model.layers "
            + std::to_string(m.layers) + ")");
    TransformerLayer result;
    const AttentionConfig attention = AttentionConfig::of(m);
    if (m.attention == model::Attention::MLA)
        result.attention = std::make_unique<MlaAttention>(backend, attention);
    else
        result.attention = std::make_unique<GqaAttention>(backend, attention);
    if (m.isMoeLayer(layer))
    {
        MoeConfig config = MoeConfig::of(m, gating);
        config.ep = ep;
        config.member = member;
        result.mlp = std::make_unique<MoeBlock>(backend, config);
    }
    else
        result.mlp = std::make_unique<DenseMlp>(backend, MlpConfig::of(m, layer));
    return result;
}

} // namespace dps::runtime::layers
