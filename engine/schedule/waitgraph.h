#pragma once
// The wait-for graph of a stuck replay (each stuck rank waits on one other rank), shared by the validator's
// compute and communication replays.
#include <string>
#include <vector>

namespace dps {

/// The cycles of the functional graph rank → target[rank] (-1 = no edge), each listed from its first rank.
std::vector<std::vector<int>> findCycles(const std::vector<int>& target);

/// "rank 1 -> rank 2 -> rank 1" for the cycle {1, 2}. Precondition: the cycle is not empty.
std::string cycleText(const std::vector<int>& cycle);

} // namespace dps
