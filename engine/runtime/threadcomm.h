#pragma once
// In-process Comm: several ranks as threads of one process, for fast unit tests without mpirun. Sends are
// eager (the data is copied at isend, which completes at once); receives match by (source, tag) in send
// order, like MPI. abort() on any rank makes every blocked call on the other ranks throw. Two threads of one
// rank may post, wait and test at once (as MpiComm::shareBetweenThreads allows); the collectives stay on one.
#include "comm.h"

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace dps::runtime {

class ThreadComm;

/// The shared state of `ranks` thread ranks.
class ThreadWorld {
public:
    explicit ThreadWorld(int ranks);
    ~ThreadWorld();
    ThreadWorld(const ThreadWorld&) = delete;
    ThreadWorld& operator=(const ThreadWorld&) = delete;

    int size() const { return m_size; }
    /// The Comm of one rank; lives as long as the world.
    Comm& comm(int rank);
    /// Runs body(comm(r)) on one thread per rank and joins them; rethrows the first exception thrown.
    void run(const std::function<void(Comm&)>& body);

private:
    friend class ThreadComm;
    struct Message {
        int source;
        int tag;
        std::vector<char> data;
    };
    struct Receive {
        int source;
        int tag;
        void* data;
        std::size_t bytes;
        std::shared_ptr<bool> done;
    };

    void send(int source, int dest, int tag, const void* data, std::size_t bytes);
    std::shared_ptr<bool> receive(int dest, int source, int tag, void* data, std::size_t bytes);
    void waitFor(const std::shared_ptr<bool>& done);
    void barrier();
    void throwIfAborted() const;
    [[noreturn]] void abort(int rank, int exitCode);

    int m_size;
    std::vector<std::unique_ptr<ThreadComm>> m_comms;
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::vector<std::vector<Message>> m_unexpected; ///< per destination: sent, not yet matched
    std::vector<std::vector<Receive>> m_posted; ///< per destination: posted, not yet matched
    int m_barrierCount = 0;
    long long m_barrierGeneration = 0;
    std::vector<std::vector<char>> m_slots; ///< per rank: the data of the collective in progress
    std::vector<double*> m_reduceData;
    int m_abortedBy = -1;
};

/// Thrown in every rank of a ThreadWorld after one called abort().
class ThreadAborted : public std::runtime_error {
public:
    ThreadAborted(int rank, int exitCode);
    int exitCode() const { return m_exitCode; }

private:
    int m_exitCode;
};

class ThreadComm final : public Comm {
public:
    ThreadComm(ThreadWorld& world, int rank);

    int rank() const override { return m_rank; }
    int size() const override;
    std::string name() const override { return "thread"; }
    std::string version() const override { return "in-process threads"; }
    int maxTag() const override { return 32767; }

    RequestId isend(const void* data, std::size_t bytes, int peer, int tag) override;
    RequestId irecv(void* data, std::size_t bytes, int peer, int tag) override;
    void wait(RequestId request) override;
    bool test(RequestId request) override;

    void barrier() override;
    std::vector<std::vector<char>> gather(const std::vector<char>& mine, int root) override;
    void broadcast(std::vector<char>& data, int root) override;
    void reduceSum(double* data, std::size_t count, int root) override;
    [[noreturn]] void abort(int exitCode) override;

private:
    void checkPeer(int peer, int tag) const;
    /// The completion flag of `request`; throws RuntimeError for an unknown one.
    std::shared_ptr<bool> requestState(RequestId request);
    void forget(RequestId request);

    ThreadWorld& m_world;
    int m_rank;
    std::mutex m_requestsMutex; ///< the two halves of an overlapped slot may post and wait at once
    RequestId m_nextId = 0; ///< guarded by m_requestsMutex
    std::map<RequestId, std::shared_ptr<bool>> m_requests; ///< guarded by m_requestsMutex
};

} // namespace dps::runtime
