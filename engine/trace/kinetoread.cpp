#include "trace/kinetofile.h"

#include "base/checked.h"
#include "base/errors.h"
#include "base/fileio.h"
#include "base/json.h"
#include "schedule/schedule.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <regex>

// Reading the profiler's files: one rank's trace (Kineto's object or the legacy array, gzipped or not)
// into the spans the importer matches (kinetofile.h), and the file list and --map arguments.
namespace dps::kineto {

namespace fs = std::filesystem;

namespace {

using json = nlohmann::json;
/// `rank<N>` in a file name (rank3.json, trace_rank-3.pt.trace.json.gz).
const std::regex kRankInName(R"(rank[-_]?(\d+))", std::regex::icase);
const std::regex kProfilerStep(R"(^ProfilerStep#(\d+)$)");

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

/// A `PP:` name's action, read as the schedule CSV's cells are (parseStep, PyTorch's whole action language): a
/// compute action, a send or receive (a transfer), UNSHARD, RESHARD or REDUCE_GRAD (recognised and ignored: no place in
/// our measured format), or text that is no action.
Named classifyText(const std::string& text)
{
    Named n;
    Step step;
    try {
        step = parseStep(text);
    } catch (const Error&) {
        n.what = Named::What::UnparsedPp;
        return n;
    }
    if (step.isCompute()) {
        n.what = Named::What::Compute;
        n.action = step.compute;
    } else if (step.isComm() && isPointToPoint(step.comm.kind)) {
        static constexpr Comm kComm[] = { Comm::SendF, Comm::RecvF, Comm::SendB, Comm::RecvB };
        n.what = Named::What::Comm;
        n.comm = kComm[static_cast<int>(step.comm.kind)];
        n.stage = step.comm.stage;
        n.microbatch = step.comm.microbatch;
    } else {
        n.what = step.isComm() ? Named::What::OtherPp : Named::What::UnparsedPp;
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

/// The file's JSON: strict first; a bare array that is not valid JSON is repaired as the legacy writer's
/// output (repairLegacyJson). Throws FormatError: an empty file, or the strict parser's reason.
json parseTraceJson(const fs::path& path)
{
    const std::string source = path.string();
    const std::string text = readProfileText(path);
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        throw FormatError(source + ": empty file, not a profiler trace");
    try {
        return parseJson<json>(text, source);
    } catch (const FormatError& strict) {
        if (text[first] != '[')
            throw;
        try {
            return parseJson<json>(repairLegacyJson(text), source);
        } catch (const FormatError&) {
            throw strict; // truncated or otherwise broken: the strict parser's reason
        }
    }
}

/// Kineto's header fields: distributedInfo's rank, world size and backend, the clock's base and the device.
void readKinetoHeader(const json& root, RankFile& file)
{
    const std::string source = file.path.string();
    if (const auto d = root.find("distributedInfo"); d != root.end() && d->is_object()) {
        if (const auto r = d->find("rank"); r != d->end() && r->is_number_integer()) {
            const std::int64_t rank = r->get<std::int64_t>();
            if (rank < 0 || rank >= kMaxProfileRanks)
                throw FormatError(source + ": distributedInfo.rank " + std::to_string(rank) + " is outside [0, "
                    + std::to_string(kMaxProfileRanks) + ")");
            file.rank = static_cast<int>(rank);
        }
        if (const auto w = d->find("world_size"); w != d->end() && w->is_number_integer() && w->get<std::int64_t>() > 0
            && w->get<std::int64_t>() < std::numeric_limits<int>::max())
            file.worldSize = static_cast<int>(w->get<std::int64_t>());
        if (const auto b = d->find("backend"); b != d->end() && b->is_string())
            file.commBackend = b->get<std::string>();
    }
    if (const auto b = root.find("baseTimeNanoseconds"); b != root.end() && b->is_number())
        file.baseUs = b->get<double>() / 1000.0;
    if (const auto p = root.find("deviceProperties"); p != root.end() && p->is_array() && !p->empty()
        && (*p)[0].is_object() && (*p)[0].contains("name") && (*p)[0]["name"].is_string())
        file.device = (*p)[0]["name"].get<std::string>();
}

/// The events of the file's layout (legacy: the array; Kineto: traceEvents, with its header read).
const json& traceEvents(const json& root, RankFile& file)
{
    if (root.is_array()) {
        file.layout = "legacy";
        return root;
    }
    if (root.is_object() && root.contains("traceEvents") && root["traceEvents"].is_array()) {
        file.layout = "kineto";
        readKinetoHeader(root, file);
        return root["traceEvents"];
    }
    throw FormatError(file.path.string()
        + ": not a profiler trace: neither an object with traceEvents (Kineto) nor an "
          "array of events (the legacy layout)");
}

/// The rank from `rank<N>` in the file's name when the trace has none; checks it against kMaxProfileRanks.
void settleRank(RankFile& file)
{
    const std::string source = file.path.string();
    if (file.worldSize > kMaxProfileRanks)
        file.worldSize = 0; // not a job's size: ignored (the ranks found count instead)
    if (file.rank < 0) {
        const std::string name = fileName(file.path);
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
}

/// Reads a `[memory]` instant event's Total Allocated into the accelerator's or the CPU's points.
void readMemoryEvent(const json& e, std::vector<MemoryPoint>& cpuMemory, std::vector<MemoryPoint>& deviceMemory)
{
    const auto args = e.find("args");
    if (args == e.end() || !args->is_object() || !args->contains("Total Allocated"))
        return;
    const double total = numberOr(*args, "Total Allocated", -1.0);
    if (total < 0)
        return;
    const MemoryPoint point { numberOr(e, "ts", 0.0), static_cast<std::int64_t>(total) };
    (numberOr(*args, "Device Type", 0.0) != 0.0 ? deviceMemory : cpuMemory).push_back(point);
}

/// Reads a complete ("X") event: a ProfilerStep#N, a compute action or a transfer, or nothing.
void readSpanEvent(const json& e, const std::string& name, const std::vector<ProfileNameMap>& maps, RankFile& file)
{
    // Most events are operators: decide by the name first, before anything is copied.
    const bool stepName = name.compare(0, 13, "ProfilerStep#") == 0;
    const Named n = stepName ? Named {} : classify(name, maps);
    if (n.what == Named::What::OtherPp) {
        ++file.otherPp;
        return;
    }
    if (n.what == Named::What::UnparsedPp) {
        file.unparsedPp.insert(name);
        return;
    }
    if (!stepName && n.what == Named::What::Nothing)
        return;
    const double ts = numberOr(e, "ts", std::numeric_limits<double>::quiet_NaN());
    const double dur = numberOr(e, "dur", std::numeric_limits<double>::quiet_NaN());
    if (!(ts == ts) || !(dur == dur) || dur < 0)
        return;
    // A span's times must stay exact numbers through the run's arithmetic (µs; 2^53 µs ≈ 285 years).
    constexpr double kMaxUs = kMaxExactDouble;
    if (!(std::fabs(ts) < kMaxUs) || !(dur < kMaxUs) || !(std::fabs(ts + dur) < kMaxUs))
        throw FormatError(file.path.string() + ": event \"" + name + "\": ts " + std::to_string(ts) + " µs and dur "
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
        return;
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

/// Sorts the steps (with their numbers), the spans and the memory points by start, stably.
void sortByStart(RankFile& file)
{
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
}

} // namespace

RankFile readRankFile(const fs::path& path, const std::vector<ProfileNameMap>& maps)
{
    const json root = parseTraceJson(path);
    RankFile file;
    file.path = path;
    const json& events = traceEvents(root, file);
    settleRank(file);
    std::vector<MemoryPoint> cpuMemory, deviceMemory;
    for (const json& e : events) {
        if (!e.is_object())
            continue;
        const auto nameIt = e.find("name");
        if (nameIt == e.end() || !nameIt->is_string())
            continue;
        const std::string& name = nameIt->get_ref<const std::string&>();
        const std::string ph = e.value("ph", std::string());
        if (name == "[memory]" && (ph == "i" || ph == "I"))
            readMemoryEvent(e, cpuMemory, deviceMemory);
        else if (ph == "X")
            readSpanEvent(e, name, maps, file);
    }
    file.memory = deviceMemory.empty() ? std::move(cpuMemory) : std::move(deviceMemory);
    sortByStart(file);
    return file;
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

} // namespace dps::kineto

namespace dps {

namespace fs = std::filesystem;

namespace {
constexpr std::size_t kMaxInflatedBytes = std::size_t { 4 } << 30;
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

} // namespace dps
