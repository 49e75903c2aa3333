// The capture's host timeline: a Kineto trace of a few steps recorded right after the profiled
// ones with host activity alone (no shapes, memory events, device activity or execution-trace
// observer; scripts/capture_fleet_samples.py). Its spans carry a fraction of the whole
// capture's instrumentation, so the host gaps between ops read from it are closer to the
// unprofiled job's than the linked trace's (docs/replay.md, Host gaps). Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::eg {

// Below this share of the steps' ops matched, a timeline is recorded as not used.
inline constexpr double kHostTimelineMinMatched = 0.9;

// Whether the workload's host timeline gives its ops' spans (matched enough of them).
inline bool HostTimelineUsed(const proto::Workload& w) {
  const proto::HostTimeline& h = w.original().host_timeline();
  return h.ops() > 0 && static_cast<double>(h.ops_matched()) >=
                            kHostTimelineMinMatched * static_cast<double>(h.ops());
}

// Reads the host timeline at `path` and places its median step (by duration) over each
// iteration segment of `workload`: each op with a host span there that the step matches (same
// name, in start order, every thread) gets Op.timeline_start_us (the step's offset from the
// segment's start) and timeline_duration_us; OriginalRun.host_timeline says which step and how
// many ops. Matching under kHostTimelineMinMatched of the ops sets no op's span and says so in
// the source. Errors: InvalidInput naming `path` when it cannot be read or holds no
// "ProfilerStep#" span; InvalidInput when the workload has no iteration segment with a span.
Status ApplyHostTimeline(const std::string& path, proto::Workload& workload);
// The same for the trace's JSON already in memory.
Status ApplyHostTimeline(const std::string& path, std::string_view json, proto::Workload& workload);

}  // namespace mimic::eg
