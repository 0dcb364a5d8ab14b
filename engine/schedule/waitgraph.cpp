#include "waitgraph.h"

#include <algorithm>
#include <cstdint>

namespace dps {

std::vector<std::vector<int>> findCycles(const std::vector<int>& target)
{
    std::vector<std::uint8_t> state(target.size(), 0); // 0 new, 1 on the current walk, 2 done
    std::vector<std::vector<int>> cycles;
    for (std::size_t start = 0; start < target.size(); ++start) {
        std::vector<int> walk;
        int r = static_cast<int>(start);
        while (r >= 0 && state[static_cast<std::size_t>(r)] == 0) {
            state[static_cast<std::size_t>(r)] = 1;
            walk.push_back(r);
            r = target[static_cast<std::size_t>(r)];
        }
        if (r >= 0 && state[static_cast<std::size_t>(r)] == 1)
            cycles.emplace_back(std::find(walk.begin(), walk.end(), r), walk.end());
        for (int w : walk)
            state[static_cast<std::size_t>(w)] = 2;
    }
    return cycles;
}

std::string cycleText(const std::vector<int>& cycle)
{
    std::string s;
    for (int r : cycle)
        s += "rank " + std::to_string(r) + " -> ";
    return s + "rank " + std::to_string(cycle.front());
}

} // namespace dps
