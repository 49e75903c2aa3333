// What a minor page fault costs on this host: the platform's cpu_overheads.page_fault_us
// (proto/platform.proto). Internal to mimic::calibrate.
#pragma once

#include <functional>
#include <string>

#include "proto/platform.pb.h"

namespace mimic::calibrate {

// Maps 64 MiB of fresh anonymous memory as malloc's heap grows it (no madvise: the host's
// transparent-huge-page policy applies, as it did to the original), writes one byte to each
// page, and divides the time by the minor faults the process counted meanwhile; the median of
// `rounds` rounds. Sets c.page_fault_us; returns how it was measured, for the platform's
// sources, or why not (then c is unchanged).
std::string MeasurePageFaults(int rounds, proto::CpuOverheads& c,
                              const std::function<void(const std::string&)>& log);

}  // namespace mimic::calibrate
