#include "progress.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>

namespace dps::launch {

namespace {

using nlohmann::json;

EventKind kindOf(const std::string& name)
{
    if (name == protocol::kEventHello)
        return EventKind::Hello;
    if (name == protocol::kEventProgress)
        return EventKind::Progress;
    if (name == protocol::kEventDone)
        return EventKind::Done;
    if (name == protocol::kEventError)
        return EventKind::Error;
    if (name == protocol::kEventFailed)
        return EventKind::Failed;
    return EventKind::Other;
}

/// An int member as a whole number in int's range (2 and 2.0 alike); nullopt otherwise.
std::optional<int> wholeNumber(const json& value)
{
    constexpr double lowest = std::numeric_limits<int>::min(), highest = std::numeric_limits<int>::max();
    double number = 0.0;
    if (value.is_number_unsigned())
        number = static_cast<double>(std::min<std::uint64_t>(value.get<std::uint64_t>(), 1ULL << 40));
    else if (value.is_number())
        number = value.get<double>();
    else
        return std::nullopt;
    if (!std::isfinite(number) || number != std::floor(number) || number < lowest || number > highest)
        return std::nullopt;
    return static_cast<int>(number);
}

/// Copies member `key` into `target` when it is there with the right type (an int: a whole number in
/// range); leaves `target` alone otherwise.
template <typename T> void readIf(const json& object, const char* key, T& target)
{
    const auto it = object.find(key);
    if (it == object.end())
        return;
    if constexpr (std::is_same_v<T, std::string>) {
        if (it->is_string())
            target = it->template get<std::string>();
    } else if constexpr (std::is_same_v<T, int>) {
        if (const std::optional<int> number = wholeNumber(*it))
            target = *number;
    } else if (it->is_number()) {
        target = it->template get<T>();
    }
}

void readCorrectness(const json& object, ProgressEvent& event)
{
    const auto it = object.find("correctness");
    if (it == object.end() || !it->is_object())
        return;
    event.correctnessSummary = it->dump();
    const auto passed = it->find("passed");
    if (passed != it->end() && passed->is_boolean())
        event.correctnessPassed = passed->get<bool>();
    readIf(*it, "max_loss_error", event.maxLossError);
    readIf(*it, "max_grad_error", event.maxGradError);
    readIf(*it, "message", event.correctnessMessage);
}

void readMakespans(const json& object, ProgressEvent& event)
{
    const auto it = object.find("step_makespan_us");
    if (it == object.end() || !it->is_array())
        return;
    for (const json& value : *it)
        event.stepMakespanUs.push_back(value.is_number() ? value.get<double>() : 0.0);
}

} // namespace

std::optional<ProgressEvent> parseProgressLine(const std::string& line)
{
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] != '{')
        return std::nullopt;
    const json object = json::parse(line, nullptr, false);
    if (object.is_discarded() || !object.is_object())
        return std::nullopt;
    const auto name = object.find("event");
    if (name == object.end() || !name->is_string())
        return std::nullopt;
    ProgressEvent event;
    event.kind = kindOf(name->get<std::string>());
    readIf(object, "format_version", event.formatVersion);
    readIf(object, "rank", event.rank);
    readIf(object, "ranks", event.ranks);
    readIf(object, "steps", event.steps);
    readIf(object, "warmup", event.warmup);
    readIf(object, "backend", event.backend);
    readIf(object, "comm", event.comm);
    readIf(object, "step", event.step);
    readIf(object, "done", event.done);
    readIf(object, "total", event.total);
    readIf(object, "message", event.message);
    readIf(object, "output", event.output);
    readIf(object, "median_step", event.medianStep);
    readIf(object, "exit_code", event.exitCode);
    readCorrectness(object, event);
    readMakespans(object, event);
    return event;
}

std::string failedEventLine(int exitCode, const std::string& message)
{
    const json event = { { "event", protocol::kEventFailed }, { "format_version", protocol::kProgressFormatVersion },
        { "exit_code", exitCode }, { "message", message } };
    return event.dump(-1, ' ', false, json::error_handler_t::replace);
}

double ProgressEvent::medianMakespanUs() const
{
    if (medianStep < 0 || static_cast<std::size_t>(medianStep) >= stepMakespanUs.size())
        return 0.0;
    return stepMakespanUs[static_cast<std::size_t>(medianStep)];
}

void ProgressTracker::apply(const ProgressEvent& event)
{
    switch (event.kind) {
    case EventKind::Hello:
        m_hello = event;
        m_ranks.resize(static_cast<std::size_t>(std::max(event.ranks, 0)));
        break;
    case EventKind::Progress:
        if (event.rank < 0 || event.rank > 4096)
            break;
        if (static_cast<std::size_t>(event.rank) >= m_ranks.size())
            m_ranks.resize(static_cast<std::size_t>(event.rank) + 1);
        m_ranks[static_cast<std::size_t>(event.rank)] = { event.step, event.done, event.total };
        break;
    case EventKind::Done:
        m_done = event;
        break;
    case EventKind::Error:
        m_errors.push_back(event);
        break;
    case EventKind::Failed:
    case EventKind::Other:
        break;
    }
}

int ProgressTracker::currentStep() const
{
    if (m_ranks.empty())
        return -1;
    int step = m_ranks.front().step;
    for (const RankState& r : m_ranks)
        step = std::min(step, r.step);
    return step;
}

std::string ProgressTracker::render() const
{
    if (!m_hello)
        return "starting";
    const int warmup = m_hello->warmup;
    const int total = totalSteps();
    const int step = std::max(currentStep(), 0);
    std::string line = "step " + std::to_string(std::min(step + 1, total)) + "/" + std::to_string(total);
    if (step < warmup)
        line += " (warm-up)";
    for (std::size_t r = 0; r < m_ranks.size(); ++r) {
        const RankState& s = m_ranks[r];
        line += " · rank " + std::to_string(r) + " ";
        line += s.step < 0 ? std::string("waiting") : std::to_string(s.done) + "/" + std::to_string(s.total);
    }
    return line;
}

std::string ProgressTracker::laggards() const
{
    if (m_ranks.empty())
        return {};
    auto behind
        = [](const RankState& a, const RankState& b) { return a.step != b.step ? a.step < b.step : a.done < b.done; };
    const RankState slowest = *std::min_element(m_ranks.begin(), m_ranks.end(), behind);
    std::string text;
    for (std::size_t r = 0; r < m_ranks.size(); ++r) {
        const RankState& s = m_ranks[r];
        if (s.step != slowest.step || s.done != slowest.done)
            continue;
        if (!text.empty())
            text += ", ";
        text += "rank " + std::to_string(r);
        text += s.step < 0 ? std::string(" before its first step")
                           : " at step " + std::to_string(s.step) + ", " + std::to_string(s.done) + "/"
                + std::to_string(s.total) + " actions";
    }
    return text;
}

void MpirunFailureScanner::record(int rank, const std::string& cause)
{
    if (!m_failure)
        m_failure = RankFailure { rank, cause };
}

void MpirunFailureScanner::feed(const std::string& line)
{
    static const std::regex signalled(
        R"(process rank (\d+) with PID \d+ on node \S+ (exited on signal \d+(?: \([^)]*\))?))");
    static const std::regex processName(R"(Process name:\s*\[\[\d+,\d+\],(\d+)\])");
    static const std::regex exitCode(R"(Exit code:\s*(-?\d+))");
    static const std::regex aborted(R"(MPI_ABORT was invoked on rank (\d+))");
    std::smatch m;
    if (std::regex_search(line, m, signalled))
        record(std::stoi(m[1].str()), m[2].str());
    else if (std::regex_search(line, m, processName))
        m_pendingRank = std::stoi(m[1].str());
    else if (m_pendingRank >= 0 && std::regex_search(line, m, exitCode)) {
        record(m_pendingRank, "exit code " + m[1].str());
        m_pendingRank = -1;
    } else if (std::regex_search(line, m, aborted))
        record(std::stoi(m[1].str()), "called MPI_Abort");
}

} // namespace dps::launch
