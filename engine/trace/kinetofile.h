#pragma once
// Internal to the profiler importer (kineto.h): one rank's trace file as read (kinetoread.cpp), and the
// matching of its spans to the schedule's slots (kinetomatch.cpp); kineto.cpp assembles the measured trace.
#include "schedule/action.h"
#include "trace/kineto.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace dps::kineto {

enum class Comm { RecvF, SendF, RecvB, SendB };

/// One span of interest of one rank's file: a compute action, a transfer or a step.
struct Span {
    double start = 0.0; ///< µs on the file's clock
    double end = 0.0;
    bool gpu = false;
    std::int64_t externalId = -1;
    std::string name; ///< the event's name
    bool compute = false; ///< else a transfer
    Action action;
    Comm comm = Comm::RecvF;
    int stage = 0;
    int microbatch = 0;
};

struct MemoryPoint {
    double ts = 0.0;
    std::int64_t totalAllocated = 0;
};

struct RankFile {
    std::filesystem::path path;
    std::string layout; ///< "kineto" or "legacy"
    int rank = -1;
    int worldSize = 0;
    std::optional<double> baseUs; ///< baseTimeNanoseconds / 1000 when the file has it
    std::string device; ///< deviceProperties[0].name
    std::string commBackend; ///< distributedInfo.backend
    std::vector<Span> steps; ///< ProfilerStep#N, by start
    std::vector<int> stepNumbers;
    std::vector<Span> spans; ///< CPU-side compute and transfer spans, by start
    std::vector<Span> gpuSpans; ///< gpu_user_annotation spans of the same names
    std::vector<MemoryPoint> memory; ///< [memory] Total Allocated, of the accelerator when it has any
    int otherPp = 0; ///< UNSHARD / RESHARD / REDUCE_GRAD spans, ignored
    std::set<std::string> unparsedPp; ///< PP: names that name no action
};

/// The largest rank a trace may name (distributedInfo, rank<N>), and the largest world size it may give: a
/// bigger number is a typo or a broken file, not a job.
inline constexpr int kMaxProfileRanks = 1 << 16;

/// Parses a file's text into its spans (strict JSON first; a bare array that is not valid JSON is
/// repaired as the legacy writer's output). Throws FormatError naming the file: unreadable JSON, not a
/// trace, no rank, a rank or time out of range.
RankFile readRankFile(const std::filesystem::path& path, const std::vector<ProfileNameMap>& maps);

/// "a, b, c and N more": the first `most` names, then how many are left.
std::string joinNames(const std::vector<std::string>& names, std::size_t most);

/// One rank's clock: its steps as [start, end) µs on its file's clock, the shift onto the common clock and
/// each step's origin on the common clock (the earliest start of that step on any rank).
struct RankClock {
    std::vector<std::pair<double, double>> ranges;
    double shift = 0.0;
    const std::vector<double>* origin = nullptr;
};

/// The schedule a trace is checked against (no check when `checked` is false).
struct ScheduleRow {
    bool checked = false;
    std::vector<Action> row; ///< the rank's slots
    std::string variant; ///< the variant's name, for messages
};

/// What the matching counted, for the importer's notes.
struct MatchCounts {
    int gpuTimed = 0; ///< compute actions timed by a GPU-side span
    int cpuTimed = 0; ///< … by the CPU-side span
    int unattributed = 0; ///< transfer spans that add nothing
    int outside = 0; ///< PP: spans outside every step
};

/// One rank's measured actions: its compute spans (timed by the GPU-side span where there is one) grouped
/// by step, checked against `schedule`, with each transfer's wait added to the slot that consumes (receive)
/// or made (send) its data. Appends each problem found to `problems` (a schedule mismatch once per rank).
MeasuredRank matchRank(int rank, const RankFile& file, const RankClock& clock, const ScheduleRow& schedule,
    MatchCounts& counts, std::vector<std::string>& problems);

} // namespace dps::kineto
