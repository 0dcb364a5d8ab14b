#pragma once
// The worker's progress stream (JSON lines, docs/worker-protocol.md): the event names and the format
// version. The worker writes them, `dpstudio run` forwards and reads them (engine/launch/progress.h parses
// them), and the designer's run panel follows them through that parser.
#include <string_view>

namespace dps::protocol {

/// Newest progress-stream format: written in hello and done, refused by readers when newer.
inline constexpr int kProgressFormatVersion = 1;

/// The "event" member of each line.
inline constexpr std::string_view kEventHello = "hello"; ///< rank 0, first: ranks, steps, warmup, backend, comm
inline constexpr std::string_view kEventProgress = "progress"; ///< every rank: step, done, total
inline constexpr std::string_view kEventDone = "done"; ///< rank 0, last: output, correctness, step makespans
inline constexpr std::string_view kEventError = "error"; ///< any rank: rank, message

} // namespace dps::protocol
