// What machine this is, for reports and provenance. Thread-safe.
#pragma once

#include <string>

namespace mimic {

// gethostname(), or "" when it fails.
std::string HostName();
// The "model name" of /proc/cpuinfo, or "unknown".
std::string CpuModel();

}  // namespace mimic
