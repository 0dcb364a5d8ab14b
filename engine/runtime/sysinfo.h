#pragma once
// Facts about the machine recorded in measured traces.
#include <string>

namespace dps::runtime {

/// The first value of a /proc/cpuinfo field ("vendor_id", "cpu family"); "" when absent or unreadable.
std::string cpuInfoField(const std::string& name);
/// The CPU model ("AMD EPYC 9654 96-Core Processor"), from /proc/cpuinfo; "unknown" when unreadable.
std::string cpuModelName();
/// Number of online CPU cores (≥ 1).
int cpuCoreCount();
/// The host name; "unknown" when unavailable.
std::string hostName();

} // namespace dps::runtime
