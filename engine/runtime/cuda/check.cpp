#include "check.h"

#include "base/hostinfo.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace dps::runtime {

namespace {

constexpr int kUnset = -2;
std::atomic<int> g_rank { kUnset };

int rankFromEnvironment()
{
    for (const char* name : { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" }) {
        const char* value = std::getenv(name);
        if (value && *value)
            return std::atoi(value);
    }
    return -1;
}

std::string_view shortFile(std::string_view file)
{
    const auto engine = file.rfind("engine/");
    return engine == std::string_view::npos ? file : file.substr(engine);
}

} // namespace

void setCheckRank(int rank)
{
    g_rank.store(rank);
}

int checkRank()
{
    const int rank = g_rank.load();
    return rank == kUnset ? rankFromEnvironment() : rank;
}

std::string checkFailureText(const char* call, const char* file, int line, const std::string& reason)
{
    return "rank " + std::to_string(checkRank()) + " on " + hostName() + ": " + call + " failed ("
        + std::string(shortFile(file)) + ":" + std::to_string(line) + "): " + reason;
}

} // namespace dps::runtime
