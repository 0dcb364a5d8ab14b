#pragma once
// The communication interface of one rank: non-blocking tagged point-to-point messages plus the few
// collectives the worker needs. MpiComm (mpicomm.h) implements it over MPI; ThreadComm (threadcomm.h) runs
// several ranks as threads of one process for unit tests; an NCCL comm can implement it too (NCCL has no
// tags: it matches sends and receives in issue order per rank pair, which the executor keeps consistent:
// both sides issue a pair's messages in the schedule's order).
//
// Buffers are host memory unless acceptsDevicePointers() says device pointers of the backend work too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dps::runtime {

/// Handle of an outstanding send or receive; valid until wait() or a test() that returned true.
using RequestId = std::int32_t;
inline constexpr RequestId kNoRequest = -1;

class Comm {
public:
    virtual ~Comm() = default;

    virtual int rank() const = 0;
    virtual int size() const = 0;
    /// "mpi", "thread", "nccl".
    virtual std::string name() const = 0;
    /// Library version text (MPI_Get_library_version), or a short description.
    virtual std::string version() const = 0;
    /// Largest usable tag (MPI_TAG_UB; at least 32767).
    virtual int maxTag() const = 0;
    /// Whether isend/irecv accept device pointers of the compute backend (CUDA-aware MPI, NCCL).
    virtual bool acceptsDevicePointers() const { return false; }

    /// Starts sending `bytes` bytes to `peer` with `tag`; the buffer must stay valid until completion.
    virtual RequestId isend(const void* data, std::size_t bytes, int peer, int tag) = 0;
    /// Starts receiving exactly `bytes` bytes from `peer` with `tag` into `data`.
    virtual RequestId irecv(void* data, std::size_t bytes, int peer, int tag) = 0;
    /// Blocks until the request completes; the handle is then released.
    virtual void wait(RequestId request) = 0;
    /// True (and the handle released) when the request has completed; never blocks.
    virtual bool test(RequestId request) = 0;

    /// From now on two threads of this rank may call isend, irecv, wait and test at once (the two halves of an
    /// overlapped slot each exchanging an MoE layer's tokens); the collectives stay on one thread. Throws
    /// RuntimeError where the comm cannot allow it (MpiComm without MPI_THREAD_SERIALIZED). Default: nothing
    /// to do (ThreadComm is safe already).
    virtual void shareBetweenThreads() { }

    /// Hooks around a stretch of computation during which the rank makes no comm calls; an implementation
    /// may progress outstanding messages in the background meanwhile (MpiComm: a polling thread). Default:
    /// nothing.
    virtual void beginCompute() { }
    virtual void endCompute() { }

    virtual void barrier() = 0;
    /// Every rank passes its bytes; `root` gets one entry per rank (in rank order), others an empty vector.
    virtual std::vector<std::vector<char>> gather(const std::vector<char>& mine, int root) = 0;
    /// `root`'s bytes replace `data` on every rank.
    virtual void broadcast(std::vector<char>& data, int root) = 0;
    /// Element-wise sum of every rank's `count` doubles into `data` on `root` (others' data unspecified).
    virtual void reduceSum(double* data, std::size_t count, int root) = 0;
    /// Ends every rank of the job at once (MPI_Abort); does not return.
    [[noreturn]] virtual void abort(int exitCode) = 0;
};

} // namespace dps::runtime
