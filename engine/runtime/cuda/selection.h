#pragma once
// Backend and communication selection for a job (pure logic: no CUDA, no MPI; unit-tested as a table).
//
//   --backend cpu   → cpu + mpi
//   --backend cuda  → cuda (an error when the CUDA backend is not built or not available, or a rank has no GPU)
//   --backend auto  → cuda when it is available and every rank sees a GPU, cpu otherwise (saying why)
// With cuda, rank r uses GPU (local rank mod visible GPUs) and communicates through
//   nccl       when NCCL is built and every rank has its own GPU (distinct device UUIDs), or
//   mpi-host   MPI through host buffers, when ranks share a GPU (NCCL refuses two ranks of one
//              communicator on one device) or NCCL is not built.
#include "runtime/comm.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dps::runtime {

enum class BackendChoice { Auto, Cpu, Cuda };
enum class CommChoice { Auto, Nccl, Mpi };

/// "auto" | "cpu" | "cuda" (case-sensitive); nullopt otherwise.
std::optional<BackendChoice> parseBackendChoice(std::string_view text);
/// "auto" | "nccl" | "mpi"; nullopt otherwise.
std::optional<CommChoice> parseCommChoice(std::string_view text);

/// What one rank reports about itself before the job decides.
struct RankDevices {
    std::string host; ///< host name; ranks with the same host share its GPUs
    int localRank = -1; ///< OMPI_COMM_WORLD_LOCAL_RANK; -1 = unknown (then derived from host order)
    std::vector<std::string> gpuUuids; ///< UUIDs of the GPUs this rank sees, in device order
    std::string whyNoGpu; ///< listGpus()'s reason when gpuUuids is empty
};

/// The job's decision, the same on every rank.
struct Selection {
    std::string backend; ///< "cpu" | "cuda"
    std::string comm; ///< "mpi" (cpu), "nccl", "mpi-host" (cuda, MPI through host buffers)
    std::vector<int> deviceOfRank; ///< CUDA device ordinal of each rank in its own process; -1 on cpu
    std::vector<int> localRankOfRank; ///< local rank on its host
    std::string reason; ///< one line for the output and the measured trace

    bool usesNccl() const { return comm == "nccl"; }
};

/// The inputs besides the ranks' reports.
struct SelectionRequest {
    BackendChoice backend = BackendChoice::Auto;
    CommChoice comm = CommChoice::Auto;
    bool cudaBuilt = false; ///< the CUDA backend can be used (gpuinfo.h's cudaBuilt())
    bool ncclBuilt = false;
    /// Why it cannot (gpuinfo.h's cudaWhyNot()); "" means "cuda: not built".
    std::string cudaWhyNot = {};
};

/// Decides backend, communication and devices (table above). Throws RuntimeError naming the cause when the
/// request cannot be met: "--backend cuda: CUDA backend not available: <why>", "--backend cuda: cuda: not
/// built", "--backend cuda: rank 2 on node7 has no GPU (…)", "--comm nccl: ranks 0 and 1 share GPU GPU-… on
/// node7 (NCCL needs one GPU per rank)". With auto, why cuda cannot be used ends up in Selection::reason:
/// "cpu (auto: CUDA backend not available: <why>)".
Selection selectBackend(const SelectionRequest& request, const std::vector<RankDevices>& ranks);

/// This process's report: host name, $OMPI_COMM_WORLD_LOCAL_RANK (or $MPI_LOCALRANKID, $SLURM_LOCALID),
/// and listGpus().
RankDevices localRankDevices();

/// Every rank passes its report; rank 0 decides and broadcasts, so all ranks return the same Selection (or
/// all throw the same RuntimeError). Collective over `comm`.
Selection selectForJob(Comm& comm, const SelectionRequest& request, const RankDevices& mine);

/// Serialisation used by selectForJob (exposed for tests): a round trip gives the same value.
std::vector<char> encodeRankDevices(const RankDevices& devices);
RankDevices decodeRankDevices(const std::vector<char>& bytes);

} // namespace dps::runtime
