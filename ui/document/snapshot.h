#pragma once
// An immutable result of predicting one variant of a project (a Prediction of engine/project/predict.h) with
// the timeline blocks laid out for drawing. Computed off the GUI thread (computeSnapshot is plain C++),
// shared read-only with every view.
#include "document/blockindex.h"
#include "project/predict.h"
#include "project/project.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace dps::ui {

/// A Prediction (predict(): schedule, validation report, simulated timing and memory, closed form, summary
/// figures) and what only the designer needs: the blocks laid out for drawing, the request it answers and the
/// device memory the memory chart draws as its limit.
struct SimulationSnapshot : Prediction {
    std::uint64_t generation = 0; ///< the request this answers
    BlockIndex blocks; ///< laid out from the timing, or in list order when the order is invalid
    double deviceMemoryBytes = 0.0; ///< the cluster's memory per device, bytes
    /// What the prediction is for: "" = the project's devices (its cluster and costs); else what
    /// PredictionSetup::label says, e.g. "this machine (CPU profile ~/.cache/dpstudio/cpu-….json)"
    std::string predictionFor;

    int ranks() const { return schedule ? schedule->ranks : 0; }
};

using SnapshotPtr = std::shared_ptr<const SimulationSnapshot>;

/// A prediction for something else than the project's devices (e.g. a CPU run on this machine,
/// engine/machine/machinecosts.h): the options predict() takes and what the prediction is then for.
struct PredictionSetup {
    PredictOptions options;
    std::string label; ///< e.g. "this machine (CPU profile FILE)"
};

/// The setup for a variant of a project; nullopt = the project's devices. Called off the GUI thread; an
/// exception counts as nullopt.
using PredictionProvider
    = std::function<std::optional<PredictionSetup>(const Project& project, const std::string& variant)>;

/// Predicts `variantName` of `project` (predict(), with timing and memory curves, or with `setup`'s options
/// when given: then predictionFor is its label) and lays out its blocks. Never throws for bad input: engine
/// errors end up in `error`. When the order is invalid the blocks are laid out in list order, each block no
/// earlier than where the same action started in `previous` (the last timed snapshot of the variant, may be
/// null).
SnapshotPtr computeSnapshot(const Project& project, const std::string& variantName, std::uint64_t generation,
    const SimulationSnapshot* previous = nullptr, const PredictionSetup* setup = nullptr);

/// What a block waited for, in words ("the activation of stage 2, microbatch 5 from rank 1, ready at 1.25 ms
/// (idle 12 µs before it)"; times as formatTime writes them), or "nothing: started as soon as rank 3 was
/// free", or "not simulated: the order is invalid".
std::string describeWait(const SimulationSnapshot& snapshot, int rank, int position);

} // namespace dps::ui
