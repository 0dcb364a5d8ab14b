#include "action.h"

#include "base/errors.h"

#include <charconv>
#include <iterator>

namespace dps {

char kindLetter(OpKind kind)
{
    static constexpr char letters[] = { 'F', 'I', 'W', 'B' };
    return letters[static_cast<int>(kind)];
}

std::string toString(const Op& op)
{
    std::string s = std::to_string(op.stage);
    s += kindLetter(op.kind);
    s += std::to_string(op.microbatch);
    return s;
}

std::string toString(const Action& action)
{
    if (!action.overlapped)
        return toString(action.op);
    return "(" + toString(action.op) + ";" + toString(action.backward) + ")OVERLAP_F_B";
}

namespace {

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
        s.remove_suffix(1);
    return s;
}

bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

/// The cell as it can be shown on one terminal line: bytes outside printable ASCII as \xNN (a binary
/// file must not print control characters or stop the message at a NUL), at most 40 characters.
std::string shown(std::string_view text)
{
    constexpr std::size_t kMaxShown = 40;
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        }
    }
    if (text.size() > kMaxShown)
        out += "...";
    return out;
}

[[noreturn]] void fail(std::string_view text, const std::string& why)
{
    throw ParseError("'" + shown(text) + "' is not an action: " + why);
}

} // namespace

Op parseOp(std::string_view raw, Dialect dialect)
{
    const std::string_view text = trim(raw);
    std::size_t i = 0;
    while (i < text.size() && isDigit(text[i]))
        ++i;
    if (i == 0)
        fail(text, "expected <stage><kind><microbatch>, e.g. 2F0");
    std::size_t j = i;
    while (j < text.size() && !isDigit(text[j]))
        ++j;
    const std::string_view letters = text.substr(i, j - i);
    const std::string_view mbText = text.substr(j);
    if (mbText.empty())
        fail(text, "missing microbatch number after the kind");
    for (char c : mbText)
        if (!isDigit(c))
            fail(text, "microbatch must be a number");
    Op op;
    auto parseInt = [&](std::string_view digits, const char* what) {
        int value = 0;
        auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (ec != std::errc() || ptr != digits.data() + digits.size())
            fail(text, std::string(what) + " is out of range");
        return value;
    };
    op.stage = parseInt(text.substr(0, i), "stage");
    op.microbatch = parseInt(mbText, "microbatch");
    if (letters == "F")
        op.kind = OpKind::F;
    else if (letters == "W")
        op.kind = OpKind::W;
    else if (dialect == Dialect::Current && letters == "I")
        op.kind = OpKind::I;
    else if (dialect == Dialect::Current && letters == "B")
        op.kind = OpKind::B;
    else if (dialect == Dialect::Legacy2024 && letters == "B")
        op.kind = OpKind::I;
    else if (dialect == Dialect::Legacy2024 && letters == "BW")
        op.kind = OpKind::B;
    else if (dialect == Dialect::Current)
        fail(text,
            "unknown kind '" + shown(letters) + "' (expected F, I, W or B"
                + (letters == "BW" ? "; BW is the 2024 dialect's full backward, read with --dialect 2024)" : ")"));
    else
        fail(text, "unknown kind '" + shown(letters) + "' in the 2024 dialect (expected F, B, W or BW)");
    return op;
}

Action parseAction(std::string_view raw, Dialect dialect)
{
    const std::string_view text = trim(raw);
    if (text.empty())
        fail(text, "empty");
    if (text.front() != '(')
        return Action::single(parseOp(text, dialect));
    constexpr std::string_view suffix = ")OVERLAP_F_B";
    if (text.size() < suffix.size() + 1 || text.substr(text.size() - suffix.size()) != suffix)
        fail(text, "a parenthesised action must be (<F>;<B>)OVERLAP_F_B");
    const std::string_view inner = text.substr(1, text.size() - 1 - suffix.size());
    const auto semi = inner.find(';');
    if (semi == std::string_view::npos || inner.find(';', semi + 1) != std::string_view::npos)
        fail(text, "an OVERLAP_F_B pair holds exactly two actions separated by ';'");
    const Op f = parseOp(inner.substr(0, semi), dialect);
    const Op b = parseOp(inner.substr(semi + 1), dialect);
    if (f.kind != OpKind::F)
        fail(text, "the first half of an OVERLAP_F_B pair must be a forward");
    if (b.kind != OpKind::B && b.kind != OpKind::I)
        fail(text, "the second half of an OVERLAP_F_B pair must be a backward (B or I)");
    return Action::overlap(f, b);
}

namespace {

constexpr std::string_view kCommNames[]
    = { "SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD" };

bool commKindOf(std::string_view letters, CommKind& kind)
{
    for (std::size_t i = 0; i < std::size(kCommNames); ++i) {
        if (letters == kCommNames[i]) {
            kind = static_cast<CommKind>(i);
            return true;
        }
    }
    return false;
}

int parseNumber(std::string_view text, std::string_view digits, const char* what)
{
    int value = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || ptr != digits.data() + digits.size())
        fail(text, std::string(what) + " is out of range");
    return value;
}

CommOp parseComm(std::string_view text, std::string_view stage, CommKind kind, std::string_view mb)
{
    CommOp op { kind, parseNumber(text, stage, "stage"), -1 };
    for (char c : mb)
        if (!isDigit(c))
            fail(text, "microbatch must be a number");
    if (commHasMicrobatch(kind) && mb.empty())
        fail(text,
            std::string(commKindName(kind)) + " needs a microbatch, e.g. 0" + std::string(commKindName(kind)) + "3");
    if (!commHasMicrobatch(kind) && !mb.empty())
        fail(text,
            std::string(commKindName(kind)) + " acts on a whole stage and takes no microbatch, e.g. 0"
                + std::string(commKindName(kind)));
    if (!mb.empty())
        op.microbatch = parseNumber(text, mb, "microbatch");
    return op;
}

} // namespace

std::string_view commKindName(CommKind kind)
{
    return kCommNames[static_cast<std::size_t>(kind)];
}

bool commHasMicrobatch(CommKind kind)
{
    return isPointToPoint(kind);
}

std::string toString(const CommOp& op)
{
    std::string s = std::to_string(op.stage);
    s += commKindName(op.kind);
    if (op.microbatch >= 0)
        s += std::to_string(op.microbatch);
    return s;
}

std::string toString(const Step& step)
{
    switch (step.type) {
    case Step::Type::Compute:
        return toString(step.compute);
    case Step::Type::Comm:
        return toString(step.comm);
    case Step::Type::Idle:
        break;
    }
    return {};
}

Step parseStep(std::string_view raw)
{
    const std::string_view text = trim(raw);
    if (text.empty())
        return Step::idle();
    if (text.front() == '(')
        return Step::of(parseAction(text));
    std::size_t i = 0;
    while (i < text.size() && isDigit(text[i]))
        ++i;
    std::size_t j = i;
    while (j < text.size() && !isDigit(text[j]))
        ++j;
    const std::string_view letters = text.substr(i, j - i);
    CommKind kind {};
    if (i > 0 && commKindOf(letters, kind))
        return Step::of(parseComm(text, text.substr(0, i), kind, text.substr(j)));
    if (i > 0 && letters != "F" && letters != "I" && letters != "W" && letters != "B")
        fail(text,
            "unknown kind '" + shown(letters)
                + "' (expected F, I, W, B, SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD or REDUCE_GRAD)");
    return Step::of(Action::single(parseOp(text)));
}

} // namespace dps
