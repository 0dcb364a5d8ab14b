#pragma once
// Each rank's memory at its peak split into its parts (parameters, gradients, optimizer state, live
// activations), and which rank is the heaviest and by what, compared with the median rank. Plain C++ over a
// snapshot: the memory chart's per-rank view draws it, tests check it.
#include "document/snapshot.h"

#include <string>
#include <vector>

namespace dps::ui {

/// One rank's memory at its peak, bytes. Static parts come from Prediction::staticMemory, the activations
/// are the rank's simulated peak of live activations, the buffers the rest of its peak: what a run of our
/// engine allocates beyond them (inputs, targets, messages, workspaces; docs/memory.md), 0 for a model the
/// engine does not run. The parts add up to the rank's peak.
struct RankMemoryParts {
    enum Part { Parameters, Gradients, Optimizer, Activations, Buffers, PartCount };
    double bytes[PartCount] = {};
    double total() const
    {
        return bytes[Parameters] + bytes[Gradients] + bytes[Optimizer] + bytes[Activations] + bytes[Buffers];
    }
};

/// "parameters", "gradients", "optimizer state", "activations", "buffers".
const char* memoryPartName(RankMemoryParts::Part part);

/// The parts of every rank of a timed snapshot (empty when it is not timed).
std::vector<RankMemoryParts> memoryParts(const SimulationSnapshot& snapshot);

/// The heaviest rank and what makes it heavier: compared with the median rank, or, when the heaviest peak is
/// also the median's (most ranks share it), with the lightest rank.
struct HeaviestRank {
    int rank = -1; ///< the rank with the largest total (the first on a tie); −1 without ranks
    double peakBytes = 0.0; ///< its total, bytes
    int sharedWith = 0; ///< other ranks whose total is within 0.1 % of it
    int referenceRank = -1; ///< the lightest rank (the first on a tie) when compared with it; −1: the median rank
    double excessBytes = 0.0; ///< its total − the reference's total, bytes
    /// Parts in which it exceeds the reference's same part, largest excess first: (part, bytes over). The
    /// median rank's part is the median of that part over ranks.
    std::vector<std::pair<RankMemoryParts::Part, double>> byPart;
};

/// Finds the heaviest rank; the median of an even count is the lower of the middle two (base/stats.h). The median rank is
/// the reference unless the heaviest total exceeds the median total by at most 0.1 % of it.
HeaviestRank heaviestRank(const std::vector<RankMemoryParts>& ranks);

/// In words, sizes as formatBytes writes them (parts under 0.1 % of the peak left out, at most two):
/// "rank 15 heaviest: peak 71.3 GiB, +3.2 GiB over the median rank (parameters +1.8 GiB, activations +1.4 GiB)";
/// "rank 3 heaviest, with 9 other ranks: peak 462.63 GiB, +23.86 GiB over the lightest, rank 2 (activations
/// +18.52 GiB, parameters +0.77 GiB)"; "every rank peaks at 12 GiB" when no rank is lighter than the heaviest by
/// more than 0.1 %; "" without ranks.
std::string describeHeaviest(const HeaviestRank& heaviest);

} // namespace dps::ui
