// The pieces of Kineto linking that LinkKineto (an execution trace's ops) and
// BuildKinetoWorkload (a Kineto trace alone) share. Internal to eg/.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mimic/eg/kineto.h"
#include "proto/workload.pb.h"

namespace mimic::eg::kineto {

// One recorded argument of a host op (record_shapes=True): args "Input type", "Input Dims",
// "Input Strides" and "Concrete Inputs" at one position, as the profiler wrote them.
struct Input {
  std::string type;  // "float", "c10::Half", "long int", ... (a tensor), "Scalar", "ScalarList",
                     // "TensorList", "" (anything else: None, a device, a string)
  std::vector<std::vector<int64_t>> dims;  // a tensor: its shape; a TensorList: one per tensor
  std::vector<int64_t> strides;            // a tensor's, where recorded
  std::string concrete;                    // a scalar's or scalar list's value, where recorded
  bool has_dims = false;                   // "Input Dims" had an entry at this position
};

// The arguments of KinetoEvent::inputs_json, position by position, into *out (cleared first);
// `parser` is the caller's, reused from event to event.
void ReadInputs(std::string_view inputs_json, simdjson::dom::parser& parser,
                std::vector<Input>* out);

// Host spans: cpu_op and user_annotation events (gpu_user_annotation is on the device timeline).
bool IsHost(const KinetoEvent& e);
bool IsHostSpan(const KinetoEvent& e);

// Parents before their children: by start, the longer first at a tie.
inline bool OuterFirst(const KinetoEvent* a, const KinetoEvent* b) {
  return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur;
}

// Greedy in-order matching of the names of ops `et` (indexes into w.ops) against the events
// `k`, from k[from] on, for up to `limit` ops: an event may be passed over, an op that finds no
// event of its name within 32 stays unmatched. Returns the number of matches, and the pairs
// (op index, event) where asked.
size_t AlignFrom(const proto::Workload& w, const std::vector<int>& et,
                 const std::vector<const KinetoEvent*>& k, size_t from, size_t limit,
                 std::vector<std::pair<int, const KinetoEvent*>>* pairs);

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
  int64_t total = 0;            // device events in the trace
  int64_t in_window = 0;        // launched inside [window_lo, window_hi]
  int64_t linked = 0;           // attached to an op
  int64_t observer_probes = 0;  // in the window, left out: ObserverProbes
  double observer_probe_us = 0;
};

// The device events the execution-trace observer itself launched inside the ops it recorded.
// With ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_RANGE set it records each integer
// tensor's range by calling min() and max() on it and reading each back: on a GPU, a reduction
// kernel and a device-to-host copy of its scalar each, launched from inside the op. An op's own
// work never launches that sequence (an op that reduces an integer tensor and reads the result
// back records its own min, max and item ops, which are the launchers of their kernels). Returns
// the correlation ids of each [integer min kernel, DtoH copy, integer max kernel, DtoH copy]
// that one op launched one after another, each reduction with the copy to a contiguous tensor
// and the memset that a strided or large tensor's min() and max() launch before it.
std::unordered_set<int64_t> ObserverProbes(
    const KinetoTrace& trace, const std::unordered_map<int64_t, const KinetoEvent*>& launch_of,
    const std::unordered_map<const KinetoEvent*, int>& launcher);
// Where a kernel or sync of op i goes: the op itself (KernelsOf, SyncsOf), or a list that the
// caller attaches later (the workload of a Kineto trace alone, built once the trace is freed).
using KernelSink = std::function<proto::Kernel*(int op)>;
using SyncSink = std::function<proto::CudaSync*(int op)>;
KernelSink KernelsOf(proto::Workload& w);
SyncSink SyncsOf(proto::Workload& w);

// Attaches each device event launched inside [window_lo, window_hi] to the op that launched it,
// but the observer's probes (ObserverProbes), which it counts.
// Given a trace it may change (Trace = KinetoTrace, one the caller is done with), the kernels'
// names are moved out of it rather than copied, so that they are never held twice.
template <typename Trace>
KernelCounts AttachKernels(Trace& trace,
                           const std::unordered_map<int64_t, const KinetoEvent*>& launch_of,
                           const std::unordered_map<const KinetoEvent*, int>& launcher,
                           double window_lo, double window_hi, const KernelSink& add);

// Each recorded CUDA synchronization onto the op that made it (docs/workload.md, CudaSync).
// `event_of_op[i]`: the host event op i is linked to, or null.
void AttachSyncs(const KinetoTrace& trace, const std::vector<const KinetoEvent*>& event_of_op,
                 const std::unordered_map<int64_t, const KinetoEvent*>& runtime_of,
                 const std::unordered_map<const KinetoEvent*, int>& launcher, const SyncSink& add);

// Segment spans from their ops' CPU spans, and the profiled step times they imply.
void SetSegmentSpans(proto::Workload& w);

// The step memory peak from "[memory]" events, where recorded.
void RecordStepMemory(const KinetoTrace& trace, proto::Workload& w);

// Rank, world size and device names from the trace's metadata.
void AddTraceProvenance(const KinetoTrace& trace, proto::Workload& w);

}  // namespace mimic::eg::kineto
