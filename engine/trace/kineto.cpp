#include "kineto.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "base/format.h"
#include "base/json.h"
#include "project/project.h"
#include "schedule/schedule.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace dps {

namespace fs = std::filesystem;

namespace {

using json = nlohmann::json;

/// The part of a PyTorch pipeline runtime's `PP:` names that is a transfer: `<stage><SEND_F|RECV_F|SEND_B|
/// RECV_B><microbatch>` (torch.distributed.pipelining's _Action text of a communication action).
const std::regex kCommName(R"(^(\d+)(SEND_F|RECV_F|SEND_B|RECV_B)(\d+)$)");
/// The runtime's sharding and gradient actions, recognised and ignored (no place in our measured format).
const std::regex kOtherPpName(R"(^(\d+)(UNSHARD|RESHARD|REDUCE_GRAD)(\d*)$)");
/// `rank<N>` in a file name (rank3.json, trace_rank-3.pt.trace.json.gz).
const std::regex kRankInName(R"(rank[-_]?(\d+))", std::regex::icase);
const std::regex kProfilerStep(R"(^ProfilerStep#(\d+)$)");

constexpr std::size_t kMaxInflatedBytes = std::size_t { 4 } << 30;
/// The largest rank a trace may name (distributedInfo, rank<N>), and the largest world size it may give: a
/// bigger number is a typo or a broken file, not a job.
constexpr int kMaxProfileRanks = 1 << 16;

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
    fs::path path;
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

std::string fileName(const fs::path& path)
{
    return path.filename().string();
}

/// The legacy writer (torch.autograd.profiler's export_chrome_trace without Kineto) puts names between
/// quotes without escaping them. Repairs such text: inside a string a backslash is literal, and a quote
/// closes the string only when the next non-blank character is `,` `:` `}` or `]`; control characters are
/// escaped. Valid JSON without backslashes in strings comes out unchanged.
std::string repairLegacyJson(const std::string& text)
{
    std::string out;
    out.reserve(text.size() + text.size() / 64);
    bool inString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (!inString) {
            out += c;
            inString = c == '"';
            continue;
        }
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            std::size_t j = i + 1;
            while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j])))
                ++j;
            if (j == text.size() || text[j] == ',' || text[j] == ':' || text[j] == '}' || text[j] == ']') {
                out += '"';
                inString = false;
            } else {
                out += "\\\"";
            }
        } else if (static_cast<unsigned char>(c) < 0x20) {
            static const char* hex = "0123456789abcdef";
            out += "\\u00";
            out += hex[(c >> 4) & 0xf];
            out += hex[c & 0xf];
        } else {
            out += c;
        }
    }
    return out;
}

double numberOr(const json& object, const char* key, double fallback)
{
    const auto it = object.find(key);
    if (it == object.end())
        return fallback;
    if (it->is_number())
        return it->get<double>();
    if (it->is_string()) { // some writers quote numbers
        try {
            std::size_t used = 0;
            const double v = std::stod(it->get<std::string>(), &used);
            return used > 0 ? v : fallback;
        } catch (const std::exception&) {
            return fallback;
        }
    }
    return fallback;
}

/// What an event's name stands for.
struct Named {
    enum class What { Nothing, Compute, Comm, OtherPp, UnparsedPp } what = What::Nothing;
    Action action;
    Comm comm = Comm::RecvF;
    int stage = 0;
    int microbatch = 0;
};

Named classifyText(const std::string& text)
{
    Named n;
    std::smatch m;
    if (std::regex_match(text, m, kCommName)) {
        n.what = Named::What::Comm;
        n.stage = std::stoi(m[1].str());
        n.microbatch = std::stoi(m[3].str());
        const std::string kind = m[2].str();
        n.comm = kind == "RECV_F" ? Comm::RecvF
            : kind == "SEND_F"    ? Comm::SendF
            : kind == "RECV_B"    ? Comm::RecvB
                                  : Comm::SendB;
        return n;
    }
    if (std::regex_match(text, kOtherPpName)) {
        n.what = Named::What::OtherPp;
        return n;
    }
    try {
        n.action = parseAction(text);
        n.what = Named::What::Compute;
    } catch (const Error&) {
        n.what = Named::What::UnparsedPp;
    }
    return n;
}

Named classify(const std::string& name, const std::vector<ProfileNameMap>& maps)
{
    for (const ProfileNameMap& map : maps) {
        std::smatch m;
        if (std::regex_match(name, m, map.regex)) {
            const std::string text = m.format(map.templ);
            const Named n = classifyText(text);
            if (n.what == Named::What::UnparsedPp)
                throw FormatError("--map '" + map.pattern + "=" + map.templ + "': event \"" + name + "\" becomes \""
                    + text + "\", which is not an action (e.g. 0F1, 3I2, 1W0, 2B5, (0F7;7B3)OVERLAP_F_B)");
            return n;
        }
    }
    if (name.size() > 3 && name.compare(0, 3, "PP:") == 0)
        return classifyText(name.substr(3));
    return {};
}

/// Parses a file's text into its spans (strict JSON first; a bare array that is not valid JSON is
/// repaired as the legacy writer's output, repairLegacyJson).
RankFile readRankFile(const fs::path& path, const std::vector<ProfileNameMap>& maps)
{
    const std::string source = path.string();
    const std::string text = readProfileText(path);
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        throw FormatError(source + ": empty file, not a profiler trace");
    json root;
    try {
        root = parseJson<json>(text, source);
    } catch (const FormatError& strict) {
        if (text[first] != '[')
            throw;
        try {
            root = parseJson<json>(repairLegacyJson(text), source);
        } catch (const FormatError&) {
            throw strict; // truncated or otherwise broken: the strict parser's reason
        }
    }
    RankFile file;
    file.path = path;
    const json* events = nullptr;
    if (root.is_array()) {
        file.layout = "legacy";
        events = &root;
    } else if (root.is_object() && root.contains("traceEvents") && root["traceEvents"].is_array()) {
        file.layout = "kineto";
        events = &root["traceEvents"];
        if (const auto d = root.find("distributedInfo"); d != root.end() && d->is_object()) {
            if (const auto r = d->find("rank"); r != d->end() && r->is_number_integer()) {
                const std::int64_t rank = r->get<std::int64_t>();
                if (rank < 0 || rank >= kMaxProfileRanks)
                    throw FormatError(source + ": distributedInfo.rank " + std::to_string(rank) + " is outside [0, "
                        + std::to_string(kMaxProfileRanks) + ")");
                file.rank = static_cast<int>(rank);
            }
            if (const auto w = d->find("world_size"); w != d->end() && w->is_number_integer()
                && w->get<std::int64_t>() > 0 && w->get<std::int64_t>() < std::numeric_limits<int>::max())
                file.worldSize = static_cast<int>(w->get<std::int64_t>());
            if (const auto b = d->find("backend"); b != d->end() && b->is_string())
                file.commBackend = b->get<std::string>();
        }
        if (const auto b = root.find("baseTimeNanoseconds"); b != root.end() && b->is_number())
            file.baseUs = b->get<double>() / 1000.0;
        if (const auto p = root.find("deviceProperties"); p != root.end() && p->is_array() && !p->empty()
            && (*p)[0].is_object() && (*p)[0].contains("name") && (*p)[0]["name"].is_string())
            file.device = (*p)[0]["name"].get<std::string>();
    } else {
        throw FormatError(source
            + ": not a profiler trace: neither an object with traceEvents (Kineto) nor an "
              "array of events (the legacy layout)");
    }
    if (file.worldSize > kMaxProfileRanks)
        file.worldSize = 0; // not a job's size: ignored (the ranks found count instead)
    if (file.rank < 0) {
        const std::string name = fileName(path);
        std::smatch m;
        if (std::regex_search(name, m, kRankInName) && m[1].length() < 9)
            file.rank = std::stoi(m[1].str());
        else
            throw FormatError(source
                + ": no rank: the trace has no distributedInfo.rank and its name has no "
                  "rank<N> (rename it, e.g. rank0.json)");
    }
    if (file.rank >= kMaxProfileRanks)
        throw FormatError(source + ": rank " + std::to_string(file.rank) + ": more than the "
            + std::to_string(kMaxProfileRanks) + " ranks the importer takes");
    std::vector<MemoryPoint> cpuMemory, deviceMemory;
    for (const json& e : *events) {
        if (!e.is_object())
            continue;
        const auto nameIt = e.find("name");
        if (nameIt == e.end() || !nameIt->is_string())
            continue;
        const std::string& name = nameIt->get_ref<const std::string&>();
        const std::string ph = e.value("ph", std::string());
        if (name == "[memory]" && (ph == "i" || ph == "I")) {
            const auto args = e.find("args");
            if (args == e.end() || !args->is_object() || !args->contains("Total Allocated"))
                continue;
            const double total = numberOr(*args, "Total Allocated", -1.0);
            if (total < 0)
                continue;
            const MemoryPoint point { numberOr(e, "ts", 0.0), static_cast<std::int64_t>(total) };
            (numberOr(*args, "Device Type", 0.0) != 0.0 ? deviceMemory : cpuMemory).push_back(point);
            continue;
        }
        if (ph != "X")
            continue;
        // Most events are operators: decide by the name first, before anything is copied.
        const bool stepName = name.compare(0, 13, "ProfilerStep#") == 0;
        const Named n = stepName ? Named {} : classify(name, maps);
        if (n.what == Named::What::OtherPp) {
            ++file.otherPp;
            continue;
        }
        if (n.what == Named::What::UnparsedPp) {
            file.unparsedPp.insert(name);
            continue;
        }
        if (!stepName && n.what == Named::What::Nothing)
            continue;
        const double ts = numberOr(e, "ts", std::numeric_limits<double>::quiet_NaN());
        const double dur = numberOr(e, "dur", std::numeric_limits<double>::quiet_NaN());
        if (!(ts == ts) || !(dur == dur) || dur < 0)
            continue;
        // A span's times must stay exact numbers through the run's arithmetic (µs; 2^53 µs ≈ 285 years).
        constexpr double kMaxUs = 9007199254740992.0;
        if (!(std::fabs(ts) < kMaxUs) || !(dur < kMaxUs) || !(std::fabs(ts + dur) < kMaxUs))
            throw FormatError(source + ": event \"" + name + "\": ts " + std::to_string(ts) + " µs and dur "
                + std::to_string(dur) + " µs are beyond 2^53 µs (the largest exact time)");
        Span span;
        span.start = ts;
        span.end = ts + dur;
        span.gpu = e.value("cat", std::string()) == "gpu_user_annotation";
        span.name = name;
        if (const auto args = e.find("args"); args != e.end() && args->is_object())
            if (const auto id = args->find("External id"); id != args->end() && id->is_number_integer())
                span.externalId = id->get<std::int64_t>();
        if (stepName) {
            std::smatch m;
            if (!span.gpu && std::regex_match(name, m, kProfilerStep)) {
                file.stepNumbers.push_back(m[1].length() < 9 ? std::stoi(m[1].str()) : -1);
                file.steps.push_back(std::move(span));
            }
            continue;
        }
        if (n.what == Named::What::Compute) {
            span.compute = true;
            span.action = n.action;
        } else {
            span.comm = n.comm;
            span.stage = n.stage;
            span.microbatch = n.microbatch;
        }
        (span.gpu ? file.gpuSpans : file.spans).push_back(std::move(span));
    }
    file.memory = deviceMemory.empty() ? std::move(cpuMemory) : std::move(deviceMemory);
    const auto byStart = [](const Span& a, const Span& b) { return a.start < b.start; };
    std::vector<std::size_t> order(file.steps.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(),
        [&](std::size_t a, std::size_t b) { return byStart(file.steps[a], file.steps[b]); });
    std::vector<Span> steps;
    std::vector<int> numbers;
    for (std::size_t i : order) {
        steps.push_back(file.steps[i]);
        numbers.push_back(file.stepNumbers[i]);
    }
    file.steps = std::move(steps);
    file.stepNumbers = std::move(numbers);
    std::stable_sort(file.spans.begin(), file.spans.end(), byStart);
    std::stable_sort(file.gpuSpans.begin(), file.gpuSpans.end(), byStart);
    std::stable_sort(
        file.memory.begin(), file.memory.end(), [](const MemoryPoint& a, const MemoryPoint& b) { return a.ts < b.ts; });
    return file;
}

/// A compute slot of one rank in one step, on the file's clock.
struct Slot {
    Action action;
    double computeStart = 0.0;
    double computeEnd = 0.0;
    double computeUs = 0.0;
    bool gpu = false;
};

/// Length of the union of two intervals (µs).
double unionLength(double a0, double a1, double b0, double b1)
{
    if (b0 > a1 || a0 > b1)
        return (a1 - a0) + (b1 - b0);
    return std::max(a1, b1) - std::min(a0, b0);
}

bool consumes(const Action& action, Comm comm, int stage, int microbatch)
{
    for (int i = 0; i < action.size(); ++i) {
        const Op& op = action.at(i);
        if (op.stage != stage || op.microbatch != microbatch)
            continue;
        const bool forward = op.kind == OpKind::F;
        const bool backward = op.kind == OpKind::B || op.kind == OpKind::I;
        if ((comm == Comm::RecvF || comm == Comm::SendF) ? forward : backward)
            return true;
    }
    return false;
}

std::int64_t memoryDuring(const std::vector<MemoryPoint>& memory, double start, double end)
{
    std::int64_t value = 0;
    auto it = std::upper_bound(
        memory.begin(), memory.end(), start, [](double t, const MemoryPoint& p) { return t < p.ts; });
    if (it != memory.begin())
        value = std::prev(it)->totalAllocated;
    for (; it != memory.end() && it->ts <= end; ++it)
        value = std::max(value, it->totalAllocated);
    return value;
}

std::string joinNames(const std::vector<std::string>& names, std::size_t most)
{
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < most; ++i)
        out += (i ? ", " : "") + names[i];
    if (names.size() > most)
        out += " and " + std::to_string(names.size() - most) + " more";
    return out;
}

} // namespace

ProfileNameMap parseProfileNameMap(const std::string& text)
{
    const auto eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
        throw FormatError("--map '" + text + "': must be REGEX=ACTION-TEMPLATE, e.g. 'fwd_s(\\d+)_mb(\\d+)=$1F$2'");
    ProfileNameMap map;
    map.pattern = text.substr(0, eq);
    map.templ = text.substr(eq + 1);
    try {
        map.regex = std::regex(map.pattern);
    } catch (const std::regex_error& e) {
        throw FormatError("--map '" + text + "': the regex does not compile: " + e.what());
    }
    // $N in the template must name one of the regex's groups.
    for (std::size_t i = 0; i + 1 < map.templ.size(); ++i)
        if (map.templ[i] == '$' && std::isdigit(static_cast<unsigned char>(map.templ[i + 1]))) {
            const unsigned group = static_cast<unsigned>(map.templ[i + 1] - '0');
            if (group > map.regex.mark_count())
                throw FormatError("--map '" + text + "': the template names group $" + std::to_string(group)
                    + " but the regex has " + std::to_string(map.regex.mark_count()));
        }
    return map;
}

std::vector<fs::path> profileFiles(const std::vector<std::string>& arguments)
{
    std::vector<fs::path> files;
    for (const std::string& argument : arguments) {
        const fs::path path(argument);
        std::error_code ec;
        if (fs::is_directory(path, ec)) {
            std::vector<fs::path> inFolder;
            for (const auto& entry : fs::directory_iterator(path, ec)) {
                const std::string name = entry.path().filename().string();
                const auto endsWith = [&name](const std::string& tail) {
                    return name.size() >= tail.size()
                        && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
                };
                if (entry.is_regular_file() && (endsWith(".json") || endsWith(".json.gz")))
                    inFolder.push_back(entry.path());
            }
            if (ec)
                throw IoError(argument + ": cannot read: " + ec.message());
            if (inFolder.empty())
                throw FormatError(argument + ": no .json or .json.gz files");
            std::sort(inFolder.begin(), inFolder.end());
            files.insert(files.end(), inFolder.begin(), inFolder.end());
        } else if (fs::exists(path, ec)) {
            files.push_back(path);
        } else {
            throw IoError(argument + ": cannot read: no such file or folder");
        }
    }
    return files;
}

std::string readProfileText(const fs::path& path)
{
    std::string bytes = readTextFile(path);
    if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f
        || static_cast<unsigned char>(bytes[1]) != 0x8b)
        return bytes;
    z_stream z {};
    if (inflateInit2(&z, 15 + 32) != Z_OK) // 15 + 32: a gzip or zlib header, detected
        throw FormatError(path.string() + ": not a valid gzip file: zlib cannot start");
    std::string out;
    char buffer[1 << 16];
    z.next_in = reinterpret_cast<Bytef*>(bytes.data());
    z.avail_in = static_cast<uInt>(std::min<std::size_t>(bytes.size(), std::numeric_limits<uInt>::max()));
    std::size_t consumed = 0;
    int rc = Z_OK;
    for (;;) {
        z.next_out = reinterpret_cast<Bytef*>(buffer);
        z.avail_out = sizeof buffer;
        rc = inflate(&z, Z_NO_FLUSH);
        out.append(buffer, sizeof buffer - z.avail_out);
        if (out.size() > kMaxInflatedBytes) {
            inflateEnd(&z);
            throw FormatError(path.string() + ": not a valid gzip file: more than 4 GiB uncompressed");
        }
        if (rc == Z_STREAM_END) {
            // Another gzip member may follow (concatenated .gz files are one file).
            consumed = static_cast<std::size_t>(reinterpret_cast<char*>(z.next_in) - bytes.data());
            if (consumed >= bytes.size())
                break;
            inflateReset(&z);
            z.avail_in
                = static_cast<uInt>(std::min<std::size_t>(bytes.size() - consumed, std::numeric_limits<uInt>::max()));
            continue;
        }
        if (rc != Z_OK) {
            const std::string why = rc == Z_BUF_ERROR ? "truncated" : (z.msg ? z.msg : "damaged");
            inflateEnd(&z);
            throw FormatError(path.string() + ": not a valid gzip file: " + why);
        }
        if (z.avail_in == 0) {
            consumed = static_cast<std::size_t>(reinterpret_cast<char*>(z.next_in) - bytes.data());
            if (consumed >= bytes.size() && z.avail_out != 0) {
                inflateEnd(&z);
                throw FormatError(path.string() + ": not a valid gzip file: truncated");
            }
            z.avail_in
                = static_cast<uInt>(std::min<std::size_t>(bytes.size() - consumed, std::numeric_limits<uInt>::max()));
        }
    }
    inflateEnd(&z);
    return out;
}

ProfileImport importProfiles(const std::vector<fs::path>& paths, const ProfileImportOptions& options)
{
    if (paths.empty())
        throw FormatError("import-trace: no trace files");
    std::vector<std::string> problems;
    std::vector<RankFile> files;
    for (const fs::path& path : paths) {
        try {
            files.push_back(readRankFile(path, options.maps));
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
    const auto fail = [&problems]() {
        std::string message = problems.size() == 1 ? problems[0] : "the traces cannot be imported:";
        if (problems.size() > 1)
            for (const std::string& p : problems)
                message += "\n  " + p;
        throw FormatError(message);
    };
    if (!problems.empty())
        fail();

    // Ranks: one file each, 0 … N−1.
    std::optional<Schedule> schedule;
    if (options.project && options.variant)
        schedule = buildSchedule(*options.project, *options.variant);
    int ranks = 0;
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
        fail();

    // Steps: ProfilerStep#N spans, the same count on every rank; none anywhere = the whole trace is one step.
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
        fail();
    const std::size_t stepCount = haveSteps ? first.steps.size() : 1;

    // Each rank's steps as [start, end) on its clock; without ProfilerStep spans its first to last PP span.
    std::map<int, std::vector<std::pair<double, double>>> stepRanges;
    for (const auto& [rank, f] : byRank) {
        auto& ranges = stepRanges[rank];
        if (haveSteps) {
            for (const Span& s : f->steps)
                ranges.emplace_back(s.start, s.end);
        } else {
            double lo = std::numeric_limits<double>::infinity(), hi = -lo;
            for (const Span& s : f->spans) {
                lo = std::min(lo, s.start);
                hi = std::max(hi, s.end);
            }
            if (lo > hi)
                lo = hi = 0.0;
            ranges.emplace_back(lo, std::nextafter(hi, std::numeric_limits<double>::infinity()));
        }
    }

    // The clock: a common base when every file has one (Kineto's baseTimeNanoseconds), else each rank's clock
    // shifted so that its first step starts at 0.
    bool commonBase = true;
    for (const auto& [rank, f] : byRank)
        commonBase = commonBase && f->baseUs.has_value();
    std::map<int, double> shift;
    for (const auto& [rank, f] : byRank)
        shift[rank] = commonBase ? *f->baseUs : -stepRanges[rank].front().first;
    if (commonBase) {
        double least = std::numeric_limits<double>::infinity();
        for (const auto& [rank, s] : shift)
            least = std::min(least, s);
        for (auto& [rank, s] : shift)
            s -= least;
    }
    std::vector<double> origin(stepCount, std::numeric_limits<double>::infinity());
    for (const auto& [rank, ranges] : stepRanges)
        for (std::size_t k = 0; k < stepCount; ++k)
            origin[k] = std::min(origin[k], ranges[k].first + shift[rank]);

    MeasuredTrace trace;
    trace.formatVersion = 2;
    trace.command = options.command;
    trace.correctness.checked = false;
    trace.source.kind = "torch.profiler";
    std::set<std::string> layouts;
    int gpuTimed = 0, cpuTimed = 0, unattributed = 0, outside = 0, otherPp = 0, memoryRanks = 0;
    std::set<std::string> unparsed;
    for (const auto& [rank, f] : byRank) {
        layouts.insert(f->layout);
        trace.source.files.push_back(f->path.string());
        otherPp += f->otherPp;
        unparsed.insert(f->unparsedPp.begin(), f->unparsedPp.end());
        if (trace.device.empty())
            trace.device = f->device;
        if (trace.comm.empty())
            trace.comm = f->commBackend;
        memoryRanks += f->memory.empty() ? 0 : 1;
    }
    trace.source.layout = layouts.size() == 1 ? *layouts.begin() : "kineto+legacy";
    trace.backend = trace.device.empty()
            && std::all_of(byRank.begin(), byRank.end(), [](const auto& kv) { return kv.second->gpuSpans.empty(); })
        ? "cpu"
        : "cuda";
    if (schedule) {
        trace.variant = options.variant->name;
        trace.projectJson = serializeProject(*options.project);
    }

    for (const auto& [rank, f] : byRank) {
        const auto& ranges = stepRanges[rank];
        const auto stepOf = [&ranges](double t) -> int {
            for (std::size_t k = 0; k < ranges.size(); ++k)
                if (t >= ranges[k].first && t < ranges[k].second)
                    return static_cast<int>(k);
            return -1;
        };
        // GPU-side spans by External id, else by name and occurrence.
        // (An annotation whose work ran on several streams has one GPU-side span per stream, same External id.)
        std::map<std::int64_t, std::vector<const Span*>> gpuById;
        std::map<std::string, std::vector<const Span*>> gpuByName;
        for (const Span& g : f->gpuSpans) {
            if (g.externalId >= 0)
                gpuById[g.externalId].push_back(&g);
            gpuByName[g.name].push_back(&g);
        }
        std::map<std::string, std::size_t> seenName;
        // Per step: slots and transfers, timed by the GPU span where there is one.
        std::vector<std::vector<Slot>> slots(stepCount);
        std::vector<std::vector<Span>> comms(stepCount);
        for (const Span& s : f->spans) {
            const int step = stepOf(s.start);
            const std::size_t occurrence = seenName[s.name]++;
            if (step < 0) {
                ++outside;
                continue;
            }
            std::vector<std::pair<double, double>> gpu;
            if (s.externalId >= 0)
                if (const auto it = gpuById.find(s.externalId); it != gpuById.end())
                    for (const Span* g : it->second)
                        if (g->name == s.name)
                            gpu.emplace_back(g->start, g->end);
            if (gpu.empty())
                if (const auto it = gpuByName.find(s.name); it != gpuByName.end() && occurrence < it->second.size()
                    && (s.externalId < 0 || it->second[occurrence]->externalId < 0))
                    gpu.emplace_back(it->second[occurrence]->start, it->second[occurrence]->end);
            Span timed = s;
            double busy = s.end - s.start;
            if (!gpu.empty()) { // from the first start to the last end; busy = the union of the spans
                std::sort(gpu.begin(), gpu.end());
                timed.start = gpu.front().first;
                timed.end = timed.start;
                busy = 0.0;
                for (const auto& [a, b] : gpu) {
                    busy += std::max(0.0, b - std::max(a, timed.end));
                    timed.end = std::max(timed.end, b);
                }
            }
            if (s.compute) {
                slots[static_cast<std::size_t>(step)].push_back(
                    { s.action, timed.start, timed.end, busy, !gpu.empty() });
                (gpu.empty() ? cpuTimed : gpuTimed) += 1;
            } else {
                comms[static_cast<std::size_t>(step)].push_back(timed);
            }
        }
        // The schedule's slots of this rank, for overlapped pairs the trace shows as two spans.
        std::vector<Action> row;
        if (schedule && rank < schedule->ranks)
            row = schedule->order[static_cast<std::size_t>(rank)];
        MeasuredRank measured;
        measured.rank = rank;
        // A schedule mismatch is reported once per rank, at its first step, naming the other steps it repeats in.
        std::map<std::string, std::pair<std::size_t, std::vector<std::size_t>>> reported;
        const auto reportOnce = [&](const std::string& where, std::size_t step, const std::string& what) {
            if (const auto it = reported.find(what); it != reported.end()) {
                it->second.second.push_back(step);
                return;
            }
            reported[what] = { problems.size(), {} };
            problems.push_back(where + ": " + what);
        };
        for (std::size_t k = 0; k < stepCount; ++k) {
            auto& list = slots[k];
            std::stable_sort(
                list.begin(), list.end(), [](const Slot& a, const Slot& b) { return a.computeStart < b.computeStart; });
            const std::string where
                = f->path.string() + " (rank " + std::to_string(rank) + "), step " + std::to_string(k);
            // A compute action twice in a step.
            std::map<std::string, std::vector<double>> seen;
            for (const Slot& s : list)
                seen[toString(s.action)].push_back(s.computeStart);
            bool duplicated = false;
            for (const auto& [text, starts] : seen)
                if (starts.size() > 1) {
                    duplicated = true;
                    std::string at;
                    for (double t : starts)
                        at += (at.empty() ? "" : ", ") + formatTime(t + shift[rank] - origin[k]);
                    problems.push_back(where + ": compute action " + text + " appears " + std::to_string(starts.size())
                        + " times (at " + at + ")");
                }
            if (duplicated)
                continue;
            if (schedule) {
                // An overlapped slot of the schedule shown as its two halves: one slot.
                for (const Action& a : row) {
                    if (!a.overlapped || seen.count(toString(a)))
                        continue;
                    const std::string f0 = toString(Action::single(a.op)), b0 = toString(Action::single(a.backward));
                    const auto fi = std::find_if(
                        list.begin(), list.end(), [&](const Slot& s) { return toString(s.action) == f0; });
                    const auto bi = std::find_if(
                        list.begin(), list.end(), [&](const Slot& s) { return toString(s.action) == b0; });
                    if (fi == list.end() || bi == list.end())
                        continue;
                    Slot merged { a, std::min(fi->computeStart, bi->computeStart),
                        std::max(fi->computeEnd, bi->computeEnd),
                        unionLength(fi->computeStart, fi->computeEnd, bi->computeStart, bi->computeEnd),
                        fi->gpu || bi->gpu };
                    list.erase(std::max(fi, bi));
                    list.erase(std::min(fi, bi));
                    list.insert(std::upper_bound(list.begin(), list.end(), merged,
                                    [](const Slot& x, const Slot& y) { return x.computeStart < y.computeStart; }),
                        merged);
                }
                std::set<std::string> expected, found;
                for (const Action& a : row)
                    expected.insert(toString(a));
                std::vector<std::string> strangers, missing;
                for (const Slot& s : list) {
                    found.insert(toString(s.action));
                    if (!expected.count(toString(s.action)))
                        strangers.push_back(toString(s.action));
                }
                for (const Action& a : row)
                    if (!found.count(toString(a)))
                        missing.push_back(toString(a));
                if (!strangers.empty())
                    reportOnce(where, k,
                        joinNames(strangers, 8) + (strangers.size() == 1 ? " is" : " are")
                            + " not in the schedule of rank " + std::to_string(rank) + " (variant '"
                            + options.variant->name + "')");
                if (!missing.empty())
                    reportOnce(where, k,
                        joinNames(missing, 8) + " of the schedule " + (missing.size() == 1 ? "is" : "are")
                            + " missing from the trace");
                if (!strangers.empty() || !missing.empty())
                    continue;
            }
            // Transfers: a receive belongs to the slot that consumes it, a send to the slot that made the data;
            // each counts only inside the gap before (receive) or after (send) its slot's compute.
            std::vector<double> waits(list.size(), 0.0), starts(list.size()), ends(list.size());
            std::vector<std::vector<std::pair<double, double>>> received(list.size());
            for (std::size_t i = 0; i < list.size(); ++i) {
                starts[i] = list[i].computeStart;
                ends[i] = list[i].computeEnd;
            }
            for (const Span& c : comms[k]) {
                std::size_t owner = list.size();
                for (std::size_t i = 0; i < list.size() && owner == list.size(); ++i)
                    if (consumes(list[i].action, c.comm, c.stage, c.microbatch))
                        owner = i;
                if (owner == list.size()) {
                    ++unattributed;
                    continue;
                }
                const bool receive = c.comm == Comm::RecvF || c.comm == Comm::RecvB;
                if (receive) {
                    const double lo
                        = owner == 0 ? -std::numeric_limits<double>::infinity() : list[owner - 1].computeEnd;
                    const double a = std::max(c.start, lo), b = std::min(c.end, list[owner].computeStart);
                    if (b > a) {
                        received[owner].emplace_back(a, b);
                        starts[owner] = std::min(starts[owner], a);
                    } else {
                        ++unattributed;
                    }
                } else {
                    const double hi = owner + 1 == list.size() ? std::numeric_limits<double>::infinity()
                                                               : list[owner + 1].computeStart;
                    const double a = std::max(c.start, list[owner].computeEnd), b = std::min(c.end, hi);
                    if (b >= a && c.end > list[owner].computeEnd - 1e-9)
                        ends[owner] = std::max(ends[owner], b);
                    else
                        ++unattributed;
                }
            }
            for (std::size_t i = 0; i < list.size(); ++i) { // the union: receives may run side by side
                std::sort(received[i].begin(), received[i].end());
                double reach = -std::numeric_limits<double>::infinity();
                for (const auto& [a, b] : received[i]) {
                    waits[i] += std::max(0.0, b - std::max(a, reach));
                    reach = std::max(reach, b);
                }
            }
            for (std::size_t i = 0; i < list.size(); ++i) {
                MeasuredAction a;
                a.action = list[i].action;
                a.step = static_cast<int>(k);
                const double base = shift[rank] - origin[k];
                a.startUs = starts[i] + base;
                a.endUs = ends[i] + base;
                a.waitUs = waits[i];
                a.computeUs = list[i].computeUs;
                a.memoryBytes = memoryDuring(f->memory, starts[i], ends[i]);
                measured.actions.push_back(a);
            }
        }
        for (const auto& [what, at] : reported) {
            if (at.second.empty())
                continue;
            std::string steps;
            for (std::size_t step : at.second)
                steps += (steps.empty() ? "" : ", ") + std::to_string(step);
            problems[at.first] += " (the same in step" + std::string(at.second.size() == 1 ? " " : "s ") + steps + ")";
        }
        trace.ranks.push_back(std::move(measured));
    }
    if (!problems.empty())
        fail();
    setStepsFromActions(trace);

    ProfileImport result;
    std::string layoutNote = "layout: " + trace.source.layout;
    if (layouts.count("legacy"))
        layoutNote += " (legacy: torch without Kineto; names read tolerantly, times µs from each rank's start)";
    result.notes.push_back(layoutNote);
    trace.source.timing = gpuTimed == 0 ? "cpu user annotations"
        : cpuTimed == 0                 ? "gpu user annotations"
                                        : "gpu user annotations where present, else cpu";
    result.notes.push_back("timing: " + std::to_string(gpuTimed) + " compute actions from GPU-side spans "
        + "(gpu_user_annotation), " + std::to_string(cpuTimed) + " from CPU-side user annotations");
    trace.source.clock = commonBase ? "common base (baseTimeNanoseconds)" : "aligned at the first step's start";
    result.notes.push_back("clock: " + trace.source.clock);
    if (haveSteps) {
        result.notes.push_back(stepCount == 1 ? "steps: ProfilerStep#" + std::to_string(first.stepNumbers.front())
                    + " of " + fileName(first.path) + " as step 0"
                                              : "steps: ProfilerStep#" + std::to_string(first.stepNumbers.front())
                    + " … #" + std::to_string(first.stepNumbers.back()) + " of " + fileName(first.path)
                    + " as steps 0 … " + std::to_string(stepCount - 1));
    } else {
        result.notes.push_back("steps: no ProfilerStep#N spans: the whole trace is step 0");
    }
    result.notes.push_back(memoryRanks == 0 ? std::string("memory: no [memory] events (memory_bytes 0)")
                                            : "memory: [memory] Total Allocated on " + std::to_string(memoryRanks)
                + " of " + std::to_string(ranks) + " ranks");
    if (outside > 0)
        result.notes.push_back("ignored " + std::to_string(outside) + " PP: spans outside the profiled steps");
    if (unattributed > 0)
        result.notes.push_back(std::to_string(unattributed)
            + " transfer spans add nothing: not in the gap before (receive) or after (send) their action, or no "
              "action of theirs in the step");
    if (otherPp > 0)
        result.notes.push_back("ignored " + std::to_string(otherPp) + " UNSHARD/RESHARD/REDUCE_GRAD spans");
    if (!unparsed.empty())
        result.notes.push_back("ignored PP: spans that name no action: "
            + joinNames(std::vector<std::string>(unparsed.begin(), unparsed.end()), 5));
    result.notes.push_back("bytes: the traces carry no message sizes (bytes_sent/bytes_received 0)");
    result.trace = std::move(trace);
    return result;
}

} // namespace dps
