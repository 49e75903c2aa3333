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
#include "mimic/replay/overheads.h"

namespace at {
class RecordFunction;
}

namespace mimic::replay {

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

}  // namespace mimic::replay
