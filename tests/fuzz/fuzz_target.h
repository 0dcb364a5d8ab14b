#pragma once
// The libFuzzer entry point every fuzz target defines. Built two ways (tests/fuzz/CMakeLists.txt): with
// clang's -fsanitize=fuzzer by scripts/fuzz.sh, and with any compiler against replay_main.cpp, which feeds
// it the committed corpus and crashers — what CI runs.
//
// The contract under test: a parser given any bytes either returns a value or throws dps::Error (the
// engine's own, with a message for the user). Any other exception, a crash, a sanitizer report or a
// broken round trip is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace dps::fuzz {

/// Aborts with `what` on stderr: the fuzzer records the input as a crasher.
[[noreturn]] inline void fail(const char* what)
{
    std::fprintf(stderr, "fuzz finding: %s\n", what);
    std::abort();
}

} // namespace dps::fuzz
