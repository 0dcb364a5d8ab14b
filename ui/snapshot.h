#pragma once
// An immutable result of simulating one variant of a project: the schedule, its validation report, the
// simulated timing and memory, the closed form, and the timeline blocks laid out for drawing. Computed off
// the GUI thread (computeSnapshot is plain C++), shared read-only with every view.
#include "blockindex.h"
#include "project/project.h"
#include "schedule/validator.h"
#include "sim/simulator.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dps::ui {

/// The static memory of one rank, split as the memory chart draws it (bytes).
struct StaticMemory {
    double parameters = 0.0;
    double gradients = 0.0;
    double optimizer = 0.0;
    double parameterCount = 0.0; ///< elements, not bytes
    double total() const { return parameters + gradients + optimizer; }
};

struct SimulationSnapshot {
    std::uint64_t generation = 0; ///< the request this answers
    std::string variantName;
    std::string error; ///< why the variant could not be built (sizes, partition); empty when it was
    std::optional<Schedule> schedule;
    CostModel costs;
    ValidationReport report;
    SimResult sim;
    ClosedForm closedForm;
    bool timed = false; ///< sim timing is a real simulation (valid schedule, no deadlock)
    bool handEdited = false; ///< the variant's order was edited by hand
    BlockIndex blocks; ///< laid out from the timing, or in list order when the order is invalid
    std::vector<StaticMemory> staticMemory; ///< per rank
    double deviceMemoryBytes = 0.0; ///< the cluster's memory per device

    bool valid() const { return error.empty() && report.valid() && timed; }
    int ranks() const { return schedule ? schedule->ranks : 0; }
    /// The largest idle over ranks and its rank (-1 when there are no ranks).
    std::pair<double, int> largestIdle() const;
    /// The rank with the highest peak memory (-1 when there are no ranks).
    int peakMemoryRank() const;
};

using SnapshotPtr = std::shared_ptr<const SimulationSnapshot>;

/// Builds, validates and simulates `variantName` of `project`. Never throws for bad input: engine errors
/// end up in `error`. When the order is invalid the blocks are laid out in list order, each block no earlier
/// than where the same action started in `previous` (the last timed snapshot of the variant, may be null).
SnapshotPtr computeSnapshot(const Project& project, const std::string& variantName, std::uint64_t generation,
    const SimulationSnapshot* previous = nullptr);

/// The static memory of each rank: the parameters, gradients and optimizer state of the stages it holds.
std::vector<StaticMemory> staticMemoryPerRank(const Schedule& schedule, const CostModel& costs);

/// What a block waited for, in words ("activation of stage 2, microbatch 5 from rank 1, arrived 12.0 µs
/// after the rank was free"), or "nothing: started as soon as rank 3 was free".
std::string describeWait(const SimulationSnapshot& snapshot, int rank, int position);

} // namespace dps::ui
