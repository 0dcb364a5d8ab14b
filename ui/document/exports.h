#pragma once
// What the designer exports besides the project: the validated config (same layout as
// `dpstudio export --format validated-config`), the PyTorch CSV and the Chrome trace of the prediction.
// Plain C++ over a snapshot; the callers write the text atomically.
#include "document/snapshot.h"

#include "project/frameworkexport.h"
#include "project/validatedconfig.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dps::ui {

/// The validated config of the snapshot's variant (dps::buildValidatedConfig, the CLI's layout): project
/// (with that variant active), schedule, validation report, prediction and the last run when given;
/// "validated" is false with the reasons when the order is invalid or the run failed its check.
/// Precondition: snapshot.schedule is set.
ValidatedConfig validatedConfig(
    const Project& project, const SimulationSnapshot& snapshot, const std::optional<ValidatedRun>& run = std::nullopt);
/// The text of validatedConfig().
std::string validatedConfigText(
    const Project& project, const SimulationSnapshot& snapshot, const std::optional<ValidatedRun>& run = std::nullopt);

/// The PyTorch CSV of the snapshot's schedule; `warnings` gets a note when it needs our two-rows-per-stage
/// extension (DualPipe), which PyTorch's loader refuses.
std::string torchCsvText(const SimulationSnapshot& snapshot, std::vector<std::string>& warnings);

/// The snapshot's variant in a framework's format, as `dpstudio export --format FORMAT` writes it: "torch-comms-csv"
/// (PyTorch's compute_comms CSV, lowerToComms of the snapshot's schedule), "torchtitan" (torchtitanConfig, its CSV
/// to be written at `csvPath`) or "megatron" (megatronArgs). A schedule the framework cannot run, or an order that
/// cannot be lowered, comes back with supported false and the reason in refusal. Precondition: snapshot.schedule is
/// set. Throws FormatError for another format.
FrameworkConfig frameworkExport(
    const Project& project, const SimulationSnapshot& snapshot, const std::string& format, const std::string& csvPath);

/// Writes the Chrome trace (Perfetto) of the snapshot's predicted timeline. Throws dps::IoError.
void writePredictedTrace(const SimulationSnapshot& snapshot, const std::filesystem::path& file);

} // namespace dps::ui
