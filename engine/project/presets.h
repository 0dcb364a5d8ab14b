#pragma once
// Model and device presets, shipped as files (resources/presets/models/<id>.json,
// resources/presets/devices/<id>.json) and embedded in the build, selectable by id. Every number in them
// carries its source in the file's "sources" list (docs/model-library.md).
//
// A model preset file: {"format_version": 2, "id": "deepseek-v3", "title": "...", "sources": ["..."],
//   "model": {... a project's "model" object ...}, "training": {... a project's "training" object ...}}
// A device preset file: {"format_version": 2, "id": "h800", "title": "...", "sources": ["..."],
//   "cluster": {... a project's "cluster" object ...}}
// Both are read with the project's own readers, so a preset is exactly what a project file could say.
#include "project.h"

#include <string>
#include <vector>

namespace dps {

/// One preset as `dpstudio presets` lists it.
struct PresetInfo {
    std::string id; ///< "deepseek-v3", "h800"
    std::string title; ///< one line, e.g. "DeepSeek-V3 (671B total, 37B activated, MLA, 256 experts top-8)"
    std::vector<std::string> sources; ///< where its numbers come from
};

/// The model presets, sorted by id: "block" (the built-in block model of the default project) and at least
/// deepseek-v3, llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b.
std::vector<PresetInfo> modelPresets();
/// The device presets, sorted by id: a100-80g, b200, cpu, h100-sxm, h200, h800, mi300x.
std::vector<PresetInfo> devicePresets();

/// The model (and its training state) of preset `id`. Throws FormatError "unknown model preset "x" (presets:
/// block, deepseek-v3, ...)".
struct ModelPreset {
    ModelDesc model;
    TrainingDesc training;
};
ModelPreset modelPreset(const std::string& id);
/// The scales `dpstudio init --scale` offers: "full" (the preset as published) and "tiny".
std::vector<std::string> presetScales();

/// Preset `preset` at `scale` (presetScales()). "full" returns it unchanged. "tiny" keeps its structure — the
/// attention kind (MHA, GQA with kv heads below q heads, MLA with a low-rank query when it has one), the
/// routed expert count, top-k, the shared experts, the dense first layers, tied embeddings — at sizes a CPU
/// runs a step of in seconds, with what the CPU engine runs (no recompute, no optimizer state, fp32): hidden
/// 64, 4 heads of 16,
/// SwiGLU sizes at the preset's own ratio to hidden (rounded to a multiple of 8), 8 layers (or the dense
/// layers + 4 when more), vocab 256, seq_len 32, 1 sequence per microbatch, fp32 (what the CPU engine
/// computes in), EP 2 where the preset has EP. model.preset becomes "<id>/tiny". docs/model-library.md.
/// Throws FormatError "unknown scale "x" (scales: full, tiny)".
ModelPreset scaledPreset(ModelPreset preset, const std::string& scale);

/// The cluster of device preset `id`. Throws FormatError "unknown device preset "x" (presets: ...)".
ClusterDesc devicePreset(const std::string& id);

} // namespace dps
