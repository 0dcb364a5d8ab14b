#pragma once
// The measured trace of a run (measured.json; format in docs/worker-protocol.md) as plain structs, its one
// reader and its one writer: rank 0 of dpstudio-worker writes it with serializeMeasured, the CLI (report,
// calibrate) and the GUI read it with parseMeasured/loadMeasured.
#include "schedule/action.h"
#include "project/validatedconfig.h"
#include "sim/calibrate.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dps {

struct Project;

/// Newest measured-trace format this build reads (the readers refuse a newer one). Version 2 adds what an
/// imported profile says and version 1 cannot (`source`, `correctness: null`); serializeMeasured writes 2
/// only for such a trace, so the worker's files stay version 1, byte for byte.
inline constexpr int kMeasuredFormatVersion = 2;

/// One executed action (a slot: an overlapped pair is one entry) of one measured step. Times in µs since
/// the barrier that started the step on that rank.
struct MeasuredAction {
    Action action; ///< parsed from the PyTorch text form
    int step = 0; ///< measured step, 0-based after the warm-up
    double startUs = 0.0;
    double endUs = 0.0;
    double waitUs = 0.0; ///< part of [start, end] spent waiting for incoming data
    double computeUs = 0.0; ///< part of [start, end] spent computing (compute_us; the rest is overhead)
    /// Of computeUs, the expert all-to-all of both halves (a2a_us), and of that the time the other half of an
    /// overlapped slot computed meanwhile (a2a_hidden_us: hidden communication). Written only when > 0.
    double a2aUs = 0.0;
    double a2aHiddenUs = 0.0;
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
    /// Host name the rank ran on (ranks[].host, the rank's gethostname); "" when the file has none (then it
    /// is not written either). A transfer between two ranks crossed hosts when their names differ
    /// (crossesHosts).
    std::string host = {};
};

/// One microbatch's loss against the sequential reference (correctness.losses).
struct MeasuredLoss {
    int microbatch = 0;
    double loss = 0.0; ///< NaN when the run diverged (written as null)
    double reference = 0.0;
    double error = 0.0; ///< relative error
};

/// The correctness check (correctness). Its errors and losses are NaN where the file has null (a diverged
/// run), and written back as null.
struct MeasuredCorrectness {
    bool passed = false;
    double maxLossError = 0.0;
    double maxGradError = 0.0;
    double lossThreshold = 0.0;
    double gradThreshold = 0.0;
    std::string message; ///< "message" when the worker gave one (e.g. the stage and parameter at fault)
    std::vector<MeasuredLoss> losses; ///< by microbatch
    /// False when the run had no correctness check at all (an imported profile, engine/trace/kineto.h):
    /// written as `"correctness": null` (format 2), and the other fields are meaningless.
    bool checked = true;
};

/// Where a run measured by something other than dpstudio-worker came from (format 2, `source`); empty
/// (kind "") for the worker's own runs, and then not written.
struct MeasuredSource {
    std::string kind; ///< "torch.profiler"
    std::string layout; ///< "kineto" or "legacy" (or both, "kineto+legacy", when the files differ)
    std::string timing; ///< which spans timed the compute actions, e.g. "cpu user annotations"
    std::string clock; ///< how the ranks' clocks were aligned, e.g. "aligned at the first step's start"
    std::vector<std::string> files; ///< the trace files, by rank

    bool empty() const { return kind.empty(); }
    friend bool operator==(const MeasuredSource&, const MeasuredSource&) = default;
};

struct MeasuredStep {
    int step = 0;
    double makespanUs = 0.0;
};

/// The whole file.
struct MeasuredTrace {
    int formatVersion = 1; ///< as read; serializeMeasured writes 2 when source or correctness need it
    std::string command; ///< the dpstudio command line that ran
    std::string host;
    std::string cpu;
    std::string device; ///< the backend's device description
    std::string mpiVersion;
    std::string backend; ///< "cpu" or "cuda"
    std::string comm; ///< "mpi", "thread", "nccl" or "mpi-host"
    /// How the backend and comm were chosen (backend_choice), e.g. "backend cpu, comm mpi: cpu (auto: cuda:
    /// not built)"; "" when the file has none (then it is not written either).
    std::string backendChoice;
    MeasuredSource source; ///< empty for the worker's runs; an imported profile says where it came from
    MeasuredCorrectness correctness;
    std::vector<MeasuredStep> steps;
    int medianStep = 0; ///< index into steps' step numbers
    std::vector<std::string> warnings; ///< the worker's warnings (e.g. a bf16 project run in fp32 on CPU)
    std::vector<MeasuredRank> ranks;
    std::string projectJson; ///< the project that ran, as JSON text, keys in file order ("" when absent)
    std::string variant;
    int threads = 1;
    int warmup = 0;

    /// Makespan of the median step (µs); 0 when it is not listed.
    double medianMakespanUs() const;
    /// Actions of one rank in one step (pointers into ranks).
    std::vector<const MeasuredAction*> actionsOf(int rank, int step) const;
};

/// Sets `steps` from the ranks' actions as the worker defines them: the makespan of each measured step
/// 0 … (largest step) is the latest end over all ranks (µs; 0 for a step with no action), and `medianStep`
/// the step whose makespan is the median (the lower of the middle two for an even count, medianIndex; 0 for none).
/// Never throws.
void setStepsFromActions(MeasuredTrace& trace);

/// Parses measured.json text. Throws FormatError naming the field at fault ("ranks[0].actions[3].end_us:
/// missing"), an action text that does not parse, or a newer format_version (naming both versions).
/// `source` names the file in messages.
MeasuredTrace parseMeasured(const std::string& text, const std::string& source = "measured.json");
/// Reads and parses a file. Throws IoError when it cannot be read, FormatError as parseMeasured.
MeasuredTrace loadMeasured(const std::filesystem::path& path);
/// Serialises as measured.json (documented key order, 2-space indent, final newline; text that is not
/// valid UTF-8 is replaced by U+FFFD); the worker writes its files with it. format_version is the trace's,
/// raised to 2 when it has a source or no correctness check (both only format 2 can say).
/// parseMeasured(serializeMeasured(t)) gives t back, and serializeMeasured(parseMeasured(text)) gives back the text of
/// a file the worker wrote. Throws FormatError when projectJson is neither empty nor JSON text (never for a trace
/// parseMeasured gave).
std::string serializeMeasured(const MeasuredTrace& trace);

/// A source as one line, e.g. "torch.profiler (legacy layout, cpu user annotations, aligned at the first
/// step's start; 2 files)"; "" for an empty source (the worker's runs). Never throws.
std::string describeSource(const MeasuredSource& source);

/// The fields of a measured run a validated config records (project/validatedconfig.h), `file` being its
/// measured.json: the CLI's export and the designer's both take them from here. Never throws.
ValidatedRun validatedRunOf(const MeasuredTrace& trace, const std::string& file);

/// Whether a transfer between ranks `from` and `to` crossed hosts: both ranks are in the trace with a
/// recorded host (ranks[].host) and the two names differ. False when either rank or its host is missing
/// (a file written before hosts were recorded). The measured counterpart of CostModel::crossesNodes.
/// Never throws.
bool crossesHosts(const MeasuredTrace& trace, int from, int to);

/// The trace's slots in the neutral form calibrate() (sim/calibrate.h) fits: every action of every rank
/// and measured step, in file order. Never throws.
std::vector<MeasuredSlot> measuredSlots(const MeasuredTrace& trace);
/// Number of model stages of the run: from `project` when given (the trace's variant, else its active
/// one), else from the project recorded in the trace, else from the actions (slotStageCount). Throws
/// FormatError when a recorded project does not parse or `project` has no active variant.
int measuredStageCount(const MeasuredTrace& trace, const Project* project = nullptr);

} // namespace dps
