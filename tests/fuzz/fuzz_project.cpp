// Fuzz target: the project file reader. What it accepts must serialise and read back to the same text, and
// predicting its active variant must give a result or a reason, never a crash or a foreign exception.
#include "fuzz_target.h"

#include "base/errors.h"
#include "project/predict.h"
#include "project/project.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    dps::Project project;
    try {
        project = dps::parseProject(text, "fuzz.dpstudio.json");
    } catch (const dps::Error&) {
        return 0;
    }
    const std::string written = dps::serializeProject(project);
    try {
        if (dps::serializeProject(dps::parseProject(written, "written")) != written)
            dps::fuzz::fail("serializeProject → parseProject → serializeProject is not stable");
    } catch (const dps::Error&) {
        dps::fuzz::fail("a project the reader accepted was written as a file the reader refuses");
    }
    // Small schedules only: the fuzzer should explore the reader, not wait on large simulations.
    const dps::Variant& active = project.active();
    if (static_cast<long long>(active.ranks) * active.microbatches <= 4096) {
        dps::PredictOptions options;
        options.recordTiming = false;
        options.recordMemory = false;
        (void)dps::predict(project, active, options);
    }
    return 0;
}
