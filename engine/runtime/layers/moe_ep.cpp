// The MoE block with its routed experts split over an expert-parallel group (moe.h, expertcomm.h; DeepSeek-V3
// report §3.2.2). Every member routes its own tokens; the rows for an expert go to the member holding it
// (dispatch), which runs the expert on the rows of every member and sends each its outputs back (combine). The
// backward sends the outputs' gradients the same way and the inputs' gradients back; the experts' weight
// gradients stay with their holder. Each call makes at most 5 exchanges, numbered Saved::tag × 8 + 0…4, the
// same on every member because every member runs the same schedule. docs/layers.md, "Expert parallelism".
// The exchanges go through host buffers: on a backend whose memory the host cannot read (cuda), the rows are
// downloaded before and uploaded after each exchange (HostMirror), as the block model's MPI does on one GPU.
#include "runtime/layers/moe.h"

#include "runtime/layers/rmsnorm.h"
#include "runtime/layers/swiglu.h"

namespace dps::runtime::layers {

namespace {

constexpr auto kAct = MemoryCategory::Activation;
constexpr auto kWork = MemoryCategory::Workspace;

// As moe.cpp: the block input, the norm output, the affinities, the output gradient, then the shared experts'
// slots and 5 per routed expert (the routed output of a pair is kept at the expert's slot + 4, here on the
// member whose token it is). The holder's slots follow: 5 per local expert (its 3 FFN slots, its input rows from
// every member, and its output rows, then their gradient).
enum Slot : std::size_t { eX, eXn, eScores, eDy, eFirstExpertSlot };
constexpr std::size_t kExpertInput = 3;
constexpr std::size_t kExpertOutput = 4;

std::size_t z(int v)
{
    return static_cast<std::size_t>(v);
}

/// The exchange numbers of one call.
enum Exchange : int { xCounts = 0, xRows = 1, xOutputs = 2, xOutputGrads = 3, xInputGrads = 4 };

/// The device address of element `offset` of fp32 tensor `t`.
void* rowAt(const Tensor& t, std::size_t offset)
{
    return static_cast<float*>(t.data()) + offset;
}

/// The rows of `src` for `pairs` (pair p is token p / k), appended to `out`.
void appendRows(std::vector<float>& out, const float* src, const std::vector<int>& pairs, std::size_t k, std::size_t h)
{
    for (int pair : pairs) {
        const float* row = src + z(pair) / k * h;
        out.insert(out.end(), row, row + h);
    }
}

/// Local expert `le`'s rows from every member in member order (member i's counts in received[le][i]), uploaded
/// from the lists `in` the exchange brought, each read on from read[i] (advanced past them): one n × h tensor in
/// `category`, n the rows of all members.
Tensor stackReceived(Backend& b, Lane lane, const std::vector<std::vector<int>>& received, int le,
    const std::vector<std::vector<float>>& in, std::vector<std::size_t>& read, std::size_t h, MemoryCategory category)
{
    const std::vector<int>& counts = received[z(le)];
    std::size_t n = 0;
    for (int c : counts)
        n += z(c);
    Tensor t(b, n, h, category);
    std::size_t row = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        const std::size_t c = z(counts[i]);
        if (c > 0)
            b.uploadFloats(lane, rowAt(t, row * h), in[i].data() + read[i] * h, c * h);
        read[i] += c;
        row += c;
    }
    return t;
}

/// The reverse of stackReceived for rows computed from them: host `rows` (n × h, members in order, member i's
/// received[le][i] rows) appended to out[i], the list going back to member i.
void unstackToMembers(const std::vector<std::vector<int>>& received, int le, const float* rows, std::size_t h,
    std::vector<std::vector<float>>& out)
{
    std::size_t row = 0;
    for (std::size_t i = 0; i < received[z(le)].size(); ++i) {
        const std::size_t c = z(received[z(le)][i]);
        out[i].insert(out[i].end(), rows + row * h, rows + (row + c) * h);
        row += c;
    }
}

} // namespace

std::size_t MoeBlock::ownerSlot(int localExpert) const
{
    return eFirstExpertSlot + 3 * z(m_c.sharedExperts) + 5 * z(m_c.experts) + 5 * z(localExpert);
}

Tensor MoeBlock::forwardEp(Lane lane, const ParamSet& p, Tensor x, Saved& sv) const
{
    requirePhase(sv, Phase::Empty, "moe F");
    if (!m_group || m_group->size() != m_c.ep || m_group->me != m_c.member)
        throw RuntimeError("moe: expert parallelism " + std::to_string(m_c.ep) + " without its group");
    if (sv.tag < 0)
        throw RuntimeError("moe: expert parallelism without an exchange number (Saved::tag)");
    const std::size_t t = z(m_c.tokens);
    const std::size_t h = z(m_c.hidden);
    const std::size_t k = z(m_c.topK);
    const int ep = m_c.ep;
    const int local = localExperts();
    Backend& b = m_backend;
    auto [xn, g, y] = beginForward(lane, p, x, sv);

    // Dispatch: to member i the rows of its experts' pairs, expert by expert; the counts first.
    std::vector<std::vector<float>> counts(z(ep));
    std::vector<std::vector<float>> rows(z(ep));
    {
        HostMirror xnHost(b, lane, xn.data(), t * h, true);
        for (int i = 0; i < ep; ++i)
            for (int e = i * local; e < (i + 1) * local; ++e) {
                counts[z(i)].push_back(static_cast<float>(sv.expertRows[z(e)].size())); // exact below 2^24 rows
                appendRows(rows[z(i)], xnHost.data(), sv.expertRows[z(e)], k, h);
            }
    }
    const int base = sv.tag * 8;
    const auto countsIn = exchangeRows(*m_group, counts, 1, base + xCounts);
    const auto rowsIn = exchangeRows(*m_group, rows, h, base + xRows);

    // This member's experts on every member's rows, then each member's outputs back.
    sv.received.assign(z(local), std::vector<int>(z(ep), 0));
    std::vector<std::vector<float>> outputs(z(ep));
    std::vector<std::size_t> read(z(ep), 0); // rows of rowsIn[i] consumed
    for (int le = 0; le < local; ++le) {
        for (int i = 0; i < ep; ++i)
            sv.received[z(le)][z(i)] = static_cast<int>(countsIn[z(i)].at(z(le)));
        Tensor xe = stackReceived(b, lane, sv.received, le, rowsIn, read, h, kAct);
        const std::size_t n = xe.rows();
        Tensor out(b, n, h, kWork);
        const std::size_t w = expertParam(firstLocalExpert() + le);
        const std::size_t slot = ownerSlot(le);
        swigluForward(b, lane, p[w], p[w + 1], p[w + 2], xe.data(), n, sv, slot, out.data(), 0.0f);
        HostMirror outHost(b, lane, out.data(), n * h, true);
        unstackToMembers(sv.received, le, outHost.data(), h, outputs);
        sv[slot + kExpertInput] = std::move(xe);
    }
    const auto outputsIn = exchangeRows(*m_group, outputs, h, base + xOutputs);

    // Combine: each routed output back at its token, y_t += g · out (kept for the gates' gradient).
    for (int i = 0; i < ep; ++i) {
        std::size_t row = 0;
        for (int e = i * local; e < (i + 1) * local; ++e) {
            const std::vector<int>& pairs = sv.expertRows[z(e)];
            Tensor out(b, pairs.size(), h, kAct);
            if (!pairs.empty()) {
                b.uploadFloats(lane, out.data(), outputsIn[z(i)].data() + row * h, pairs.size() * h);
                std::vector<int> tokens(pairs.size());
                std::vector<float> gates(pairs.size());
                for (std::size_t r = 0; r < pairs.size(); ++r) {
                    tokens[r] = static_cast<int>(z(pairs[r]) / k);
                    gates[r] = static_cast<float>(g[z(pairs[r])]);
                }
                b.scatterAddRows(lane, out.data(), h, tokens.data(), gates.data(), pairs.size(), y.data());
            }
            row += pairs.size();
            sv[expertSlot(e) + kExpertOutput] = std::move(out);
        }
    }
    sv[eX] = std::move(x);
    sv[eXn] = std::move(xn);
    sv.phase = Phase::AfterForward;
    return std::move(y); // a structured binding is not moved from implicitly
}

Tensor MoeBlock::backwardEp(Lane lane, const ParamSet& p, Saved& sv, Tensor dy, bool fused) const
{
    if (!m_group || sv.tag < 0)
        throw RuntimeError("moe: expert parallelism without its group or exchange number");
    const std::size_t t = z(m_c.tokens);
    const std::size_t h = z(m_c.hidden);
    const std::size_t k = z(m_c.topK);
    const int ep = m_c.ep;
    const int local = localExperts();
    Backend& b = m_backend;
    const MemoryCategory keep = fused ? kWork : kAct;
    const std::vector<double> g = gatesOn(lane, sv);
    Tensor dxn;
    Tensor dlogits = beginBackward(lane, p, sv, dy, dxn, fused);

    // The routed outputs' gradients g · dy_t go to the experts' holders, in the order of the dispatch.
    std::vector<std::vector<float>> grads(z(ep));
    {
        HostMirror dyHost(b, lane, dy.data(), t * h, true);
        for (int i = 0; i < ep; ++i)
            for (int e = i * local; e < (i + 1) * local; ++e) {
                sv[expertSlot(e) + kExpertOutput].reset();
                for (int pair : sv.expertRows[z(e)]) {
                    const auto gate = static_cast<float>(g[z(pair)]);
                    const float* d = dyHost.data() + z(pair) / k * h;
                    for (std::size_t c = 0; c < h; ++c)
                        grads[z(i)].push_back(gate * d[c]);
                }
            }
    }
    const int base = sv.tag * 8;
    const auto gradsIn = exchangeRows(*m_group, grads, h, base + xOutputGrads);

    // This member's experts: their input gradients go back to the members the rows came from.
    std::vector<std::vector<float>> inputGrads(z(ep));
    std::vector<std::size_t> read(z(ep), 0);
    for (int le = 0; le < local; ++le) {
        const std::size_t slot = ownerSlot(le);
        Tensor dout = stackReceived(b, lane, sv.received, le, gradsIn, read, h, keep);
        const std::size_t n = dout.rows();
        Tensor dxe(b, n, h, kWork);
        Tensor da(b, n, z(m_c.expertFfn), kWork);
        const std::size_t w = expertParam(firstLocalExpert() + le);
        swigluInputGrad(b, lane, p[w], p[w + 1], p[w + 2], sv[slot + kExpertInput].data(), dout.data(), n, sv, slot,
            dxe.data(), 0.0f, da.data(), fused);
        HostMirror dxeHost(b, lane, dxe.data(), n * h, true);
        unstackToMembers(sv.received, le, dxeHost.data(), h, inputGrads);
        if (fused)
            sv[slot + kExpertInput].reset();
        else
            sv[slot + kExpertOutput] = std::move(dout);
    }
    const auto inputGradsIn = exchangeRows(*m_group, inputGrads, h, base + xInputGrads);
    {
        HostMirror dxnHost(b, lane, dxn.data(), t * h, true);
        for (int i = 0; i < ep; ++i) {
            std::size_t row = 0;
            for (int e = i * local; e < (i + 1) * local; ++e)
                for (int pair : sv.expertRows[z(e)]) {
                    float* to = dxnHost.data() + z(pair) / k * h;
                    const float* from = inputGradsIn[z(i)].data() + row * h;
                    for (std::size_t c = 0; c < h; ++c)
                        to[c] += from[c];
                    ++row;
                }
        }
        dxnHost.commit();
    }
    Tensor da(b, m_c.sharedExperts > 0 ? t : 0, z(m_c.expertFfn), kWork);
    return finishBackward(lane, p, sv, dxn, std::move(dy), std::move(dlogits), da.data(), fused);
}

void MoeBlock::weightGradEp(Lane lane, const ParamSet& p, Saved& sv) const
{
    requirePhase(sv, Phase::AfterInputGrad, "moe W");
    for (int le = 0; le < localExperts(); ++le) {
        const std::size_t slot = ownerSlot(le);
        const std::size_t w = expertParam(firstLocalExpert() + le);
        swigluWeightGrad(m_backend, lane, p[w], p[w + 1], p[w + 2], sv[slot + kExpertInput].data(),
            sv[slot + kExpertOutput].data(), sv[slot + kExpertInput].rows(), sv, slot);
    }
    routerAndSharedWeightGrad(lane, p, sv);
    sv.clear();
}

} // namespace dps::runtime::layers
