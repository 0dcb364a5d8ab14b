#pragma once
// The unit of a schedule: one op {stage, kind, microbatch} or an overlapped F&B pair, in PyTorch's
// text form (torch.distributed.pipelining's _Action notation): "2F0", "3I1", "0W3", "1B5",
// "(0F7;7B3)OVERLAP_F_B".
#include <cstdint>
#include <string>
#include <string_view>

namespace dps {

/// Kind of compute op. F forward; I backward for inputs (keeps what W needs); W backward for weights;
/// B full backward (I and W together).
enum class OpKind : std::uint8_t { F = 0, I = 1, W = 2, B = 3 };

/// The letter of a kind in PyTorch's current dialect: 'F', 'I', 'W', 'B'.
char kindLetter(OpKind kind);

/// One op of one stage on one microbatch. stage and microbatch are 0-based global indices.
struct Op {
    std::int32_t stage = 0;
    std::int32_t microbatch = 0;
    OpKind kind = OpKind::F;
    friend bool operator==(const Op&, const Op&) = default;
};

/// One slot of a rank's order: a single op, or an overlapped pair (PyTorch's OVERLAP_F_B) whose first
/// half is a forward and second half a full backward (B) or backward-for-inputs (I), run concurrently in
/// one slot.
struct Action {
    Op op; ///< the single op, or the forward half of an overlapped pair
    Op backward; ///< the backward half; meaningful only when overlapped
    bool overlapped = false;

    static Action single(Op o) { return Action { o, Op {}, false }; }
    static Action single(int stage, OpKind kind, int microbatch) { return single(Op { stage, microbatch, kind }); }
    static Action overlap(Op forward, Op backwardOp) { return Action { forward, backwardOp, true }; }

    /// Number of ops in the slot: 1 or 2.
    int size() const { return overlapped ? 2 : 1; }
    /// The i-th op (0 = op, 1 = backward). Precondition: i < size().
    const Op& at(int i) const { return i == 0 ? op : backward; }

    friend bool operator==(const Action& a, const Action& b)
    {
        return a.op == b.op && a.overlapped == b.overlapped && (!a.overlapped || a.backward == b.backward);
    }
};

/// PyTorch text of an op: "<stage><kind><microbatch>", e.g. "2F0".
std::string toString(const Op& op);
/// PyTorch text of an action: "2F0" or "(0F7;7B3)OVERLAP_F_B".
std::string toString(const Action& action);

/// Which letters mean what when reading text. Current (PyTorch ≥ 2.6): I backward-for-inputs, B full
/// backward. Legacy2024 (PyTorch 2.4/2.5 CSVs): "B" meant backward-for-inputs and "BW" full backward.
enum class Dialect { Current, Legacy2024 };

/// Parses one op ("2F0", spaces around allowed). Throws ParseError naming the text when it does not
/// follow `<stage><F|I|W|B><microbatch>` (Legacy2024: `<stage><F|B|W|BW><microbatch>`).
Op parseOp(std::string_view text, Dialect dialect = Dialect::Current);

/// Parses one action: an op, or "(<F op>;<B or I op>)OVERLAP_F_B". Throws ParseError naming the text
/// and what is wrong (e.g. "the first half of an OVERLAP_F_B pair must be a forward").
Action parseAction(std::string_view text, Dialect dialect = Dialect::Current);

/// PyTorch's actions that are not compute (torch.distributed.pipelining _ComputationType): point-to-point
/// sends and receives of activations (F) and gradients (B), FSDP's parameter all-gather (UNSHARD) and
/// release (RESHARD), and the data-parallel gradient reduction after a stage's last backward (REDUCE_GRAD).
enum class CommKind : std::uint8_t { SendF, RecvF, SendB, RecvB, Unshard, Reshard, ReduceGrad };

/// PyTorch's name of a kind: "SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD".
std::string_view commKindName(CommKind kind);
/// Whether actions of the kind name a microbatch (sends and receives do; UNSHARD, RESHARD, REDUCE_GRAD
/// act on a whole stage and do not).
bool commHasMicrobatch(CommKind kind);
/// Whether the kind is a send or a receive (point-to-point between two ranks).
inline bool isPointToPoint(CommKind kind)
{
    return kind == CommKind::SendF || kind == CommKind::RecvF || kind == CommKind::SendB || kind == CommKind::RecvB;
}

/// One communication or sharding action: "<stage><KIND>[<microbatch>]", e.g. "0SEND_F3", "2RECV_B1",
/// "1UNSHARD", "3REDUCE_GRAD". microbatch is -1 for the kinds without one.
struct CommOp {
    CommKind kind = CommKind::SendF;
    std::int32_t stage = 0;
    std::int32_t microbatch = -1;
    friend bool operator==(const CommOp&, const CommOp&) = default;
};

/// PyTorch text of a communication action: "0SEND_F3", "1UNSHARD".
std::string toString(const CommOp& op);

/// A key unique to an op or a communication action (its kind, stage and microbatch), for hash sets and maps.
inline std::uint64_t actionKey(const Op& op)
{
    return (std::uint64_t(op.kind) << 58) | (std::uint64_t(std::uint32_t(op.stage)) << 29)
        | std::uint32_t(op.microbatch + 1);
}
inline std::uint64_t actionKey(const CommOp& op)
{
    return (std::uint64_t(4 + int(op.kind)) << 58) | (std::uint64_t(std::uint32_t(op.stage)) << 29)
        | std::uint32_t(op.microbatch + 1);
}

/// One cell of PyTorch's schedule CSV in either of its formats (compute_only, compute_comms): a compute
/// action (F, I, W, B or an OVERLAP_F_B pair), a communication or sharding action, or an idle slot (an
/// empty cell, PyTorch's None).
struct Step {
    enum class Type : std::uint8_t { Idle, Compute, Comm };
    Type type = Type::Idle;
    Action compute; ///< meaningful when type == Compute
    CommOp comm; ///< meaningful when type == Comm

    static Step idle() { return Step {}; }
    static Step of(const Action& a) { return Step { Type::Compute, a, CommOp {} }; }
    static Step of(const CommOp& c) { return Step { Type::Comm, Action {}, c }; }
    bool isIdle() const { return type == Type::Idle; }
    bool isCompute() const { return type == Type::Compute; }
    bool isComm() const { return type == Type::Comm; }

    friend bool operator==(const Step& a, const Step& b)
    {
        return a.type == b.type && (a.type != Type::Compute || a.compute == b.compute)
            && (a.type != Type::Comm || a.comm == b.comm);
    }
};

/// PyTorch text of a cell: the action's text, "" for an idle slot.
std::string toString(const Step& step);

/// Parses one cell of PyTorch's full grammar (current dialect): "" (idle), a compute action, or
/// "<stage><SEND_F|RECV_F|SEND_B|RECV_B><microbatch>", "<stage><UNSHARD|RESHARD|REDUCE_GRAD>". Throws
/// ParseError naming the text, e.g. "'0SEND_X1' is not an action: unknown kind 'SEND_X' ...".
Step parseStep(std::string_view text);

} // namespace dps
