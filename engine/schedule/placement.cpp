#include "placement.h"

#include <algorithm>

namespace dps {

Placement Placement::perStage(std::vector<int> rankOfStage)
{
    Placement p;
    p.m_mode = Mode::PerStage;
    p.m_stages = static_cast<int>(rankOfStage.size());
    p.m_ranks = rankOfStage.empty() ? 0 : *std::max_element(rankOfStage.begin(), rankOfStage.end()) + 1;
    p.m_rankOfStage = std::move(rankOfStage);
    return p;
}

Placement Placement::mirrored(int ranks, int microbatches)
{
    Placement p;
    p.m_mode = Mode::Mirrored;
    p.m_stages = ranks;
    p.m_ranks = ranks;
    p.m_microbatches = microbatches;
    return p;
}

Placement Placement::table(int stages, int microbatches, std::vector<int> table)
{
    Placement p;
    p.m_mode = Mode::Table;
    p.m_stages = stages;
    p.m_microbatches = microbatches;
    p.m_ranks = table.empty() ? 0 : *std::max_element(table.begin(), table.end()) + 1;
    p.m_table = std::move(table);
    return p;
}

int Placement::rankOf(int stage, int microbatch) const
{
    if (stage < 0 || stage >= m_stages)
        return -1;
    switch (m_mode) {
    case Mode::PerStage:
        return m_rankOfStage[stage];
    case Mode::Mirrored:
        if (microbatch < 0 || microbatch >= m_microbatches)
            return -1;
        return microbatch < m_microbatches / 2 ? stage : m_ranks - 1 - stage;
    case Mode::Table:
        if (microbatch < 0 || microbatch >= m_microbatches)
            return -1;
        return m_table[static_cast<std::size_t>(stage) * m_microbatches + microbatch];
    }
    return -1;
}

std::string Placement::describe() const
{
    switch (m_mode) {
    case Mode::PerStage: {
        std::string s = "per stage [";
        for (std::size_t i = 0; i < m_rankOfStage.size(); ++i)
            s += (i ? "," : "") + std::to_string(m_rankOfStage[i]);
        return s + "]";
    }
    case Mode::Mirrored:
        return "mirrored (DualPipe: microbatches < " + std::to_string(m_microbatches / 2) + " on rank s, the rest on rank "
            + std::to_string(m_ranks - 1) + "-s)";
    case Mode::Table:
        return "per (stage, microbatch)";
    }
    return {};
}

} // namespace dps
