#include "selection.h"

#include "base/hostinfo.h"
#include "gpuinfo.h"
#include "protocol/backends.h"
#include "runtime/backend.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

namespace dps::runtime {

namespace {

/// Fills localRank where unknown: the position of the rank among the ranks of its host.
std::vector<int> localRanks(const std::vector<RankDevices>& ranks)
{
    std::map<std::string, int> seen;
    std::vector<int> result;
    for (const auto& r : ranks) {
        const int derived = seen[r.host]++;
        result.push_back(r.localRank >= 0 ? r.localRank : derived);
    }
    return result;
}

std::string rankLabel(int rank, const RankDevices& devices)
{
    return "rank " + std::to_string(rank) + " on " + devices.host;
}

/// The first rank without a GPU, or -1.
int firstRankWithoutGpu(const std::vector<RankDevices>& ranks)
{
    for (std::size_t r = 0; r < ranks.size(); ++r)
        if (ranks[r].gpuUuids.empty())
            return static_cast<int>(r);
    return -1;
}

Selection cpuSelection(std::size_t ranks, std::vector<int> local, std::string reason)
{
    return Selection { "cpu", "mpi", std::vector<int>(ranks, -1), std::move(local), std::move(reason) };
}

/// Two ranks that picked the same device UUID, as "ranks A and B share GPU U on H", or "" when none do.
std::string sharedGpu(const std::vector<RankDevices>& ranks, const std::vector<int>& device)
{
    std::map<std::string, int> owner;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        const std::string& uuid = ranks[r].gpuUuids[static_cast<std::size_t>(device[r])];
        const auto [it, inserted] = owner.emplace(uuid, static_cast<int>(r));
        if (!inserted)
            return "ranks " + std::to_string(it->second) + " and " + std::to_string(r) + " share GPU " + uuid + " on "
                + ranks[r].host;
    }
    return {};
}

Selection cudaSelection(const SelectionRequest& request, const std::vector<RankDevices>& ranks, std::vector<int> local)
{
    Selection s { "cuda", "", {}, local, "" };
    for (std::size_t r = 0; r < ranks.size(); ++r)
        s.deviceOfRank.push_back(local[r] % static_cast<int>(ranks[r].gpuUuids.size()));
    const std::string shared = sharedGpu(ranks, s.deviceOfRank);
    if (request.comm == CommChoice::Nccl && !request.ncclBuilt)
        throw RuntimeError("--comm nccl: NCCL is not built into this dpstudio");
    if (request.comm == CommChoice::Nccl && !shared.empty())
        throw RuntimeError("--comm nccl: " + shared + " (NCCL needs one GPU per rank)");
    if (request.comm == CommChoice::Mpi) {
        s.comm = "mpi-host";
        s.reason = "cuda, MPI through host buffers (--comm mpi)";
    } else if (!request.ncclBuilt) {
        s.comm = "mpi-host";
        s.reason = "cuda, MPI through host buffers (NCCL not built)";
    } else if (!shared.empty()) {
        s.comm = "mpi-host";
        s.reason = "cuda, MPI through host buffers: " + shared + " (NCCL needs one GPU per rank)";
    } else {
        s.comm = "nccl";
        s.reason = "cuda, nccl: every rank has its own GPU";
    }
    return s;
}

} // namespace

std::optional<BackendChoice> parseBackendChoice(std::string_view text)
{
    if (text == "auto")
        return BackendChoice::Auto;
    if (text == "cpu")
        return BackendChoice::Cpu;
    if (text == "cuda")
        return BackendChoice::Cuda;
    return std::nullopt;
}

std::optional<CommChoice> parseCommChoice(std::string_view text)
{
    if (text == "auto")
        return CommChoice::Auto;
    if (text == "nccl")
        return CommChoice::Nccl;
    if (text == "mpi")
        return CommChoice::Mpi;
    return std::nullopt;
}

Selection selectBackend(const SelectionRequest& request, const std::vector<RankDevices>& ranks)
{
    if (ranks.empty())
        throw RuntimeError("backend selection: no ranks");
    std::vector<int> local = localRanks(ranks);
    if (request.backend == BackendChoice::Cpu)
        return cpuSelection(ranks.size(), std::move(local), "cpu (--backend cpu)");
    const int without = firstRankWithoutGpu(ranks);
    const std::string whyNotCuda = request.cudaWhyNot.empty() ? "cuda: not built" : request.cudaWhyNot;
    if (request.backend == BackendChoice::Cuda) {
        if (!request.cudaBuilt)
            throw RuntimeError("--backend cuda: " + whyNotCuda);
        if (without >= 0) {
            const auto& r = ranks[static_cast<std::size_t>(without)];
            throw RuntimeError("--backend cuda: " + rankLabel(without, r) + " has no GPU (" + r.whyNoGpu + ")");
        }
        return cudaSelection(request, ranks, std::move(local));
    }
    if (autoBackend(request.cudaBuilt, without < 0) == "cuda") {
        Selection s = cudaSelection(request, ranks, std::move(local));
        s.reason = "auto: " + s.reason;
        return s;
    }
    if (!request.cudaBuilt)
        return cpuSelection(ranks.size(), std::move(local), "cpu (auto: " + whyNotCuda + ")");
    const auto& r = ranks[static_cast<std::size_t>(without)];
    return cpuSelection(
        ranks.size(), std::move(local), "cpu (auto: " + rankLabel(without, r) + " has no GPU: " + r.whyNoGpu + ")");
}

namespace {

int envInt(const char* name)
{
    const char* value = std::getenv(name);
    if (!value || !*value)
        return -1;
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    return (*end == '\0' && n >= 0 && n < 1 << 20) ? static_cast<int>(n) : -1;
}

} // namespace

RankDevices localRankDevices()
{
    RankDevices d;
    d.host = hostName();
    for (const char* name : { "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID" }) {
        d.localRank = envInt(name);
        if (d.localRank >= 0)
            break;
    }
    for (const auto& gpu : listGpus(&d.whyNoGpu))
        d.gpuUuids.push_back(gpu.uuid.empty() ? d.host + ":" + gpu.pciBusId : gpu.uuid);
    return d;
}

namespace {

void putString(std::vector<char>& out, const std::string& s)
{
    const auto n = static_cast<std::uint32_t>(s.size());
    const char* p = reinterpret_cast<const char*>(&n);
    out.insert(out.end(), p, p + sizeof n);
    out.insert(out.end(), s.begin(), s.end());
}

std::string getString(const std::vector<char>& in, std::size_t& pos)
{
    std::uint32_t n = 0;
    if (pos + sizeof n > in.size())
        throw RuntimeError("backend selection: truncated rank report");
    std::memcpy(&n, in.data() + pos, sizeof n);
    pos += sizeof n;
    if (pos + n > in.size())
        throw RuntimeError("backend selection: truncated rank report");
    std::string s(in.data() + pos, n);
    pos += n;
    return s;
}

} // namespace

std::vector<char> encodeRankDevices(const RankDevices& devices)
{
    std::vector<char> out;
    putString(out, devices.host);
    putString(out, std::to_string(devices.localRank));
    putString(out, devices.whyNoGpu);
    putString(out, std::to_string(devices.gpuUuids.size()));
    for (const auto& uuid : devices.gpuUuids)
        putString(out, uuid);
    return out;
}

RankDevices decodeRankDevices(const std::vector<char>& bytes)
{
    RankDevices d;
    std::size_t pos = 0;
    d.host = getString(bytes, pos);
    d.localRank = std::stoi(getString(bytes, pos));
    d.whyNoGpu = getString(bytes, pos);
    const auto count = std::stoul(getString(bytes, pos));
    for (unsigned long i = 0; i < count; ++i)
        d.gpuUuids.push_back(getString(bytes, pos));
    return d;
}

namespace {

std::vector<char> encodeSelection(const Selection& s, const std::string& error)
{
    std::vector<char> out;
    putString(out, error);
    putString(out, s.backend);
    putString(out, s.comm);
    putString(out, s.reason);
    putString(out, std::to_string(s.deviceOfRank.size()));
    for (std::size_t r = 0; r < s.deviceOfRank.size(); ++r) {
        putString(out, std::to_string(s.deviceOfRank[r]));
        putString(out, std::to_string(s.localRankOfRank[r]));
    }
    return out;
}

Selection decodeSelection(const std::vector<char>& bytes)
{
    std::size_t pos = 0;
    const std::string error = getString(bytes, pos);
    if (!error.empty())
        throw RuntimeError(error);
    Selection s;
    s.backend = getString(bytes, pos);
    s.comm = getString(bytes, pos);
    s.reason = getString(bytes, pos);
    const auto count = std::stoul(getString(bytes, pos));
    for (unsigned long r = 0; r < count; ++r) {
        s.deviceOfRank.push_back(std::stoi(getString(bytes, pos)));
        s.localRankOfRank.push_back(std::stoi(getString(bytes, pos)));
    }
    return s;
}

} // namespace

Selection selectForJob(Comm& comm, const SelectionRequest& request, const RankDevices& mine)
{
    const auto reports = comm.gather(encodeRankDevices(mine), 0);
    std::vector<char> decision;
    if (comm.rank() == 0) {
        std::vector<RankDevices> ranks;
        for (const auto& report : reports)
            ranks.push_back(decodeRankDevices(report));
        try {
            decision = encodeSelection(selectBackend(request, ranks), "");
        } catch (const RuntimeError& e) {
            decision = encodeSelection(Selection {}, e.what());
        }
    }
    comm.broadcast(decision, 0);
    return decodeSelection(decision);
}

} // namespace dps::runtime
