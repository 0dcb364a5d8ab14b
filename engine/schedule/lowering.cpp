// Lowering to PyTorch's compute_comms form: the three passes of torch.distributed.pipelining's
// _PipelineScheduleRuntime._prepare_schedule_with_comms, in its order.
#include "lowering.h"

#include "base/errors.h"

#include <algorithm>
#include <cstdint>
#include <unordered_set>

namespace dps {

namespace {

/// The stages of the next compute actions from `from` on, first seen first, until `count` are found (an
/// overlapped pair adds both its stages and may pass `count`, as PyTorch's next_stage_indices does).
std::vector<int> nextStages(int count, const std::vector<Action>& actions, std::size_t from)
{
    std::vector<int> stages;
    const auto add = [&stages](int stage) {
        if (std::find(stages.begin(), stages.end(), stage) == stages.end())
            stages.push_back(stage);
    };
    for (std::size_t i = from; i < actions.size(); ++i) {
        const Action& a = actions[i];
        add(a.op.stage);
        if (a.overlapped)
            add(a.backward.stage);
        if (static_cast<int>(stages.size()) >= count)
            break;
    }
    return stages;
}

/// _add_unshard_reshard: before each action, RESHARD the unsharded stages not among the next
/// `maxActive` ones, then UNSHARD those of them not yet unsharded; RESHARD what is left at the end.
/// Several RESHARDs at one point come in ascending stage order (PyTorch iterates a Python set of stage
/// indices, which gives that order for stages below 8).
std::vector<Step> addUnshardReshard(const std::vector<Action>& actions, int maxActive)
{
    std::vector<Step> out;
    std::vector<int> active; // kept sorted
    for (std::size_t i = 0; i < actions.size(); ++i) {
        const std::vector<int> next = nextStages(maxActive, actions, i);
        std::vector<int> evict;
        for (int s : active)
            if (std::find(next.begin(), next.end(), s) == next.end())
                evict.push_back(s);
        for (int s : evict) {
            active.erase(std::find(active.begin(), active.end(), s));
            out.push_back(Step::of(CommOp { CommKind::Reshard, s, -1 }));
        }
        for (int s : next) {
            if (std::binary_search(active.begin(), active.end(), s))
                continue;
            active.insert(std::lower_bound(active.begin(), active.end(), s), s);
            out.push_back(Step::of(CommOp { CommKind::Unshard, s, -1 }));
        }
        out.push_back(Step::of(actions[i]));
    }
    for (int s : active)
        out.push_back(Step::of(CommOp { CommKind::Reshard, s, -1 }));
    return out;
}

/// _add_reduce_grad: a REDUCE_GRAD right after the action holding a stage's last B or W on the rank. PyTorch
/// counts to the microbatch count; counting to the rank's own B and W of the stage is the same there and
/// also right for a stage whose microbatches two ranks share (DualPipe).
std::vector<Step> addReduceGrad(const std::vector<Step>& steps)
{
    std::vector<int> total;
    const auto eachGradient = [](const Step& step, auto&& f) {
        if (!step.isCompute())
            return;
        for (int k = 0; k < step.compute.size(); ++k)
            if (step.compute.at(k).kind == OpKind::B || step.compute.at(k).kind == OpKind::W)
                f(step.compute.at(k).stage);
    };
    for (const Step& step : steps)
        eachGradient(step, [&total](int stage) {
            if (static_cast<std::size_t>(stage) >= total.size())
                total.resize(static_cast<std::size_t>(stage) + 1, 0);
            ++total[static_cast<std::size_t>(stage)];
        });
    std::vector<Step> out;
    std::vector<int> seen(total.size(), 0);
    for (const Step& step : steps) {
        out.push_back(step);
        eachGradient(step, [&](int stage) {
            if (++seen[static_cast<std::size_t>(stage)] == total[static_cast<std::size_t>(stage)])
                out.push_back(Step::of(CommOp { CommKind::ReduceGrad, stage, -1 }));
        });
    }
    return out;
}

/// _add_send_recv over all ranks.
class SendRecvPass {
public:
    SendRecvPass(const Schedule& s, std::vector<std::vector<Step>> rows)
        : m_s(s)
        , m_rows(std::move(rows))
        , m_out(m_rows.size())
        , m_placed(m_rows.size())
        , m_head(m_rows.size(), 0)
    {
    }

    std::vector<std::vector<Step>> run()
    {
        for (bool left = true; left;) {
            left = false;
            bool progress = false;
            for (std::size_t r = 0; r < m_rows.size(); ++r) {
                if (m_head[r] >= m_rows[r].size())
                    continue;
                left = true;
                if (tryPlace(r))
                    progress = true;
            }
            if (left && !progress)
                stuck();
        }
        return std::move(m_out);
    }

private:
    int rankOf(int stage, int microbatch) const { return m_s.placement.rankOf(stage, microbatch); }

    /// Whether the op's output goes to (F) or its gradient comes from (I, B) another rank.
    bool crossesRanks(const Op& op) const
    {
        if (op.kind == OpKind::F)
            return op.stage + 1 < m_s.stages && rankOf(op.stage + 1, op.microbatch) != rankOf(op.stage, op.microbatch);
        if (op.kind == OpKind::I || op.kind == OpKind::B)
            return op.stage > 0 && rankOf(op.stage - 1, op.microbatch) != rankOf(op.stage, op.microbatch);
        return false;
    }

    bool placed(std::size_t r, std::uint64_t key) const { return m_placed[r].count(key) > 0; }

    /// Whether an op's input is already there on rank r: its receive, or its producer on the same rank.
    bool ready(std::size_t r, const Op& op) const
    {
        const int s = op.stage;
        const int m = op.microbatch;
        if (op.kind == OpKind::F)
            return s == 0 || placed(r, actionKey(CommOp { CommKind::RecvF, s, m }))
                || placed(r, actionKey(Op { s - 1, m, OpKind::F }));
        if (op.kind == OpKind::I || op.kind == OpKind::B)
            return s + 1 == m_s.stages || placed(r, actionKey(CommOp { CommKind::RecvB, s, m }))
                || placed(r, actionKey(Op { s + 1, m, OpKind::I })) || placed(r, actionKey(Op { s + 1, m, OpKind::B }));
        return true;
    }

    bool tryPlace(std::size_t r)
    {
        const Step& step = m_rows[r][m_head[r]];
        if (step.isCompute())
            for (int k = 0; k < step.compute.size(); ++k)
                if (!ready(r, step.compute.at(k)))
                    return false;
        m_out[r].push_back(step);
        ++m_head[r];
        if (step.isComm()) {
            m_placed[r].insert(actionKey(step.comm));
            return true;
        }
        for (int k = 0; k < step.compute.size(); ++k) {
            const Op& op = step.compute.at(k);
            m_placed[r].insert(actionKey(op));
            if (crossesRanks(op))
                addSendRecv(r, op);
        }
        return true;
    }

    void addSendRecv(std::size_t r, const Op& op)
    {
        const bool forward = op.kind == OpKind::F;
        const CommOp send { forward ? CommKind::SendF : CommKind::SendB, op.stage, op.microbatch };
        const CommOp recv { forward ? CommKind::RecvF : CommKind::RecvB, op.stage + (forward ? 1 : -1), op.microbatch };
        m_out[r].push_back(Step::of(send));
        m_placed[r].insert(actionKey(send));
        const auto peer = static_cast<std::size_t>(rankOf(recv.stage, recv.microbatch));
        m_out[peer].push_back(Step::of(recv));
        m_placed[peer].insert(actionKey(recv));
    }

    [[noreturn]] void stuck() const
    {
        std::string waits;
        for (std::size_t r = 0; r < m_rows.size(); ++r)
            if (m_head[r] < m_rows[r].size())
                waits += (waits.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " at "
                    + toString(m_rows[r][m_head[r]]);
        throw ConstraintError("lowering.stuck",
            "the compute order cannot be lowered to sends and receives: no rank can go on (" + waits
                + "); the order deadlocks (see `dpstudio validate`)");
    }

    const Schedule& m_s;
    std::vector<std::vector<Step>> m_rows;
    std::vector<std::vector<Step>> m_out;
    std::vector<std::unordered_set<std::uint64_t>> m_placed;
    std::vector<std::size_t> m_head;
};

} // namespace

TorchSchedule lowerToComms(const Schedule& schedule, const LoweringOptions& options)
{
    std::vector<std::vector<Step>> rows(schedule.order.size());
    for (std::size_t r = 0; r < schedule.order.size(); ++r) {
        const auto& actions = schedule.order[r];
        if (options.unshardReshard) {
            rows[r] = addUnshardReshard(actions, options.maxActiveStages);
        } else {
            for (const Action& a : actions)
                rows[r].push_back(Step::of(a));
        }
        if (options.reduceGrad)
            rows[r] = addReduceGrad(rows[r]);
    }
    TorchSchedule out;
    out.rows = SendRecvPass(schedule, std::move(rows)).run();
    return out;
}

} // namespace dps
