#pragma once
// The CPU device profile of this machine (docs/cpu-profile.md): what `dpstudio devices --probe` measures
// and caches, as data. GEMM throughput at the model's own shapes (the exact calls the CPU backend makes for
// one layer's F, I and W), the memory-bound ops (GELU forward and backward, the MSE loss, gradient
// accumulation), MPI point-to-point latency and bandwidth between two ranks on this host, and the BLAS
// kernel choice (which OpenBLAS core type the worker loads). Also the pieces that need no MPI and no BLAS:
// the machine key and the per-machine cache, the kernel rule by CPU features, the latency/bandwidth fit,
// the file format and the table. The measuring is in engine/runtime/probe.h (in dpstudio-worker), the
// orchestration in cpuprobe.h.
#include "model/transformer.h"
#include "project/project.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dps::machine {

/// The profile file's format_version (docs/cpu-profile.md); newer files are refused. Version 2 adds the
/// `transformer_stages` section; a profile without it is written as version 1, which older builds still read.
inline constexpr int kCpuProfileFormatVersion = 2;

/// One GEMM shape set of the block model: T tokens (rows of every activation), hidden h, FFN f.
struct ProbeShape {
    int tokens = 0; ///< T = microbatch size × sequence length
    int hidden = 0; ///< h
    int ffn = 0; ///< f
    auto operator<=>(const ProbeShape&) const = default;
};

/// "256x512x2048" (T×h×f).
std::string shapeText(const ProbeShape& shape);
/// Parses "TxHxF[,TxHxF…]" (each positive, at most 1,048,576); returns the distinct shapes, sorted. Throws
/// FormatError naming the text at fault.
std::vector<ProbeShape> parseShapeList(const std::string& text);
/// "TxHxF,TxHxF…", as parseShapeList reads it.
std::string shapeListText(const std::vector<ProbeShape>& shapes);
/// The shapes the worker computes for a project: T = (the variant's microbatch size, else the model's) ×
/// seq_len, the model's hidden and ffn; distinct over the variants, sorted. Throws FormatError when a size
/// is not positive.
std::vector<ProbeShape> projectShapes(const Project& project);

/// What a cached profile is valid for: the same CPU, the same BLAS build and kernel, the same BLAS threads.
struct MachineKey {
    std::string cpuModel; ///< /proc/cpuinfo "model name"
    int cores = 0; ///< online cores
    std::string cpuFlagsHash; ///< cpuFlagsHash() of /proc/cpuinfo "flags"
    std::string blasCore; ///< the core OpenBLAS loads in this environment before dpstudio's choice ("SkylakeX")
    std::string blasVersion; ///< openblas_get_config() without the core name ("OpenBLAS 0.3.21 … MAX_THREADS=64")
    int blasThreads = 1; ///< BLAS threads per rank the figures were measured with

    /// 16 hex digits: FNV-1a 64 of the fields, one per line; the cache file's name.
    std::string id() const;
    bool operator==(const MachineKey&) const = default;
};

/// 16 hex digits: FNV-1a 64 of the flags (separated by white space) sorted and joined by one space, so the
/// order /proc/cpuinfo lists them in does not matter.
std::string cpuFlagsHash(const std::string& flags);

/// One GEMM call of the CPU backend, C (m×n) = op(A)·op(B) + beta·C, and its median time.
struct GemmMeasure {
    std::string phase; ///< "F", "I" or "W": the action of one layer that makes the call
    bool transA = false;
    bool transB = false;
    int m = 0;
    int n = 0;
    int k = 0;
    double beta = 0; ///< 0 (overwrite) or 1 (accumulate: the weight gradients)
    double timeUs = 0; ///< median time of one call, µs
    /// 2·m·n·k.
    double flops() const;
    /// flops() / timeUs, in FLOP/s (with the profile's BLAS threads).
    double flopsPerSecond() const;
};

/// One memory-bound op of the CPU backend at the model's sizes, and its median time.
struct ElementwiseMeasure {
    std::string op; ///< "gelu_forward", "gelu_backward", "mse_loss", "grad_accumulate" (axpy over a layer's gradients)
    std::uint64_t elements = 0; ///< elements per call
    std::uint64_t bytes = 0; ///< bytes read and written per call (fp32: 8, 12, 12 and 12 per element)
    double timeUs = 0; ///< median time of one call, µs
    /// bytes / timeUs, in bytes/s.
    double bytesPerSecond() const;
    /// timeUs / elements, in ns per element.
    double nsPerElement() const;
};

/// The measurements at one shape.
struct ShapeMeasure {
    ProbeShape shape;
    int repetitions = 0; ///< how many times each call was timed (the medians are over these)
    std::vector<GemmMeasure> gemms; ///< one layer's distinct GEMM calls, in the order F, I, W
    std::vector<ElementwiseMeasure> elementwise;
    /// The GEMMs' FLOPs over their summed time (one layer's F + I + W), FLOP/s; 0 without GEMMs.
    double gemmFlopsPerSecond() const;
};

/// The throughput of one OpenBLAS core type, measured in a process started with OPENBLAS_CORETYPE set.
struct KernelMeasure {
    std::string core; ///< the OPENBLAS_CORETYPE asked for; "" = none (OpenBLAS's own detection)
    std::string loaded; ///< the core OpenBLAS reported loading (openblas_get_corename)
    double flopsPerSecond = 0; ///< F + I + W GEMMs of one layer at every shape: FLOPs over summed time
};

/// Which OpenBLAS kernel the worker loads, and why.
struct KernelChoice {
    std::string openblasOwn; ///< OpenBLAS's own detection on this machine
    std::vector<std::string> candidates; ///< blasCoreCandidates() of the CPU's features
    std::vector<KernelMeasure> measured; ///< the candidates (and OpenBLAS's own) as timed by the probe
    std::string winner; ///< the fastest of `measured` (its `core`, or its `loaded` for OpenBLAS's own)
    std::string chosen; ///< OPENBLAS_CORETYPE the worker sets; "" = OpenBLAS's own is kept
    std::string reason; ///< one sentence: why `chosen`
};

/// One ping-pong size: the median one-way time (half a round trip), µs.
struct P2pSample {
    std::uint64_t bytes = 0;
    double timeUs = 0;
};

/// MPI point-to-point between two ranks on this host, through the transport a run uses.
struct P2pProfile {
    int ranks = 2;
    std::vector<std::string> mpirunOptions; ///< the options mpirun was given (those of a run on one machine)
    std::vector<P2pSample> samples; ///< by increasing size
    double latencyUs = 0; ///< fitted: time = latency + bytes / bandwidth
    double bandwidthBytesPerUs = 0; ///< fitted; bytes/µs (1 bytes/µs = 1 MB/s)
};

/// What the times of one pipeline stage of a model-library transformer depend on (a run builds it as
/// engine/runtime/transformerstage.h does): the model's dimensions, the kinds of the stage's layers, the
/// tokens per microbatch and the expert-parallel group size. The BLAS threads are the machine key's.
struct TransformerStageKey {
    /// The model's dimensions as text (transformerModelSignature): attention kind and sizes, SwiGLU and MoE
    /// sizes, vocabulary, sequence length, the router's gating.
    std::string model;
    /// One letter a part, in order: "E" the embedding (first stage), "D" a dense layer, "M" an MoE layer, "H" the
    /// final norm, LM head and loss (last stage); e.g. "EDM", "MMH".
    std::string layers;
    int tokens = 0; ///< T = microbatch size × sequence length
    int ep = 1; ///< expert-parallel group size the stage's MoE layers run with (1 = every expert here)
    auto operator<=>(const TransformerStageKey&) const = default;
    /// "EDM, T=64, ep 2 of <model>" for messages.
    std::string text() const;
};

/// One transformer stage timed on the CPU backend with the calls a run makes (engine/runtime/probe.h): the
/// compute of F, I, W and B for one microbatch, µs, medians; the expert all-to-all exchanges are taken out (with
/// ep > 1 each exchange splits F's and B's compute into chunks, the chains of sim/costmodel.h).
struct TransformerStageMeasure {
    TransformerStageKey key;
    int repetitions = 0; ///< how many times each action was timed
    /// F's compute between its exchanges (ep > 1 with MoE layers: 2 exchanges a layer, dispatch and combine,
    /// so exchanges + 1 chunks); one chunk without exchanges. µs each.
    std::vector<double> forwardChunksUs;
    double inputGradUs = 0; ///< I's compute, µs (its exchanges taken out)
    double weightGradUs = 0; ///< W, µs (no exchanges)
    std::vector<double> backwardChunksUs; ///< B's (I and W at once) compute between its exchanges, µs each
    double forwardUs() const; ///< Σ forwardChunksUs
    double backwardUs() const; ///< Σ backwardChunksUs
};

/// The model signature of TransformerStageKey::model for a model-library transformer and the gating name its
/// router runs with ("deepseek-v3", "mixtral"): every field of `m` the layers' work depends on. Never throws.
std::string transformerModelSignature(const model::Transformer& m, const std::string& gating);

/// The gating a run's MoE router uses for `model` (engine/runtime/worker.cpp modelSpec): "deepseek-v3" for a
/// DeepSeek preset, else "mixtral". Never throws.
std::string transformerGatingOf(const ModelDesc& model);

/// The key of each stage of `variant` (a transformer project), in stage order (equal stages have equal keys).
/// Throws FormatError when the model is not a transformer, and as effectivePartition / placementOf.
std::vector<TransformerStageKey> transformerStageKeys(const Project& project, const Variant& variant);

/// A whole profile file.
struct CpuProfile {
    int formatVersion = kCpuProfileFormatVersion;
    MachineKey machine;
    std::string kernel; ///< the OpenBLAS core the compute figures were measured under (the one runs load)
    std::string probedAt; ///< UTC, "2025-01-31T12:00:00Z"
    double probeSeconds = 0; ///< wall time of the whole probe, s
    std::vector<ShapeMeasure> shapes;
    std::optional<KernelChoice> kernelChoice; ///< absent in a worker's partial output
    std::optional<P2pProfile> p2p; ///< absent when mpirun could not run two ranks
    /// Transformer stages timed for this machine (`dpstudio devices --probe --project P` of a transformer
    /// project, or a run's prediction), the newest first; format 2.
    std::vector<TransformerStageMeasure> transformerStages;
    /// The measurement of `key`, or null.
    const TransformerStageMeasure* transformerStage(const TransformerStageKey& key) const;
};

/// The most transformer stages the machine's cache file keeps (the newest first).
inline constexpr std::size_t kMaxCachedTransformerStages = 32;

/// The profile as JSON (docs/cpu-profile.md; stable key order, 2-space indent, final newline).
std::string serializeCpuProfile(const CpuProfile& profile);
/// Parses a profile. Throws FormatError "<source>: <field path>: <what is wrong>" (e.g.
/// "p.json: shapes[0].gemms[1].m: must be a positive integer, got 0"), or naming both versions for a newer
/// format_version.
CpuProfile parseCpuProfile(const std::string& text, const std::string& source);
/// Reads and parses a profile file. Throws IoError when it cannot be read, FormatError as parseCpuProfile.
CpuProfile loadCpuProfile(const std::filesystem::path& path);

/// The cache folder: $XDG_CACHE_HOME/dpstudio when XDG_CACHE_HOME is an absolute path, else
/// $HOME/.cache/dpstudio; empty when neither is set.
std::filesystem::path cpuProfileCacheDir();
/// The cache file of a machine: cpuProfileCacheDir() / "cpu-<key id>.json"; empty without a cache folder.
std::filesystem::path cpuProfileCachePath(const MachineKey& key);
/// The cached profile of `key`: nullopt when there is none, it cannot be read or parsed, or it was made for
/// another key. Never throws.
std::optional<CpuProfile> cachedCpuProfile(const MachineKey& key);
/// Writes the profile to its machine's cache file (creating the folder). Throws IoError.
std::filesystem::path saveCpuProfileToCache(const CpuProfile& profile);
/// Whether the profile was measured at exactly these shapes (any order).
bool profileHasShapes(const CpuProfile& profile, const std::vector<ProbeShape>& shapes);
/// Whether the profile was measured at every one of these shapes (and maybe at others).
bool profileCoversShapes(const CpuProfile& profile, const std::vector<ProbeShape>& shapes);
/// Multiplies every compute time of the profile (each shape's GEMM and elementwise calls, each transformer stage's
/// chunks, I and W) by `factor` (> 0): the machine as it runs now when a check finds it `factor` times slower than
/// when it was probed. The p2p part is left as it is. Never throws.
void scaleComputeTimes(CpuProfile& profile, double factor);

// ------------------------------------------------------------------------------------- BLAS kernel rule

/// The instruction sets the kernel rule looks at, from /proc/cpuinfo "flags".
struct CpuFeatures {
    bool avx = false;
    bool avx2 = false;
    bool fma = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512bf16 = false; ///< "avx512_bf16"
};

/// Features from a flags list ("fpu vme … avx2 … avx512f …").
CpuFeatures cpuFeaturesFromFlags(const std::string& flags);
/// This machine's features (/proc/cpuinfo; none when unreadable).
CpuFeatures hostCpuFeatures();

/// The vector ISA level of a CPU or of an OpenBLAS kernel; Unknown for a kernel name the rule does not know.
enum class IsaLevel { Unknown, Sse, Avx, Avx2, Avx512 };
/// The CPU's level: Avx512 needs AVX-512 F, BW, VL and DQ (what OpenBLAS's SkylakeX kernels use); Avx2
/// needs AVX2 and FMA (Haswell, Zen kernels); then Avx; else Sse.
IsaLevel isaLevel(const CpuFeatures& features);
/// The level an OpenBLAS 0.3.x x86-64 core type's kernels need (case-insensitive): SkylakeX, Cooperlake,
/// SapphireRapids → Avx512; Haswell, Zen → Avx2; Sandybridge, Bulldozer, Piledriver, Steamroller,
/// Excavator → Avx; Prescott, Core2, Penryn, Dunnington, Nehalem, Atom, Nano, Barcelona, Bobcat, Opteron,
/// Opteron_SSE3, Athlon, Katmai, Coppermine, Northwood, Banias → Sse; anything else Unknown.
IsaLevel blasCoreIsaLevel(const std::string& core);
/// The core types worth timing on a CPU with these features, the one OpenBLAS would pick for that ISA
/// first: Avx512 → SkylakeX, Cooperlake (only with AVX512-BF16), Haswell, Zen; Avx2 → Haswell, Zen;
/// otherwise none (OpenBLAS's own is kept).
std::vector<std::string> blasCoreCandidates(const CpuFeatures& features);

/// The kernel rule's outcome: the OPENBLAS_CORETYPE to set ("" = keep OpenBLAS's own) and why.
struct BlasCoreDecision {
    std::string core;
    std::string reason;
};

/// The rule (docs/cpu-profile.md): (1) a measured winner that is one of the candidates or OpenBLAS's own
/// is used (when it is OpenBLAS's own, nothing is set); (2) else, when OpenBLAS's own core needs less than the CPU's
/// ISA level (e.g. "Prescott" on an AVX-512 CPU: OpenBLAS did not recognise the model), the first candidate; (3) else
/// OpenBLAS's own. `measuredWinner` is "" when nothing was measured. Never throws.
BlasCoreDecision chooseBlasCore(
    const CpuFeatures& features, const std::string& openblasOwn, const std::string& measuredWinner);

/// The winner of measured kernels: the highest flopsPerSecond (its `core`, or `loaded` when `core` is "");
/// "" when `measured` is empty.
std::string kernelWinner(const std::vector<KernelMeasure>& measured);

// ------------------------------------------------------------------------------------- p2p fit

/// Fits time = latency + bytes / bandwidth to the samples by least squares on relative error (weights
/// 1/time², so an 8-byte and an 8-MiB sample count alike); a negative latency is taken as 0 and the
/// bandwidth refitted through the origin. Sets p2p.latencyUs and p2p.bandwidthBytesPerUs (0 when the
/// times do not grow with size: unlimited). Throws FormatError with fewer than 2 distinct sizes.
void fitP2p(P2pProfile& p2p);

/// The most a fitted p2p latency between two ranks of one host may be (µs) for the figures to be the link's:
/// shared memory takes microseconds (1.6 µs here, docs/cpu-profile.md), tens under load; a fit of 1 ms or more
/// means the ranks were not running while they were timed (a machine too busy: 190 ms a message was seen with
/// two test suites and a build on 2 cores), and those figures would slow every predicted message 10⁴-fold.
inline constexpr double kMaxPlausibleP2pLatencyUs = 1000.0;
/// "" when `p2p`'s fit can be used; else why not ("the ping-pong took 190.94 ms a message (more than 1 ms on
/// one host: the ranks were not running while they were timed); probe again on a quieter machine"). Never
/// throws.
std::string implausibleP2p(const P2pProfile& p2p);

/// The profile as people read it (base/format.h): the machine, the kernel choice, a table per shape (GEMM
/// calls with time and FLOP/s, memory-bound ops with time and bytes/s), the p2p samples and fit.
std::string formatCpuProfile(const CpuProfile& profile);

} // namespace dps::machine
