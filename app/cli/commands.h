#pragma once
// The dpstudio subcommands as plain functions over option structs; main.cpp (the only file that includes
// CLI11) fills the structs. Each returns the process exit code; engine exceptions propagate to main, which
// maps them: ParseError/FormatError/ConstraintError → 1, IoError → 2.
#include "project/project.h"
#include "protocol/exitcodes.h"
#include "schedule/csvio.h"

#include <optional>
#include <string>
#include <vector>

namespace dps::launch {
struct RunOptions; // `dpstudio run` fills the one run-options type (launch/launcher.h) directly
}

namespace dps::cli {

struct GenerateArgs {
    std::string schedule;
    int ranks = 0;
    int microbatches = 0;
    int stagesPerRank = 0; ///< 0 = the kind's default
    std::string format = "csv"; ///< csv | json | text
    std::string output; ///< empty = stdout
};

struct ValidateArgs {
    std::string file; ///< a schedule CSV or a project file
    std::string dialect = "auto"; ///< auto | current | 2024 (CSV only)
    std::string variant; ///< project only; empty = every variant
    bool json = false;
};

/// Cost flags shared by simulate/compare/run. Unset = the source's own (unit costs without a model).
struct CostFlags {
    std::optional<double> f, i, w, b, fb, latency, bandwidth, overlapFactor;
    std::string costsFile; ///< --costs costs.json (from calibrate)
    /// --this-machine: a project predicted as a CPU run on this machine (machine/machinecosts.h: its CPU
    /// profile, probed when the cache lacks the model's shapes; the ranks share its cores), then the flags above
    bool thisMachine = false;
    std::string profile; ///< --profile FILE: the CPU profile for --this-machine (default: this machine's)
};

struct SimulateArgs {
    std::string project;
    std::string variant;
    std::string schedule; ///< --schedule KIND
    int ranks = 0;
    int microbatches = 0;
    int stagesPerRank = 0;
    std::string csv; ///< --csv FILE
    std::string dialect = "auto";
    CostFlags costs;
    bool json = false;
    std::string trace; ///< --trace FILE: Chrome trace of the predicted timeline
    bool comms = false; ///< --comms: lower to PyTorch's sends and receives (lowerToComms) and time them where they sit
};

struct CompareArgs {
    std::string project;
    std::vector<std::string> schedules; ///< --schedules a,b: kinds, each with the ranks giving the stage count
    CostFlags costs;
    bool json = false;
    /// --same-devices: every row on the most devices of any row, at the same global batch (compare.h onSameDevices:
    /// more data-parallel replicas, fewer microbatches each)
    bool sameDevices = false;
};

/// `dpstudio plan PROJECT --devices N --global-batch B [--memory-limit BYTES] [--kinds LIST] [--top K] [--json]
/// [--add-variants]` (engine/project/planner.h).
struct PlanArgs {
    std::string project; ///< the project file; or, without one, --model and --device presets
    std::string model; ///< --model PRESET (instead of a project file)
    std::string device; ///< --device PRESET (with --model)
    int devices = 0;
    int globalBatch = 0; ///< sequences per step
    std::string memoryLimit; ///< "80e9", "80GB", "80GiB"; empty = the cluster's memory_per_device_bytes
    std::vector<std::string> kinds; ///< empty = all seven
    std::vector<int> tps; ///< --tp 1,2,4,8: tensor-parallel sizes searched; empty = the planner's default
    std::vector<int> cps; ///< --cp 1,2: context-parallel sizes searched; empty = the planner's default
    std::vector<int> zeros; ///< --zero 1,3: ZeRO stages searched; empty = the project's and 1
    int top = 10; ///< candidates shown (and added with --add-variants)
    bool json = false;
    bool addVariants = false; ///< write the top K into the project as variants (atomic save)
};

struct ExportArgs {
    std::string project;
    std::string variant;
    std::string format; ///< torch-csv | chrome-trace | json | validated-config
    std::string output; ///< -o FILE
    std::string perRankDir; ///< --per-rank DIR (chrome-trace)
    std::string measured; ///< validated-config: the last run's measured.json
};

struct InitArgs {
    std::string output;
    std::optional<std::string> schedule;
    std::optional<int> ranks, microbatches, stagesPerRank, layers, hidden, ffn, seqLen, microbatchSize;
    std::optional<std::string> dtype;
    bool force = false;
    // From a preset (project/presets.h): --model PRESET --device PRESET [--nodes N --gpus-per-node G] [--dp D]
    // [--recompute none|selective|full]; the last five go with --model.
    std::optional<std::string> model, device, recompute;
    std::optional<int> nodes, gpusPerNode, dp;
    std::optional<std::string> scale; ///< --scale full|tiny (presets.h scaledPreset); tiny: --device defaults to cpu
    // The variant's tensor and context parallelism (a transformer's) and, with --model, the ZeRO stage.
    std::optional<int> tp, cp, zero;
    bool sequenceParallel = false; ///< --sequence-parallel (with --tp > 1)
};

struct PresetsArgs {
    bool json = false;
};

struct ModelInfoArgs {
    std::string project;
    std::string variant; ///< empty = the active one
    bool json = false;
};

struct DevicesArgs {
    bool json = false;
    // --probe: measure the CPU device profile (launch/cpuprobe.h, docs/cpu-profile.md)
    bool probe = false;
    bool reprobe = false; ///< --reprobe: measure even when the cache has this machine's profile
    std::string output; ///< -o FILE: also write the profile there
    std::string project; ///< --project P: the shapes of its model (default: the embedded default project)
    int threads = 1; ///< --threads N: BLAS threads
    double budget = 10; ///< --budget S: seconds of measuring to aim for
};

struct CalibrateArgs {
    std::string measured;
    std::string project; ///< optional: the project the run came from (default: the one recorded)
    std::string output;
    bool keepRefused = false; ///< --keep-refused: write a fit its check refuses (exit 0, the reason printed)
};

struct AnalyzeArgs {
    std::string measured; ///< measured.json
    std::string project; ///< --project P: predict its critical path too (default: the project recorded)
    std::string variant; ///< --variant V (default: the run's variant, else the active one)
    std::optional<int> step; ///< --step N: the measured step (default: the median step)
    double threshold = 0.1; ///< --threshold: the straggler share (0.1 = 10 %)
    bool list = false; ///< --list: every element of the path
    std::string compare; ///< --compare OTHER.json: per-action differences with that run's median step
    bool json = false;
};

/// `dpstudio import-trace`: PyTorch profiler traces as a measured run (docs/profile-import.md).
struct ImportTraceArgs {
    std::vector<std::string> traces; ///< files (.json, .json.gz) and folders of them, one file per rank
    std::string project; ///< --project P: check against its schedule and record it (optional)
    std::string variant; ///< --variant V (default: the project's active one)
    std::vector<std::string> maps; ///< --map REGEX=ACTION-TEMPLATE, tried in order before the PP: names
    std::string output; ///< -o measured.json
    std::string command; ///< the command line, recorded in the measured trace
};

int cmdGenerate(const GenerateArgs& args);
int cmdValidate(const ValidateArgs& args);
int cmdSimulate(const SimulateArgs& args);
int cmdCompare(const CompareArgs& args);
int cmdExport(const ExportArgs& args);
/// `dpstudio plan`: plan() over the project's model; exit 0 with a candidate, 1 when nothing fits (the smallest
/// peak found on stderr), 2 for bad flags. Throws IoError for an unreadable project, FormatError for bad content
/// or a project --add-variants cannot save as valid.
int cmdPlan(const PlanArgs& args);
int cmdInit(const InitArgs& args);
/// `dpstudio run`: launch::runProject with `options` (interactive when stderr is a terminal and the
/// progress stream is not asked for); returns its exit code (dps::kExit*).
int cmdRun(const launch::RunOptions& options);
/// `dpstudio devices`: what can run here; with --probe the CPU device profile, from the cache when it holds
/// this machine's at the project's shapes (table or JSON on stdout, notes on stderr). Throws IoError (no
/// worker, an unreadable project, -o not writable) and FormatError as launch::probeCpu.
int cmdDevices(const DevicesArgs& args);
/// `dpstudio calibrate`: fits the run (sim/calibrate.h), checks the fit on the run's own steps (launch::checkFit,
/// with the project the run recorded or --project; not for an imported profile, whose waits are inside its
/// slots) and writes costs.json only when the check accepts it or --keep-refused; 1 with the reason when it
/// refuses. Throws IoError and FormatError for an unreadable or bad run or project.
int cmdCalibrate(const CalibrateArgs& args);
/// `dpstudio analyze`: a measured run's critical path (and the prediction's), per-rank shares, stragglers and
/// variance (trace/runstats.h), and with --compare the per-action differences with another run, as text or JSON.
/// Throws IoError (a file that cannot be read), FormatError (a bad file, --variant unknown, --step not in the
/// run) and ConstraintError (--threshold below 0).
int cmdAnalyze(const AnalyzeArgs& args);

/// `dpstudio import-trace`: importProfiles (trace/kineto.h) of the traces, written as measured.json; the notes
/// (timing, clock, what was ignored) on stderr, a summary (and the prediction, with --project) on stdout.
/// Throws IoError for a trace or project that cannot be read, FormatError for a broken trace (naming the
/// file and the reason; nothing is written) or a bad --map or --variant.
int cmdImportTrace(const ImportTraceArgs& args);
/// `dpstudio presets`: the model and device presets (presets.h) as tables or JSON; exit 0.
int cmdPresets(const PresetsArgs& args);
/// `dpstudio model-info`: modelInfo() of a project's variant as text or JSON. Throws IoError for a file that
/// cannot be read, FormatError (naming the file and field, or --variant for an unknown variant) or
/// ConstraintError (a size rule of the variant) for bad content.
int cmdModelInfo(const ModelInfoArgs& args);
/// One line on a transformer model for simulate and model-info: the preset, the devices (dp × pp = N, the
/// nodes the placement rule spans), where the expert all-to-all goes and how many pipeline hops cross nodes;
/// "" for the block model. Throws FormatError as placementOf (transformercost.h).
std::string modelSummary(const Project& project, const Variant& variant);

/// `dpstudio lower`: a compute-only CSV or a project's variant lowered to PyTorch's compute_comms CSV
/// (lowering.h); a compute_comms CSV is checked and written back. Exit 1, nothing written, for an invalid
/// schedule (the findings on stderr).
struct LowerArgs {
    std::string input; ///< a schedule CSV or a project file
    std::string variant; ///< project only; empty = the active one
    std::string output; ///< -o FILE; empty = stdout
    bool noFsdp = false; ///< --no-fsdp: no UNSHARD/RESHARD
    bool noReduceGrad = false; ///< --no-reduce-grad
};
int cmdLower(const LowerArgs& args);

/// `dpstudio partition`: a variant's layer partition from a Megatron layout string or torchtitan's
/// layers-per-stage settings (frameworkexport.h), saved to the project (or -o). Throws ParseError naming the
/// character of a bad layout, ConstraintError for settings giving another stage count; nothing written.
struct PartitionArgs {
    std::string project;
    std::string variant;
    std::string output;
    std::string megatronLayout; ///< --megatron-layout
    std::optional<int> layersPerStage; ///< --layers-per-stage (torchtitan)
    int firstLess = 1; ///< --first-stage-less-layers
    int lastLess = 1; ///< --last-stage-less-layers
};
int cmdPartition(const PartitionArgs& args);

/// `dpstudio export --format torchtitan|megatron|torch-comms-csv` (frameworkexport.h, lowering.h): exit 1
/// with the framework's refusal on stderr when it cannot run the variant, nothing written.
int exportFramework(const ExportArgs& args, const Project& project, const Variant& variant);
/// `dpstudio validate` of a CSV with communication actions (validate(TorchSchedule)).
int validateTorchCsv(const ValidateArgs& args, const std::string& text);

/// The variant `name` names (empty: the active one); an unknown name is a FormatError naming the file and
/// the flag ("FILE: --variant: no variant named 'x' (variants: a, b)").
const Variant& variantOf(const Project& project, const std::string& name, const std::string& file);

/// Writes text to `path` atomically (writeFileAtomic), or to stdout when path is empty or "-". Throws IoError.
void writeOutput(const std::string& path, const std::string& text);
/// buildSchedule of a project's variant; a broken size rule is reported with the file's name in front
/// ("FILE: variants[1].stages_per_rank: DualPipeV needs exactly 2 stages per rank ...").
Schedule projectSchedule(const std::string& file, const Project& project, const Variant& variant);
/// Whether a file holds JSON (a project) rather than a schedule CSV: its name ends in .json, or its first
/// non-blank character opens a JSON object or array.
bool looksLikeJsonFile(const std::string& path, const std::string& text);
/// Reads a schedule CSV for validate/simulate through dps::readScheduleCsv (csvio.h, the designer's import
/// too): `dialect` is auto, current or 2024; warnings go to stderr. Throws ParseError naming the file (and row
/// and column) for a malformed cell, a binary file or a file without any action.
CsvImport readScheduleCsv(const std::string& file, const std::string& text, const std::string& dialect);

} // namespace dps::cli
