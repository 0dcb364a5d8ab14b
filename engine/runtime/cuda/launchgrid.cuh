#pragma once
// The launch grid of our CUDA kernels (kernels.cu, layerkernels.cu): kThreads threads a block and at most
// kMaxBlocks blocks, the rest covered by grid-stride loops, so a kernel's result does not depend on the grid it
// gets (the reductions run in a fixed order within the fixed grid).
#include <cstddef>

namespace dps::runtime::launchgrid {

inline constexpr int kThreads = 256;
inline constexpr int kMaxBlocks = 4096;

/// Blocks for n elements: ⌈n ÷ kThreads⌉, at least 1 and at most kMaxBlocks.
inline int blocksFor(std::size_t n)
{
    const std::size_t blocks = (n + kThreads - 1) / kThreads;
    return blocks == 0 ? 1 : static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

} // namespace dps::runtime::launchgrid
