// Fuzz target: the cost file reader (`dpstudio calibrate` writes it, `--costs` reads it). What it accepts
// must serialise and read back to the same text, and lay over the default project's costs.
#include "fuzz_target.h"

#include "base/errors.h"
#include "project/project.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    dps::CostsFile costs;
    try {
        costs = dps::parseCostsFile(text, "fuzz.costs.json");
    } catch (const dps::Error&) {
        return 0;
    }
    const std::string written = dps::serializeCostsFile(costs);
    try {
        if (dps::serializeCostsFile(dps::parseCostsFile(written, "written")) != written)
            dps::fuzz::fail("serializeCostsFile → parseCostsFile → serializeCostsFile is not stable");
    } catch (const dps::Error&) {
        dps::fuzz::fail("a cost file the reader accepted was written as a file the reader refuses");
    }
    dps::Project project = dps::defaultProject();
    dps::applyCostsFile(project.costs, costs);
    return 0;
}
