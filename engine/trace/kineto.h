#pragma once
// The PyTorch profiler importer: turns torch.profiler traces (Chrome/Kineto JSON, one file per rank, plain
// or gzipped) of a pipeline-parallel job into our measured trace (measured.h), so the overlay, calibrate,
// the runs history and the validated export treat it like a run of dpstudio-worker. The rules (which
// events, which clock, which rank, what counts as an error) are in docs/profile-import.md.
#include "trace/measured.h"

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace dps {

struct Project;
struct Variant;

/// One `--map REGEX=ACTION-TEMPLATE`: an event whose whole name matches `pattern` stands for the action
/// (or transfer) `templ` names after $1…$9 are replaced by the groups, e.g. `fwd_s(\d+)_mb(\d+)=$1F$2`.
struct ProfileNameMap {
    std::string pattern;
    std::string templ;
    std::regex regex;
};

/// Parses "REGEX=ACTION-TEMPLATE" (split at the last '=' not inside the regex's brackets: the last '='
/// of the text). Throws FormatError "--map 'TEXT': …" when there is no '=', either side is empty or the
/// regex does not compile.
ProfileNameMap parseProfileNameMap(const std::string& text);

struct ProfileImportOptions {
    /// The project and variant the job ran: every rank, step and action is checked against its schedule,
    /// and the measured trace records both (so calibrate and the validated export know the run). Null:
    /// no schedule check (ranks 0…N−1 from the files, every action the trace names).
    const Project* project = nullptr;
    const Variant* variant = nullptr;
    std::vector<ProfileNameMap> maps; ///< tried in order before the `PP:` names
    std::string command; ///< recorded as the measured trace's command (the import command line)
};

/// The imported run and what the importer wants the user to know (which spans timed the actions, how the
/// clocks were aligned, what it ignored).
struct ProfileImport {
    MeasuredTrace trace;
    std::vector<std::string> notes;
};

/// The trace files the arguments name, in order: a file as given, a folder's files ending in `.json` or
/// `.json.gz` (sorted by name, not recursive). Throws IoError "PATH: cannot read: no such file or folder"
/// and FormatError "FOLDER: no .json or .json.gz files" for a folder without traces.
std::vector<std::filesystem::path> profileFiles(const std::vector<std::string>& arguments);

/// A trace file's text: gunzipped when it starts with the gzip magic bytes (whatever its name). Throws
/// IoError when it cannot be read, FormatError "FILE: not a valid gzip file: <zlib's reason>" for a damaged
/// or truncated .gz (and for more than 4 GiB uncompressed).
std::string readProfileText(const std::filesystem::path& path);

/// Imports one trace file per rank. The rank of a file is distributedInfo.rank, else `rank<N>` in its
/// name (`rank3.json`, `trace_rank-3.pt.trace.json.gz`), else the file is refused. Throws FormatError
/// naming the file and the reason: unreadable JSON (truncated, not a trace), no rank, two files of one
/// rank, a missing rank, ranks with different step counts, a compute action twice in one step, an action
/// the schedule does not have on that rank, a schedule action missing from a step; every problem found is
/// listed, one per line. Nothing else is thrown for content. Times of the result are µs.
ProfileImport importProfiles(const std::vector<std::filesystem::path>& files, const ProfileImportOptions& options);

} // namespace dps
