#pragma once
// What rank 0 writes after a run: measured.json (the measured trace of trace/measured.h, written with its
// one writer, serializeMeasured) and, on request, Chrome traces of the median step (one per rank with
// distributedInfo, plus a combined one).
#include "correctness.h"
#include "executor.h"
#include "schedule/schedule.h"
#include "trace/chrometrace.h"
#include "trace/measured.h"

#include <filesystem>
#include <vector>

namespace dps::runtime {

/// The measured trace of a run's records: records[r] = rank r's records of the measured steps (step
/// numbered from 0 after the warm-up), each action named from schedule.order[r][index]; steps and
/// medianStep set (setStepsFromActions). The header, the ranks' hosts, correctness, warnings and project are
/// left to the caller. Throws std::out_of_range when a record's index is not in its rank's order.
MeasuredTrace measuredTrace(const std::vector<std::vector<ActionRecord>>& records, const Schedule& schedule);

/// The correctness section of measured.json: the report's pass, maxima, thresholds, failure message and
/// per-microbatch losses. Never throws.
MeasuredCorrectness measuredCorrectness(const CorrectnessReport& report);

/// The measured timeline of one step: one slice per action (an overlapped slot's halves both span it),
/// memory after every action, and a flow for every message between ranks (sent at the producer's end,
/// arrived when the consumer stopped waiting). Times in µs, bytes in bytes. info carries the run's header and,
/// when the trace records them, "hosts": each rank's host (a flow between ranks of different hosts crossed
/// hosts). Never throws.
Timeline measuredTimeline(const MeasuredTrace& trace, const Schedule& schedule, int step);

/// Writes measured.json atomically (serializeMeasured, writeFileAtomic) and, when traceDir is not empty,
/// the median step's traces: one per rank (rank<r>.trace.json) and combined.trace.json. Throws IoError
/// naming the file.
void writeMeasuredOutputs(const MeasuredTrace& trace, const Schedule& schedule, const std::filesystem::path& output,
    const std::filesystem::path& traceDir);

} // namespace dps::runtime
