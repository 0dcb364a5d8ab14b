#pragma once
// Facts about this host, recorded in measured traces and shown by `dpstudio devices`: the CPU (from
// /proc/cpuinfo), its cores, the host name. The GPUs are in gpus.h.
#include <string>

namespace dps {

/// The first value of a /proc/cpuinfo field ("vendor_id", "cpu family"); "" when absent or unreadable.
std::string cpuInfoField(const std::string& name);
/// The CPU model ("AMD EPYC 9654 96-Core Processor"), from /proc/cpuinfo; "unknown" when unreadable.
std::string cpuModelName();
/// Number of online CPU cores (≥ 1).
int cpuCoreCount();
/// The host name; "unknown" when unavailable.
std::string hostName();

} // namespace dps
