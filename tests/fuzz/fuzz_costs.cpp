// Fuzz target: the cost file reader (`dpstudio calibrate` writes it, `--costs` reads it). What it accepts
// must serialise and read back to the same text, and lay over the default project's costs.
#include "fuzz_target.h"

#include "project/project.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto costs = dps::fuzz::readStable(text, dps::parseCostsFile, dps::serializeCostsFile, "cost file");
    if (!costs)
        return 0;
    dps::Project project = dps::defaultProject();
    dps::applyCostsFile(project.costs, *costs);
    return 0;
}
