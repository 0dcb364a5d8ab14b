#pragma once
// Calibration: fits the cost model (per-stage F/I/W/B, overlap factor, p2p latency and bandwidth) to the
// measured slots of a run. The input is a neutral list of slots (engine/trace turns a measured.json into
// it: measuredSlots), the output a CostsFile, which engine/project writes as costs.json
// (serializeCostsFile) and lays over a project (applyCostsFile).
#include "base/stats.h"
#include "schedule/action.h"
#include "sim/costmodel.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dps {

/// One executed slot (an overlapped pair is one slot) of one measured step on one rank. Times in µs since
/// the start of the step on that rank.
struct MeasuredSlot {
    int rank = 0;
    int step = 0; ///< measured step
    Action action;
    double startUs = 0.0; ///< when the rank turned to the slot
    double endUs = 0.0; ///< when its outputs were ready
    double waitUs = 0.0; ///< part of [start, end] spent waiting for incoming data
    std::int64_t bytesReceived = 0; ///< bytes of the messages from other ranks it consumed

    /// Time the rank spent on the slot itself: end − start − wait (µs).
    double busyUs() const { return endUs - startUs - waitUs; }
};

/// The fit and how much data each number rests on.
struct Calibration {
    CostsFile costs; ///< per-stage F/I/W/B (µs), overlap factor, p2p latency (µs) and bandwidth (bytes/µs)
    /// samples[stage][k]: slots measured, k in OpKind order (F, I, W, B), then 4: overlapped slots whose
    /// forward half is the stage
    std::vector<std::array<int, 5>> samples;
    int overlapSamples = 0; ///< overlapped slots used for the overlap factor
    int p2pSamples = 0; ///< messages the consumer waited for
    int p2pSizes = 0; ///< distinct message sizes among them
    std::vector<std::string> notes; ///< what could not be fitted and what was kept instead
    /// The fit's residuals: for every slot a fitted time stands for (a single op of a fitted kind, an
    /// overlapped slot of a fitted F&B time), in slot order, its busy time ÷ that fitted time − 1.
    std::vector<double> residuals;
};

/// Number of model stages the slots show: one more than the largest stage of any of their ops; 0 for none.
int slotStageCount(const std::vector<MeasuredSlot>& slots);

/// Fits measured slots:
/// - F, I, W, B of each stage: the mean over every measured step and microbatch of the busy time
///   (end − start − wait) of the single-op slots of that kind, without the lowest and highest 10 % of them
///   (trimmedMean: a makespan sums slot times); a kind never run alone is left unset.
/// - overlap_factor: median over overlapped slots of busy ÷ (F of the forward stage + B of the backward
///   stage), from the fitted values (B = I + W where B never ran alone), as CostModel::overlapTime uses it.
/// - fb_us (StageCostOverride::overlapUs) of each stage: the 10 % trimmed mean busy time of the overlapped slots whose
///   forward half is that stage (the key CostModel::overlapTime reads a typed F&B time by), so that slots of
///   different pairs keep their own times (DualPipeV's (0F;3B) and (3F;0B) differ by stage 0's shorter B).
/// - p2p: for each single-op slot that waited for a message from another rank and started before the
///   producing slot (same step) ended, the transfer time start + wait − end of the producing slot (a slot
///   that started later found the message there: its wait is the receive call's, not the transfer's); the
///   median per message size, then least
///   squares time = latency + bytes ÷ bandwidth over the sizes (one size: latency = its median, bandwidth
///   unlimited, i.e. 0). Negative fits are clamped to 0.
/// - slot variation (costs.slotVariation): the 101 percentiles p0 … p100 of the residuals (Calibration::residuals),
///   rounded to 1e-4, when there are at least 2; a prediction draws slot times from them.
/// Times are rounded to 1 ns, the overlap factor to 1e-4, bandwidth to 1e-3 bytes/µs.
/// `stages` = number of model stages (0: slotStageCount(slots)); slots of other stages are ignored.
/// Never throws.
Calibration calibrate(const std::vector<MeasuredSlot>& slots, int stages = 0);

/// Human summary: a table with one line per stage (F, I, W, B, F&B as formatTime of base/format.h, "-" when
/// not fitted, and the sample counts), then the overlap factor, latency, bandwidth and the notes.
/// Never throws.
std::string formatCalibration(const Calibration& calibration);

} // namespace dps
