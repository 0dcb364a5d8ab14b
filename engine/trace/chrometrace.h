#pragma once
// Timelines (predicted or measured) as Chrome trace JSON, the format Perfetto and chrome://tracing open
// and Holistic Trace Analysis reads. A Timeline is neutral: the simulator's adapter below fills one, and a
// measured run can fill the same struct from its own records.
//
// Combined file: pid = rank ("rank r"), tracks (tid) 0 "compute" (one ph:"X" slice per slot, named
// "PP:<action>" in PyTorch text), 1 "overlap: forward half" and 2 "overlap: backward half" (the halves of
// an OVERLAP_F_B slot; a slot laid on two lanes has each half's chunks as child slices on its half's track,
// e.g. "L12 F compute", "L12 F all-to-all"), 3 "p2p: incoming" (each transfer from send to arrival); memory as counter
// events (ph:"C") "memory (bytes)" and "in-flight microbatches"; transfers also as flow events (ph "s" in the producer
// slot, ph "f" in the consumer slot). ts and dur in µs. otherData carries format_version, the tool, and Timeline::info.
// Per-rank files: the same for one rank, without the flow arrows (their other end lives in another file),
// plus top-level distributedInfo {rank, world_size, backend, pp_size} for Holistic Trace Analysis.
#include "schedule/action.h"
#include "schedule/schedule.h"
#include "sim/costmodel.h"
#include "sim/simulator.h"

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dps {

/// Version of the Chrome trace files we write (recorded in otherData.format_version).
inline constexpr int kChromeTraceFormatVersion = 1;

/// One timed slice of a rank: a slot, or one half of an overlapped slot.
struct TimelineSlice {
    std::string action; ///< PyTorch text, e.g. "2F0" or "(0F7;7B3)OVERLAP_F_B"
    std::string kind; ///< "F", "I", "W", "B", or "OVERLAP_F_B" for an overlapped slot
    int stage = -1; ///< the op's stage (an overlapped slot: its forward half's)
    int microbatch = -1; ///< the op's microbatch (an overlapped slot: its forward half's)
    double startUs = 0.0; ///< µs from the start of the step
    double endUs = 0.0;
    std::vector<TimelineSlice> halves; ///< an overlapped slot: forward half, then backward half; else empty
    nlohmann::json args = nlohmann::json::object(); ///< extra args shown with the slice (e.g. wait_us, bytes)
    /// A half of an overlapped slot laid on two lanes (CostModel::overlapLayout): its chunks in time order, kind
    /// "compute" or "all-to-all"; else empty.
    std::vector<TimelineSlice> lanes;
};

/// Memory of a rank from timeUs until the next sample.
struct TimelineMemorySample {
    double timeUs = 0.0;
    double totalBytes = 0.0; ///< everything the rank holds
    double activationBytes = 0.0; ///< saved activations alone
    int inflight = -1; ///< (stage, microbatch) activations live; -1 = not known
};

/// One point-to-point message from the slot that produced it to the slot that consumes it.
struct TimelineFlow {
    std::string category; ///< "activation" or "gradient"
    std::string name; ///< e.g. "activation 2F0 → 3F0"
    int fromRank = 0;
    int fromSlice = 0; ///< index into ranks[fromRank].slices
    int toRank = 0;
    int toSlice = 0; ///< index into ranks[toRank].slices
    double sendUs = 0.0; ///< leaves the producer (µs)
    double arriveUs = 0.0; ///< available at the consumer (µs)
    double bytes = 0.0;
};

struct RankTimeline {
    std::vector<TimelineSlice> slices; ///< in execution order
    std::vector<TimelineMemorySample> memory; ///< in time order; may be empty
};

/// Everything a trace shows. ranks[r] is rank r.
struct Timeline {
    std::string source = "predicted"; ///< "predicted" or "measured"
    std::string backend = "simulated"; ///< distributedInfo.backend (e.g. "mpi", "nccl")
    std::vector<RankTimeline> ranks;
    std::vector<TimelineFlow> flows;
    nlohmann::json info = nlohmann::json::object(); ///< merged into otherData (schedule, sizes, host, ...)
};

/// The predicted timeline of a simulated schedule: one slice per slot (an overlapped slot's two halves
/// both span the slot: the simulator runs them concurrently; a slot laid on two lanes gets each half's chunks
/// in `lanes`), memory from RankResult::memory, one flow per message between different ranks (send at the
/// producer's end, arrival after CostModel::transferTime(bytes, from rank, to rank) of the boundary's
/// message: the inter-node link between nodes). A deadlocked result gives the slots that ran only when timing was
/// recorded; info holds the schedule's kind and sizes, makespan_us and bubble_rate.
Timeline timelineFromSimulation(const Schedule& schedule, const CostModel& costs, const SimResult& result);

/// The combined trace: every rank as a process, with flows. A JSON object {traceEvents, displayTimeUnit,
/// otherData}.
nlohmann::json chromeTrace(const Timeline& timeline);
/// The trace of one rank, with distributedInfo. Precondition: 0 ≤ rank < ranks.size().
nlohmann::json chromeTraceForRank(const Timeline& timeline, int rank);

/// Writes the combined trace atomically. Throws IoError naming the file.
void writeChromeTrace(const Timeline& timeline, const std::filesystem::path& file);
/// Name of rank r's file in a per-rank folder: "rank<r>.trace.json".
std::string perRankTraceName(int rank);
/// Creates `dir` when needed and writes one file per rank (perRankTraceName); returns the paths. Throws
/// IoError naming the folder or file.
std::vector<std::filesystem::path> writeChromeTracePerRank(const Timeline& timeline, const std::filesystem::path& dir);

} // namespace dps
