#pragma once
// Comm over MPI: MPI_Isend/MPI_Irecv on MPI_COMM_WORLD, collectives for gathering results. Every MPI call
// goes through DPS_MPI_CHECK, which throws RuntimeError naming the rank, host, call, file and line.
//
// Background progress: Open MPI moves a large message (rendezvous: handshake, then fragments) only while
// the sender and the receiver are inside MPI calls, so a rank that computes for milliseconds would hold
// its outgoing messages back. Between beginCompute() and endCompute(), while requests are outstanding, a
// helper thread calls MPI_Iprobe every DPSTUDIO_MPI_PROGRESS_US µs (default 100; 0 turns it off). Only one
// thread is ever inside MPI at a time (MPI_THREAD_SERIALIZED): endCompute() waits for the helper's call.
// Without DPSTUDIO_MPI_PROGRESS_US the helper is off where the receiver copies a message by itself: every
// rank on this host and the shared-memory transport has a single-copy mechanism (cross-memory attach: the
// receiver reads the sender's buffer inside its own wait; `dpstudio run` asks for it where it works).
//
// Waiting: with no more ranks on this host than cores, wait() is MPI_Wait (a spinning wait: the core is the
// rank's own). With more ranks than cores, a spinning rank would take turns on a core with a rank that has
// work to do, so wait() and barrier() poll MPI_Test, spin for 20 µs and then sleep 50 µs between polls,
// giving the core away (DPSTUDIO_MPI_WAIT=spin|sleep overrides the choice, for measurements).
//
// Two threads (shareBetweenThreads): the two halves of an overlapped F&B slot of an MoE with expert parallelism
// each run their all-to-all from their own thread. Then every MPI call holds a mutex (MPI_THREAD_SERIALIZED,
// no more is needed), the request table with it, and wait() polls MPI_Test, letting go of the mutex between
// polls so that the other thread can post and complete its own messages meanwhile.
#include "comm.h"

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace dps::runtime {

namespace detail {
/// Throws RuntimeError when `code` is not MPI_SUCCESS: "rank R on HOST: CALL failed (FILE:LINE): reason".
void checkMpi(int code, const char* call, const char* file, int line);
} // namespace detail

#define DPS_MPI_CHECK(call) ::dps::runtime::detail::checkMpi((call), #call, __FILE__, __LINE__)

class MpiComm final : public Comm {
public:
    /// Initialises MPI (MPI_THREAD_SERIALIZED where the library provides it: one thread inside MPI at a time)
    /// and makes errors return codes instead of aborting.
    MpiComm(int* argc, char*** argv);
    /// Finalises MPI.
    ~MpiComm() override;
    MpiComm(const MpiComm&) = delete;
    MpiComm& operator=(const MpiComm&) = delete;

    int rank() const override { return m_rank; }
    int size() const override { return m_size; }
    std::string name() const override { return "mpi"; }
    std::string version() const override;
    int maxTag() const override { return m_maxTag; }
    /// Whether wait() sleeps between polls (more ranks on this host than cores) instead of spinning.
    bool sleepingWait() const { return m_sleepingWait; }
    /// Every call then holds the MPI mutex and wait() polls (above). Throws RuntimeError when the MPI library
    /// does not provide MPI_THREAD_SERIALIZED.
    void shareBetweenThreads() override;
    bool sharedBetweenThreads() const { return m_shared; }

    RequestId isend(const void* data, std::size_t bytes, int peer, int tag) override;
    RequestId irecv(void* data, std::size_t bytes, int peer, int tag) override;
    void wait(RequestId request) override;
    bool test(RequestId request) override;

    void beginCompute() override;
    void endCompute() override;

    void barrier() override;
    std::vector<std::vector<char>> gather(const std::vector<char>& mine, int root) override;
    void broadcast(std::vector<char>& data, int root) override;
    void reduceSum(double* data, std::size_t count, int root) override;
    [[noreturn]] void abort(int exitCode) override;

private:
    RequestId store(MPI_Request request);
    MPI_Request& slot(RequestId request);
    void release(RequestId request);
    void progressLoop();
    void stopProgress();
    /// wait() for ranks that share cores: MPI_Test, a short spin, then sleeps between polls.
    void sleepingWait(MPI_Request& request);
    /// shareBetweenThreads' wait: MPI_Test under m_mpiMutex, released between polls.
    void sharedWait(RequestId request);
    /// Holds m_mpiMutex when the comm is shared between threads, else nothing.
    std::unique_lock<std::mutex> guard();

    int m_rank = 0;
    int m_size = 1;
    int m_maxTag = 32767;
    bool m_sleepingWait = false; ///< more ranks on this host than cores: wait() gives the core away
    bool m_threadsProvided = false; ///< the library gave MPI_THREAD_SERIALIZED
    bool m_shared = false; ///< shareBetweenThreads() was called
    std::vector<MPI_Request> m_requests;
    std::vector<RequestId> m_free;
    // Background progress.
    int m_progressIntervalUs = 100;
    MPI_Comm m_probeComm = MPI_COMM_NULL; ///< a duplicate of MPI_COMM_WORLD no message is ever sent on
    std::thread m_progress;
    std::mutex m_mpiMutex; ///< held by the helper while it is inside MPI, and by every call when shared
    std::mutex m_wakeMutex;
    std::condition_variable m_wake;
    std::atomic<bool> m_computing { false };
    bool m_stop = false; ///< guarded by m_wakeMutex
};

} // namespace dps::runtime
