// Wall-clock helpers for reports and provenance. Thread-safe.
#pragma once

#include <string>

namespace mimic {

// The current time as ISO 8601 in UTC, e.g. "2026-11-21T05:46:38Z".
std::string UtcNowIso8601();

}  // namespace mimic
