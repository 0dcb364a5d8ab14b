#include "transformerstage.h"

#include "layers/transformerlayer.h"
#include "model.h"
#include "stagemath.h"

#include <cmath>

namespace dps::runtime {

namespace {

constexpr std::uint64_t kWeightStream = 5;
constexpr std::uint64_t kTokenStream = 6;

/// FNV-1a of a parameter's name: its stream index, so weights do not depend on the layout of the buffers.
std::uint64_t nameKey(const std::string& name)
{
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char c : name) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

bool isNorm(const layers::ParamShape& shape)
{
    return shape.rows == 1 && shape.name.find("norm") != std::string::npos;
}

} // namespace

MicrobatchTokens microbatchTokens(const model::Transformer& model, std::uint64_t seed, int microbatch)
{
    const auto s = static_cast<std::size_t>(model.seqLen);
    const auto batch = static_cast<std::size_t>(model.microbatchSize);
    const std::vector<float> unit
        = seededUniform(seed, kTokenStream, static_cast<std::uint64_t>(microbatch), batch * (s + 1), 1.0);
    const auto token = [&](std::size_t i) {
        const double u = (static_cast<double>(unit[i]) + 1.0) / 2.0; // [0, 1)
        return std::min(model.vocab - 1, static_cast<int>(u * model.vocab));
    };
    MicrobatchTokens tokens;
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t p = 0; p < s; ++p) {
            tokens.ids.push_back(token(b * (s + 1) + p));
            tokens.labels.push_back(token(b * (s + 1) + p + 1));
        }
    return tokens;
}

TransformerStage::TransformerStage(Backend& backend, const model::Transformer& model, const layers::MoeGating& gating,
    int firstLayer, int layers, bool first, bool last, int ep, int epMember)
    : m_backend(backend)
    , m_model(model)
    , m_firstLayer(firstLayer)
{
    model::check(model);
    if (model.tiedEmbeddings && !(first && last))
        throw RuntimeError("tied embeddings across pipeline stages are not run yet (model.tied_embeddings)");
    const auto addPart = [&](std::vector<layers::ParamShape> shapes, const std::string& prefix, int layer) {
        for (const layers::ParamShape& shape : shapes) {
            const bool expert = shape.name.rfind("experts.", 0) == 0; // a routed expert's (not shared_experts.)
            m_parameters.push_back({ prefix + shape.name, layer, m_elements, shape.elements(), expert });
            m_elements += shape.elements();
        }
        m_shapes.push_back(std::move(shapes));
    };
    if (first) {
        m_embedding = std::make_unique<layers::Embedding>(backend, model.vocab, model.hidden);
        addPart(m_embedding->parameterShapes(), "", -1);
    }
    for (int l = firstLayer; l < firstLayer + layers; ++l) {
        layers::TransformerLayer layer = layers::makeTransformerLayer(backend, model, l, gating, ep, epMember);
        addPart(layer.attention->parameterShapes(), "", l);
        m_blocks.push_back(std::move(layer.attention));
        m_blockLayer.push_back(l);
        addPart(layer.mlp->parameterShapes(), "", l);
        m_blocks.push_back(std::move(layer.mlp));
        m_blockLayer.push_back(l);
    }
    if (last) {
        m_head = std::make_unique<layers::LmHead>(backend, model.vocab, model.hidden);
        addPart(m_head->parameterShapes(), "", -1);
    }
}

TransformerStage::~TransformerStage() = default;

void TransformerStage::setExpertGroup(const layers::ExpertGroup* group)
{
    for (const auto& block : m_blocks)
        if (auto* moe = dynamic_cast<layers::MoeBlock*>(block.get()))
            moe->setExpertGroup(group);
}

void TransformerStage::numberExchanges(SavedActivations& saved, const MicrobatchTokens& tokens) const
{
    // Unique per (microbatch, global layer, block): 2 blocks a layer, every layer of the model.
    const std::size_t first = m_embedding ? 1 : 0;
    for (std::size_t b = 0; b < m_blocks.size() && first + b < saved.blocks.size(); ++b)
        saved.blocks[first + b].tag
            = (tokens.microbatch * m_model.layers + m_blockLayer[b]) * 2 + static_cast<int>(b % 2);
}

std::vector<float> TransformerStage::initialWeights(std::uint64_t seed) const
{
    std::vector<float> values;
    values.reserve(m_elements);
    std::size_t index = 0;
    for (const auto& part : m_shapes)
        for (const layers::ParamShape& shape : part) {
            const StageParameter& parameter = m_parameters[index++];
            if (isNorm(shape)) {
                values.insert(values.end(), shape.elements(), 1.0f);
                continue;
            }
            const std::string key = std::to_string(parameter.layer) + "." + parameter.name; // unique in the model
            const std::vector<float> v = seededUniform(
                seed, kWeightStream, nameKey(key), shape.elements(), 1.0 / std::sqrt(static_cast<double>(shape.cols)));
            values.insert(values.end(), v.begin(), v.end());
        }
    return values;
}

std::vector<layers::ParamSet> TransformerStage::bind(void* weights, void* gradients) const
{
    std::vector<layers::ParamSet> sets;
    const auto e = static_cast<std::size_t>(m_backend.elementBytes());
    std::size_t offset = 0;
    for (const auto& part : m_shapes) {
        sets.emplace_back(part, static_cast<char*>(weights) + offset * e, static_cast<char*>(gradients) + offset * e,
            m_backend.elementBytes());
        offset += layers::parameterElements(part);
    }
    return sets;
}

Tensor TransformerStage::forward(Lane lane, void* weights, void* gradients, Tensor input,
    const MicrobatchTokens& tokens, SavedActivations& saved, double* loss) const
{
    const std::vector<layers::ParamSet> sets = bind(weights, gradients);
    saved.blocks.resize(sets.size());
    numberExchanges(saved, tokens);
    std::size_t part = 0;
    Tensor x = m_embedding ? m_embedding->forward(lane, sets[0], tokens.ids, saved.blocks[part++]) : std::move(input);
    for (const auto& block : m_blocks) {
        x = block->forward(lane, sets[part], std::move(x), saved.blocks[part]);
        ++part;
    }
    if (m_head) {
        const double value = m_head->forward(lane, sets[part], std::move(x), tokens.labels, saved.blocks[part]);
        if (loss)
            *loss = value;
        return {};
    }
    x.recategorize(MemoryCategory::Communication);
    return x;
}

Tensor TransformerStage::backwardImpl(Lane lane, void* weights, void* gradients, SavedActivations& saved,
    Tensor gradOutput, const MicrobatchTokens& tokens, bool fused) const
{
    const std::vector<layers::ParamSet> sets = bind(weights, gradients);
    if (saved.blocks.size() != sets.size())
        throw RuntimeError("transformer stage: backward without its forward");
    numberExchanges(saved, tokens);
    std::size_t part = sets.size();
    Tensor dy = std::move(gradOutput);
    if (m_head) {
        --part;
        dy = fused ? m_head->backward(lane, sets[part], saved.blocks[part], tokens.labels)
                   : m_head->inputGrad(lane, sets[part], saved.blocks[part], tokens.labels);
    }
    if (dy.empty())
        throw RuntimeError("transformer stage: backward without an output gradient");
    for (auto block = m_blocks.rbegin(); block != m_blocks.rend(); ++block) {
        --part;
        dy = fused ? (*block)->backward(lane, sets[part], saved.blocks[part], std::move(dy))
                   : (*block)->inputGrad(lane, sets[part], saved.blocks[part], std::move(dy));
    }
    if (m_embedding) {
        if (fused)
            m_embedding->backward(lane, sets[0], saved.blocks[0], std::move(dy), tokens.ids);
        else
            m_embedding->inputGrad(lane, sets[0], saved.blocks[0], std::move(dy));
        return {};
    }
    dy.recategorize(MemoryCategory::Communication);
    return dy;
}

Tensor TransformerStage::inputGrad(Lane lane, void* weights, void* gradients, SavedActivations& saved,
    Tensor gradOutput, const MicrobatchTokens& tokens) const
{
    return backwardImpl(lane, weights, gradients, saved, std::move(gradOutput), tokens, false);
}

Tensor TransformerStage::backward(Lane lane, void* weights, void* gradients, SavedActivations& saved, Tensor gradOutput,
    const MicrobatchTokens& tokens) const
{
    Tensor dx = backwardImpl(lane, weights, gradients, saved, std::move(gradOutput), tokens, true);
    saved.blocks.clear();
    return dx;
}

void TransformerStage::weightGrad(
    Lane lane, void* weights, void* gradients, SavedActivations& saved, const MicrobatchTokens& tokens) const
{
    const std::vector<layers::ParamSet> sets = bind(weights, gradients);
    if (saved.blocks.size() != sets.size())
        throw RuntimeError("transformer stage: W without its forward");
    std::size_t part = 0;
    if (m_embedding) {
        m_embedding->weightGrad(lane, sets[0], saved.blocks[0], tokens.ids);
        ++part;
    }
    for (const auto& block : m_blocks) {
        block->weightGrad(lane, sets[part], saved.blocks[part]);
        ++part;
    }
    if (m_head)
        m_head->weightGrad(lane, sets[part], saved.blocks[part]);
    saved.blocks.clear();
}

} // namespace dps::runtime
