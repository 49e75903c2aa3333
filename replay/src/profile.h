// `replay --profile`: a Kineto (Chrome trace) profile of the measured iterations, recorded by
// LibTorch's own profiler, so that it opens in Perfetto and holds what a profile of the
// original holds: one cpu_op per op the dispatcher ran and a ProfilerStep#N span per
// iteration (kernels too on a GPU). Driven by the replay's thread.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <optional>
#include <string>

#include "mimic/base/status.h"

namespace at {
class RecordFunction;
}

namespace mimic::replay {

Result<double> MeasureCaptureCostUs(c10::Device device);

class ProfileSession {
 public:
  // Starts LibTorch's Kineto profiler (CPU activity, and CUDA on a GPU device), with shapes.
  // Errors: Internal when the profiler cannot start (another one runs, say).
  static Result<std::unique_ptr<ProfileSession>> Start(c10::Device device);
  ~ProfileSession();

  // Opens and closes the "ProfilerStep#n" span of an iteration.
  void BeginIteration(int n);
  void EndIteration();
  // Stops the profiler and writes its trace to `path` (atomically). Errors: Io, Internal.
  Status Stop(const std::string& path);

 private:
  friend Result<double> MeasureCaptureCostUs(c10::Device device);
  ProfileSession() = default;
  std::unique_ptr<at::RecordFunction> step_;
  bool running_ = false;
};

// The host time the capture's instrumentation adds per event boundary (an op starting or
// ending) outside the ops' spans: half the median gap between 2,000 back-to-back one-element
// `aten::add` calls from C++ (where the true gap is a few nanoseconds of loop, and each gap
// holds two boundaries) recorded as the capture scripts record (Kineto with shapes and the
// execution trace observer). A constant of the host and torch, never of a workload.
// Errors: Internal when the profiler cannot start.
Result<double> MeasureCaptureCostUs(c10::Device device);

}  // namespace mimic::replay
