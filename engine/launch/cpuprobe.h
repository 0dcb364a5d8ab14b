#pragma once
// `dpstudio devices --probe`: measures this machine's CPU device profile (cpuprofile.h, docs/cpu-profile.md)
// with dpstudio-worker's probe modes (engine/runtime/probe.h) and caches it per machine:
//   1. `dpstudio-worker --probe-info`: the machine key, OpenBLAS's own core, the kernel candidates of the
//      CPU's features; a cached profile of this key at the same shapes is returned as it is (unless reprobe);
//   2. `dpstudio-worker --probe-compute` once per candidate core, with OPENBLAS_CORETYPE set (OpenBLAS reads
//      it only when it is loaded, so each core needs its own process), plus OpenBLAS's own when it is not a
//      candidate: the F/I/W GEMMs and memory-bound ops at the shapes; the fastest is the measured winner, the
//      kernel rule (chooseBlasCore) decides, and the chosen core's figures become the profile's;
//   3. `mpirun -np 2 <the options of a run on one machine> dpstudio-worker --probe-p2p`: ping-pong, fitted
//      to latency + bytes / bandwidth;
//   4. the profile is written to the cache, where dpstudio-worker finds the measured winner for its kernel
//      choice (runtime/cpubackend.h preferredBlasCore).
// An OPENBLAS_CORETYPE set by the user is left alone: only that kernel is measured, and it is recorded.
#include "machine/cpuprofile.h"
#include "machine/machinecosts.h"

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace dps::launch {

/// The most shapes a probe with CpuProbeOptions::extendCache keeps in the machine's cache file.
inline constexpr std::size_t kMaxCachedShapes = 8;

struct CpuProbeOptions {
    std::vector<machine::ProbeShape> shapes; ///< the model's shapes (projectShapes); at least one
    int threads = 1; ///< BLAS threads per rank (≥ 1)
    double budgetS = 10; ///< seconds of measuring to aim for (≥ 0.5); process starts come on top
    bool reprobe = false; ///< measure even when the cache holds a profile of this machine at these shapes
    /// Reuse a cached profile that holds every shape (and maybe others); when it lacks some, measure only
    /// those, under the kernel its figures are for, and add them to it (at most kMaxCachedShapes in all, the
    /// new ones first), keeping its kernel choice and p2p fit; without a cached profile (or when that fails),
    /// probe in full at `shapes` and the ones the cache held. What `dpstudio run` and --this-machine ask for.
    bool extendCache = false;
    /// With a cached profile that holds the shapes (extendCache): time its GEMMs at the first shape again for
    /// kDriftCheckSeconds under its kernel before trusting it, and probe in full again (as `reprobe`) when they
    /// run more than kProfileDriftLimit faster or slower than the profile says. What `dpstudio run` asks for:
    /// this machine's speed drifts (other work, the host's neighbours), and a stale profile is a stale prediction.
    bool checkDrift = false;
    /// checkDrift: the worker processes that time the GEMMs at once, each alone on a core as far as the cores go:
    /// the ranks that will compute together in the run (min(ranks, cores ÷ BLAS threads)), so that the check sees
    /// the machine as loaded as the run will load it (two cores sharing a cache and the host's memory are slower
    /// together than one alone, by 0 to 10 % on the 2-core EPYC of docs/cpu-profile.md, changing over the hours).
    int checkProcesses = 1;
    std::filesystem::path worker; ///< dpstudio-worker; empty = findWorker()
    /// A transformer project: its stages (of `variants`, empty = every variant) are timed too (dpstudio-worker
    /// --probe-transformer, budgetS × 0.7 seconds over the stages, at most 1 s a stage), those the profile (cached or
    /// just measured) lacks, unless `reprobe`, and kept in the profile's transformer_stages (at most
    /// kMaxCachedTransformerStages, the newest first). Unset, or a block model: none.
    std::optional<Project> project;
    std::vector<std::string> variants;
};

struct CpuProbeResult {
    machine::CpuProfile profile;
    bool fromCache = false; ///< the cached profile was reused
    std::filesystem::path cachePath; ///< the cache file read or written; empty when there is no cache folder
    std::vector<std::string> notes; ///< what was left out and why (no p2p, a core that failed, no cache)
    /// CpuProbeOptions::checkDrift: the cached profile's GEMM throughput at the checked shape, measured now ÷ the
    /// profile's − 1 (+0.2 = 20 % faster now); unset when not checked or the check could not run (a note says why).
    std::optional<double> drift;
    bool reprobedForDrift = false; ///< the check found more than kProfileDriftLimit, so the profile was probed again
    /// The check against the profile returned: `drift` when it was not probed again; after a probe again with
    /// checkProcesses > 1, the check repeated against the fresh profile (which timed one process alone, so it
    /// lacks what the ranks lose computing together); unset otherwise. The prediction scales by it.
    std::optional<double> speedCheck;
};

/// Seconds of measuring the profile check takes (CpuProbeOptions::checkDrift); the worker's start and one warm-up
/// repetition come on top (about 0.7 s at the default project's shape on a 2-core EPYC). The prediction is scaled
/// by what it finds, so it times each call 10–20 times (a layer's GEMMs take 50–80 ms at the benchmarks' shapes
/// there), not the 4–6 times of 0.3 s.
inline constexpr double kDriftCheckSeconds = 1.0;
/// The largest |drift| a cached profile is trusted with: beyond what one process's GEMMs vary by from where its
/// pages fall (up to about 10 % at the default project's shape with huge pages, more at a tiny model's), and what a
/// makespan goal of 10 % could not absorb either (docs/cpu-profile.md, "A profile checked before each run").
inline constexpr double kProfileDriftLimit = 0.15;

/// Runs the probe (steps above), writing one progress line per step to `log` ("dpstudio: …"). Throws
/// IoError when dpstudio-worker is not found, its info mode fails, the compute probe fails for every
/// core (naming the worker's message; a core that fails alone is a note) or the transformer stages cannot be
/// timed; FormatError when the shapes are empty or a worker's output cannot be read, and as
/// transformerStageKeys. A p2p part that cannot run is a note. A profile read from the cache keeps the
/// transformer stages it holds (a full probe, at other shapes, keeps them too: they are the machine's).
CpuProbeResult probeCpu(const CpuProbeOptions& options, std::ostream& log);

/// The CPU profile to predict `shapes` (at least one) with on this machine, `threads` BLAS threads per rank:
/// `profileFile` when given (read as it is); else the machine's cached profile when it holds every shape;
/// else a probe (probeCpu, `budgetS` seconds of measuring; its progress lines to `log`) at these shapes and
/// the ones the cache held (at most 8, these first), which replaces the cache file. With a transformer
/// `project` (not null), the profile must also hold the transformer stages of `variants` of it (empty: every
/// variant): the cached profile gets the missing ones measured and added (CpuProbeOptions::project), a named
/// file must hold them. Throws IoError (a file that cannot be read, no worker), FormatError (a bad file, a
/// profile of other shapes, stages or another BLAS thread count than `threads`: "<file>: measured with 2 BLAS
/// threads, the run uses 1"). `checkDrift`: the cached profile is checked first (CpuProbeOptions::checkDrift;
/// MachineProfile::drift) in `checkProcesses` processes at once (CpuProbeOptions::checkProcesses); a named file is
/// not. A drift within kProfileDriftLimit scales the profile's compute times to the machine's speed now
/// (MachineProfile::scaledBy).
machine::MachineProfile machineProfile(const std::vector<machine::ProbeShape>& shapes, int threads,
    const std::string& profileFile, double budgetS, std::ostream& log, const Project* project = nullptr,
    const std::vector<std::string>& variants = {}, bool checkDrift = false, int checkProcesses = 1);

/// The current time in UTC, ISO 8601 to the second ("2025-01-31T12:00:00Z").
std::string utcTimestamp();

} // namespace dps::launch
