// Fuzz target: the project file reader. What it accepts must serialise and read back to the same text, and
// predicting its active variant must give a result or a reason, never a crash or a foreign exception.
#include "fuzz_target.h"

#include "project/predict.h"
#include "project/project.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto project = dps::fuzz::readStable(text, dps::parseProject, dps::serializeProject, "project");
    if (!project)
        return 0;
    // Small schedules only: the fuzzer should explore the reader, not wait on large simulations.
    const dps::Variant& active = project->active();
    if (static_cast<long long>(active.ranks) * active.microbatches <= 4096)
        (void)dps::predict(*project, active, dps::PredictOptions::peaksOnly());
    return 0;
}
