#pragma once
// Helpers shared by the simulator tests: hand-built schedules, generated schedules with unit costs.
#include "schedule/generator.h"
#include "sim/simulator.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace dps::test {

/// A schedule from one line of PyTorch text per rank ("0F0 0F1 (0F2;1B0)OVERLAP_F_B ..."), with sizes
/// inferred from the ops and the placement per stage taken from where each F appears.
inline Schedule handBuilt(const std::vector<std::string>& rows)
{
    Schedule s;
    s.ranks = static_cast<int>(rows.size());
    std::vector<int> rankOfStage;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        std::istringstream in(rows[r]);
        std::string cell;
        s.order.emplace_back();
        while (in >> cell) {
            const Action a = parseAction(cell);
            s.order.back().push_back(a);
            for (int i = 0; i < a.size(); ++i) {
                const Op& op = a.at(i);
                s.stages = std::max(s.stages, op.stage + 1);
                s.microbatches = std::max(s.microbatches, op.microbatch + 1);
                if (rankOfStage.size() <= static_cast<std::size_t>(op.stage))
                    rankOfStage.resize(static_cast<std::size_t>(op.stage) + 1, 0);
                rankOfStage[static_cast<std::size_t>(op.stage)] = static_cast<int>(r);
            }
        }
    }
    s.placement = Placement::perStage(rankOfStage);
    return s;
}

inline Schedule gen(ScheduleKind kind, int ranks, int microbatches, int stagesPerRank = 0)
{
    return generate(GenerateOptions { kind, ranks, microbatches, stagesPerRank });
}

/// Unit costs (F = I = W = 1, B = 2), with an optional typed F&B slot time.
inline CostModel unitCosts(const Schedule& s, std::optional<double> fb = std::nullopt)
{
    UniformCosts c;
    c.fb = fb;
    return uniformCostModel(s.stages, c);
}

inline double maxIdle(const SimResult& r)
{
    double m = 0.0;
    for (const RankResult& rr : r.ranks)
        m = std::max(m, rr.idleUs);
    return m;
}

inline std::vector<double> idleVector(const SimResult& r)
{
    std::vector<double> v;
    for (const RankResult& rr : r.ranks)
        v.push_back(rr.idleUs);
    return v;
}

} // namespace dps::test
