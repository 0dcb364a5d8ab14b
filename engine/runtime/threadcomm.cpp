#include "threadcomm.h"

#include "backend.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <thread>

namespace dps::runtime {

ThreadAborted::ThreadAborted(int rank, int exitCode)
    : std::runtime_error(
        "rank " + std::to_string(rank) + " aborted the run (exit code " + std::to_string(exitCode) + ")")
    , m_exitCode(exitCode)
{
}

ThreadWorld::ThreadWorld(int ranks)
    : m_size(ranks)
    , m_unexpected(static_cast<std::size_t>(ranks))
    , m_posted(static_cast<std::size_t>(ranks))
    , m_slots(static_cast<std::size_t>(ranks))
    , m_reduceData(static_cast<std::size_t>(ranks), nullptr)
{
    if (ranks < 1)
        throw RuntimeError("thread comm: needs at least 1 rank");
    for (int r = 0; r < ranks; ++r)
        m_comms.push_back(std::make_unique<ThreadComm>(*this, r));
}

ThreadWorld::~ThreadWorld() = default;

Comm& ThreadWorld::comm(int rank)
{
    return *m_comms.at(static_cast<std::size_t>(rank));
}

void ThreadWorld::run(const std::function<void(Comm&)>& body)
{
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(m_size));
    std::vector<std::thread> threads;
    for (int r = 0; r < m_size; ++r) {
        threads.emplace_back([&, r] {
            try {
                body(comm(r));
            } catch (...) {
                errors[static_cast<std::size_t>(r)] = std::current_exception();
                std::lock_guard lock(m_mutex);
                if (m_abortedBy < 0)
                    m_abortedBy = r; // a rank that throws ends the others, as a crashed MPI rank would
                m_changed.notify_all();
            }
        });
    }
    for (auto& t : threads)
        t.join();
    // Prefer the original failure over the ThreadAborted it caused elsewhere.
    for (const auto& e : errors) {
        if (!e)
            continue;
        try {
            std::rethrow_exception(e);
        } catch (const ThreadAborted&) {
        } catch (...) {
            throw;
        }
    }
    for (const auto& e : errors)
        if (e)
            std::rethrow_exception(e);
}

void ThreadWorld::throwIfAborted() const
{
    if (m_abortedBy >= 0)
        throw ThreadAborted(m_abortedBy, 3);
}

void ThreadWorld::send(int source, int dest, int tag, const void* data, std::size_t bytes)
{
    std::lock_guard lock(m_mutex);
    throwIfAborted();
    auto& posted = m_posted[static_cast<std::size_t>(dest)];
    const auto match = std::find_if(
        posted.begin(), posted.end(), [&](const Receive& r) { return r.source == source && r.tag == tag; });
    if (match != posted.end()) {
        if (match->bytes != bytes)
            throw RuntimeError("thread comm: message of " + std::to_string(bytes) + " bytes for a receive of "
                + std::to_string(match->bytes) + " (tag " + std::to_string(tag) + ")");
        std::memcpy(match->data, data, bytes);
        *match->done = true;
        posted.erase(match);
        m_changed.notify_all();
        return;
    }
    const auto* bytesIn = static_cast<const char*>(data);
    m_unexpected[static_cast<std::size_t>(dest)].push_back(Message { source, tag, { bytesIn, bytesIn + bytes } });
}

std::shared_ptr<bool> ThreadWorld::receive(int dest, int source, int tag, void* data, std::size_t bytes)
{
    std::lock_guard lock(m_mutex);
    throwIfAborted();
    auto done = std::make_shared<bool>(false);
    auto& queue = m_unexpected[static_cast<std::size_t>(dest)];
    const auto match = std::find_if(
        queue.begin(), queue.end(), [&](const Message& m) { return m.source == source && m.tag == tag; });
    if (match == queue.end()) {
        m_posted[static_cast<std::size_t>(dest)].push_back(Receive { source, tag, data, bytes, done });
        return done;
    }
    if (match->data.size() != bytes)
        throw RuntimeError("thread comm: message of " + std::to_string(match->data.size()) + " bytes for a receive of "
            + std::to_string(bytes) + " (tag " + std::to_string(tag) + ")");
    std::memcpy(data, match->data.data(), bytes);
    queue.erase(match);
    *done = true;
    return done;
}

void ThreadWorld::waitFor(const std::shared_ptr<bool>& done)
{
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [&] { return *done || m_abortedBy >= 0; });
    if (!*done)
        throwIfAborted();
}

void ThreadWorld::barrier()
{
    std::unique_lock lock(m_mutex);
    throwIfAborted();
    const long long generation = m_barrierGeneration;
    if (++m_barrierCount == m_size) {
        m_barrierCount = 0;
        ++m_barrierGeneration;
        m_changed.notify_all();
        return;
    }
    m_changed.wait(lock, [&] { return m_barrierGeneration != generation || m_abortedBy >= 0; });
    if (m_barrierGeneration == generation)
        throwIfAborted();
}

void ThreadWorld::abort(int rank, int exitCode)
{
    {
        std::lock_guard lock(m_mutex);
        if (m_abortedBy < 0)
            m_abortedBy = rank;
        m_changed.notify_all();
    }
    throw ThreadAborted(rank, exitCode);
}

ThreadComm::ThreadComm(ThreadWorld& world, int rank)
    : m_world(world)
    , m_rank(rank)
{
}

int ThreadComm::size() const
{
    return m_world.size();
}

void ThreadComm::checkPeer(int peer, int tag) const
{
    if (peer < 0 || peer >= m_world.size())
        throw RuntimeError("thread comm: rank " + std::to_string(m_rank) + ": no rank " + std::to_string(peer));
    if (tag < 0 || tag > maxTag())
        throw RuntimeError("thread comm: tag " + std::to_string(tag) + " out of range");
}

RequestId ThreadComm::isend(const void* data, std::size_t bytes, int peer, int tag)
{
    checkPeer(peer, tag);
    m_world.send(m_rank, peer, tag, data, bytes);
    const std::lock_guard lock(m_requestsMutex);
    const RequestId id = m_nextId++;
    m_requests.emplace(id, std::make_shared<bool>(true));
    return id;
}

RequestId ThreadComm::irecv(void* data, std::size_t bytes, int peer, int tag)
{
    checkPeer(peer, tag);
    auto done = m_world.receive(m_rank, peer, tag, data, bytes);
    const std::lock_guard lock(m_requestsMutex);
    const RequestId id = m_nextId++;
    m_requests.emplace(id, std::move(done));
    return id;
}

std::shared_ptr<bool> ThreadComm::requestState(RequestId request)
{
    const std::lock_guard lock(m_requestsMutex);
    const auto it = m_requests.find(request);
    if (it == m_requests.end())
        throw RuntimeError("thread comm: unknown request " + std::to_string(request));
    return it->second;
}

void ThreadComm::forget(RequestId request)
{
    const std::lock_guard lock(m_requestsMutex);
    m_requests.erase(request);
}

void ThreadComm::wait(RequestId request)
{
    m_world.waitFor(requestState(request));
    forget(request);
}

bool ThreadComm::test(RequestId request)
{
    const std::shared_ptr<bool> state = requestState(request);
    bool done = false;
    {
        std::lock_guard lock(m_world.m_mutex);
        m_world.throwIfAborted();
        done = *state;
    }
    if (done)
        forget(request);
    return done;
}

void ThreadComm::barrier()
{
    m_world.barrier();
}

std::vector<std::vector<char>> ThreadComm::gather(const std::vector<char>& mine, int root)
{
    m_world.m_slots[static_cast<std::size_t>(m_rank)] = mine;
    m_world.barrier();
    std::vector<std::vector<char>> result;
    if (m_rank == root)
        result = m_world.m_slots;
    m_world.barrier();
    return result;
}

void ThreadComm::broadcast(std::vector<char>& data, int root)
{
    if (m_rank == root)
        m_world.m_slots[static_cast<std::size_t>(root)] = data;
    m_world.barrier();
    if (m_rank != root)
        data = m_world.m_slots[static_cast<std::size_t>(root)];
    m_world.barrier();
}

void ThreadComm::reduceSum(double* data, std::size_t count, int root)
{
    m_world.m_reduceData[static_cast<std::size_t>(m_rank)] = data;
    m_world.barrier();
    if (m_rank == root) {
        for (int r = 0; r < m_world.size(); ++r) {
            if (r == root)
                continue;
            const double* other = m_world.m_reduceData[static_cast<std::size_t>(r)];
            for (std::size_t i = 0; i < count; ++i)
                data[i] += other[i];
        }
    }
    m_world.barrier();
}

void ThreadComm::abort(int exitCode)
{
    m_world.abort(m_rank, exitCode);
}

} // namespace dps::runtime
