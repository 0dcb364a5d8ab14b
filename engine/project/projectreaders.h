#pragma once
// Internal to engine/project: the readers of a project's "model", "training" and "cluster" objects, shared by
// parseProject and the preset files (presets.cpp), so a preset is exactly what a project file could say.
// Every failure throws FormatError naming the file and the field path (docs/project-format.md).
#include "jsonreader.h"
#include "project.h"

#include <string>
#include <vector>

namespace dps::detail {

/// A project's "model" object (format 1 or 2): a block model, or a transformer checked with model::check.
/// `source` names the file in messages.
ModelDesc readModel(const JsonReader& r, const std::string& source);
/// A project's "cluster" object.
ClusterDesc readCluster(const JsonReader& r);
/// A project's "training" object (format 2); the result has `present` set.
TrainingDesc readTraining(const JsonReader& r);
/// The "stages" array of a project's costs or of a cost file: [{stage, f_us?, i_us?, w_us?, b_us?, fb_us?}],
/// indexed by stage.
std::vector<StageCostOverride> readStageOverrides(const JsonReader& parent);
/// `slot_variation` of a costs object or cost file (CostModel::slotVariation): 2 to kMaxVariationQuantiles numbers,
/// each above −1 (a slot cannot take a negative time), none below the one before it (quantiles p0 … p100). Throws
/// FormatError naming the element, e.g. "costs.slot_variation[3]: must be at least slot_variation[2] (0.05), got 0.01".
std::vector<double> readSlotVariation(const JsonReader& parent);

} // namespace dps::detail
