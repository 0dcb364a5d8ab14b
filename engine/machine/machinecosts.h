#pragma once
// The prediction for this machine: a CPU device profile (cpuprofile.h, measured by `dpstudio devices --probe`)
// turned into the costs of a CPU run of a project's variant, and the PredictOptions that predict() takes them
// through. Every term is a median the probe measured with the calls and buffers of a run
// (docs/cpu-profile.md, "The prediction for this machine"):
//
//   per layer, T tokens, hidden h, FFN f (the calls of engine/runtime/stagemath.cpp):
//     F = gemm(T×f×h, X·W1ᵀ) + gelu_forward(T·f) + gemm(T×h×f, A·W2ᵀ)          (+ mse_loss(T·h) once, last stage)
//     I = gemm(T×f×h, dY·W2) + gelu_backward(T·f) + gelu_forward(T·f) + gemm(T×h×f, dH·W1)
//         (the first stage's first layer skips its dX GEMM: nothing consumes the model's input gradient)
//     W = gemm(h×f×T, dW2 += dYᵀ·A) + gemm(f×h×T, dW1 += dHᵀ·X)
//     B = I + W (the same calls in another order)
//   a stage = the sum over its layers; an overlapped F&B slot (CpuBackend::runConcurrently) runs its halves
//   on two threads where the rank has two cores per BLAS thread (halvesRunConcurrently): then it lasts
//   max(F, B) of its two stages (averaged over the schedule's pairs for one forward stage), and predict()'s
//   shared-cores timing (PredictOptions::cores, sim/sharedcores.h) stretches it when the threads outnumber
//   the cores; else one after the other: F + B;
//   p2p: latency and bandwidth of the probe's ping-pong fit.
// Not counted: the replica gradient sum of DualPipe (RankExecutor::sumReplicaGradients runs after the step's
// last action, outside the measured makespan), the first stage's input copy (one T×h memcpy) and the
// executor's own bookkeeping (a few µs per action, tests/bench/run_bench.sh measures it).
#include "cpuprofile.h"

#include "project/predict.h"
#include "project/project.h"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace dps::machine {

/// One stage's times on this machine, µs, term by term (each term: the profile's median of the call × calls).
struct MachineStageCost {
    int stage = 0;
    int layers = 0;
    double forwardGemmUs = 0; ///< F: layers × (T×f×h + T×h×f GEMMs)
    double geluForwardUs = 0; ///< F: layers × gelu_forward(T·f)
    double lossUs = 0; ///< F, last stage only: mse_loss(T·h)
    double inputGemmUs = 0; ///< I: layers × dA GEMM + (layers, less one on the first stage) × dX GEMM
    double geluBackwardUs = 0; ///< I: layers × gelu_backward(T·f)
    double geluRecomputeUs = 0; ///< I: layers × gelu_forward(T·f) (A is recomputed from H for W)
    double weightGemmUs = 0; ///< W: layers × (dW2 and dW1 GEMMs)

    // A transformer stage (the profile's transformer_stages; the block terms above stay 0): its measured
    // compute and, with expert parallelism, its all-to-all exchanges over the probed p2p link.
    double stageComputeForwardUs = 0; ///< F: the measured compute of the stage
    double a2aForwardUs = 0; ///< F: its exchanges (dispatch and combine of each MoE layer)
    double stageComputeInputUs = 0; ///< I: the measured compute
    double a2aBackwardUs = 0; ///< I and B: their exchanges (the gradients of combine and dispatch)
    double stageComputeWeightUs = 0; ///< W: the measured compute
    std::optional<double> stageComputeBackwardUs; ///< B: the measured compute (I and W at once); unset: block model
    /// With exchanges (ep > 1 and MoE layers): F and B as chains of the measured compute chunks and the exchanges
    /// (sim/costmodel.h), whose sums are forwardUs() and backwardUs(); empty otherwise.
    std::vector<Chunk> forwardChain;
    std::vector<Chunk> backwardChain;

    double forwardUs() const { return forwardGemmUs + geluForwardUs + lossUs + stageComputeForwardUs + a2aForwardUs; }
    double inputGradUs() const
    {
        return inputGemmUs + geluBackwardUs + geluRecomputeUs + stageComputeInputUs + a2aBackwardUs;
    }
    double weightGradUs() const { return weightGemmUs + stageComputeWeightUs; }
    /// I + W (block model); a transformer stage's measured B plus its exchanges.
    double backwardUs() const
    {
        return stageComputeBackwardUs ? *stageComputeBackwardUs + a2aBackwardUs : inputGradUs() + weightGradUs();
    }
};

/// The costs of a CPU run of one variant on the machine of a profile.
struct MachineCosts {
    bool transformer = false; ///< the stages are a transformer's, timed whole (profile.transformerStages)
    std::string source; ///< what the figures come from, e.g. "probed CPU profile, ~/.cache/dpstudio/cpu-….json"
    ProbeShape shape; ///< T×h×f of the variant
    int cores = 0; ///< the machine's cores (the profile's machine.cores): PredictOptions::cores
    int threads = 1; ///< BLAS threads per rank the profile was measured with
    std::vector<MachineStageCost> stages; ///< one per model stage
    bool boundToCores = false; ///< mpirun binds each rank to a core of its own (ranksBoundToCores)
    bool halvesConcurrent = false; ///< an overlapped slot's halves run on two threads (halvesRunConcurrently)
    /// Per stage: the overlapped F&B slot whose forward half is this stage, µs, the mean over the schedule's
    /// overlapped slots that start with its forward: max(F of the stage, B of the paired stage) when the halves
    /// run on two threads (the shared-cores timing stretches it where threads outnumber cores), F + B when they
    /// run one after the other; unset when the stage starts no overlapped slot.
    std::vector<std::optional<double>> overlapUs;
    std::optional<double> latencyUs; ///< the p2p fit; unset when the profile has no p2p part
    std::optional<double> bandwidthBytesPerUs; ///< bytes/µs; 0 = unlimited
    std::vector<std::string> notes; ///< what the profile did not give (no p2p) and what was kept instead
};

/// Whether a CPU run of `ranks` ranks on one machine of `cores` cores, `threads` BLAS threads per rank, has each
/// rank bound to a core of its own: Open MPI 4's default binding (mpirun(1): to a core for at most 2 ranks, to
/// the socket for more; none when the ranks oversubscribe the cores) unless the launcher's options for the run
/// say otherwise (mpirunOptions: `--bind-to none` with threads > 1). Measured here: 2 ranks on 2 cores run with
/// Cpus_allowed_list 0 and 1, 4 ranks with 0-1 each. Never throws.
bool ranksBoundToCores(int ranks, int cores, int threads);

/// Whether the CPU backend of each rank of such a run runs an overlapped slot's halves on two threads at once
/// (runtime/cpubackend.h LaneMode::Threads): when the cores the rank may use — its one core where mpirun binds
/// it (ranksBoundToCores), else cores ÷ ranks — are at least twice its BLAS threads; else one after the other
/// on one thread (LaneMode::InTurn), as defaultLaneMode in runtime/cpubackend.cpp decides. Never throws.
bool halvesRunConcurrently(int ranks, int cores, int threads);

/// The costs of `variant` of `project` run on the CPU backend of the profile's machine (the formulas above).
/// A transformer project's stages are the profile's transformer_stages of their keys (transformerStageKeys):
/// F, I, W and B the measured compute; with expert parallelism (a stage with MoE layers, ep > 1) each of the
/// stage's exchanges adds latency + bytes ÷ bandwidth of the p2p fit (the project's link without one), its
/// bytes the model library's dispatch and combine volumes (model::layerCost) at 4 bytes an element (the CPU
/// computes in fp32): per MoE layer F exchanges the row counts (latency only), the dispatch and the combine, I
/// and B the combine's and the dispatch's volume back (as many exchanges as the measured chunks say), and F and B
/// become chains (an overlapped slot is then laid on two lanes).
/// `source` names the profile in MachineCosts::source. Throws FormatError when a size is not positive, when
/// the profile was not measured at the variant's shape ("<source> holds 256x512x2048, not the variant's
/// 32x1024x4096: probe again (dpstudio devices --probe --project P)"), or lacks one of the calls, when it lacks a
/// transformer stage of the variant ("<source> has no transformer stage EDM, T=64, ep 1 of …: probe it …") or
/// holds it with another number of chunks than the stage has exchanges, and as buildSchedule /
/// effectivePartition / placementOf for a variant that cannot be built.
MachineCosts machineCosts(
    const CpuProfile& profile, const Project& project, const Variant& variant, const std::string& source);

/// Lays machine costs over a cost model built from the project (buildCostModel): for every stage each time
/// the project does not type (costs.stages[s].f_us … ; a calibration's costs are typed) becomes the machine's
/// F, I, W, B; the F&B slot takes the machine's overlapUs unless the stage types fb_us or the project's
/// overlap_factor differs from 1 (a typed or calibrated factor is kept); latency and bandwidth take the p2p
/// fit unless the project types them. Chains are the machine's (a transformer stage with exchanges), else
/// cleared; a typed F or B clears the chain it replaces. Never throws.
void applyMachineCosts(CostModel& model, const MachineCosts& costs, const CostSettings& typed);

/// The options that predict a CPU run of the variant on this machine: fp32 tensors, applyMachineCosts as the
/// cost adjuster (after `then`, when given: e.g. the command line's cost flags, which still win), and
/// cores = costs.cores (predict()'s shared-cores timing when the ranks' threads outnumber them). Peaks only
/// unless `timeline`. Never throws.
PredictOptions machinePredictOptions(
    const MachineCosts& costs, const CostSettings& typed, bool timeline = false, CostAdjuster then = {});

/// The shape a variant computes at: T = (its microbatch size, else the model's) × seq_len, h, f. Throws
/// FormatError as projectShapes.
ProbeShape variantShape(const Project& project, const Variant& variant);

/// A profile and where it came from, for a prediction for this machine.
struct MachineProfile {
    CpuProfile profile;
    std::string file; ///< the file it was read from (the cache file or --profile FILE)
    bool probed = false; ///< this machine's probe made it (just now or earlier: the cache), else a named file
    bool fresh = false; ///< measured just now
    /// Checked against this machine before use (launch::CpuProbeOptions::checkDrift): its GEMM throughput now ÷
    /// the cached profile's − 1; unset when not checked.
    std::optional<double> drift;
    bool reprobedForDrift = false; ///< the check found the cached profile too far off, so it was probed again
    /// The check against the profile as used, within the limit: its compute times are the file's × 1 / (1 + it)
    /// (machine::scaleComputeTimes), the machine's speed now. `drift` when the profile was not probed again, else
    /// the check repeated against the fresh profile.
    std::optional<double> scaledBy;
    /// "probed CPU profile, <file>" or "CPU profile <file>", a file under $HOME written "~/…", followed by the
    /// check when there was one ("; checked now: this machine's GEMMs +3.1 % against it, its times scaled to that",
    /// or "; probed again now: this machine's GEMMs ran +28 % against the cached profile", followed by ", and -4 %
    /// against the new one as the ranks compute together, its times scaled to that" when it was checked again).
    std::string description() const;
};

/// Throws FormatError naming what `profile` holds instead when it lacks one of `shapes` ("<source> holds
/// 256x512x2048, not the variant's 32x1024x4096: probe again …"); `source` names the profile.
void requireProfileShapes(const CpuProfile& profile, const std::vector<ProbeShape>& shapes, const std::string& source);

/// Throws FormatError ("<source> has no transformer stage EDM, T=64, ep 1: probe it …") when `profile` lacks a
/// transformer stage of `variants` of `project` (empty: every variant). A block model needs none.
void requireTransformerStages(const CpuProfile& profile, const Project& project,
    const std::vector<std::string>& variants, const std::string& source);

/// This machine's newest cached profile (by probed_at) for `threads` BLAS threads: of the cache folder's
/// cpu-*.json files, those whose machine has this host's CPU model, online cores and /proc/cpuinfo flags
/// (what the designer can check without loading OpenBLAS; `dpstudio run` keys the cache exactly through the
/// worker). Unreadable files are skipped. nullopt when there is none. Never throws.
std::optional<MachineProfile> cachedMachineProfile(int threads);

/// The table of a machine prediction's stage costs (stage, layers, F, I, W, B and each term), for
/// `dpstudio run` and docs. Never throws.
std::string formatMachineCosts(const MachineCosts& costs);

} // namespace dps::machine
