#pragma once
// Schedule generators: GPipe, 1F1B, Interleaved 1F1B, ZB-H1, ZB-V, DualPipe, DualPipeV.
#include "schedule.h"

namespace dps {

/// What to generate. stagesPerRank = 0 means the kind's default (2 for interleaved-1f1b, 2 for the V
/// shapes and DualPipe, 1 otherwise).
struct GenerateOptions {
    ScheduleKind kind = ScheduleKind::DualPipe;
    int ranks = 0;
    int microbatches = 0;
    int stagesPerRank = 0;
};

/// Default stages per rank of a kind (see GenerateOptions).
int defaultStagesPerRank(ScheduleKind kind);

/// Number of model stages a kind has on `ranks` ranks with `stagesPerRank` chunks each:
/// DualPipe: ranks (every stage twice); V shapes: 2 × ranks; interleaved: v × ranks; others: ranks.
int stageCountFor(ScheduleKind kind, int ranks, int stagesPerRank);

/// Throws ConstraintError naming the rule when (kind, ranks, microbatches, stagesPerRank) is not a valid
/// size: at least one rank and one microbatch; DualPipe: even ranks, even microbatches, microbatches ≥
/// 2 × ranks; DualPipeV: microbatches ≥ 2 × ranks; 1F1B and ZB-H1: microbatches ≥ stages; ZB-V and
/// DualPipeV: exactly 2 stages per rank; Interleaved 1F1B (PyTorch's rule): with rounds = max(1,
/// microbatches / ranks), microbatches % rounds == 0; GPipe/1F1B/ZB-H1/DualPipe: 1 stage per rank
/// (DualPipe's "2 chunks" are replicas, so 1 or 2 accepted).
void checkConstraints(const GenerateOptions& options);

/// Generates the schedule (placement and per-rank order). Throws ConstraintError (see checkConstraints).
/// DualPipe and DualPipeV reproduce the reference implementation's per-rank compute order exactly
/// (deepseek-ai/DualPipe @ 3da1bbe, described in shared/reference/dualpipe.md).
Schedule generate(const GenerateOptions& options);

} // namespace dps
