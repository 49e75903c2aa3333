// The pieces of Kineto linking that LinkKineto (an execution trace's ops) and
// BuildKinetoWorkload (a Kineto trace alone) share. Internal to eg/.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "mimic/eg/kineto.h"
#include "proto/workload.pb.h"

namespace mimic::eg::kineto {

// Host spans: cpu_op and user_annotation events (gpu_user_annotation is on the device timeline).
bool IsHost(const KinetoEvent& e);
bool IsHostSpan(const KinetoEvent& e);

// Op index -> the host event it is (or was linked to).
using Links = std::unordered_map<int, const KinetoEvent*>;

// Runtime (launch) events by correlation id.
std::unordered_map<int64_t, const KinetoEvent*> LaunchesByCorrelation(const KinetoTrace& trace);

// For every runtime (launch) event, the op that issued it: the innermost host span in
// `op_of_event` that holds the launch on its thread.
std::unordered_map<const KinetoEvent*, int> AttributeLaunches(
    const KinetoTrace& trace, const std::vector<const KinetoEvent*>& host,
    const std::unordered_map<const KinetoEvent*, int>& op_of_event);

struct KernelCounts {
  int64_t total = 0;      // device events in the trace
  int64_t in_window = 0;  // launched inside [window_lo, window_hi]
  int64_t linked = 0;     // attached to an op
};
// Attaches each device event launched inside [window_lo, window_hi] to the op that launched it.
KernelCounts AttachKernels(const KinetoTrace& trace,
                           const std::unordered_map<int64_t, const KinetoEvent*>& launch_of,
                           const std::unordered_map<const KinetoEvent*, int>& launcher,
                           double window_lo, double window_hi, proto::Workload& w);

// Each recorded CUDA synchronization onto the op that made it (docs/workload.md, CudaSync).
void AttachSyncs(const KinetoTrace& trace, const Links& links,
                 const std::unordered_map<int64_t, const KinetoEvent*>& runtime_of,
                 const std::unordered_map<const KinetoEvent*, int>& launcher, proto::Workload& w);

// Segment spans from their ops' CPU spans, and the profiled step times they imply.
void SetSegmentSpans(proto::Workload& w);

// The step memory peak from "[memory]" events, where recorded.
void RecordStepMemory(const KinetoTrace& trace, proto::Workload& w);

// Rank, world size and device names from the trace's metadata.
void AddTraceProvenance(const KinetoTrace& trace, proto::Workload& w);

}  // namespace mimic::eg::kineto
