#pragma once
// The worker's progress stream (JSON lines, docs/worker-protocol.md): the event names and the format
// version. The worker writes them, `dpstudio run` forwards and reads them (engine/launch/progress.h parses
// them) and ends a failed run's stream with its own failed event, and the designer's run panel follows them
// through that parser.
#include <string_view>

namespace dps::protocol {

/// Newest progress-stream format, written in hello, done and failed; a reader follows a newer one and says so.
/// 1: hello, progress, done, error. 2: adds failed.
inline constexpr int kProgressFormatVersion = 2;

/// The "event" member of each line.
inline constexpr std::string_view kEventHello = "hello"; ///< rank 0, first: ranks, steps, warmup, backend, comm
inline constexpr std::string_view kEventProgress = "progress"; ///< every rank: step, done, total
inline constexpr std::string_view kEventDone = "done"; ///< rank 0, last: output, correctness, step makespans
inline constexpr std::string_view kEventError = "error"; ///< any rank: rank, message
/// `dpstudio run --progress-json`, last line of every run that exits non-zero: exit_code, message (why)
inline constexpr std::string_view kEventFailed = "failed";

} // namespace dps::protocol
