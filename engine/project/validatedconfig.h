#pragma once
// The validated config (`dpstudio export --format validated-config`, the designer's File → Export
// Validated Config): the project with the variant active, its schedule, the validation report, the
// prediction and the last run's summary, with "validated" true only when the schedule is valid and the
// run (when one is given) passed its correctness check on this variant. One layout for the CLI and the
// designer; plain fields in, text out (no Qt, no launcher dependency).
#include "project/predict.h"
#include "project/project.h"
#include "schedule/schedule.h"
#include "schedule/validator.h"
#include "sim/simulator.h"

#include <optional>
#include <string>
#include <vector>

namespace dps {

/// Version of the validated-config files.
inline constexpr int kValidatedConfigFormatVersion = 1;

/// What a validated config records of a run (the fields of a measured.json that matter here).
struct ValidatedRun {
    std::string file; ///< the measured.json
    std::string host;
    std::string cpu;
    std::string hardware; ///< GPU names for cuda runs; empty when the CPU is the hardware
    std::string backend; ///< "cpu" or "cuda"
    std::string comm; ///< "mpi" or "nccl"
    std::string mpiVersion;
    std::string variant; ///< the variant that ran ("" when unknown)
    int ranks = 0; ///< ranks that ran (0 when unknown)
    int medianStep = 0;
    double medianStepMakespanUs = 0.0; ///< measured step time
    bool correctnessPassed = false;
    double maxLossError = 0.0;
    double maxGradError = 0.0;
    double lossThreshold = 0.0;
    double gradThreshold = 0.0;
    std::string correctnessMessage;
    /// False for a run without a correctness check: an imported profile (measured.json's `correctness: null`,
    /// engine/trace/kineto.h), recorded as "measured externally, not checked".
    bool correctnessChecked = true;
    std::string source; ///< where an imported run came from (measured.json's `source`, as text); "" otherwise
};

struct ValidatedConfig {
    std::string text; ///< the JSON (2-space indent, final newline)
    bool validated = false;
    std::vector<std::string> reasons; ///< why it is not validated (empty when it is)
};

/// Why a run does not validate this schedule of `variant`: a failed correctness check, no check at all (an
/// imported profile: "measured externally, not checked"), another rank count, another variant. Empty when
/// it does.
std::vector<std::string> runProblems(const ValidatedRun& run, const Schedule& schedule, const std::string& variant);

/// Builds the validated config of the variant `prediction` is of (dps::predict of `project`): its schedule,
/// validation report and, when it was simulated, the predicted figures; `run` is the last run (nullopt:
/// "measured" is null). Throws ConstraintError when the prediction has no schedule (a size rule broken).
ValidatedConfig buildValidatedConfig(
    const Project& project, const Prediction& prediction, const std::optional<ValidatedRun>& run);

} // namespace dps
