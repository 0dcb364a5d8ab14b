#include "partitioning.h"

#include <algorithm>
#include <numeric>

namespace dps {

std::vector<int> evenPartition(int layers, int stages)
{
    if (stages <= 0)
        return {};
    std::vector<int> result(static_cast<std::size_t>(stages));
    for (int s = 0; s < stages; ++s)
        result[static_cast<std::size_t>(s)] = evenShare(layers, stages, s);
    return result;
}

int evenShare(int layers, int stages, int stage)
{
    return layers / stages + (stage < layers % stages ? 1 : 0);
}

std::vector<int> balancedPartition(int layers, const std::vector<double>& costPerLayer)
{
    const int stages = static_cast<int>(costPerLayer.size());
    if (stages == 0)
        return {};
    const int base = layers >= stages ? 1 : 0;
    std::vector<int> result(stages, base);
    for (int left = layers - base * stages; left > 0; --left) {
        int best = 0;
        for (int s = 1; s < stages; ++s)
            if ((result[s] + 1) * costPerLayer[s] < (result[best] + 1) * costPerLayer[best])
                best = s;
        ++result[best];
    }
    return result;
}

std::vector<int> movedBoundary(std::vector<int> partition, int boundary, int layersBefore, int minimum)
{
    if (boundary < 0 || boundary + 1 >= static_cast<int>(partition.size()))
        return partition;
    const int before = std::accumulate(partition.begin(), partition.begin() + boundary, 0);
    const int pair = partition[boundary] + partition[boundary + 1];
    const int lo = std::min(minimum, pair / 2);
    const int first = std::clamp(layersBefore - before, lo, pair - lo);
    partition[boundary] = first;
    partition[boundary + 1] = pair - first;
    return partition;
}

int totalLayers(const std::vector<int>& partition)
{
    return std::accumulate(partition.begin(), partition.end(), 0);
}

std::string partitionText(const std::vector<int>& partition)
{
    std::string text;
    for (std::size_t i = 0; i < partition.size();) {
        std::size_t j = i;
        while (j < partition.size() && partition[j] == partition[i])
            ++j;
        text += (text.empty() ? "" : ",") + std::to_string(partition[i])
            + (j - i > 1 ? "×" + std::to_string(j - i) : "");
        i = j;
    }
    return text;
}

} // namespace dps
