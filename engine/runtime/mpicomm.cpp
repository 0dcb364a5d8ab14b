#include "mpicomm.h"

#include "backend.h"
#include "base/hostinfo.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>
#include <sys/prctl.h>

namespace dps::runtime {

namespace detail {

void checkMpi(int code, const char* call, const char* file, int line)
{
    if (code == MPI_SUCCESS)
        return;
    int rank = -1;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char reason[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(code, reason, &length);
    throw RuntimeError("rank " + std::to_string(rank) + " on " + hostName() + ": " + call + " failed (" + file + ":"
        + std::to_string(line) + "): " + std::string(reason, static_cast<std::size_t>(length)));
}

} // namespace detail

namespace {

/// The spin before the first sleep of a sleeping wait: a message that is about to arrive costs no sleep.
constexpr auto kWaitSpin = std::chrono::microseconds(20);
/// The sleep between polls of a sleeping wait (the timer slack is set to 1 µs, so it is this long): short
/// against the milliseconds of an action, long against a poll (a few µs), so a waiting rank leaves its core to
/// the rank it shares it with.
constexpr auto kWaitSleep = std::chrono::microseconds(50);

/// Ranks of this job on this host (MPI_COMM_TYPE_SHARED).
int localRankCount()
{
    MPI_Comm local = MPI_COMM_NULL;
    DPS_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local));
    int size = 1;
    DPS_MPI_CHECK(MPI_Comm_size(local, &size));
    MPI_Comm_free(&local);
    return size;
}

/// The single-copy mechanism Open MPI's shared-memory transport uses in this process ("cma", "xpmem", "knem",
/// "none"), read through the MPI tool interface (btl_vader_single_copy_mechanism; btl_sm_… in Open MPI 5);
/// "" when this MPI has no such variable or it cannot be read. Call after MPI_Init.
std::string singleCopyMechanism()
{
    int provided = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return {};
    std::string mechanism;
    for (const char* name : { "btl_vader_single_copy_mechanism", "btl_sm_single_copy_mechanism" }) {
        int index = -1;
        if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS)
            continue;
        char varName[256];
        int varNameLength = sizeof(varName);
        int verbosity = 0;
        int binding = 0;
        int scope = 0;
        MPI_Datatype type = MPI_DATATYPE_NULL;
        MPI_T_enum enumType = MPI_T_ENUM_NULL;
        if (MPI_T_cvar_get_info(
                index, varName, &varNameLength, &verbosity, &type, &enumType, nullptr, nullptr, &binding, &scope)
                != MPI_SUCCESS
            || type != MPI_INT || enumType == MPI_T_ENUM_NULL)
            break;
        MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
        int count = 0;
        int value = -1;
        if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS)
            break;
        const bool read = count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS;
        MPI_T_cvar_handle_free(&handle);
        int items = 0;
        char enumName[256];
        int enumNameLength = sizeof(enumName);
        if (!read || MPI_T_enum_get_info(enumType, &items, enumName, &enumNameLength) != MPI_SUCCESS)
            break;
        for (int i = 0; i < items; ++i) {
            int itemValue = 0;
            char itemName[256];
            int itemNameLength = sizeof(itemName);
            if (MPI_T_enum_get_item(enumType, i, &itemValue, itemName, &itemNameLength) == MPI_SUCCESS
                && itemValue == value)
                mechanism = itemName;
        }
        break;
    }
    MPI_T_finalize();
    return mechanism;
}

int checkedCount(std::size_t bytes)
{
    if (bytes > static_cast<std::size_t>(INT_MAX))
        throw RuntimeError("mpi: message of " + std::to_string(bytes) + " bytes exceeds the 2 GiB MPI count limit");
    return static_cast<int>(bytes);
}

} // namespace

MpiComm::MpiComm(int* argc, char*** argv)
{
    bool intervalGiven = false;
    if (const char* env = std::getenv("DPSTUDIO_MPI_PROGRESS_US"); env && *env) {
        m_progressIntervalUs = std::max(0, std::atoi(env));
        intervalGiven = true;
    }
    int provided = 0;
    DPS_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
    m_threadsProvided = provided >= MPI_THREAD_SERIALIZED;
    if (!m_threadsProvided)
        m_progressIntervalUs = 0;
    DPS_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    DPS_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &m_rank));
    DPS_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &m_size));
    void* tagUb = nullptr;
    int found = 0;
    DPS_MPI_CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tagUb, &found));
    if (found && tagUb)
        m_maxTag = *static_cast<int*>(tagUb);
    const int localRanks = localRankCount();
    if (!intervalGiven && localRanks == m_size) {
        // One host: with a single-copy mechanism the receiver copies a large message out of the sender's
        // memory inside its own wait, so the sender need not make progress while it computes.
        const std::string mechanism = singleCopyMechanism();
        if (!mechanism.empty() && mechanism != "none")
            m_progressIntervalUs = 0;
    }
    m_sleepingWait = localRanks > cpuCoreCount();
    if (const char* env = std::getenv("DPSTUDIO_MPI_WAIT"); env && *env)
        m_sleepingWait = std::string(env) == "sleep" ? true : std::string(env) == "spin" ? false : m_sleepingWait;
    if (m_sleepingWait)
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); // sleeps of kWaitSleep, not kWaitSleep + 50 µs
    // MPI_Comm_dup is collective: every rank takes part when any rank runs a helper.
    int helper = m_progressIntervalUs > 0 ? 1 : 0;
    int anyHelper = 0;
    DPS_MPI_CHECK(MPI_Allreduce(&helper, &anyHelper, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    if (anyHelper)
        DPS_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &m_probeComm));
    if (helper)
        m_progress = std::thread([this] { progressLoop(); });
}

MpiComm::~MpiComm()
{
    stopProgress();
    if (m_probeComm != MPI_COMM_NULL)
        MPI_Comm_free(&m_probeComm);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Finalize();
}

std::string MpiComm::version() const
{
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    DPS_MPI_CHECK(MPI_Get_library_version(text, &length));
    std::string version(text, static_cast<std::size_t>(length));
    const auto comma = version.find(',');
    if (comma != std::string::npos)
        version.resize(comma); // "Open MPI v4.1.4, package: ..." → "Open MPI v4.1.4"
    while (!version.empty() && (version.back() == '\n' || version.back() == ' '))
        version.pop_back();
    return version;
}

RequestId MpiComm::store(MPI_Request request)
{
    if (!m_free.empty()) {
        const RequestId id = m_free.back();
        m_free.pop_back();
        m_requests[static_cast<std::size_t>(id)] = request;
        return id;
    }
    m_requests.push_back(request);
    return static_cast<RequestId>(m_requests.size() - 1);
}

MPI_Request& MpiComm::slot(RequestId request)
{
    if (request < 0 || static_cast<std::size_t>(request) >= m_requests.size())
        throw RuntimeError("mpi: unknown request " + std::to_string(request));
    return m_requests[static_cast<std::size_t>(request)];
}

void MpiComm::release(RequestId request)
{
    m_requests[static_cast<std::size_t>(request)] = MPI_REQUEST_NULL;
    m_free.push_back(request);
}

void MpiComm::shareBetweenThreads()
{
    if (!m_threadsProvided)
        throw RuntimeError("mpi: rank " + std::to_string(m_rank)
            + ": the MPI library does not provide MPI_THREAD_SERIALIZED, which the two halves of an overlapped slot "
              "need to communicate from their own threads");
    m_shared = true;
}

std::unique_lock<std::mutex> MpiComm::guard()
{
    return m_shared ? std::unique_lock(m_mpiMutex) : std::unique_lock<std::mutex>();
}

RequestId MpiComm::isend(const void* data, std::size_t bytes, int peer, int tag)
{
    const auto inside = guard();
    MPI_Request request = MPI_REQUEST_NULL;
    DPS_MPI_CHECK(MPI_Isend(data, checkedCount(bytes), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &request));
    return store(request);
}

RequestId MpiComm::irecv(void* data, std::size_t bytes, int peer, int tag)
{
    const auto inside = guard();
    MPI_Request request = MPI_REQUEST_NULL;
    DPS_MPI_CHECK(MPI_Irecv(data, checkedCount(bytes), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &request));
    return store(request);
}

void MpiComm::wait(RequestId request)
{
    if (m_shared) {
        sharedWait(request);
        return;
    }
    if (m_sleepingWait)
        sleepingWait(slot(request));
    else
        DPS_MPI_CHECK(MPI_Wait(&slot(request), MPI_STATUS_IGNORE));
    release(request);
}

void MpiComm::sleepingWait(MPI_Request& request)
{
    int done = 0;
    DPS_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    const auto spinUntil = std::chrono::steady_clock::now() + kWaitSpin;
    while (!done && std::chrono::steady_clock::now() < spinUntil)
        DPS_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    while (!done) {
        std::this_thread::sleep_for(kWaitSleep);
        DPS_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    }
}

void MpiComm::sharedWait(RequestId request)
{
    const auto spinUntil = std::chrono::steady_clock::now() + kWaitSpin;
    for (;;) {
        {
            const std::lock_guard inside(m_mpiMutex);
            int done = 0;
            DPS_MPI_CHECK(MPI_Test(&slot(request), &done, MPI_STATUS_IGNORE));
            if (done) {
                release(request);
                return;
            }
        }
        if (m_sleepingWait && std::chrono::steady_clock::now() >= spinUntil)
            std::this_thread::sleep_for(kWaitSleep);
        else
            std::this_thread::yield();
    }
}

bool MpiComm::test(RequestId request)
{
    const auto inside = guard();
    int done = 0;
    DPS_MPI_CHECK(MPI_Test(&slot(request), &done, MPI_STATUS_IGNORE));
    if (done)
        release(request);
    return done != 0;
}

void MpiComm::progressLoop()
{
    const auto interval = std::chrono::microseconds(m_progressIntervalUs);
    for (;;) {
        {
            std::unique_lock lock(m_wakeMutex);
            m_wake.wait(lock, [this] { return m_stop || m_computing.load(); });
            if (m_stop)
                return;
        }
        {
            std::lock_guard inside(m_mpiMutex);
            if (m_computing.load()) {
                int flag = 0;
                MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, m_probeComm, &flag, MPI_STATUS_IGNORE);
            }
        }
        std::this_thread::sleep_for(interval);
    }
}

void MpiComm::stopProgress()
{
    if (!m_progress.joinable())
        return;
    {
        std::lock_guard lock(m_wakeMutex);
        m_stop = true;
    }
    m_computing = false;
    m_wake.notify_all();
    m_progress.join();
}

void MpiComm::beginCompute()
{
    if (!m_progress.joinable())
        return;
    {
        const auto inside = guard();
        if (m_free.size() == m_requests.size())
            return; // nothing in flight
    }
    {
        std::lock_guard lock(m_wakeMutex);
        m_computing = true;
    }
    m_wake.notify_one();
}

void MpiComm::endCompute()
{
    if (!m_computing.load())
        return;
    m_computing = false;
    std::lock_guard wait(m_mpiMutex); // the helper is out of MPI once we hold this
}

void MpiComm::barrier()
{
    if (!m_sleepingWait) {
        DPS_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        return;
    }
    MPI_Request request = MPI_REQUEST_NULL; // ranks that arrive early leave the core to those still working
    DPS_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &request));
    sleepingWait(request);
}

std::vector<std::vector<char>> MpiComm::gather(const std::vector<char>& mine, int root)
{
    const int count = checkedCount(mine.size());
    std::vector<int> counts(m_rank == root ? static_cast<std::size_t>(m_size) : 0);
    DPS_MPI_CHECK(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, root, MPI_COMM_WORLD));
    std::vector<int> displacements(counts.size());
    std::size_t total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
        displacements[r] = checkedCount(total);
        total += static_cast<std::size_t>(counts[r]);
    }
    std::vector<char> all(total);
    DPS_MPI_CHECK(MPI_Gatherv(
        mine.data(), count, MPI_BYTE, all.data(), counts.data(), displacements.data(), MPI_BYTE, root, MPI_COMM_WORLD));
    std::vector<std::vector<char>> result;
    for (std::size_t r = 0; r < counts.size(); ++r) {
        const auto begin = all.begin() + displacements[r];
        result.emplace_back(begin, begin + counts[r]);
    }
    return result;
}

void MpiComm::broadcast(std::vector<char>& data, int root)
{
    unsigned long long size = data.size();
    DPS_MPI_CHECK(MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, root, MPI_COMM_WORLD));
    data.resize(static_cast<std::size_t>(size));
    DPS_MPI_CHECK(MPI_Bcast(data.data(), checkedCount(data.size()), MPI_BYTE, root, MPI_COMM_WORLD));
}

void MpiComm::reduceSum(double* data, std::size_t count, int root)
{
    constexpr std::size_t kChunk = 1u << 24; // doubles per MPI_Reduce
    for (std::size_t offset = 0; offset < count; offset += kChunk) {
        const int n = static_cast<int>(std::min(kChunk, count - offset));
        void* send = m_rank == root ? MPI_IN_PLACE : static_cast<void*>(data + offset);
        DPS_MPI_CHECK(MPI_Reduce(send, data + offset, n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD));
    }
}

void MpiComm::abort(int exitCode)
{
    endCompute();
    MPI_Abort(MPI_COMM_WORLD, exitCode);
    std::_Exit(exitCode);
}

} // namespace dps::runtime
