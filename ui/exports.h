#pragma once
// What the designer exports besides the project: the validated config (same layout as
// `dpstudio export --format validated-config`), the PyTorch CSV and the Chrome trace of the prediction.
// Plain C++ over a snapshot; the callers write the text atomically.
#include "snapshot.h"

#include <filesystem>
#include <string>
#include <vector>

namespace dps::ui {

/// Version of the validated-config files (the CLI's kValidatedConfigFormatVersion).
inline constexpr int kValidatedConfigFormatVersion = 1;

/// The validated config of the snapshot's variant: project (with that variant active), schedule,
/// validation report, prediction; "validated" is false with the reasons when the order is invalid.
/// Precondition: snapshot.schedule is set.
std::string validatedConfigText(const Project& project, const SimulationSnapshot& snapshot);

/// The PyTorch CSV of the snapshot's schedule; `warnings` gets a note when it needs our two-rows-per-stage
/// extension (DualPipe), which PyTorch's loader refuses.
std::string torchCsvText(const SimulationSnapshot& snapshot, std::vector<std::string>& warnings);

/// Writes the Chrome trace (Perfetto) of the snapshot's predicted timeline. Throws dps::IoError.
void writePredictedTrace(const SimulationSnapshot& snapshot, const std::filesystem::path& file);

} // namespace dps::ui
