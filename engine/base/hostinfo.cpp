#include "hostinfo.h"

#include <fstream>
#include <thread>
#include <unistd.h>

namespace dps {

std::string cpuInfoField(const std::string& name)
{
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
        const auto colon = line.find(':');
        if (colon == std::string::npos || line.compare(0, name.size(), name) != 0)
            continue;
        const auto key = line.find_last_not_of(" \t", colon - 1);
        if (key == std::string::npos || key + 1 != name.size())
            continue;
        const auto start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? std::string() : line.substr(start);
    }
    return {};
}

std::string cpuModelName()
{
    const std::string name = cpuInfoField("model name");
    return name.empty() ? "unknown" : name;
}

int cpuCoreCount()
{
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

std::string hostName()
{
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0')
        return "unknown";
    return name;
}

} // namespace dps
