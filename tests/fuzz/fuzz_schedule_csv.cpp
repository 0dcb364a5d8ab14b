// Fuzz target: the schedule CSV reader (both dialects), then the validator and the writer on whatever it
// accepts. A schedule that reads must validate without crashing, and its written CSV (always the current
// dialect; auto-detection may rightly read "0B0,0W0" as 2024's) must read back to the same per-rank order.
#include "fuzz_target.h"

#include "base/errors.h"
#include "schedule/csvio.h"
#include "schedule/validator.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    dps::CsvImport imported;
    try {
        imported = dps::readCsv(text);
    } catch (const dps::Error&) {
        return 0;
    }
    (void)dps::validate(imported.schedule);
    dps::CsvImport again;
    try {
        again = dps::readCsv(dps::writeCsv(imported.schedule), dps::CsvDialect::Current); // what it writes
    } catch (const dps::Error&) {
        dps::fuzz::fail("a schedule the reader accepted was written as a CSV the reader refuses");
    }
    if (again.schedule.order != imported.schedule.order)
        dps::fuzz::fail("writeCsv → readCsv changed the per-rank order");
    return 0;
}
