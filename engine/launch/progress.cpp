#include "progress.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

namespace dps::launch {

namespace {

using nlohmann::json;

EventKind kindOf(const std::string& name)
{
    if (name == "hello")
        return EventKind::Hello;
    if (name == "progress")
        return EventKind::Progress;
    if (name == "done")
        return EventKind::Done;
    if (name == "error")
        return EventKind::Error;
    return EventKind::Other;
}

template <typename T> void readIf(const json& object, const char* key, T& target)
{
    const auto it = object.find(key);
    if (it == object.end())
        return;
    if constexpr (std::is_same_v<T, std::string>) {
        if (it->is_string())
            target = it->template get<std::string>();
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
    readCorrectness(object, event);
    return event;
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
