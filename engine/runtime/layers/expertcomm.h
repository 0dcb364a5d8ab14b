#pragma once
// The expert-parallel group of an MoE layer and its all-to-all (DeepSeek-V3 report §3.2.2: dispatch and combine
// across the expert-parallel ranks). The group is the ep processes that hold the same pipeline stage on
// consecutive data-parallel replicas; member i holds the routed experts [i·E/ep, (i+1)·E/ep). An exchange
// sends each member a variable number of rows: the row counts first, then the rows, over the comm's tagged
// point-to-point messages, so it works on every Comm (MPI, threads). docs/layers.md, "Expert parallelism".
#include "runtime/backend.h"
#include "runtime/comm.h"

#include <cstddef>
#include <vector>

namespace dps::runtime::layers {

/// Who is in a layer's expert-parallel group and where its messages' tags start.
struct ExpertGroup {
    Comm* comm = nullptr;
    std::vector<int> members; ///< comm ranks, in member order
    int me = 0; ///< this process's member index
    int tagBase = 0; ///< the first tag the group's exchanges use; an exchange takes tags tagBase + 2·index, +1
    /// The compute backend whose communication hooks frame every exchange (Backend::communicationStarted): the
    /// exchange is timed per lane, and the other half of an overlapped slot computes meanwhile. Optional.
    Backend* backend = nullptr;

    int size() const { return static_cast<int>(members.size()); }
};

/// Sends send[i] (rows × cols floats, row-major) to member i and returns what each member sent this one
/// (received[i] from member i; its own rows copied). Collective over the group: every member calls it with
/// the same `index` (the exchange's number, unique among those in flight; tags tagBase + 2·index and + 1).
/// Leaves the comm's compute scope while it communicates (MpiComm's progress helper must be out of MPI), and
/// tells the group's backend it communicates (the whole exchange, counts and rows).
/// Throws RuntimeError for a send list of the wrong size, a tag beyond the comm's limit, or a row count
/// that does not divide by cols.
std::vector<std::vector<float>> exchangeRows(
    const ExpertGroup& group, const std::vector<std::vector<float>>& send, std::size_t cols, int index);

} // namespace dps::runtime::layers
