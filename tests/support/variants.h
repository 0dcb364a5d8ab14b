#pragma once
// The one-variant projects many tests build.
#include "project/project.h"

#include <string>

namespace dps::test {

/// `project` with its variants replaced by one variant `name` of `kind` on `ranks` ranks with `microbatches`
/// microbatches (every other field of Variant at its default), made the active one.
inline Project withOnlyVariant(Project project, ScheduleKind kind, int ranks, int microbatches, const std::string& name)
{
    Variant v;
    v.name = name;
    v.kind = kind;
    v.ranks = ranks;
    v.microbatches = microbatches;
    project.variants = { v };
    project.activeVariant = name;
    return project;
}

} // namespace dps::test
