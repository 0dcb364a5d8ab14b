// The generator entry point: size constraints of every kind, then dispatch to the per-family generators.
#include "generator.h"

#include "base/errors.h"
#include "generators_internal.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

namespace dps {

namespace {

bool isVShape(ScheduleKind kind)
{
    return kind == ScheduleKind::ZBV || kind == ScheduleKind::DualPipeV;
}

/// "<kind name>.<what>", e.g. "dualpipe.even-ranks": the rule identifier of a kind-specific rule.
std::string ruleId(ScheduleKind kind, const char* what)
{
    return std::string(kindName(kind)) + "." + what;
}

std::string display(ScheduleKind kind)
{
    return std::string(kindDisplayName(kind));
}

std::string count(long long n, const char* singular, const char* plural)
{
    return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

[[noreturn]] void refuse(std::string rule, const std::string& message)
{
    throw ConstraintError(std::move(rule), message);
}

void checkSizes(const GenerateOptions& o)
{
    if (o.kind == ScheduleKind::Custom)
        refuse("kind.generated", "a Custom schedule has no generator (choose " + generatedKindNames() + ")");
    if (o.ranks < 1)
        refuse("ranks.at-least-one",
            display(o.kind) + " needs at least 1 rank (got " + count(o.ranks, "rank", "ranks") + ")");
    if (o.microbatches < 1)
        refuse("microbatches.at-least-one",
            display(o.kind) + " needs at least 1 microbatch (got " + count(o.microbatches, "microbatch", "microbatches")
                + ")");
}

/// Stages per rank: the kind's fixed value (0 = default accepted), or v >= 1 for interleaved.
void checkStagesPerRank(const GenerateOptions& o)
{
    const int v = o.stagesPerRank;
    const std::string got = " (got " + count(v, "stage per rank", "stages per rank") + ")";
    switch (o.kind) {
    case ScheduleKind::Interleaved1F1B:
        if (v < 0)
            refuse(ruleId(o.kind, "stages-per-rank"), "Interleaved 1F1B needs at least 1 stage per rank" + got);
        return;
    case ScheduleKind::ZBV:
    case ScheduleKind::DualPipeV:
        if (v != 0 && v != 2)
            refuse(ruleId(o.kind, "stages-per-rank"), display(o.kind) + " needs exactly 2 stages per rank" + got);
        return;
    case ScheduleKind::DualPipe:
        if (v < 0 || v > 2)
            refuse(ruleId(o.kind, "stages-per-rank"),
                "DualPipe holds 1 stage per rank, stored twice as replicas (1 or 2 accepted)" + got);
        return;
    default:
        if (v != 0 && v != 1)
            refuse(ruleId(o.kind, "stages-per-rank"), display(o.kind) + " needs exactly 1 stage per rank" + got);
        return;
    }
}

int resolvedStagesPerRank(const GenerateOptions& o)
{
    return o.stagesPerRank > 0 ? o.stagesPerRank : defaultStagesPerRank(o.kind);
}

/// The most (stage, microbatch) pairs a generated schedule may have: 2^26, 8 × the benchmark's largest size
/// (1024 ranks × 8192 microbatches, about 0.6 GB to generate and simulate). Memory grows with the pairs
/// (about 70 bytes each), so the limit keeps a typo such as 8 ranks × 100000000 microbatches from
/// allocating tens of GB; it also keeps every index well inside 32 bits.
constexpr std::int64_t kMaxPairs = std::int64_t(1) << 26;

void checkRange(const GenerateOptions& o)
{
    const bool chunked = o.kind == ScheduleKind::Interleaved1F1B || isVShape(o.kind);
    const std::int64_t stages = std::int64_t(o.ranks) * (chunked ? resolvedStagesPerRank(o) : 1);
    if (stages * o.microbatches > kMaxPairs)
        refuse("size.too-large",
            display(o.kind) + " of " + std::to_string(stages) + " stages × " + std::to_string(o.microbatches)
                + " microbatches is too large (at most 2^26 = " + std::to_string(kMaxPairs)
                + " stage-microbatch pairs)");
}

void checkDualPipe(const GenerateOptions& o)
{
    const std::string got = " (got " + count(o.microbatches, "microbatch", "microbatches") + " for "
        + count(o.ranks, "rank", "ranks") + ")";
    if (o.ranks % 2 != 0)
        refuse("dualpipe.even-ranks", "DualPipe needs an even number of ranks" + got);
    if (o.microbatches % 2 != 0)
        refuse("dualpipe.even-microbatches", "DualPipe needs an even number of microbatches" + got);
    if (o.microbatches < 2 * std::int64_t(o.ranks))
        refuse("dualpipe.microbatches-2x-ranks", "DualPipe needs microbatches >= 2 × ranks" + got);
}

void checkDualPipeV(const GenerateOptions& o)
{
    if (o.microbatches < 2 * std::int64_t(o.ranks))
        refuse("dualpipev.microbatches-2x-ranks",
            "DualPipeV needs microbatches >= 2 × ranks (got " + count(o.microbatches, "microbatch", "microbatches")
                + " for " + count(o.ranks, "rank", "ranks") + ")");
}

/// 1F1B and ZB-H1: every rank must reach its steady state, so microbatches >= stages.
void checkMicrobatchesCoverStages(const GenerateOptions& o)
{
    if (o.microbatches < o.ranks)
        refuse(ruleId(o.kind, "microbatches-ge-stages"),
            display(o.kind) + " needs microbatches >= stages (got "
                + count(o.microbatches, "microbatch", "microbatches") + " for " + count(o.ranks, "stage", "stages")
                + ")");
}

/// PyTorch's flexible interleaving: rounds = max(1, microbatches / ranks) must divide microbatches.
void checkInterleaved(const GenerateOptions& o)
{
    const int rounds = std::max(1, o.microbatches / o.ranks);
    if (o.microbatches % rounds != 0)
        refuse("interleaved-1f1b.rounds-divide-microbatches",
            "Interleaved 1F1B needs microbatches divisible by rounds = max(1, microbatches / ranks) (got "
                + count(o.microbatches, "microbatch", "microbatches") + " for " + count(o.ranks, "rank", "ranks") + ": "
                + std::to_string(rounds) + " rounds, remainder " + std::to_string(o.microbatches % rounds) + ")");
}

} // namespace

int defaultStagesPerRank(ScheduleKind kind)
{
    switch (kind) {
    case ScheduleKind::Interleaved1F1B:
    case ScheduleKind::ZBV:
    case ScheduleKind::DualPipe:
    case ScheduleKind::DualPipeV:
        return 2;
    default:
        return 1;
    }
}

int stageCountFor(ScheduleKind kind, int ranks, int stagesPerRank)
{
    switch (kind) {
    case ScheduleKind::DualPipe:
        return ranks;
    case ScheduleKind::ZBV:
    case ScheduleKind::DualPipeV:
        return 2 * ranks;
    case ScheduleKind::Interleaved1F1B:
        return (stagesPerRank > 0 ? stagesPerRank : defaultStagesPerRank(kind)) * ranks;
    default:
        return ranks;
    }
}

void checkConstraints(const GenerateOptions& options)
{
    checkSizes(options);
    checkStagesPerRank(options);
    checkRange(options);
    switch (options.kind) {
    case ScheduleKind::DualPipe:
        return checkDualPipe(options);
    case ScheduleKind::DualPipeV:
        return checkDualPipeV(options);
    case ScheduleKind::OneFOneB:
    case ScheduleKind::ZBH1:
        return checkMicrobatchesCoverStages(options);
    case ScheduleKind::Interleaved1F1B:
        return checkInterleaved(options);
    default:
        return;
    }
}

namespace {

Schedule dispatch(ScheduleKind kind, int ranks, int microbatches, int stagesPerRank)
{
    switch (kind) {
    case ScheduleKind::GPipe:
        return detail::generateGPipe(ranks, microbatches);
    case ScheduleKind::OneFOneB:
        return detail::generate1F1B(ranks, microbatches);
    case ScheduleKind::Interleaved1F1B:
        return detail::generateInterleaved1F1B(ranks, microbatches, stagesPerRank);
    case ScheduleKind::ZBH1:
        return detail::generateZBH1(ranks, microbatches);
    case ScheduleKind::ZBV:
        return detail::generateZBV(ranks, microbatches);
    case ScheduleKind::DualPipe:
        return detail::generateDualPipe(ranks, microbatches);
    case ScheduleKind::DualPipeV:
        return detail::generateDualPipeV(ranks, microbatches);
    case ScheduleKind::Custom:
        break;
    }
    return {};
}

} // namespace

Schedule generate(const GenerateOptions& options)
{
    checkConstraints(options);
    const int v = resolvedStagesPerRank(options);
    Schedule s = dispatch(options.kind, options.ranks, options.microbatches, v);
    s.kind = options.kind;
    s.ranks = options.ranks;
    s.microbatches = options.microbatches;
    s.stages = stageCountFor(options.kind, options.ranks, v);
    // DualPipe's rank holds its stage twice (two replicas), whatever was asked.
    s.stagesPerRank = options.kind == ScheduleKind::DualPipe ? 2 : v;
    return s;
}

} // namespace dps
