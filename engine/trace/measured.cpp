#include "measured.h"

#include "base/errors.h"
#include "base/fileio.h"
#include "base/format.h"
#include "base/json.h"
#include "base/stats.h"
#include "project/filekind.h"
#include "project/project.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

namespace dps {

namespace {

// Keys in file order, read and written, so that the recorded project keeps its key order.
using json = nlohmann::ordered_json;

/// Reads fields of one JSON object, naming `path` in every error.
class Fields {
public:
    Fields(const json& object, std::string path, const std::string& source)
        : m_object(object)
        , m_path(std::move(path))
        , m_source(source)
    {
        if (!m_object.is_object())
            fail(m_path.empty() ? "the top level" : m_path, "must be an object");
    }

    [[noreturn]] void fail(const std::string& field, const std::string& what) const
    {
        throw FormatError(m_source + ": " + field + ": " + what);
    }
    std::string name(const char* key) const { return m_path.empty() ? key : m_path + "." + key; }

    const json* find(const char* key) const
    {
        const auto it = m_object.find(key);
        return it == m_object.end() ? nullptr : &*it;
    }
    const json& require(const char* key) const
    {
        const json* value = find(key);
        if (!value)
            fail(name(key), "missing");
        return *value;
    }
    double number(const char* key, bool required) const
    {
        const json* value = required ? &require(key) : find(key);
        if (!value)
            return 0.0;
        if (!value->is_number())
            fail(name(key), "must be a number");
        return value->get<double>();
    }
    /// A number that may be null (NaN, a diverged run's loss: JSON has no NaN and the writer gives null).
    double numberOrNull(const char* key, bool required) const
    {
        const json* value = required ? &require(key) : find(key);
        if (value && value->is_null())
            return std::numeric_limits<double>::quiet_NaN();
        return number(key, required);
    }
    std::int64_t integer(const char* key, bool required) const
    {
        const json* value = required ? &require(key) : find(key);
        if (!value)
            return 0;
        if (!value->is_number_integer())
            fail(name(key), "must be an integer");
        return value->get<std::int64_t>();
    }
    std::string text(const char* key) const
    {
        const json* value = find(key);
        if (!value || value->is_null())
            return {};
        if (!value->is_string())
            fail(name(key), "must be a string");
        return value->get<std::string>();
    }
    const json& array(const char* key) const
    {
        const json& value = require(key);
        if (!value.is_array())
            fail(name(key), "must be an array");
        return value;
    }
    Fields child(const json& value, const std::string& childPath) const { return { value, childPath, m_source }; }

private:
    const json& m_object;
    std::string m_path;
    const std::string& m_source;
};

MeasuredAction readAction(const Fields& f, const std::string& path)
{
    MeasuredAction a;
    const std::string text = f.text("action");
    if (text.empty())
        f.fail(f.name("action"), "missing");
    try {
        a.action = parseAction(text);
    } catch (const Error& e) {
        f.fail(f.name("action"), e.what());
    }
    a.step = static_cast<int>(f.integer("step", true));
    a.startUs = f.number("start_us", true);
    a.endUs = f.number("end_us", true);
    a.waitUs = f.number("wait_us", false);
    a.computeUs = f.number("compute_us", false);
    a.a2aUs = f.number("a2a_us", false);
    a.a2aHiddenUs = f.number("a2a_hidden_us", false);
    if (!(a.a2aUs >= 0.0))
        f.fail(f.name("a2a_us"), "must not be negative");
    if (!(a.a2aHiddenUs >= 0.0) || a.a2aHiddenUs > a.a2aUs)
        f.fail(f.name("a2a_hidden_us"), "must be between 0 and a2a_us (" + formatNumber(a.a2aUs) + ")");
    a.bytesSent = f.integer("bytes_sent", false);
    a.bytesReceived = f.integer("bytes_received", false);
    a.memoryBytes = f.integer("memory_bytes", false);
    a.activationBytes = f.integer("activation_bytes", false);
    return a;
}

MeasuredRank readRank(const Fields& f, const std::string& path)
{
    MeasuredRank rank;
    rank.rank = static_cast<int>(f.integer("rank", true));
    rank.host = f.text("host");
    const json& actions = f.array("actions");
    for (std::size_t i = 0; i < actions.size(); ++i) {
        const std::string p = path + ".actions[" + std::to_string(i) + "]";
        rank.actions.push_back(readAction(f.child(actions[i], p), p));
    }
    return rank;
}

MeasuredCorrectness readCorrectness(const Fields& top)
{
    MeasuredCorrectness c;
    const json* value = top.find("correctness");
    if (!value)
        return c;
    if (value->is_null()) { // format 2: a run without a correctness check (an imported profile)
        c.checked = false;
        return c;
    }
    const Fields f = top.child(*value, "correctness");
    const json& passed = f.require("passed");
    if (!passed.is_boolean())
        f.fail("correctness.passed", "must be true or false");
    c.passed = passed.get<bool>();
    c.maxLossError = f.numberOrNull("max_loss_error", false);
    c.maxGradError = f.numberOrNull("max_grad_error", false);
    c.message = f.text("message");
    if (const json* t = f.find("thresholds")) {
        const Fields tf = f.child(*t, "correctness.thresholds");
        c.lossThreshold = tf.number("loss", false);
        c.gradThreshold = tf.number("grad", false);
    }
    if (f.find("losses")) {
        const json& losses = f.array("losses");
        for (std::size_t i = 0; i < losses.size(); ++i) {
            const Fields lf = f.child(losses[i], "correctness.losses[" + std::to_string(i) + "]");
            c.losses.push_back({ static_cast<int>(lf.integer("microbatch", true)), lf.numberOrNull("loss", true),
                lf.numberOrNull("reference", true), lf.numberOrNull("error", true) });
        }
    }
    return c;
}

void checkVersion(const Fields& f, const std::string& source)
{
    const std::int64_t version = f.integer("format_version", true);
    if (version > kMeasuredFormatVersion)
        throw FormatError(source + ": format_version " + std::to_string(version)
            + " is newer than this build of DualPipe Studio reads (" + std::to_string(kMeasuredFormatVersion)
            + "); update DualPipe Studio");
    if (version < 1)
        f.fail("format_version", "must be at least 1");
}

void readHeader(const Fields& f, MeasuredTrace& t)
{
    t.command = f.text("command");
    t.host = f.text("host");
    t.cpu = f.text("cpu");
    t.device = f.text("device");
    t.mpiVersion = f.text("mpi_version");
    t.backend = f.text("backend");
    t.comm = f.text("comm");
    t.backendChoice = f.text("backend_choice");
    t.variant = f.text("variant");
    t.threads = f.find("threads") ? static_cast<int>(f.integer("threads", false)) : 1;
    t.warmup = static_cast<int>(f.integer("warmup", false));
    if (const json* project = f.find("project"); project && !project->is_null())
        t.projectJson = project->dump(-1, ' ', false, json::error_handler_t::replace);
}

void readSource(const Fields& top, MeasuredTrace& t)
{
    const json* value = top.find("source");
    if (!value || value->is_null())
        return;
    const Fields f = top.child(*value, "source");
    t.source.kind = f.text("kind");
    if (t.source.kind.empty())
        f.fail("source.kind", "missing");
    t.source.layout = f.text("layout");
    t.source.timing = f.text("timing");
    t.source.clock = f.text("clock");
    if (f.find("files")) {
        const json& files = f.array("files");
        for (std::size_t i = 0; i < files.size(); ++i) {
            if (!files[i].is_string())
                f.fail("source.files[" + std::to_string(i) + "]", "must be a string");
            t.source.files.push_back(files[i].get<std::string>());
        }
    }
}

void readWarnings(const Fields& f, MeasuredTrace& t)
{
    if (!f.find("warnings"))
        return;
    const json& warnings = f.array("warnings");
    for (std::size_t i = 0; i < warnings.size(); ++i) {
        if (!warnings[i].is_string())
            f.fail("warnings[" + std::to_string(i) + "]", "must be a string");
        t.warnings.push_back(warnings[i].get<std::string>());
    }
}

void readSteps(const Fields& f, MeasuredTrace& t)
{
    const json& steps = f.array("steps");
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const Fields sf = f.child(steps[i], "steps[" + std::to_string(i) + "]");
        t.steps.push_back({ static_cast<int>(sf.integer("step", true)), sf.number("makespan_us", true) });
    }
    t.medianStep = static_cast<int>(f.integer("median_step", true));
}

json actionJson(const MeasuredAction& a)
{
    json o;
    o["action"] = toString(a.action);
    o["step"] = a.step;
    o["start_us"] = a.startUs;
    o["end_us"] = a.endUs;
    o["wait_us"] = a.waitUs;
    o["compute_us"] = a.computeUs;
    if (a.a2aUs > 0.0) {
        o["a2a_us"] = a.a2aUs;
        o["a2a_hidden_us"] = a.a2aHiddenUs;
    }
    o["bytes_sent"] = a.bytesSent;
    o["bytes_received"] = a.bytesReceived;
    o["memory_bytes"] = a.memoryBytes;
    o["activation_bytes"] = a.activationBytes;
    return o;
}

json correctnessJson(const MeasuredCorrectness& c)
{
    json o;
    o["passed"] = c.passed;
    o["max_loss_error"] = c.maxLossError;
    o["max_grad_error"] = c.maxGradError;
    o["thresholds"] = json { { "loss", c.lossThreshold }, { "grad", c.gradThreshold } };
    if (!c.message.empty())
        o["message"] = c.message;
    o["losses"] = json::array();
    for (const MeasuredLoss& l : c.losses)
        o["losses"].push_back(json {
            { "microbatch", l.microbatch }, { "loss", l.loss }, { "reference", l.reference }, { "error", l.error } });
    return o;
}

} // namespace

double MeasuredTrace::medianMakespanUs() const
{
    for (const MeasuredStep& s : steps)
        if (s.step == medianStep)
            return s.makespanUs;
    return 0.0;
}

std::vector<const MeasuredAction*> MeasuredTrace::actionsOf(int rank, int step) const
{
    std::vector<const MeasuredAction*> result;
    for (const MeasuredRank& r : ranks)
        if (r.rank == rank)
            for (const MeasuredAction& a : r.actions)
                if (a.step == step)
                    result.push_back(&a);
    return result;
}

MeasuredTrace parseMeasured(const std::string& text, const std::string& source)
{
    const json root = parseJson<json>(text, source);
    refuseOtherFileKind(root, FileKind::Measured, "a measured run", source);
    const Fields f(root, "", source);
    checkVersion(f, source);
    MeasuredTrace t;
    t.formatVersion = static_cast<int>(f.integer("format_version", true));
    readHeader(f, t);
    readSource(f, t);
    t.correctness = readCorrectness(f);
    readSteps(f, t);
    readWarnings(f, t);
    const json& ranks = f.array("ranks");
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        const std::string p = "ranks[" + std::to_string(i) + "]";
        t.ranks.push_back(readRank(f.child(ranks[i], p), p));
    }
    return t;
}

MeasuredTrace loadMeasured(const std::filesystem::path& path)
{
    return parseMeasured(readTextFile(path), path.string());
}

std::string serializeMeasured(const MeasuredTrace& t)
{
    json o;
    const bool needsV2 = !t.source.empty() || !t.correctness.checked;
    o["format_version"] = needsV2 ? std::max(t.formatVersion, 2) : t.formatVersion;
    o["command"] = t.command;
    o["host"] = t.host;
    o["cpu"] = t.cpu;
    o["device"] = t.device;
    o["mpi_version"] = t.mpiVersion;
    o["backend"] = t.backend;
    o["comm"] = t.comm;
    if (!t.backendChoice.empty())
        o["backend_choice"] = t.backendChoice;
    if (!t.source.empty())
        o["source"] = json { { "kind", t.source.kind }, { "layout", t.source.layout }, { "timing", t.source.timing },
            { "clock", t.source.clock }, { "files", t.source.files } };
    o["variant"] = t.variant;
    o["threads"] = t.threads;
    o["warmup"] = t.warmup;
    o["correctness"] = t.correctness.checked ? correctnessJson(t.correctness) : json(nullptr);
    o["steps"] = json::array();
    for (const MeasuredStep& s : t.steps)
        o["steps"].push_back(json { { "step", s.step }, { "makespan_us", s.makespanUs } });
    o["median_step"] = t.medianStep;
    o["warnings"] = t.warnings;
    o["ranks"] = json::array();
    for (const MeasuredRank& r : t.ranks) {
        json rank;
        rank["rank"] = r.rank;
        if (!r.host.empty())
            rank["host"] = r.host;
        rank["actions"] = json::array();
        for (const MeasuredAction& a : r.actions)
            rank["actions"].push_back(actionJson(a));
        o["ranks"].push_back(std::move(rank));
    }
    if (!t.projectJson.empty()) {
        try {
            o["project"] = json::parse(t.projectJson);
        } catch (const json::parse_error& e) {
            throw FormatError(std::string("measured trace: project: not valid JSON: ") + e.what());
        }
    }
    return o.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

void setStepsFromActions(MeasuredTrace& trace)
{
    std::vector<double> makespans;
    for (const MeasuredRank& r : trace.ranks)
        for (const MeasuredAction& a : r.actions) {
            if (a.step < 0)
                continue;
            const auto step = static_cast<std::size_t>(a.step);
            if (step >= makespans.size())
                makespans.resize(step + 1, 0.0);
            makespans[step] = std::max(makespans[step], a.endUs);
        }
    trace.steps.clear();
    for (std::size_t s = 0; s < makespans.size(); ++s)
        trace.steps.push_back({ static_cast<int>(s), makespans[s] });
    std::vector<int> order(makespans.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
        [&](int a, int b) { return makespans[static_cast<std::size_t>(a)] < makespans[static_cast<std::size_t>(b)]; });
    trace.medianStep = order.empty() ? 0 : order[medianIndex(order.size())];
}

std::string describeSource(const MeasuredSource& source)
{
    if (source.empty())
        return {};
    std::string details;
    for (const std::string* part : { &source.layout, &source.timing, &source.clock }) {
        if (part->empty())
            continue;
        details += (details.empty() ? "" : ", ") + *part + (part == &source.layout ? " layout" : "");
    }
    if (!source.files.empty())
        details += "; " + formatCountOf(source.files.size(), "file");
    return source.kind + (details.empty() ? std::string() : " (" + details + ")");
}

bool crossesHosts(const MeasuredTrace& trace, int from, int to)
{
    const auto hostOf = [&trace](int rank) -> const std::string* {
        for (const MeasuredRank& r : trace.ranks)
            if (r.rank == rank)
                return &r.host;
        return nullptr;
    };
    const std::string* a = hostOf(from);
    const std::string* b = hostOf(to);
    return a && b && !a->empty() && !b->empty() && *a != *b;
}

std::vector<MeasuredSlot> measuredSlots(const MeasuredTrace& trace)
{
    std::vector<MeasuredSlot> slots;
    for (const MeasuredRank& r : trace.ranks)
        for (const MeasuredAction& a : r.actions)
            slots.push_back({ r.rank, a.step, a.action, a.startUs, a.endUs, a.waitUs, a.bytesReceived });
    return slots;
}

int measuredStageCount(const MeasuredTrace& trace, const Project* project)
{
    std::optional<Project> recorded;
    if (!project && !trace.projectJson.empty()) {
        recorded = parseProject(trace.projectJson, "the project recorded in the measured trace");
        project = &*recorded;
    }
    if (!project)
        return slotStageCount(measuredSlots(trace));
    const Variant* variant = trace.variant.empty() ? nullptr : project->find(trace.variant);
    return stageCount(variant ? *variant : project->active());
}

ValidatedRun validatedRunOf(const MeasuredTrace& m, const std::string& file)
{
    const MeasuredCorrectness& c = m.correctness;
    return { file, m.host, m.cpu, {}, m.backend, m.comm, m.mpiVersion, m.variant, static_cast<int>(m.ranks.size()),
        m.medianStep, m.medianMakespanUs(), c.passed, c.maxLossError, c.maxGradError, c.lossThreshold, c.gradThreshold,
        c.message, c.checked, describeSource(m.source) };
}

} // namespace dps
