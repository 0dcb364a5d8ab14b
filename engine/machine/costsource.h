#pragma once
// What a prediction is fed: the one rule that every front end follows — `dpstudio simulate`, `compare` and
// `export` (with or without --this-machine), `dpstudio run`'s report, the designer's snapshot and its overlay
// of a run. A front end describes its source in a CostSource and asks predictWith() (or predictOptions() where
// it predicts through another entry point, such as compareVariant); it never assembles costs itself.
//
// The costs, in the order they are laid over each other (a later one wins):
//   1. the project's model, cluster and typed costs (project.costs), or unit costs without a project (F = I = W
//      = 1, B = 2, F&B = 3, free links: uniformCostModel);
//   2. a costs file (`--costs`, what `calibrate` writes): typed costs, laid over the project's;
//   3. for this machine (`profile` set: a CPU run here): the probed CPU profile's costs of the variant
//      (machinecosts.h) replace every cost the project does not type; the ranks share the profile's cores;
//   4. the uniform costs of the command line (--cost-f … --bandwidth), over every stage.
// What is predicted: a run of our engine (`engineRun`: dpstudio run, a run overlaid in the designer, and any
// prediction for this machine) also counts a transformer's replica gradient sum at the step's end
// (PredictOptions::engineRun, docs/memory.md), moves fp32 tensors on the cpu backend, and places the ranks of
// a run across hosts on their nodes (`rankNode`: a message between nodes takes cluster.inter_node_*).
#include "machinecosts.h"

#include "project/predict.h"
#include "project/project.h"
#include "trace/measured.h"

#include <optional>
#include <string>
#include <vector>

namespace dps::machine {

/// Costs typed for every stage at once (the command line's --cost-f, --cost-i, --cost-w, --cost-b, --cost-fb µs,
/// --latency µs, --bandwidth bytes/µs, --overlap-factor): each one set replaces the model's, after every other
/// source.
struct EveryStageCosts {
    StageCostOverride stage; ///< laid over every stage (applyOverride)
    std::optional<double> latencyUs, bandwidthBytesPerUs, overlapFactor;
    bool any() const;
    /// Lays the set values over `model`. Never throws.
    void applyTo(CostModel& model) const;
};

/// Where a prediction's costs come from, and what it predicts (the rule above).
struct CostSource {
    std::optional<CostsFile> costsFile; ///< typed costs laid over the project's (step 2); unset: none
    std::string costsFileName; ///< the file it was read from, for the notes
    EveryStageCosts everyStage; ///< step 4
    std::optional<MachineProfile> profile; ///< set: predict a CPU run on the profile's machine (step 3)
    bool engineRun = false; ///< a run of our engine (always with a profile)
    std::string backend; ///< the run's backend ("cpu", "cuda"); "cpu" moves fp32 tensors; "" = not a run
    std::vector<int> rankNode; ///< node of each rank of a run across hosts (measuredRankNodes); empty: one node
    std::vector<std::string> notes; ///< why the prediction is not for this machine, when one was wanted

    /// Predicts a CPU run of our engine on the machine `profile` was measured on.
    static CostSource thisMachine(MachineProfile profile);
    /// Predicts a run of our engine on the project's devices with `backend` ("cpu": fp32 tensors).
    static CostSource projectRun(const std::string& backend);

    /// "this machine (probed CPU profile, FILE; 2 cores shared by the ranks)" or "the project's devices (H100,
    /// latency 2 µs, bandwidth 50 GB/s)" (device FLOP/s × efficiency without a device name), then "; ranks on 2
    /// hosts (…)" for a placement on nodes. Never throws.
    std::string label(const Project& project) const;
    /// `base` (e.g. "the project's model and costs", or label()), then ", then FILE" for a costs file and ",
    /// then the --cost flags" for costs typed for every stage. Never throws.
    std::string costsNote(const std::string& base) const;
};

/// The project with the source's costs file laid over its typed costs (step 2); the project as it is without one.
Project costedProject(const CostSource& source, Project project);

/// The options that predict `variant` of `project` (already costedProject) from `source`: steps 3 and 4 as the
/// cost adjuster, the engine-run rules, the shared cores of this machine; per-slot timing and memory curves only
/// when `timeline`. Throws FormatError as machineCosts when the profile does not hold the variant's shape or
/// stages.
PredictOptions predictOptions(const CostSource& source, const Project& project, const Variant& variant, bool timeline);

/// predict() of the variant named `variant` (empty: the active one) of `project` from `source`. The engine's
/// errors (a variant that cannot be built, an invalid schedule, a deadlock, a profile that does not hold the
/// variant) become Prediction::error, never exceptions.
Prediction predictWith(const CostSource& source, const Project& project, const std::string& variant, bool timeline);

/// predictSchedule() of a schedule without a project (a CSV, a generated kind): unit costs with `stages` stages,
/// the costs file's costs, then the costs typed for every stage. Never throws for a bad schedule (as predictSchedule).
Prediction predictScheduleWith(const CostSource& source, Schedule schedule, bool timeline);

/// The same for a program in PyTorch's whole action language (predictProgram: its sends and receives timed where
/// they sit). Never throws for a bad program.
Prediction predictProgramWith(const CostSource& source, TorchSchedule program, bool timeline);

/// The machine costs the source gives `variant` (for their table: formatMachineCosts); nullopt without a
/// profile. Throws FormatError as machineCosts.
std::optional<MachineCosts> machineCostsOf(const CostSource& source, const Project& project, const Variant& variant);

/// A measured run's prediction options and what they are for.
struct RunPredictionSetup {
    PredictOptions options;
    std::string label; ///< CostSource::label() of the source predicted with
    std::string note; ///< why it is not for this machine when the source's profile does not hold the variant
};

/// predictOptions() and label() of `source` (costSourceOfRun's, for the run report and the designer alike), or,
/// when its profile does not hold the variant's shape or stages, of the same run on the project's devices with a
/// note saying why. Never throws for a profile; throws as findVariant for an unknown variant.
RunPredictionSetup runPredictionSetup(
    const CostSource& source, const Project& project, const std::string& variant, bool timeline);

/// Whether `trace` was measured on this machine: its host and CPU model are this host's. Never throws.
bool measuredHere(const MeasuredTrace& trace);

/// The source of a measured run's prediction, for `dpstudio run`'s report and the designer's overlay alike: a
/// run of our engine with the run's backend and, across hosts, its placement on nodes (measuredRankNodes); for
/// this machine when `profile` is given, the run was a CPU run measured here on one host; else for the project's
/// devices. Never throws.
CostSource costSourceOfRun(const MeasuredTrace& trace, std::optional<MachineProfile> profile);

/// Node of each rank of a measured run, from the hosts its ranks recorded (ranks[].host): hosts numbered in
/// the order of their first rank, so a run of ranks 0, 1 on hostA and 2, 3 on hostB gives {0, 0, 1, 1}. Empty
/// when the run stayed on one host or a rank has no host recorded (then nothing crosses nodes).
std::vector<int> measuredRankNodes(const MeasuredTrace& measured);

/// "ranks on 2 hosts (0–1, 2–3): transfers between hosts take the inter-node link (latency, bandwidth)" for a
/// placement from measuredRankNodes; "" when it is empty.
std::string placementLabel(const Project& project, const std::vector<int>& rankNode);

} // namespace dps::machine
