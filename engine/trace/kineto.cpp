#include "kineto.h"

#include "base/errors.h"
#include "project/project.h"
#include "schedule/schedule.h"
#include "trace/kinetofile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

// Assembling the measured trace from the ranks' files: which files are which ranks, the steps, the common
// clock, each rank's matched actions (kinetomatch.cpp) and the notes on what was read.
namespace dps {

namespace fs = std::filesystem;

using namespace kineto;

namespace {

/// Throws one FormatError listing every problem (one per line when there are several).
[[noreturn]] void fail(const std::vector<std::string>& problems)
{
    std::string message = problems.size() == 1 ? problems[0] : "the traces cannot be imported:";
    if (problems.size() > 1)
        for (const std::string& p : problems)
            message += "\n  " + p;
    throw FormatError(message);
}

/// Reads every file; a file without a compute action is a problem. Throws the problems found.
std::vector<RankFile> readRankFiles(const std::vector<fs::path>& paths, const std::vector<ProfileNameMap>& maps)
{
    std::vector<std::string> problems;
    std::vector<RankFile> files;
    for (const fs::path& path : paths) {
        try {
            files.push_back(readRankFile(path, maps));
            const RankFile& f = files.back();
            if (std::none_of(f.spans.begin(), f.spans.end(), [](const Span& s) { return s.compute; }))
                throw FormatError(f.path.string() + ": no compute action: no PP:<action> span (e.g. PP:0F1) names one"
                    + (f.unparsedPp.empty() ? std::string()
                                            : " (PP: names that are not actions: " + *f.unparsedPp.begin() + ", …)")
                    + "; wrap each action in record_function(\"PP:<action>\"), or map other names with --map");
        } catch (const FormatError& e) {
            problems.push_back(e.what());
        }
    }
    if (!problems.empty())
        fail(problems);
    return files;
}

/// The files by rank, one each for ranks 0 … ranks−1 (the schedule's ranks when there is one, else the
/// largest rank or world size the files give). Throws every rank given twice, beyond the schedule or missing.
std::map<int, const RankFile*> filesByRank(const std::vector<RankFile>& files, const std::optional<Schedule>& schedule,
    const ProfileImportOptions& options, int& ranks)
{
    std::vector<std::string> problems;
    ranks = 0;
    for (const RankFile& f : files)
        ranks = std::max({ ranks, f.rank + 1, f.worldSize });
    if (schedule)
        ranks = schedule->ranks;
    std::map<int, const RankFile*> byRank;
    for (const RankFile& f : files) {
        if (const auto it = byRank.find(f.rank); it != byRank.end())
            problems.push_back(f.path.string() + ": rank " + std::to_string(f.rank) + " again (also "
                + it->second->path.string() + ")");
        else
            byRank[f.rank] = &f;
        if (schedule && f.rank >= schedule->ranks)
            problems.push_back(f.path.string() + ": rank " + std::to_string(f.rank) + ", but variant '"
                + options.variant->name + "' has " + std::to_string(schedule->ranks) + " ranks");
    }
    int missingRanks = 0;
    for (int r = 0; r < ranks; ++r)
        if (!byRank.count(r) && ++missingRanks <= 8)
            problems.push_back("rank " + std::to_string(r) + ": missing (no trace file of rank " + std::to_string(r)
                + " among the " + std::to_string(files.size()) + " given; " + std::to_string(ranks) + " ranks expected"
                + (schedule ? " by variant '" + options.variant->name + "'" : std::string()) + ")");
    if (missingRanks > 8)
        problems.push_back("and " + std::to_string(missingRanks - 8) + " more ranks missing");
    if (!problems.empty())
        fail(problems);
    return byRank;
}

/// Whether the ranks have ProfilerStep#N spans: all the same count, or none anywhere (the whole trace is one
/// step). Throws every rank that differs from the first.
bool checkStepSpans(const std::map<int, const RankFile*>& byRank)
{
    std::vector<std::string> problems;
    const RankFile& first = *byRank.begin()->second;
    const bool haveSteps = !first.steps.empty();
    for (const auto& [rank, f] : byRank) {
        if (f->steps.empty() != !haveSteps)
            problems.push_back(f->path.string() + ": "
                + (f->steps.empty() ? "no ProfilerStep#N spans" : "ProfilerStep#N spans") + ", but "
                + first.path.string() + (haveSteps ? " has them" : " has none"));
        else if (f->steps.size() != first.steps.size())
            problems.push_back(f->path.string() + ": " + std::to_string(f->steps.size()) + " ProfilerStep#N spans, but "
                + first.path.string() + " has " + std::to_string(first.steps.size()));
    }
    if (!problems.empty())
        fail(problems);
    return haveSteps;
}

/// Each rank's steps as [start, end) on its clock; without ProfilerStep spans its first to last PP span.
std::vector<std::pair<double, double>> stepRanges(const RankFile& f, bool haveSteps)
{
    std::vector<std::pair<double, double>> ranges;
    if (haveSteps) {
        for (const Span& s : f.steps)
            ranges.emplace_back(s.start, s.end);
        return ranges;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Span& s : f.spans) {
        lo = std::min(lo, s.start);
        hi = std::max(hi, s.end);
    }
    if (lo > hi)
        lo = hi = 0.0;
    ranges.emplace_back(lo, std::nextafter(hi, std::numeric_limits<double>::infinity()));
    return ranges;
}

/// The ranks' clocks on one common clock.
struct CommonClock {
    bool commonBase = true; ///< every file has baseTimeNanoseconds
    std::map<int, RankClock> ranks;
    std::vector<double> origin; ///< each step's earliest start on any rank (µs, common clock)
};

/// The clock: a common base when every file has one (Kineto's baseTimeNanoseconds), else each rank's clock
/// shifted so that its first step starts at 0.
void alignClocks(
    const std::map<int, const RankFile*>& byRank, bool haveSteps, std::size_t stepCount, CommonClock& clock)
{
    for (const auto& [rank, f] : byRank) {
        clock.ranks[rank].ranges = stepRanges(*f, haveSteps);
        clock.commonBase = clock.commonBase && f->baseUs.has_value();
    }
    for (const auto& [rank, f] : byRank)
        clock.ranks[rank].shift = clock.commonBase ? *f->baseUs : -clock.ranks[rank].ranges.front().first;
    if (clock.commonBase) {
        double least = std::numeric_limits<double>::infinity();
        for (const auto& [rank, c] : clock.ranks)
            least = std::min(least, c.shift);
        for (auto& [rank, c] : clock.ranks)
            c.shift -= least;
    }
    clock.origin.assign(stepCount, std::numeric_limits<double>::infinity());
    for (auto& [rank, c] : clock.ranks) {
        for (std::size_t k = 0; k < stepCount; ++k)
            clock.origin[k] = std::min(clock.origin[k], c.ranges[k].first + c.shift);
        c.origin = &clock.origin;
    }
}

/// What the files say about the run as a whole, for the notes.
struct FilesSummary {
    std::set<std::string> layouts;
    int otherPp = 0;
    int memoryRanks = 0;
    std::set<std::string> unparsed;
};

/// The trace's source, device, communication backend, compute backend and project; returns the summary.
FilesSummary describeSource(const std::map<int, const RankFile*>& byRank, const std::optional<Schedule>& schedule,
    const ProfileImportOptions& options, MeasuredTrace& trace)
{
    trace.formatVersion = 2;
    trace.command = options.command;
    trace.correctness.checked = false;
    trace.source.kind = "torch.profiler";
    FilesSummary summary;
    for (const auto& [rank, f] : byRank) {
        summary.layouts.insert(f->layout);
        trace.source.files.push_back(f->path.string());
        summary.otherPp += f->otherPp;
        summary.unparsed.insert(f->unparsedPp.begin(), f->unparsedPp.end());
        if (trace.device.empty())
            trace.device = f->device;
        if (trace.comm.empty())
            trace.comm = f->commBackend;
        summary.memoryRanks += f->memory.empty() ? 0 : 1;
    }
    trace.source.layout = summary.layouts.size() == 1 ? *summary.layouts.begin() : "kineto+legacy";
    trace.backend = trace.device.empty()
            && std::all_of(byRank.begin(), byRank.end(), [](const auto& kv) { return kv.second->gpuSpans.empty(); })
        ? "cpu"
        : "cuda";
    if (schedule) {
        trace.variant = options.variant->name;
        trace.projectJson = serializeProject(*options.project);
    }
    return summary;
}

/// The notes on the layout, timing, clock and steps, and sets the trace's timing and clock texts.
void layoutNotes(const FilesSummary& summary, const MatchCounts& counts, const CommonClock& clock, bool haveSteps,
    const RankFile& first, std::size_t stepCount, ProfileImport& result)
{
    MeasuredTrace& trace = result.trace;
    std::string layoutNote = "layout: " + trace.source.layout;
    if (summary.layouts.count("legacy"))
        layoutNote += " (legacy: torch without Kineto; names read tolerantly, times µs from each rank's start)";
    result.notes.push_back(layoutNote);
    trace.source.timing = counts.gpuTimed == 0 ? "cpu user annotations"
        : counts.cpuTimed == 0                 ? "gpu user annotations"
                                               : "gpu user annotations where present, else cpu";
    result.notes.push_back("timing: " + std::to_string(counts.gpuTimed) + " compute actions from GPU-side spans "
        + "(gpu_user_annotation), " + std::to_string(counts.cpuTimed) + " from CPU-side user annotations");
    trace.source.clock = clock.commonBase ? "common base (baseTimeNanoseconds)" : "aligned at the first step's start";
    result.notes.push_back("clock: " + trace.source.clock);
    const std::string firstName = first.path.filename().string();
    if (haveSteps) {
        result.notes.push_back(stepCount == 1
                ? "steps: ProfilerStep#" + std::to_string(first.stepNumbers.front()) + " of " + firstName + " as step 0"
                : "steps: ProfilerStep#" + std::to_string(first.stepNumbers.front()) + " … #"
                    + std::to_string(first.stepNumbers.back()) + " of " + firstName + " as steps 0 … "
                    + std::to_string(stepCount - 1));
    } else {
        result.notes.push_back("steps: no ProfilerStep#N spans: the whole trace is step 0");
    }
}

/// The notes on memory and on what was ignored.
void ignoredNotes(const FilesSummary& summary, const MatchCounts& counts, int ranks, ProfileImport& result)
{
    result.notes.push_back(summary.memoryRanks == 0 ? std::string("memory: no [memory] events (memory_bytes 0)")
                                                    : "memory: [memory] Total Allocated on "
                + std::to_string(summary.memoryRanks) + " of " + std::to_string(ranks) + " ranks");
    if (counts.outside > 0)
        result.notes.push_back("ignored " + std::to_string(counts.outside) + " PP: spans outside the profiled steps");
    if (counts.unattributed > 0)
        result.notes.push_back(std::to_string(counts.unattributed)
            + " transfer spans add nothing: not in the gap before (receive) or after (send) their action, or no "
              "action of theirs in the step");
    if (summary.otherPp > 0)
        result.notes.push_back("ignored " + std::to_string(summary.otherPp) + " UNSHARD/RESHARD/REDUCE_GRAD spans");
    if (!summary.unparsed.empty())
        result.notes.push_back("ignored PP: spans that name no action: "
            + joinNames(std::vector<std::string>(summary.unparsed.begin(), summary.unparsed.end()), 5));
    result.notes.push_back("bytes: the traces carry no message sizes (bytes_sent/bytes_received 0)");
}

} // namespace

ProfileImport importProfiles(const std::vector<fs::path>& paths, const ProfileImportOptions& options)
{
    if (paths.empty())
        throw FormatError("import-trace: no trace files");
    const std::vector<RankFile> files = readRankFiles(paths, options.maps);
    std::optional<Schedule> schedule;
    if (options.project && options.variant)
        schedule = buildSchedule(*options.project, *options.variant);
    int ranks = 0;
    const std::map<int, const RankFile*> byRank = filesByRank(files, schedule, options, ranks);
    const RankFile& first = *byRank.begin()->second;
    const bool haveSteps = checkStepSpans(byRank);
    const std::size_t stepCount = haveSteps ? first.steps.size() : 1;
    CommonClock clock;
    alignClocks(byRank, haveSteps, stepCount, clock);

    ProfileImport result;
    const FilesSummary summary = describeSource(byRank, schedule, options, result.trace);
    MatchCounts counts;
    std::vector<std::string> problems;
    for (const auto& [rank, f] : byRank) {
        ScheduleRow row;
        row.checked = schedule.has_value();
        if (schedule) {
            row.variant = options.variant->name;
            if (rank < schedule->ranks)
                row.row = schedule->order[static_cast<std::size_t>(rank)];
        }
        result.trace.ranks.push_back(matchRank(rank, *f, clock.ranks.at(rank), row, counts, problems));
    }
    if (!problems.empty())
        fail(problems);
    setStepsFromActions(result.trace);
    layoutNotes(summary, counts, clock, haveSteps, first, stepCount, result);
    ignoredNotes(summary, counts, ranks, result);
    return result;
}

} // namespace dps
