// Reader for Kineto (Chrome trace JSON) device traces, the linker that attaches their host
// spans and device kernels to execution-trace ops, and the builder of a workload from a Kineto
// trace alone (kineto_workload.cc). Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mimic/base/chunked_vector.h"
#include "mimic/base/file.h"
#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::eg {

struct KinetoEvent {
  enum class Kind : uint8_t { kHostOp, kAnnotation, kRuntime, kDevice, kSync };
  Kind kind;
  std::string name;
  std::string_view category;  // the trace's "cat", one of the reader's (static storage)
  int64_t pid = -1;
  int64_t tid = -1;
  double ts = 0;             // µs
  double dur = 0;            // µs
  int64_t rf_id = -1;        // args["Record function id"]
  int64_t external_id = -1;  // args["External id"]
  int64_t correlation = -1;  // args.correlation
  int64_t stream = -1;
  int64_t device = -1;
  // kSync ("cuda_sync"): args cuda_sync_kind, wait_on_stream, wait_on_cuda_event_record_corr_id.
  std::string sync_kind;
  int64_t wait_on_stream = -1;
  int64_t wait_event_correlation = -1;
  // Host ops, when parsed with KinetoParseOptions::inputs: the recorded arguments (record_shapes),
  // args "Input type", "Input Dims", "Input Strides" and "Concrete Inputs" as the minified JSON
  // array [types, dims, strides, concrete] (null for one not recorded), "" when none was. Kept
  // as text, read when the workload is built: far smaller than the shapes as vectors.
  std::string inputs_json;
};

struct KinetoParseOptions {
  // Keep host ops' recorded arguments (KinetoEvent::inputs_json): a workload built from the Kineto
  // trace alone needs them, linking to an execution trace does not.
  bool inputs = false;
};

// A "[memory]" instant event (profile_memory=True): the allocator's total after one allocation
// or free.
struct KinetoMemorySample {
  double ts = 0;                // µs
  int64_t total_allocated = 0;  // args["Total Allocated"], bytes
  int64_t device_type = 0;      // args["Device Type"]: 0 CPU, 1 CUDA (c10::DeviceType)
};

struct KinetoTrace {
  // Only the categories Mimic uses. Chunked: the list grows without moving what it holds, so
  // that a large trace never has two copies of its events resident, as a doubling vector had.
  ChunkedVector<KinetoEvent> events;
  std::vector<KinetoMemorySample> memory;
  std::vector<std::string> device_names;
  // deviceProperties, one per device: name, totalGlobalMem, numSms (0 where not recorded).
  struct Device {
    std::string name;
    double memory_bytes = 0;
    int64_t sm_count = 0;
  };
  std::vector<Device> devices;
  int64_t rank = -1;
  int64_t world_size = -1;
};

// Parses a Kineto trace streamed from `in` (plain or gzip JSON), keeping only the events Mimic
// uses. Errors: InvalidInput naming `path` and the byte offset, or for JSON without traceEvents.
Result<KinetoTrace> ParseKinetoTrace(const std::string& path, InputStream& in,
                                     const KinetoParseOptions& options = {});
// The same for JSON text already in memory.
Result<KinetoTrace> ParseKinetoTrace(const std::string& path, std::string_view json);

// Links `trace` into `workload`: CPU spans onto ops (by Record function id, else External id
// equal to rf_id, else name + thread + order), device kernels onto the ops that launched them
// (by correlation), spans onto segments, and the KinetoSummary. `path` names the Kineto file.
// Errors: InvalidInput when the trace comes from a different run (pid mismatch, or no op
// matches).
Status LinkKineto(const std::string& path, const KinetoTrace& trace, proto::Workload& workload);

// The workload of a Kineto trace alone (parsed with KinetoParseOptions::inputs), for the
// commands that need no tensors (inspect, predict, compare --no-replay): one op per host event
// (cpu_op, user_annotation) with ids in start order across threads, parents by time containment
// on each thread, the recorded argument shapes and types as inputs (each tensor a fresh entry:
// Kineto records no tensor identity, no outputs), kernels, syncs, ProfilerStep and "## label ##"
// segments with their spans, provenance with schema kKinetoOnlySchema (workload.h;
// docs/workload.md).
// `path` names the file in provenance and messages. The trace is taken by value so that its
// events are freed before the workload is built (the peak stays near the larger of the two, not
// their sum): move it in. Errors: InvalidInput when the trace holds no host op.
Result<proto::Workload> BuildKinetoWorkload(const std::string& path, KinetoTrace trace);

}  // namespace mimic::eg
