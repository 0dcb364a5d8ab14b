// Fuzz target: the measured-trace reader (measured.json of `dpstudio run`). What it accepts must serialise
// and read back to the same text.
#include "fuzz_target.h"

#include "trace/measured.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (const auto trace = dps::fuzz::readStable(text, dps::parseMeasured, dps::serializeMeasured, "measured trace"))
        (void)trace->medianMakespanUs();
    return 0;
}
