#pragma once
// The measured trace of a run (measured.json, written by rank 0 of dpstudio-worker; format in issue 4
// and docs/worker-protocol.md) as plain structs. Shared by the CLI (report, calibrate) and the GUI.
#include "schedule/action.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dps {

/// Newest measured-trace format this build reads and writes.
inline constexpr int kMeasuredFormatVersion = 1;

/// One executed action (a slot: an overlapped pair is one entry) of one measured step. Times in µs since
/// the barrier that started the step on that rank.
struct MeasuredAction {
    Action action; ///< parsed from the PyTorch text form
    int step = 0; ///< measured step, 0-based after the warm-up
    double startUs = 0.0;
    double endUs = 0.0;
    double waitUs = 0.0; ///< part of [start, end] spent waiting for incoming data
    std::int64_t bytesSent = 0;
    std::int64_t bytesReceived = 0;
    std::int64_t memoryBytes = 0; ///< everything live in the allocator after the action
    std::int64_t activationBytes = 0; ///< saved activations alone after the action

    /// Time the rank spent on the slot itself: end − start − wait (µs).
    double busyUs() const { return endUs - startUs - waitUs; }
};

struct MeasuredRank {
    int rank = 0;
    std::vector<MeasuredAction> actions; ///< in execution order, all measured steps
};

struct MeasuredCorrectness {
    bool passed = false;
    double maxLossError = 0.0;
    double maxGradError = 0.0;
    double lossThreshold = 0.0;
    double gradThreshold = 0.0;
    std::string message; ///< "message" when the worker gave one (e.g. the stage and parameter at fault)
};

struct MeasuredStep {
    int step = 0;
    double makespanUs = 0.0;
};

/// The whole file.
struct MeasuredTrace {
    int formatVersion = kMeasuredFormatVersion;
    std::string command; ///< the dpstudio command line that ran
    std::string host;
    std::string cpu;
    std::string mpiVersion;
    std::string backend; ///< "cpu" or "cuda"
    std::string comm; ///< "mpi" or "nccl"
    MeasuredCorrectness correctness;
    std::vector<MeasuredStep> steps;
    int medianStep = 0; ///< index into steps' step numbers
    std::vector<MeasuredRank> ranks;
    std::string projectJson; ///< the project that ran, as JSON text ("" when absent)
    std::string variant;
    int threads = 1;
    int warmup = 0;

    /// Makespan of the median step (µs); 0 when it is not listed.
    double medianMakespanUs() const;
    /// Actions of one rank in one step (pointers into ranks).
    std::vector<const MeasuredAction*> actionsOf(int rank, int step) const;
};

/// Parses measured.json text. Throws FormatError naming the field at fault ("ranks[0].actions[3].end_us:
/// missing"), an action text that does not parse, or a newer format_version (naming both versions).
/// `source` names the file in messages.
MeasuredTrace parseMeasured(const std::string& text, const std::string& source = "measured.json");
/// Reads and parses a file. Throws IoError when it cannot be read, FormatError as parseMeasured.
MeasuredTrace loadMeasured(const std::filesystem::path& path);
/// Serialises in the same format (2-space indent, final newline); parseMeasured(serializeMeasured(t))
/// gives t back.
std::string serializeMeasured(const MeasuredTrace& trace);

} // namespace dps
