#pragma once
// Placement: which rank runs stage s for microbatch m.
#include <string>
#include <vector>

namespace dps {

/// Maps (stage, microbatch) to a rank. Three representations:
/// - per stage: stage s always on rankOfStage[s] (GPipe, 1F1B, interleaved, V shapes);
/// - mirrored (DualPipe): m < C/2 on rank s, m >= C/2 on rank P-1-s (two replicas of every stage);
/// - table: explicit rank per (stage, microbatch), inferred from an imported CSV.
class Placement {
public:
    Placement() = default;
    /// Stage s on rankOfStage[s]; ranks = max + 1.
    static Placement perStage(std::vector<int> rankOfStage);
    /// DualPipe's: `ranks` stages, microbatches [0, C/2) on rank s, [C/2, C) on rank ranks-1-s.
    static Placement mirrored(int ranks, int microbatches);
    /// Explicit table: rank of (s, m) is table[s * microbatches + m]; -1 = unknown.
    static Placement table(int stages, int microbatches, std::vector<int> table);

    /// Rank of stage `stage` for microbatch `microbatch`; -1 if unknown. O(1).
    int rankOf(int stage, int microbatch) const;
    int stageCount() const { return m_stages; }
    /// Whether every stage sits on exactly one rank for all microbatches.
    bool isPerStage() const { return m_mode == Mode::PerStage; }
    bool isMirrored() const { return m_mode == Mode::Mirrored; }
    /// For a per-stage placement, the rank of each stage; empty otherwise.
    const std::vector<int>& rankOfStage() const { return m_rankOfStage; }
    /// Human description, e.g. "per stage [0,1,2,3]" or "mirrored (DualPipe)".
    std::string describe() const;

    friend bool operator==(const Placement&, const Placement&) = default;

private:
    enum class Mode { PerStage, Mirrored, Table };
    Mode m_mode = Mode::PerStage;
    int m_stages = 0;
    int m_ranks = 0;
    int m_microbatches = 0;
    std::vector<int> m_rankOfStage;
    std::vector<int> m_table;
};

} // namespace dps
