#include "runtime/layers/expertcomm.h"

#include "runtime/backend.h"

#include <cstdint>
#include <string>

namespace dps::runtime::layers {

namespace {
/// Backend::communicationStarted() … communicationFinished() around an exchange, also when it throws.
class CommunicationScope {
public:
    explicit CommunicationScope(Backend* backend)
        : m_backend(backend)
    {
        if (m_backend)
            m_backend->communicationStarted();
    }
    ~CommunicationScope()
    {
        if (m_backend)
            m_backend->communicationFinished();
    }
    CommunicationScope(const CommunicationScope&) = delete;
    CommunicationScope& operator=(const CommunicationScope&) = delete;

private:
    Backend* m_backend;
};
} // namespace

std::vector<std::vector<float>> exchangeRows(
    const ExpertGroup& group, const std::vector<std::vector<float>>& send, std::size_t cols, int index)
{
    const int n = group.size();
    if (!group.comm || static_cast<int>(send.size()) != n)
        throw RuntimeError(
            "expert all-to-all: " + std::to_string(send.size()) + " send lists for a group of " + std::to_string(n));
    const long long tag = static_cast<long long>(group.tagBase) + 2LL * index;
    if (index < 0 || tag + 1 > group.comm->maxTag())
        throw RuntimeError("expert all-to-all: tag " + std::to_string(tag) + " beyond the communicator's limit "
            + std::to_string(group.comm->maxTag()));
    Comm& comm = *group.comm;
    const CommunicationScope communicating(group.backend);
    comm.endCompute(); // communication, not compute: MpiComm's helper leaves MPI to us
    std::vector<std::vector<float>> received(static_cast<std::size_t>(n));
    received[static_cast<std::size_t>(group.me)] = send[static_cast<std::size_t>(group.me)];
    // Counts (rows), then the rows.
    std::vector<std::uint64_t> countsOut(static_cast<std::size_t>(n));
    std::vector<std::uint64_t> countsIn(static_cast<std::size_t>(n));
    std::vector<RequestId> requests;
    for (int i = 0; i < n; ++i) {
        if (i == group.me)
            continue;
        const auto u = static_cast<std::size_t>(i);
        if (send[u].size() % cols != 0)
            throw RuntimeError("expert all-to-all: " + std::to_string(send[u].size()) + " values are not rows of "
                + std::to_string(cols));
        countsOut[u] = send[u].size() / cols;
        requests.push_back(comm.irecv(&countsIn[u], sizeof(std::uint64_t), group.members[u], static_cast<int>(tag)));
        requests.push_back(comm.isend(&countsOut[u], sizeof(std::uint64_t), group.members[u], static_cast<int>(tag)));
    }
    for (RequestId r : requests)
        comm.wait(r);
    requests.clear();
    for (int i = 0; i < n; ++i) {
        if (i == group.me)
            continue;
        const auto u = static_cast<std::size_t>(i);
        received[u].resize(static_cast<std::size_t>(countsIn[u]) * cols);
        if (!received[u].empty())
            requests.push_back(comm.irecv(
                received[u].data(), received[u].size() * sizeof(float), group.members[u], static_cast<int>(tag + 1)));
        if (!send[u].empty())
            requests.push_back(comm.isend(
                send[u].data(), send[u].size() * sizeof(float), group.members[u], static_cast<int>(tag + 1)));
    }
    for (RequestId r : requests)
        comm.wait(r);
    comm.beginCompute();
    return received;
}

} // namespace dps::runtime::layers
