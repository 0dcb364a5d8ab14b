#pragma once
// Checked arithmetic on sizes: products of sizes (tokens, elements, bytes) formed with overflow detection and
// compared with a bound, and an error that names every factor. One rule for "a size too large is bad input":
// engine/project checks the model's and the variants' sizes with it (docs/project-format.md, "Limits").
#include "base/errors.h"

#include <climits>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace dps {

/// An upper bound on a size and how messages name it.
struct SizeBound {
    std::int64_t limit; ///< the largest value allowed
    std::string_view text; ///< e.g. "2^53 (the largest exact count)"
};

/// 2^53: a double holds every integer up to it exactly, so counts, byte sizes and µs times are kept within it
/// (as a double: kMaxExactDouble).
inline constexpr std::int64_t kMaxExactInteger = std::int64_t(1) << 53;
inline constexpr double kMaxExactDouble = static_cast<double>(kMaxExactInteger);

/// Counts and byte sizes a double holds exactly: every integer up to 2^53.
inline constexpr SizeBound kExactCount { kMaxExactInteger, "2^53 (the largest exact count)" };
/// Sizes that become an `int` downstream (a GEMM dimension, a stage count): up to 2^31 − 1.
inline constexpr SizeBound kIntRange { INT_MAX, "2^31 − 1 (the largest int)" };

/// a × b, or nullopt when the product does not fit std::int64_t.
inline std::optional<std::int64_t> checkedMultiply(std::int64_t a, std::int64_t b)
{
    std::int64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product))
        return std::nullopt;
    return product;
}

/// a + b, or nullopt when the sum does not fit std::int64_t.
inline std::optional<std::int64_t> checkedAdd(std::int64_t a, std::int64_t b)
{
    std::int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum))
        return std::nullopt;
    return sum;
}

/// One factor of a checked product. Messages show a field as "model.hidden 512" and a constant (empty name)
/// as its value with what it counts in parentheses: "4 (bytes per fp32 element)".
struct SizeFactor {
    std::string_view name; ///< the field that supplies the value; empty for a constant
    std::int64_t value;
    std::string_view note = {}; ///< shown in parentheses after the value when not empty
};

/// The factors as messages show them: "model.hidden: 512 × model.seq_len 128 × 4 (bytes per fp32 element)"
/// (the first factor's name, when it has one, leads and is followed by a colon).
inline std::string describeProduct(std::initializer_list<SizeFactor> factors)
{
    std::string text;
    bool first = true;
    for (const SizeFactor& f : factors) {
        if (!first)
            text += " × ";
        if (!f.name.empty())
            text += std::string(f.name) + (first ? ": " : " ");
        text += std::to_string(f.value);
        if (!f.note.empty())
            text += " (" + std::string(f.note) + ")";
        first = false;
    }
    return text;
}

/// The product of `factors` when it is at most bound.limit. Throws FormatError
/// "<describeProduct(factors)> <what> exceed <bound.text>" when it is larger (also when it would overflow
/// std::int64_t), and "<name>: must not be negative, got <value>" for a negative factor. A zero factor gives 0
/// whatever the others are.
inline std::int64_t checkedProduct(
    std::initializer_list<SizeFactor> factors, std::string_view what, const SizeBound& bound)
{
    for (const SizeFactor& f : factors)
        if (f.value < 0)
            throw FormatError(std::string(f.name.empty() ? std::string_view("size") : f.name)
                + ": must not be negative, got " + std::to_string(f.value));
    for (const SizeFactor& f : factors)
        if (f.value == 0)
            return 0;
    std::int64_t product = 1;
    for (const SizeFactor& f : factors) {
        const std::optional<std::int64_t> next = checkedMultiply(product, f.value);
        if (!next || *next > bound.limit)
            throw FormatError(
                describeProduct(factors) + " " + std::string(what) + " exceed " + std::string(bound.text));
        product = *next;
    }
    return product;
}

} // namespace dps
