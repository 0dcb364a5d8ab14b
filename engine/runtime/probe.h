#pragma once
// dpstudio-worker's probe modes (docs/cpu-profile.md), which measure this machine for the CPU device
// profile (machine/cpuprofile.h); `dpstudio devices --probe` (launch/cpuprobe.h) starts them and assembles
// the profile:
//   --probe-info [--threads N] [-o FILE]       the machine key, the kernel candidates, the measured winner
//                                              cached for this machine and the current choice
//   --probe-compute --shapes TxHxF[,…] [--threads N] [--seconds S] [-o FILE]
//                                              GEMMs and memory-bound ops at the model's shapes, under the
//                                              OpenBLAS core this process loaded (OPENBLAS_CORETYPE as given)
//   --probe-p2p [--bytes B[,…]] [--seconds S] [-o FILE]
//                                              under mpirun with 2 ranks: ping-pong between ranks 0 and 1
//   --probe-transformer --project FILE [--stages V:S[,…]] [--threads N] [--seconds S] [-o FILE]
//                                              F, I, W and B of a transformer project's stages (variant index V,
//                                              stage S; default every distinct stage), ep members as threads
// Each writes a CpuProfile holding what it measured (stdout without -o). The probe modes never re-execute
// the worker with another OPENBLAS_CORETYPE: the info mode reports OpenBLAS's own detection and the
// compute mode measures the core it is started with.
#include "comm.h"
#include "machine/cpuprofile.h"

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace dps::runtime {

struct ProbeOptions {
    enum class Mode { Info, Compute, P2p, Transformer };
    Mode mode = Mode::Info;
    std::vector<machine::ProbeShape> shapes; ///< --shapes (compute; required there)
    std::vector<std::uint64_t> bytes; ///< --bytes (p2p; default 8, 1 KiB, 64 KiB, 256 KiB, 1 MiB, 4 MiB)
    int threads = 1; ///< --threads N (≥ 1): BLAS threads
    double seconds = 1.0; ///< --seconds S (> 0, ≤ 600): the time to spend measuring, spread over shapes or sizes
    std::string output; ///< -o/--output FILE; empty = stdout
    std::string project; ///< --project FILE (transformer; required there)
    std::vector<std::pair<int, int>> stages; ///< --stages V:S,… (transformer): variant index, stage; empty = all
};

/// Whether the worker's arguments (after the program name) select a probe mode: the first one is
/// --probe-info, --probe-compute, --probe-p2p or --probe-transformer.
bool isProbeMode(const std::vector<std::string>& args);
/// Parses a probe mode's arguments (the mode first). Throws UsageError naming the flag.
ProbeOptions parseProbeArgs(const std::vector<std::string>& args);
/// The probe modes' usage, one line each.
std::string probeUsage();

/// Times one layer of the block model on the CPU backend at each shape: F, I and W of a one-layer last stage
/// (StageMath, the calls a run makes) through a timing decorator of the backend, so every GEMM and
/// elementwise call is the one a run makes; plus the gradient accumulation of the replica sum (axpy over
/// 2·h·f elements). A warm-up repetition, then repetitions until `seconds` / shapes have passed (at least 3,
/// or 1 when the warm-up alone took that long); medians. `threads`: BLAS threads. Throws RuntimeError when
/// the backend fails.
std::vector<machine::ShapeMeasure> measureCompute(
    const std::vector<machine::ProbeShape>& shapes, int threads, double seconds);

/// Times stages of a transformer project on the CPU backend, each built as a run builds it (modelSpec,
/// StageParams: the variant's partition, the embedding on the first stage, the head and loss on the last) and run
/// with a run's calls (TransformerStage::forward, inputGrad, weightGrad, then forward and backward) on one
/// microbatch of the run's data. A stage with MoE layers and ep > 1 runs as its ep expert-parallel members,
/// threads of this process over a ThreadComm, each holding E/ep experts and exchanging rows with the others; the
/// exchanges (Backend::communicationStarted/Finished of the expert group) are taken out of the compute and split
/// it into chunks. Timed by the thread's CPU time with one BLAS thread, wall time with more. A warm-up
/// repetition, then repetitions until `seconds` / stages have passed (at least 3, 1 when the warm-up alone took
/// that long); per member the median of each chunk; over the members the largest chunk (an exchange waits for
/// the slowest member) and I, the mean W. `stages`: (variant index, stage), distinct keys only (the first of
/// equal ones is timed). Throws FormatError for an index out of range or a model the engine does not run,
/// RuntimeError when the backend fails.
std::vector<machine::TransformerStageMeasure> measureTransformerStages(
    const Project& project, const std::vector<std::pair<int, int>>& stages, int threads, double seconds);

/// Ping-pong between ranks 0 and 1 of `comm` (isend/irecv/wait, the calls a run makes) at each size:
/// two warm-up round trips, three to size the count, then as many as fit in `seconds` / sizes (5 to 2000),
/// the count agreed by broadcast. Collective over `comm` (ranks ≥ 2 only take part in the broadcasts).
/// Returns on rank 0 the median one-way times (half a round trip), µs; empty on the other ranks. Throws
/// RuntimeError with fewer than 2 ranks.
std::vector<machine::P2pSample> measurePingPong(Comm& comm, const std::vector<std::uint64_t>& bytes, double seconds);

/// Runs a probe mode and returns the exit status (0, or dps::kExitRunFailed with the reason on `err`).
/// `argc`/`argv` go to MPI_Init (p2p mode).
int runProbe(const ProbeOptions& options, int* argc, char*** argv, std::ostream& out, std::ostream& err);

} // namespace dps::runtime
