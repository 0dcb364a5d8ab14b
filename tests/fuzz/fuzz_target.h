#pragma once
// The libFuzzer entry point every fuzz target defines. Built two ways (tests/fuzz/CMakeLists.txt): with
// clang's -fsanitize=fuzzer by scripts/fuzz.sh, and with any compiler against replay_main.cpp, which feeds
// it the committed corpus and crashers — what CI runs.
//
// The contract under test: a parser given any bytes either returns a value or throws dps::Error (the
// engine's own, with a message for the user). Any other exception, a crash, a sanitizer report or a
// broken round trip is a finding.
#include "base/errors.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <optional>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace dps::fuzz {

/// Aborts with `what` on stderr: the fuzzer records the input as a crasher.
[[noreturn]] inline void fail(const char* what)
{
    std::fprintf(stderr, "fuzz finding: %s\n", what);
    std::abort();
}

/// Reads `text` with `parse(text, source)`: nullopt when it throws dps::Error (a refusal, as it should be).
/// What it accepts must be written by `serialize` as text that reads back and writes again to the same
/// text; anything else is a finding named after `format` ("project", "cost file", ...).
template <class Parse, class Serialize>
auto readStable(const std::string& text, Parse parse, Serialize serialize, const char* format)
    -> std::optional<decltype(parse(text, std::string()))>
{
    std::optional<decltype(parse(text, std::string()))> value;
    try {
        value = parse(text, std::string("fuzz input"));
    } catch (const dps::Error&) {
        return std::nullopt;
    }
    const std::string written = serialize(*value);
    std::string again;
    try {
        again = serialize(parse(written, std::string("written")));
    } catch (const dps::Error&) {
        std::fprintf(stderr, "fuzz finding: a %s the reader accepted was written as one the reader refuses\n", format);
        std::abort();
    }
    if (again != written) {
        std::fprintf(stderr, "fuzz finding: a %s does not write, read and write again to the same text\n", format);
        std::abort();
    }
    return value;
}

} // namespace dps::fuzz
