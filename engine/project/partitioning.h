#pragma once
// Layer partitions: how many of the model's layers each stage holds. Plain C++.
#include <string>
#include <vector>

namespace dps {

/// `layers` split over `stages` as evenly as possible, earlier stages taking the remainder.
std::vector<int> evenPartition(int layers, int stages);
/// Layers of `stage` in evenPartition(layers, stages) without building it (stages ≥ 1).
int evenShare(int layers, int stages, int stage);

/// The partition of `layers` over stages that minimises the largest stage time, where a stage holding n
/// layers takes n × costPerLayer[s]. Every stage keeps at least one layer when layers ≥ stages. Greedy
/// water-filling, optimal for this separable min-max problem. Empty when costPerLayer is empty.
std::vector<int> balancedPartition(int layers, const std::vector<double>& costPerLayer);

/// Moves the boundary between stage `boundary` and `boundary + 1` so that stage `boundary` ends after
/// `layersBefore` layers in total (counted from the first layer), each of the two stages keeping at least
/// `minimum` layers. Returns the partition unchanged when the boundary does not exist.
std::vector<int> movedBoundary(std::vector<int> partition, int boundary, int layersBefore, int minimum = 1);

/// Sum of a partition.
int totalLayers(const std::vector<int>& partition);

/// Layers per stage as text with runs of equal stages shortened (UTF-8): {1,5,5,5,2} → "1,5×3,2", read as 1,
/// then three stages of 5, then 2; "" for an empty partition. What `dpstudio plan` and the designer's planner
/// print.
std::string partitionText(const std::vector<int>& partition);

} // namespace dps
