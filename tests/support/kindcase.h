#pragma once
// One case of a test run over every schedule kind (the executor and transformer-run suites): the kind and its
// size, and the GoogleTest name of such a case.
#include "schedule/schedule.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace dps::test {

/// A schedule kind on `ranks` ranks with `microbatches` microbatches (stagesPerRank 0: the kind's default).
struct KindCase {
    ScheduleKind kind;
    int ranks;
    int microbatches;
    int stagesPerRank;
};

/// The case's test name: "<kind>_<ranks>ranks" with every character but letters and digits made '_'
/// ("dualpipev_4ranks", "interleaved_1f1b_2ranks").
inline std::string kindCaseName(const ::testing::TestParamInfo<KindCase>& param)
{
    std::string name = std::string(kindName(param.param.kind)) + "_" + std::to_string(param.param.ranks) + "ranks";
    for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch)))
            ch = '_';
    return name;
}

} // namespace dps::test
