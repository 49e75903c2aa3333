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
// iteration segment of `workload`. Each op with a host span in a segment (half open) that the
// step matches (the next span of its name, in start order, every thread) gets
// Op.timeline_start_us (its span's offset within the timeline's step, placed at the segment's
// start) and timeline_duration_us. OriginalRun.host_timeline says which step, and how many of
// the segments' ops matched; under kHostTimelineMinMatched of them, no op keeps a span and the
// source says the timeline is not used. Errors: InvalidInput naming `path` when it holds no
// "ProfilerStep#" span or the workload no iteration segment with host spans; the reader's when
// the file cannot be opened (NotFound, Io) or parsed (InvalidInput).
Status ApplyHostTimeline(const std::string& path, proto::Workload& workload);
// The same for the trace's JSON already in memory.
Status ApplyHostTimeline(const std::string& path, std::string_view json, proto::Workload& workload);

// "SOURCE, N of M ops matched; its gaps less X us per event boundary" (X = `boundary_us`, the
// timeline's figure taken off, where it is used), for reports; the source alone where the
// timeline was not read.
std::string DescribeHostTimeline(const proto::Workload& workload, double boundary_us);

}  // namespace mimic::eg
