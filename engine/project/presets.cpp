#include "presets.h"

#include "base/errors.h"
#include "jsonreader.h"
#include "presetfiles.h"
#include "projectreaders.h"

#include <algorithm>
#include <cmath>

namespace dps {

using detail::JsonReader;
using json = nlohmann::json;

namespace {

/// One embedded preset file, read.
struct Preset {
    PresetInfo info;
    ModelPreset model; ///< model files
    ClusterDesc cluster; ///< device files
};

struct PresetTables {
    std::vector<Preset> models; ///< sorted by id
    std::vector<Preset> devices;
};

/// Reads one file: {"format_version", "id", "title", "sources", and "model" (+ "training") or "cluster"}.
Preset readPreset(const detail::EmbeddedPresetFile& file, bool isModel)
{
    const std::string source = file.path;
    const json j = JsonReader::parse(file.text, source);
    JsonReader::checkVersion(j, source, kProjectFormatVersion);
    const JsonReader root(j, "", source);
    if (isModel)
        root.allowOnly({ "format_version", "id", "title", "sources", "model", "training" });
    else
        root.allowOnly({ "format_version", "id", "title", "sources", "cluster" });
    Preset p;
    p.info.id = root.string("id");
    if (p.info.id.empty())
        root.fail("id", "must not be empty");
    p.info.title = root.string("title");
    const json& sources = root.array("sources");
    for (std::size_t i = 0; i < sources.size(); ++i) {
        const json& s = sources[i];
        if (!s.is_string())
            root.element(sources, i, "sources").failHere("must be a string, got " + JsonReader::shown(s));
        p.info.sources.push_back(s.get<std::string>());
    }
    if (isModel) {
        p.model.model = detail::readModel(root.object("model"), source);
        if (p.model.model.preset.empty())
            p.model.model.preset = p.info.id;
        else if (p.model.model.preset != p.info.id)
            root.object("model").fail(
                "preset", "\"" + p.model.model.preset + "\" differs from the file's id \"" + p.info.id + "\"");
        if (root.has("training"))
            p.model.training = detail::readTraining(root.object("training"));
    } else {
        p.cluster = detail::readCluster(root.object("cluster"));
        if (p.cluster.device.empty())
            p.cluster.device = p.info.id;
        else if (p.cluster.device != p.info.id)
            root.object("cluster").fail(
                "device", "\"" + p.cluster.device + "\" differs from the file's id \"" + p.info.id + "\"");
    }
    return p;
}

/// Every embedded preset, read once (a broken file throws on every call, naming it).
const PresetTables& tables()
{
    static const PresetTables all = [] {
        PresetTables t;
        for (const detail::EmbeddedPresetFile* f = detail::kPresetFiles; f->group; ++f) {
            const bool isModel = std::string_view(f->group) == "models";
            (isModel ? t.models : t.devices).push_back(readPreset(*f, isModel));
        }
        for (auto* list : { &t.models, &t.devices }) {
            std::sort(
                list->begin(), list->end(), [](const Preset& a, const Preset& b) { return a.info.id < b.info.id; });
            for (std::size_t i = 1; i < list->size(); ++i)
                if ((*list)[i].info.id == (*list)[i - 1].info.id)
                    throw FormatError("preset id \"" + (*list)[i].info.id + "\" is given by two files");
        }
        return t;
    }();
    return all;
}

std::vector<PresetInfo> infos(const std::vector<Preset>& list)
{
    std::vector<PresetInfo> out;
    for (const Preset& p : list)
        out.push_back(p.info);
    return out;
}

/// The preset `id` of `list`; throws FormatError "unknown <what> preset "x" (presets: a, b, ...)".
const Preset& find(const std::vector<Preset>& list, const std::string& id, const char* what)
{
    for (const Preset& p : list)
        if (p.info.id == id)
            return p;
    std::string ids;
    for (const Preset& p : list)
        ids += (ids.empty() ? "" : ", ") + p.info.id;
    throw FormatError("unknown " + std::string(what) + " preset \"" + id + "\" (presets: " + ids + ")");
}

} // namespace

std::vector<PresetInfo> modelPresets()
{
    return infos(tables().models);
}

std::vector<PresetInfo> devicePresets()
{
    return infos(tables().devices);
}

ModelPreset modelPreset(const std::string& id)
{
    return find(tables().models, id, "model").model;
}

std::vector<std::string> presetScales()
{
    return { "full", "tiny" };
}

namespace {

/// A SwiGLU size at `size`'s ratio to `hidden`, for a hidden of `tinyHidden`: a multiple of 8, at least 8.
int tinyFfn(int size, int hidden, int tinyHidden)
{
    const double scaled = static_cast<double>(size) * tinyHidden / hidden;
    return std::max(8, static_cast<int>(std::lround(scaled / 8.0)) * 8);
}

} // namespace

ModelPreset scaledPreset(ModelPreset preset, const std::string& scale)
{
    if (scale == "full")
        return preset;
    if (scale != "tiny")
        throw FormatError("unknown scale \"" + scale + "\" (scales: full, tiny)");
    constexpr int kHidden = 64;
    constexpr int kHeads = 4;
    ModelDesc& m = preset.model;
    if (!m.preset.empty())
        m.preset += "/tiny";
    // What the CPU engine runs, so that a run measures what is predicted: no recompute (it keeps every
    // activation) and no optimizer state (it holds weights and gradients only).
    m.recompute = model::Recompute::None;
    preset.training = TrainingDesc {};
    m.seqLen = 32;
    m.microbatchSize = 1;
    m.dtype = DType::FP32;
    if (m.kind == ModelKind::Block) {
        m.layers = 8;
        m.ffn = tinyFfn(m.ffn, m.hidden, kHidden);
        m.hidden = kHidden;
        return preset;
    }
    model::Transformer& t = m.transformer;
    const int hidden = m.hidden;
    m.ffn = tinyFfn(m.ffn, hidden, kHidden);
    if (t.isMoe()) {
        t.moe.expertFfn = tinyFfn(t.moe.expertFfn, hidden, kHidden);
        if (t.moe.denseFfn > 0)
            t.moe.denseFfn = tinyFfn(t.moe.denseFfn, hidden, kHidden);
        t.moe.ep = t.moe.ep > 1 ? 2 : 1;
        t.moe.maxNodesPerToken = 0; // one node
        t.moe.dispatchBytes = t.moe.combineBytes = dtypeBytes(DType::FP32);
        t.moe.probsOnSwiglu = false; // the engine scales an expert's output in the combine
    }
    m.layers = std::max(8, t.moe.denseLayers + 4);
    m.hidden = kHidden;
    // Heads: the group size of GQA kept where 4 heads allow it (a group of more than 4 becomes 4: one kv head).
    const int group = t.kvHeads > 0 ? std::max(1, t.heads / t.kvHeads) : 1;
    t.kvHeads = t.attention == model::Attention::MHA ? kHeads : std::max(1, kHeads / std::min(group, kHeads));
    t.heads = kHeads;
    t.headDim = kHidden / kHeads;
    if (t.attention == model::Attention::MLA) {
        t.mla.qLoraRank = t.mla.qLoraRank > 0 ? 32 : 0;
        t.mla.kvLoraRank = 32;
        t.mla.qkNopeHeadDim = 16;
        t.mla.qkRopeHeadDim = 8;
        t.mla.vHeadDim = 16;
    }
    t.vocab = 256;
    return preset;
}

ClusterDesc devicePreset(const std::string& id)
{
    return find(tables().devices, id, "device").cluster;
}

} // namespace dps
