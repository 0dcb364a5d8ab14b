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

} // namespace dps
