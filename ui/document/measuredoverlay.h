#pragma once
// A run's measurement laid over the prediction (the designer's run overlay), plain C++: one measured step
// as timeline blocks matched to the predicted blocks (same rank and position), predicted against measured
// for makespan, bubble rate, per-rank idle and peak memory, the largest per-action start slips, the step's
// critical path with each rank's share, and stragglers and variance over all steps (trace/runstats.h).
#include "document/blockindex.h"
#include "document/snapshot.h"

#include "project/validatedconfig.h"
#include "trace/measured.h"
#include "trace/runstats.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dps::ui {

/// One action that started at another time than predicted.
struct StartSlip {
    int rank = 0;
    int position = 0; ///< of the predicted block
    std::string action;
    double predictedStartUs = 0.0;
    double measuredStartUs = 0.0;
    double slipUs() const { return measuredStartUs - predictedStartUs; }
};

/// One line of predicted against measured.
struct OverlayRow {
    std::string key; ///< "makespan", "bubble", "idle-<r>", "peak-memory", "peak-memory-<r>"
    std::string label; ///< "makespan", "rank 1 idle", …
    enum class Unit { Microseconds, Bytes, Ratio } unit = Unit::Microseconds;
    double predicted = 0.0;
    double measured = 0.0;
    /// (measured − predicted) ÷ predicted; unset when predicted is 0.
    std::optional<double> error() const;
};

/// Memory of a rank after each measured action of the step (time = the action's end).
struct MeasuredMemoryPoint {
    double timeUs = 0.0;
    double bytes = 0.0;
};

struct MeasuredOverlay {
    std::shared_ptr<const MeasuredTrace> trace;
    std::string path; ///< the measured.json it came from
    int step = 0; ///< the measured step shown
    std::shared_ptr<const BlockIndex> blocks; ///< the step's blocks; position = the matched predicted position
    int matched = 0; ///< measured blocks matched to a predicted one
    int unmatched = 0; ///< measured blocks with no predicted counterpart (another order or variant)
    double makespanUs = 0.0;
    std::vector<double> idleUs; ///< per rank: makespan − Σ busy (the median view: median over the steps)
    std::vector<double> peakMemoryBytes; ///< per rank, over the step
    std::vector<std::vector<MeasuredMemoryPoint>> memory; ///< per rank
    std::vector<StartSlip> slips; ///< largest |slip| first
    std::vector<OverlayRow> rows;
    /// The shown step's critical path (measuredCriticalPath); its slots index each rank's `blocks`.
    std::shared_ptr<const CriticalPath> criticalPath;
    /// Stragglers and variance over every measured step (runStats with kStragglerThreshold).
    RunStats stats;

    /// The row of `key`, nullptr when absent.
    const OverlayRow* row(const std::string& key) const;
};

/// The share above the other ranks' median compute that flags a straggler in the overlay (docs/analysis.md).
inline constexpr double kStragglerThreshold = 0.1;

/// A measured action as a timeline block of `rank` at `position`: it starts no earlier than `lastEndUs` (the
/// end of the rank's previous block, µs; advanced to this block's end) and ends no earlier than it starts, its
/// wait (µs) clamped into it; waitedForInput when the measured wait is positive.
TimelineBlock measuredBlock(
    const Action& action, int rank, int position, double startUs, double endUs, double waitUs, double& lastEndUs);

/// The measured step numbers of a trace, in order.
std::vector<int> measuredSteps(const MeasuredTrace& trace);

/// Lays step `step` (-1: the median step) of `trace` over `predicted`. Measured actions are matched to
/// predicted blocks of the same rank by action, in order. Slips are the 50 largest by magnitude. Each rank's idle
/// is the step's makespan less its busy time; for -1 it is the median over all steps of that (measuredIdle), as
/// `dpstudio run` reports it, since one step's idle moves with the step's noise.
MeasuredOverlay buildOverlay(
    std::shared_ptr<const MeasuredTrace> trace, const std::string& path, int step, const SimulationSnapshot& predicted);

} // namespace dps::ui
