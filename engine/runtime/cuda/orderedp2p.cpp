#include "orderedp2p.h"

#include "runtime/backend.h"

#include <string>
#include <utility>

namespace dps::runtime {

OrderedP2p::OrderedP2p(P2pDevice& device, std::function<void*(std::size_t)> allocateStaging,
    std::function<void(void*, std::size_t)> releaseStaging)
    : m_device(device)
    , m_sequencer(std::move(allocateStaging), std::move(releaseStaging))
{
}

OrderedP2p::~OrderedP2p()
{
    for (const auto& [marker, users] : m_users)
        m_device.release(marker);
}

void OrderedP2p::setPlan(std::vector<PlannedTransfer> transfers)
{
    m_sequencer.setPlan(std::move(transfers));
}

RequestId OrderedP2p::isend(const void* data, std::size_t bytes, int peer, int tag)
{
    const RequestId id = m_sequencer.add(true, const_cast<void*>(data), bytes, peer, tag);
    pump(kNoRequest, false);
    return id;
}

RequestId OrderedP2p::irecv(void* data, std::size_t bytes, int peer, int tag)
{
    const RequestId id = m_sequencer.add(false, data, bytes, peer, tag);
    pump(kNoRequest, false);
    return id;
}

void OrderedP2p::pump(RequestId waitingFor, bool mustIssue)
{
    const std::vector<SequencerCommand> batch = m_sequencer.next(waitingFor, mustIssue);
    if (batch.empty())
        return;
    m_device.issue(batch);
    const P2pDevice::Marker marker = m_device.mark();
    int users = 0;
    for (const SequencerCommand& c : batch)
        if (c.request != kNoRequest) {
            m_markerOf[c.request] = marker;
            ++users;
        }
    if (users == 0)
        m_device.release(marker); // staged receives only: nobody waits on this marker
    else
        m_users[marker] = users;
}

void OrderedP2p::beginWait(RequestId request)
{
    if (!m_sequencer.known(request))
        throw RuntimeError("nccl: waiting for unknown request " + std::to_string(request));
    pump(request, true);
}

bool OrderedP2p::poll(RequestId request)
{
    const auto it = m_markerOf.find(request);
    if (it == m_markerOf.end())
        throw RuntimeError("nccl: request " + std::to_string(request) + " polled but never issued");
    if (!m_device.passed(it->second))
        return false;
    finish(request);
    return true;
}

bool OrderedP2p::test(RequestId request)
{
    if (!m_sequencer.known(request))
        throw RuntimeError("nccl: testing unknown request " + std::to_string(request));
    pump(request, false);
    if (!m_sequencer.issued(request))
        return false;
    return poll(request);
}

void OrderedP2p::finish(RequestId request)
{
    const auto it = m_markerOf.find(request);
    const P2pDevice::Marker marker = it->second;
    m_markerOf.erase(it);
    const auto users = m_users.find(marker);
    if (--users->second == 0) {
        m_users.erase(users);
        m_device.release(marker);
    }
    m_sequencer.release(request);
}

} // namespace dps::runtime
