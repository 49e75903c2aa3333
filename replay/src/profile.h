// `replay --profile`: a Kineto (Chrome trace) profile of the measured iterations, recorded by
// LibTorch's own profiler, so that it opens in Perfetto and holds what a profile of the
// original holds: one cpu_op per op the dispatcher ran and a ProfilerStep#N span per
// iteration (kernels too on a GPU). Driven by the replay's thread.
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mimic/base/status.h"
#include "mimic/replay/overheads.h"
#include "proto/workload.pb.h"

namespace at {
class RecordFunction;
}

namespace mimic::replay {

struct CapturedLoop;

class ProfileSession {
 public:
  // Starts LibTorch's Kineto profiler (CPU activity, and CUDA on a GPU device), with shapes, and
  // with the allocator's memory events when `profile_memory`.
  // Errors: Internal when the profiler cannot start (another one runs, say).
  static Result<std::unique_ptr<ProfileSession>> Start(c10::Device device,
                                                       bool profile_memory = false);
  ~ProfileSession();

  // Opens and closes the "ProfilerStep#n" span of an iteration.
  void BeginIteration(int n);
  void EndIteration();
  // Stops the profiler and writes its trace to `path` (atomically). Errors: Io, Internal.
  Status Stop(const std::string& path);

 private:
  friend Result<CapturedLoop> RunUnderCapture(c10::Device device, const char* op,
                                              bool save_integer_inputs,
                                              const std::function<void()>& body);
  ProfileSession() = default;
  std::unique_ptr<at::RecordFunction> step_;
  bool running_ = false;
};

// A loop run once as the capture scripts record (LibTorch's Kineto profiler with shapes and
// memory events, and the execution-trace observer with integer ranges on): the recorded spans of
// the calls of `op` (not of an `op` nested in one) in start order, and the observer's trace read
// back.
struct CapturedLoop {
  std::vector<std::pair<int64_t, int64_t>> spans_ns;  // start, end
  proto::Workload trace;
  std::vector<int> ops;  // indexes of the trace's calls of `op`, in id (call) order
};
// `save_integer_inputs`: the observer also saves the integer inputs of `op` beside the trace,
// as the capture scripts do for index ops. Errors: Internal when the profiler or observer
// cannot run or read back.
Result<CapturedLoop> RunUnderCapture(c10::Device device, const char* op, bool save_integer_inputs,
                                     const std::function<void()>& body);

}  // namespace mimic::replay
