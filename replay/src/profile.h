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

namespace torch::autograd::profiler {
struct ProfilerResult;
}  // namespace torch::autograd::profiler

namespace mimic::replay {

struct CapturedLoop;

class ProfileSession {
 public:
  // What the profiler records beside the host ops' spans.
  struct Settings {
    bool shapes = true;           // the ops' input shapes (record_shapes)
    bool memory = false;          // the allocator's memory events (profile_memory)
    bool device_activity = true;  // kernels and copies on a GPU device (CUDA activity)
  };
  // Starts LibTorch's Kineto profiler: CPU activity, and what `settings` adds.
  // Errors: Internal when the profiler cannot start (another one runs, say).
  static Result<std::unique_ptr<ProfileSession>> Start(c10::Device device, Settings settings);
  static Result<std::unique_ptr<ProfileSession>> Start(c10::Device device) {
    return Start(device, Settings{});
  }
  ~ProfileSession();

  // Opens and closes the "ProfilerStep#n" span of an iteration.
  void BeginIteration(int n);
  void EndIteration();
  // Stops the profiler and writes its trace to `path` (atomically). Errors: Io, Internal.
  Status Stop(const std::string& path);
  // Stops the profiler and returns what it recorded; the session then stops nothing more.
  // Errors: Internal (the first line of LibTorch's message) when it fails to stop.
  Result<std::unique_ptr<torch::autograd::profiler::ProfilerResult>> Finish();

 private:
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
