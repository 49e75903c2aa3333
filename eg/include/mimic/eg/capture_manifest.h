// The capture manifest that scripts/capture_fleet_samples.py writes beside its traces
// (fleet_samples/manifest.json): what each original run measured for itself, unprofiled.
// Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::eg {

struct CaptureSample {
  std::string name;
  std::string description;
  std::string et;       // file name, relative to the manifest
  std::string kineto;   // file name, relative to the manifest
  // The host timeline recorded with it (eg/host_timeline.h), relative to the manifest; "" if none.
  std::string host_timeline;
  // The value profile recorded with it (eg/value_profile.h), relative to the manifest; "" if none.
  std::string values;
  std::string device;
  std::string torch_version;
  std::string host_cpu;
  int64_t num_threads = 0;
  int64_t batch_size = 0;
  int64_t rank = -1;        // multi-rank captures (scripts/capture_ddp_samples.py)
  int64_t world_size = 0;
  std::vector<double> iteration_ms;
  // The same number of unprofiled steps timed right after the profiled ones; empty if not timed.
  std::vector<double> iteration_ms_after;
  double page_faults_per_step = -1;  // of the unprofiled steps; -1 if not recorded
  // The most bytes the device's allocator held during a step above what it held when the step
  // began (torch.cuda.max_memory_allocated on CUDA); -1 if not recorded.
  int64_t step_memory_peak_bytes = -1;
  proto::SystemMetrics system;  // per unprofiled step; present() false if not recorded
  // What the capture's instrumentation cost there, measured right after the profiled steps;
  // boundary_us 0 if not recorded.
  proto::CaptureCostFigures capture_cost;
};

struct CaptureManifest {
  std::vector<CaptureSample> samples;
  std::string default_sample;
  const CaptureSample* Find(std::string_view name) const;
  // The sample whose `et` file name is the last component of `trace_path`, or nullptr.
  const CaptureSample* FindByTrace(const std::string& trace_path) const;
};

// Parses manifest JSON; `path` is used in messages. Errors: InvalidInput naming the field.
Result<CaptureManifest> ParseCaptureManifest(const std::string& path, std::string_view json);
Result<CaptureManifest> ReadCaptureManifest(const std::string& path);

// Records `sample`'s unprofiled measurements as the workload's original run.
void ApplyCaptureSample(const CaptureSample& sample, const std::string& manifest_path,
                        proto::Workload& workload);

}  // namespace mimic::eg
