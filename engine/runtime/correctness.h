#pragma once
// Correctness of a run: per-microbatch losses and every parameter's gradient (replicas summed) against a
// sequential reference of the same model and microbatches (a loop over microbatches, full forward and
// backward each), as the DualPipe reference example checks it: gradients by 1 − 2Σxy/Σ(x²+y²) in float64,
// losses by relative error.
#include "comm.h"
#include "executor.h"
#include "model.h"
#include "project/project.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dps::runtime {

/// Largest accepted errors.
struct Thresholds {
    double loss = 0.0; ///< relative error of each microbatch's loss
    double grad = 0.0; ///< 1 − 2Σxy/Σ(x²+y²) of each parameter's gradient
};

/// The thresholds table, by backend ("cpu", "cuda") and the dtype the backend computes in:
/// cpu fp32 1e-6 / 1e-10, cuda fp32 1e-5 / 1e-8, bf16 (any backend) 1e-2 / 1e-3.
/// Throws RuntimeError for an unknown backend.
Thresholds thresholdsFor(std::string_view backend, DType computeDtype);

/// 1 − 2Σxy / Σ(x² + y²) in float64 (0 when both are all zero); 0 for identical vectors, ≤ 2 always.
double gradientMetric(const std::vector<float>& x, const std::vector<float>& y);
/// |value − reference| / |reference| (absolute error when the reference is 0).
double relativeError(double value, double reference);
/// ‖value − reference‖ / ‖reference‖ over whole vectors, in double (‖value − reference‖ when the reference is all
/// zero); infinity when the sizes differ.
double relativeError(const std::vector<float>& value, const std::vector<float>& reference);

/// The sequential reference for some microbatches: the whole model on one backend.
struct Reference {
    std::map<int, double> losses; ///< by microbatch
    std::vector<std::unique_ptr<StageParams>> stages; ///< gradients summed over the microbatches
};

/// For each microbatch in order: forward through every stage, MSE loss, full backward (B) through every
/// stage, gradients accumulated.
Reference runReference(Backend& backend, const ModelSpec& spec, const std::vector<int>& microbatches);

struct LossCheck {
    int microbatch = 0;
    double loss = 0.0;
    double reference = 0.0;
    double error = 0.0;
};

struct ParameterCheck {
    int stage = 0;
    int layer = 0; ///< global layer index
    std::string parameter; ///< "w1" (f×h) or "w2" (h×f)
    double error = 0.0;
};

struct CorrectnessReport {
    bool passed = false;
    double maxLossError = 0.0;
    double maxGradError = 0.0;
    Thresholds thresholds;
    std::vector<LossCheck> losses; ///< rank 0 only
    std::vector<ParameterCheck> parameters; ///< rank 0 only
    /// Empty when passed, else what failed, naming the stage and parameter (or microbatch), e.g.
    /// "stage 2 (layer 5) w1: gradient metric 3.1e-05 > 1e-10".
    std::string failure;
};

/// Collective over all ranks of the executor's job, after runStep and sumReplicaGradients: computes the
/// reference distributed (rank r takes the microbatches m ≡ r mod ranks), gathers losses on rank 0,
/// sums the reference gradients of each stage onto the first rank holding it, which compares them, and
/// gathers the results on rank 0. passed, maxima and failure are valid on every rank.
CorrectnessReport checkCorrectness(Comm& comm, Backend& backend, const ModelSpec& spec, const RankExecutor& executor,
    int microbatches, const Thresholds& thresholds);

} // namespace dps::runtime
