#pragma once
// Per-family generators behind generate() (generator.cpp checks constraints first and fills kind and
// sizes). Each returns a Schedule with placement and order set.
#include "schedule.h"

namespace dps::detail {

Schedule generateGPipe(int ranks, int microbatches);
Schedule generate1F1B(int ranks, int microbatches);
Schedule generateInterleaved1F1B(int ranks, int microbatches, int stagesPerRank);
Schedule generateZBH1(int ranks, int microbatches);
Schedule generateZBV(int ranks, int microbatches);
Schedule generateDualPipe(int ranks, int microbatches);
Schedule generateDualPipeV(int ranks, int microbatches);

} // namespace dps::detail
