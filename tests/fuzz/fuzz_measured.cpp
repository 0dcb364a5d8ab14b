// Fuzz target: the measured-trace reader (measured.json of `dpstudio run`). What it accepts must serialise
// and read back to the same text.
#include "fuzz_target.h"

#include "base/errors.h"
#include "trace/measured.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    dps::MeasuredTrace trace;
    try {
        trace = dps::parseMeasured(text, "fuzz.measured.json");
    } catch (const dps::Error&) {
        return 0;
    }
    const std::string written = dps::serializeMeasured(trace);
    try {
        if (dps::serializeMeasured(dps::parseMeasured(written, "written")) != written)
            dps::fuzz::fail("serializeMeasured → parseMeasured → serializeMeasured is not stable");
    } catch (const dps::Error&) {
        dps::fuzz::fail("a measured trace the reader accepted was written as a file the reader refuses");
    }
    (void)trace.medianMakespanUs();
    return 0;
}
