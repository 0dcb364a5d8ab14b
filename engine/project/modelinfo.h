#pragma once
// What `dpstudio model-info` prints and the designer's model panel shows: whole-model figures and, for a
// variant, each stage's layers, parameters, times and bytes, and each rank's parameters.
#include "project.h"

#include <string>
#include <vector>

namespace dps {

struct StageInfo {
    int stage = 0;
    int layers = 0;
    double parameters = 0.0; ///< elements held by one device
    double fUs = 0.0, iUs = 0.0, wUs = 0.0, bUs = 0.0; ///< µs
    double fbUs = 0.0; ///< an overlapped slot whose two halves are this stage, µs
    /// Of that slot laid on two lanes, the time each lane is busy (µs): the compute lane (its chunks at the speed
    /// they ran, slowed beside communication) and the all-to-all lane; both 0 for a flat slot.
    double fbComputeUs = 0.0, fbCommUs = 0.0;
    double activationBytes = 0.0; ///< kept from F until I, one microbatch
    double a2aBytes = 0.0; ///< all-to-all bytes leaving one device in one F
};

struct RankInfo {
    int rank = 0;
    double parameters = 0.0; ///< elements of the stages the rank holds
    double parameterBytes = 0.0;
};

struct ModelInfo {
    // The job's shape besides the pipeline: the variant's tensor and context parallelism and the ZeRO stage
    // (training.zero) its optimizer state is sharded with.
    int tp = 1; ///< tensor-parallel devices per stage (variant.tp)
    int cp = 1; ///< context-parallel devices per stage (variant.cp)
    bool sequenceParallel = false; ///< variant.sequence_parallel
    int zero = 0; ///< ZeRO stage 0-3 (training.zero)
    double parametersTotal = 0.0;
    double parametersActive = 0.0;
    double flopsPerTokenTraining = 0.0;
    std::vector<StageInfo> stages;
    std::vector<RankInfo> ranks;
};

/// Model FLOPs of training one token (ModelInfo::flopsPerTokenTraining): 3 × forward FLOPs, recompute not
/// counted (the MFU convention of Chowdhery et al. 2022, PaLM, appendix B). A transformer's from model::totals, the
/// block model's 6 per parameter. Throws FormatError as model::totals for a transformer it cannot describe.
double trainingFlopsPerToken(const Project& project);

/// Whether the weight GEMMs run in FP8: training.gemm_dtype is fp8 and the device has an FP8 peak.
bool fp8Gemms(const Project& project);

/// The peak FLOP/s of one device at the GEMMs' dtype: cluster.device_flops_fp8 when training.gemm_dtype is fp8 and
/// the device has an FP8 peak (the rate the cost model runs FP8 GEMMs at), else cluster.device_flops.
double gemmPeakFlops(const Project& project);

/// The figures of `variant` (its schedule is built for the rank placement). Throws as buildCostModel and
/// buildSchedule.
ModelInfo modelInfo(const Project& project, const Variant& variant);

} // namespace dps
