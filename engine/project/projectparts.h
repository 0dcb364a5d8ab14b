#pragma once
// Internal to engine/project: the checks of a variant's sizes that building it (project.cpp) and validating a
// project (projectcheck.cpp) share. Each throws FormatError naming the field at `where` ("variants[1]").
#include "project.h"

#include <string>
#include <vector>

namespace dps::detail {

/// "variants[i]" for a variant of the project, else "variant \"name\"".
std::string variantPath(const Project& project, const Variant& variant);
/// The variant's stages per rank: its own, else its kind's default.
int resolvedStagesPerRank(const Variant& variant);
/// "<where>.<field>" for a variant of a file ("variants[1].ranks"), else "<where>, <field>".
std::string fieldOf(const std::string& where, const char* field);
/// Highest stage index in a hand-edited order, plus one (0 for an empty order).
int stagesInOrder(const std::vector<std::vector<Action>>& order);
/// The variant's stage count; ranks × the kind's stages per rank must fit an int.
int checkedStageCount(const Variant& variant, const std::string& where);
/// The layer partition has one entry per stage, none negative, summing to model.layers.
void checkPartition(const Project& project, const Variant& variant, const std::string& where);
/// An op of a hand-edited order lies within the variant's stages and microbatches (`cell` names it).
void checkOp(const Op& op, const Variant& variant, int stages, const std::string& cell);
/// A hand-edited order has one row per rank and every op within the variant's sizes.
void checkOrderSizes(const Variant& variant, const std::string& where);
/// How messages name the layer count of `stage`: its layer_partition entry, or the stage of the even split.
std::string stageLayersField(const std::string& where, const Variant& variant, std::size_t stage);

} // namespace dps::detail
