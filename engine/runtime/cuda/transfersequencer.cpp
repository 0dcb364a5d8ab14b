#include "transfersequencer.h"

#include "runtime/backend.h"

#include <string>
#include <utility>

namespace dps::runtime {

namespace {

std::string describe(bool send, int peer, int tag)
{
    return std::string(send ? "send to" : "receive from") + " rank " + std::to_string(peer) + " (tag "
        + std::to_string(tag) + ")";
}

} // namespace

TransferSequencer::TransferSequencer(
    std::function<void*(std::size_t)> allocate, std::function<void(void*, std::size_t)> release)
    : m_allocate(std::move(allocate))
    , m_release(std::move(release))
{
}

TransferSequencer::~TransferSequencer()
{
    for (auto& [id, request] : m_requests)
        if (request.staging)
            m_release(request.staging, request.bytes);
    for (auto& [key, queue] : m_staged)
        for (const Staged& s : queue)
            m_release(s.buffer, s.bytes);
}

void TransferSequencer::setPlan(std::vector<PlannedTransfer> sequence)
{
    if (m_front != 0 || !m_staged.empty())
        throw RuntimeError("nccl: the transfer plan can only change between steps");
    std::map<Key, std::size_t> index;
    for (std::size_t i = 0; i < sequence.size(); ++i) {
        const auto& e = sequence[i];
        if (!index.emplace(Key { e.send, e.peer, e.tag }, i).second)
            throw RuntimeError("nccl: the transfer plan has " + describe(e.send, e.peer, e.tag) + " twice");
    }
    m_plan = std::move(sequence);
    m_planIndex = std::move(index);
}

RequestId TransferSequencer::add(bool send, void* data, std::size_t bytes, int peer, int tag)
{
    const Key key { send, peer, tag };
    const auto planned = m_planIndex.find(key);
    if (planned != m_planIndex.end() && m_plan[planned->second].bytes != 0 && m_plan[planned->second].bytes != bytes)
        throw RuntimeError("nccl: " + describe(send, peer, tag) + " has " + std::to_string(bytes)
            + " bytes, the transfer plan " + std::to_string(m_plan[planned->second].bytes));
    const RequestId id = m_nextId++;
    m_requests[id] = Request { send, peer, tag, data, bytes, planned != m_planIndex.end(), false, nullptr };
    const auto staged = m_staged.find(key);
    if (planned == m_planIndex.end()) {
        m_unplanned.push_back(id);
    } else if (staged != m_staged.end()) {
        // Its data already arrived in a staging buffer: the copy goes out with the next next().
        m_requests[id].staging = staged->second.front().buffer;
        staged->second.pop_front();
        if (staged->second.empty())
            m_staged.erase(staged);
    } else {
        m_postedPlanned[key].push_back(id);
    }
    return id;
}

bool TransferSequencer::anyPostedBehindFront() const
{
    for (const auto& [key, queue] : m_postedPlanned)
        if (!queue.empty())
            return true;
    return false;
}

void TransferSequencer::advanceFront()
{
    if (++m_front == m_plan.size()) {
        m_front = 0;
        ++m_cycle;
    }
}

bool TransferSequencer::issueFront(std::vector<SequencerCommand>& group)
{
    if (m_plan.empty())
        return false;
    const PlannedTransfer& e = m_plan[m_front];
    const Key key { e.send, e.peer, e.tag };
    auto posted = m_postedPlanned.find(key);
    if (posted != m_postedPlanned.end() && !posted->second.empty()) {
        const RequestId id = posted->second.front();
        posted->second.pop_front();
        Request& r = m_requests.at(id);
        r.issued = true;
        using K = SequencerCommand::Kind;
        group.push_back(SequencerCommand { e.send ? K::Send : K::Receive, id, e.peer, e.tag, e.send ? nullptr : r.data,
            e.send ? r.data : nullptr, r.bytes });
        advanceFront();
        return true;
    }
    if (e.send || e.bytes == 0 || !anyPostedBehindFront())
        return false;
    // Something posted waits behind a receive the executor has not posted yet: receive it into staging.
    void* buffer = m_allocate(e.bytes);
    ++m_stagingAlive;
    m_staged[key].push_back(Staged { buffer, e.bytes });
    group.push_back(
        SequencerCommand { SequencerCommand::Kind::Receive, kNoRequest, e.peer, e.tag, buffer, nullptr, e.bytes });
    advanceFront();
    return true;
}

void TransferSequencer::bindStaged(RequestId id, std::vector<SequencerCommand>& copies)
{
    Request& r = m_requests.at(id);
    r.issued = true;
    copies.push_back(
        SequencerCommand { SequencerCommand::Kind::CopyFromStaging, id, r.peer, r.tag, r.data, r.staging, r.bytes });
}

void TransferSequencer::issueUnplanned(std::vector<SequencerCommand>& group)
{
    using K = SequencerCommand::Kind;
    for (const RequestId id : m_unplanned) {
        Request& r = m_requests.at(id);
        r.issued = true;
        group.push_back(SequencerCommand { r.send ? K::Send : K::Receive, id, r.peer, r.tag, r.send ? nullptr : r.data,
            r.send ? r.data : nullptr, r.bytes });
    }
    m_unplanned.clear();
}

std::vector<SequencerCommand> TransferSequencer::next(RequestId waitingFor, bool mustIssue)
{
    std::vector<SequencerCommand> group;
    std::vector<SequencerCommand> copies;
    for (auto& [id, r] : m_requests)
        if (r.staging && !r.issued)
            bindStaged(id, copies);
    while (issueFront(group)) { }
    const auto waited = m_requests.find(waitingFor);
    if (waited != m_requests.end() && !waited->second.issued) {
        const Request& r = waited->second;
        if (r.planned) {
            const PlannedTransfer& front = m_plan[m_front];
            if (mustIssue)
                throw RuntimeError("nccl: waiting for " + describe(r.send, r.peer, r.tag)
                    + ", but the transfer order needs " + describe(front.send, front.peer, front.tag)
                    + " first and it has not been posted (the executor left the schedule's order)");
        } else if (m_front != 0) {
            if (mustIssue)
                throw RuntimeError("nccl: " + describe(r.send, r.peer, r.tag)
                    + " is not in the transfer plan and the step's planned transfers are not finished");
        } else {
            issueUnplanned(group);
        }
    }
    group.insert(group.end(), copies.begin(), copies.end());
    return group;
}

bool TransferSequencer::issued(RequestId request) const
{
    const auto it = m_requests.find(request);
    return it != m_requests.end() && it->second.issued;
}

void TransferSequencer::release(RequestId request)
{
    const auto it = m_requests.find(request);
    if (it == m_requests.end())
        return;
    if (it->second.staging) {
        m_release(it->second.staging, it->second.bytes);
        --m_stagingAlive;
    }
    m_requests.erase(it);
}

std::vector<PlannedTransfer> plannedTransfersOf(
    const TransferPlan& plan, int rank, const std::function<int(const Transfer&)>& tagOf, std::size_t messageBytes)
{
    std::vector<PlannedTransfer> out;
    for (const auto& e : plan.ranks.at(static_cast<std::size_t>(rank)).entries)
        out.push_back(PlannedTransfer {
            e.send, e.peer, tagOf(plan.transfers[static_cast<std::size_t>(e.transfer)]), messageBytes });
    return out;
}

} // namespace dps::runtime
