// What the replay and the capture's instrumentation cost per op, measured on known
// loops: `mimic calibrate` keeps both in the platform (cpu_overheads.framework_us and
// capture_*, docs/model.md), and a replay with --host-gaps recorded measures the capture's at
// setup where no calibration of its host exists. Constants of the host and torch, never of
// a workload. Not reentrant: they run the replay and LibTorch's profiler.
#pragma once

#include <c10/core/Device.h>

#include <string>

#include "mimic/base/status.h"
#include "mimic/eg/workload.h"
#include "proto/workload.pb.h"

namespace mimic::replay {

// A workload of `n` aten::add.Tensor ops on one-element float tensors of `device`, each adding a
// constant to the previous op's output: a trace where the ops cost almost nothing, so that a
// replayer's own work per op is what its time shows.
proto::Workload TinyOpChain(int n, const std::string& device = "cpu");

struct ReplayOpCost {
  double replay_us = 0;  // the replay's time per op of TinyOpChain (its iteration / ops)
  double boxed_us = 0;   // a bare boxed dispatcher call of the same op, stacks built beforehand
  // What the replay adds per op beyond the dispatcher call: replay_us - boxed_us, at least 0.
  double framework_us() const { return replay_us > boxed_us ? replay_us - boxed_us : 0; }
};

// Replays TinyOpChain(ops) on `device` and times the bare boxed calls beside it, alternately in
// `rounds` rounds of a few iterations (loops) each; every iteration (loop) is a sample, and the
// samples combine by their minimum (`use_min`) or median. Runs with LibTorch's current thread
// count. Errors: whatever the replay returns (an unknown device, say); Internal when the chain did
// not replay in full.
Result<ReplayOpCost> MeasureReplayOpCost(const std::string& device, int rounds, bool use_min,
                                         int ops = 2000);

// What the capture's instrumentation (Kineto with shapes and the execution-trace observer, as
// the capture scripts record) adds to the host outside the ops' spans (eg::CaptureCost), from
// known loops run in C++, where the true gap between two calls is a few nanoseconds of loop:
// aten::cat of 1 to 256 one-element tensors in turn gives the cost per event boundary (half
// the fitted gap before an op of no input tensor) and per input tensor; with
// `integer_inputs`, aten::sum of 10^5 to 10^6 int64 indices, each new, gives the cost per element
// of an integer input whose range the observer computes, and per byte of one it saves, and of as
// many indices broadcast along rows the cost per broadcast element; with `host_timeline`, a
// loop of aten::cat of one tensor under the host timeline's profiler gives its cost per boundary.
// A slope the noise turns negative counts as 0. Errors: Internal when the profiler or the
// observer cannot run.
Result<eg::CaptureCost> MeasureCaptureCost(c10::Device device, bool integer_inputs,
                                           bool host_timeline);

}  // namespace mimic::replay
