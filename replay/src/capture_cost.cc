// What the capture's instrumentation costs the host outside the ops' spans, measured on known
// loops from C++ (where the true gap between two calls is a few nanoseconds of loop): each gap
// the profiler records there is the capture's own cost (eg::CaptureCost, docs/replay.md).

#include <ATen/core/grad_mode.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/sum.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/profiler/standalone/execution_trace_observer.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "mimic/base/file.h"
#include "mimic/base/stats.h"
#include "mimic/eg/execution_trace.h"
#include "profile.h"

namespace mimic::replay {
namespace {

namespace profiler = torch::autograd::profiler;

// Sends what LibTorch and Kineto print to stderr (observer and device-probe notices) to
// /dev/null while it lives: the measurement is setup, not news for the user.
class SilencedStderr {
 public:
  SilencedStderr() : saved_(dup(STDERR_FILENO)) {
    std::fflush(stderr);
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, STDERR_FILENO);
      close(null);
    }
  }
  ~SilencedStderr() {
    std::fflush(stderr);
    if (saved_ >= 0) {
      dup2(saved_, STDERR_FILENO);
      close(saved_);
    }
  }
  SilencedStderr(const SilencedStderr&) = delete;
  SilencedStderr& operator=(const SilencedStderr&) = delete;

 private:
  int saved_;
};

// Sets an environment variable while it lives (the observer reads its integer-input switches
// when it is added), then puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Removes the folder of integer inputs the observer saved (flat: its files only). Plain POSIX:
// std::filesystem here would bind to the copy inside libtorch, built for another ABI.
void RemoveSavedInputs(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d))
      if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..")
        unlink((dir + "/" + e->d_name).c_str());
    closedir(d);
  }
  rmdir(dir.c_str());
}

// One loop of `kinds` calls in turn, `rounds` times: for each kind, the median gap before its
// calls (the first call has none) and the median of `feature` over its recorded ops.
struct KindGaps {
  std::vector<double> gap_us, feature;
};
Result<KindGaps> GapsByKind(const CapturedLoop& loop, size_t kinds,
                            const std::function<double(const proto::Op&)>& feature) {
  if (loop.spans_ns.size() != loop.ops.size() || loop.ops.size() < 2 * kinds)
    return Status::Internal("the profiler recorded " + std::to_string(loop.spans_ns.size()) +
                            " calls and the execution trace " + std::to_string(loop.ops.size()));
  std::vector<std::vector<double>> gaps(kinds), features(kinds);
  for (size_t i = 0; i < loop.ops.size(); ++i) {
    features[i % kinds].push_back(feature(loop.trace.ops(loop.ops[i])));
    if (i > 0)
      gaps[i % kinds].push_back(
          static_cast<double>(loop.spans_ns[i].first - loop.spans_ns[i - 1].second) / 1000.0);
  }
  KindGaps out;
  for (size_t k = 0; k < kinds; ++k) {
    out.gap_us.push_back(Median(gaps[k]));
    out.feature.push_back(Median(features[k]));
  }
  return out;
}

// The profiler's spans of `op` that no other span of `op` holds, in start order.
std::vector<std::pair<int64_t, int64_t>> OutermostSpans(const profiler::ProfilerResult& result,
                                                        const char* op) {
  std::vector<std::pair<int64_t, int64_t>> spans, out;
  for (const auto& e : result.events())
    if (e.name() == op) spans.emplace_back(e.startNs(), e.endNs());
  std::sort(spans.begin(), spans.end());
  for (const auto& span : spans)
    if (out.empty() || span.first >= out.back().second) out.push_back(span);
  return out;
}

double InputTensors(const proto::Op& op) { return static_cast<double>(eg::InputTensorCount(op)); }
double InputValues(const proto::Op& op) { return static_cast<double>(eg::InputValueCount(op)); }

}  // namespace

Result<CapturedLoop> RunUnderCapture(c10::Device device, const char* op, bool save_integer_inputs,
                                     const std::function<void()>& body) {
  SilencedStderr quiet;
  const std::string stem = "/tmp/mimic-capture-cost." + std::to_string(getpid());
  const std::string et = stem + ".json", resources = stem + "_resources";
  if (save_integer_inputs) mkdir(resources.c_str(), 0700);
  bool observer = false;
  {
    ScopedEnv range("ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_RANGE", "1");
    ScopedEnv data("ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_DATA",
                   save_integer_inputs ? op : "");
    observer = torch::profiler::impl::addExecutionTraceObserver(et);
  }
  if (!observer) return Status::Internal("the execution-trace observer did not start");
  torch::profiler::impl::enableExecutionTraceObserver();
  // With memory events, as the capture scripts record (profile_memory=True).
  Result<std::unique_ptr<ProfileSession>> session =
      ProfileSession::Start(device, {.shapes = true, .memory = true});
  Result<std::unique_ptr<profiler::ProfilerResult>> result = Status::Internal("not started");
  if (session.ok()) {
    body();
    result = (*session)->Finish();
  }
  torch::profiler::impl::disableExecutionTraceObserver();
  torch::profiler::impl::removeExecutionTraceObserver();
  if (save_integer_inputs) RemoveSavedInputs(resources);
  CapturedLoop loop;
  Result<FileContents> file = ReadFile(et);
  std::remove(et.c_str());
  if (!session.ok()) return session.status();
  if (!result.ok()) return result.status();
  if (!file.ok()) return Status::Internal("the execution-trace observer wrote no trace");
  MIMIC_ASSIGN_OR_RETURN(loop.trace, eg::ParseExecutionTrace(et, file->bytes.view()));
  // The calls themselves, not what they call in turn (aten::sum calls an aten::sum overload).
  std::unordered_map<int64_t, std::string_view> names;
  for (const proto::Op& o : loop.trace.ops()) names[o.id()] = o.name();
  for (int i = 0; i < loop.trace.ops_size(); ++i) {
    const proto::Op& o = loop.trace.ops(i);
    auto parent = names.find(o.parent());
    if (o.name() == op && (parent == names.end() || parent->second != op)) loop.ops.push_back(i);
  }
  loop.spans_ns = OutermostSpans(**result, op);
  return loop;
}

namespace {

// The spans of the calls of `op` in `body` run under the capture's host timeline (Kineto alone,
// host activity only: no shapes, memory events, device activity or observer).
Result<std::vector<std::pair<int64_t, int64_t>>> RunUnderHostTimeline(
    c10::Device device, const char* op, const std::function<void()>& body) {
  SilencedStderr quiet;
  MIMIC_ASSIGN_OR_RETURN(
      std::unique_ptr<ProfileSession> session,
      ProfileSession::Start(device, {.shapes = false, .memory = false, .device_activity = false}));
  body();
  MIMIC_ASSIGN_OR_RETURN(const std::unique_ptr<profiler::ProfilerResult> result, session->Finish());
  return OutermostSpans(*result, op);
}

// Per input value other than a tensor: aten::empty_strided of sizes and strides of 1, 4, 16 and
// 48 items in turn (one element each), whose other inputs (dtype, layout, device, pin_memory)
// stay the same. The observer records every item of a list as a value of its own.
Status MeasureInputValues(c10::Device device, eg::CaptureCost& cost) {
  const at::TensorOptions f32 = at::TensorOptions().device(device);
  std::vector<std::vector<int64_t>> ones;
  for (int n : {1, 4, 16, 48}) ones.emplace_back(n, 1);
  auto empties = [&] {
    for (int r = 0; r < 150; ++r)
      for (const auto& l : ones) (void)at::empty_strided(l, l, f32);
  };
  empties();  // warm the dispatcher and allocator
  MIMIC_ASSIGN_OR_RETURN(CapturedLoop loop,
                         RunUnderCapture(device, "aten::empty_strided", false, empties));
  MIMIC_ASSIGN_OR_RETURN(KindGaps g, GapsByKind(loop, ones.size(), InputValues));
  cost.input_value_us = std::max(FitLine(g.feature, g.gap_us).slope, 0.0);
  return Status::Ok();
}

// The line of the gap before aten::cat of 1, 16, 64 and 256 one-element tensors of `dtype` in
// turn against its input tensors, less its other input values at cost.input_value_us each.
Result<Line> CatGaps(c10::Device device, at::ScalarType dtype, const eg::CaptureCost& cost) {
  const at::TensorOptions options = at::TensorOptions().device(device).dtype(dtype);
  std::vector<std::vector<at::Tensor>> lists;
  for (int n : {1, 16, 64, 256}) lists.emplace_back(n, at::ones({1}, options));
  auto cats = [&] {
    for (int r = 0; r < 150; ++r)
      for (const auto& l : lists) (void)at::cat(l);
  };
  cats();  // warm the dispatcher and allocator
  MIMIC_ASSIGN_OR_RETURN(CapturedLoop loop, RunUnderCapture(device, "aten::cat", false, cats));
  MIMIC_ASSIGN_OR_RETURN(KindGaps g, GapsByKind(loop, lists.size(), InputTensors));
  MIMIC_ASSIGN_OR_RETURN(const KindGaps values, GapsByKind(loop, lists.size(), InputValues));
  for (size_t k = 0; k < lists.size(); ++k) g.gap_us[k] -= cost.input_value_us * values.feature[k];
  return FitLine(g.feature, g.gap_us);
}

// Per event boundary and per input tensor: the gap before a cat of float tensors is two
// boundaries, its input tensors and its other input values (measured first). Then per input
// tensor ranged: int64 tensors, whose range the observer computes one by one (a fixed cost that
// dwarfs the per-element one at one element), add that much more per tensor.
Status MeasureBoundaryAndTensors(c10::Device device, eg::CaptureCost& cost) {
  MIMIC_ASSIGN_OR_RETURN(const Line floats, CatGaps(device, at::kFloat, cost));
  cost.boundary_us = std::max(floats.intercept, 0.0) / 2;
  cost.input_tensor_us = std::max(floats.slope, 0.0);
  MIMIC_ASSIGN_OR_RETURN(const Line ints, CatGaps(device, at::kLong, cost));
  cost.range_tensor_us = std::max(ints.slope - cost.input_tensor_us, 0.0);
  return Status::Ok();
}

// The slope of the gap before `op`'s calls in `body` (kinds of `elements` integer elements in
// turn, several times over) against the elements, less `known_us` per element; at least 0.
Result<double> SlopePerElement(c10::Device device, const char* op, bool save,
                               const std::vector<double>& elements, double known_us,
                               const std::function<void()>& body) {
  MIMIC_ASSIGN_OR_RETURN(CapturedLoop loop, RunUnderCapture(device, op, save, body));
  MIMIC_ASSIGN_OR_RETURN(KindGaps g, GapsByKind(loop, elements.size(), InputTensors));
  for (size_t i = 0; i < elements.size(); ++i) g.gap_us[i] -= known_us * elements[i];
  return std::max(FitLine(elements, g.gap_us).slope, 0.0);
}

// Per integer element ranged (contiguous indices, and indices broadcast along a row by a zero
// stride, as scatter-by-row code passes them), then per byte saved: aten::sum of 10^5, 5 x 10^5
// and 10^6 int64 indices in turn, sizes where the ranges and writes run at the speed of large
// inputs. Every call gets indices of its own, which no call read before, as a step's index
// inputs are new each step. A sum's output is one element, so that no large output is freed in
// the next gap.
Status MeasureIntegerInputs(c10::Device device, eg::CaptureCost& cost) {
  const at::TensorOptions i64 = at::TensorOptions().device(device).dtype(at::kLong);
  const std::vector<double> elements = {1e5, 5e5, 1e6};
  // `rounds` x the sizes in turn, each a tensor of its own; broadcast ones as [n / 64, 64] views
  // of [n / 64, 1].
  auto fresh = [&](int rounds, bool broadcast) {
    std::vector<at::Tensor> inputs;
    for (int r = 0; r < rounds; ++r)
      for (double n : elements) {
        const auto count = static_cast<int64_t>(n);
        inputs.push_back(broadcast ? at::randint(64, {count / 64, 1}, i64).expand({count / 64, 64})
                                   : at::randint(64, {count}, i64));
      }
    return inputs;
  };
  auto sums = [](const std::vector<at::Tensor>& inputs) {
    return [&inputs] {
      for (const at::Tensor& i : inputs) (void)at::sum(i);
    };
  };
  const std::vector<at::Tensor> flat = fresh(6, false), broadcast = fresh(6, true);
  MIMIC_ASSIGN_OR_RETURN(const double ranged,
                         SlopePerElement(device, "aten::sum", false, elements, 0, sums(flat)));
  MIMIC_ASSIGN_OR_RETURN(const double strided,
                         SlopePerElement(device, "aten::sum", false, elements, 0, sums(broadcast)));
  const std::vector<at::Tensor> saved_flat = fresh(6, false);
  MIMIC_ASSIGN_OR_RETURN(const double saved, SlopePerElement(device, "aten::sum", true, elements,
                                                             ranged, sums(saved_flat)));
  cost.range_us_per_melem = ranged * 1e6;
  cost.range_strided_us_per_melem = strided * 1e6;
  cost.saved_us_per_mb = saved / 8 * 1024 * 1024;  // 8 bytes an element
  return Status::Ok();
}

// Per event boundary on the host timeline: the gap before a cat of one float tensor is two
// boundaries there (the timeline records no inputs).
Status MeasureTimelineBoundary(c10::Device device, eg::CaptureCost& cost) {
  const std::vector<at::Tensor> list(1, at::ones({1}, at::TensorOptions().device(device)));
  auto cats = [&] {
    for (int r = 0; r < 600; ++r) (void)at::cat(list);
  };
  cats();  // warm the dispatcher and allocator
  MIMIC_ASSIGN_OR_RETURN(const auto spans, RunUnderHostTimeline(device, "aten::cat", cats));
  if (spans.size() < 2) return Status::Internal("the host timeline recorded too few calls");
  std::vector<double> gaps;
  for (size_t i = 1; i < spans.size(); ++i)
    gaps.push_back(static_cast<double>(spans[i].first - spans[i - 1].second) / 1000.0);
  cost.timeline_boundary_us = Median(gaps) / 2;
  return Status::Ok();
}

// Per event boundary of the autograd engine's work on the host timeline: a backward through a
// chain of one-element muls, timed alone and under the timeline's profiler in turn (medians of
// the rounds), the difference over the boundaries of the events the profiler recorded in it
// (each node's evaluate_function span, the node's own, the ops it ran). The engine's own work
// between two nodes is no loop's few nanoseconds, so no gap between them can be read as the
// profiler's cost; the whole backward's difference is.
Status MeasureTimelineBackwardBoundary(c10::Device device, eg::CaptureCost& cost) {
  constexpr int kNodes = 200, kRounds = 5;
  const at::TensorOptions f32 = at::TensorOptions().device(device);
  const at::Tensor factor = at::ones({}, f32);
  at::AutoGradMode grad(true);
  auto graph = [&] {
    at::Tensor y = at::ones({}, f32).requires_grad_(true);
    for (int i = 0; i < kNodes; ++i) y = y.mul(factor);
    return y;
  };
  auto backward_us = [](const at::Tensor& y) {
    const auto start = std::chrono::steady_clock::now();
    y.backward();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
        .count();
  };
  graph().backward();  // warm the engine
  std::vector<double> plain, profiled;
  size_t events = 0;
  SilencedStderr quiet;
  for (int r = 0; r <= kRounds; ++r) {  // round 0 warms the profiler
    plain.push_back(backward_us(graph()));
    const at::Tensor y = graph();
    MIMIC_ASSIGN_OR_RETURN(
        std::unique_ptr<ProfileSession> session,
        ProfileSession::Start(device,
                              {.shapes = false, .memory = false, .device_activity = false}));
    profiled.push_back(backward_us(y));
    MIMIC_ASSIGN_OR_RETURN(const std::unique_ptr<profiler::ProfilerResult> result,
                           session->Finish());
    events = result->events().size();
  }
  if (events < static_cast<size_t>(kNodes))
    return Status::Internal("the host timeline recorded too few events in a backward");
  plain.erase(plain.begin()), profiled.erase(profiled.begin());
  cost.timeline_backward_boundary_us =
      std::max(Median(profiled) - Median(plain), 0.0) / (2 * static_cast<double>(events));
  return Status::Ok();
}

}  // namespace

Result<eg::CaptureCost> MeasureCaptureCost(c10::Device device, bool integer_inputs,
                                           bool host_timeline) {
  eg::CaptureCost cost;
  MIMIC_RETURN_IF_ERROR(MeasureInputValues(device, cost));
  MIMIC_RETURN_IF_ERROR(MeasureBoundaryAndTensors(device, cost));
  if (host_timeline) {
    MIMIC_RETURN_IF_ERROR(MeasureTimelineBoundary(device, cost));
    MIMIC_RETURN_IF_ERROR(MeasureTimelineBackwardBoundary(device, cost));
  }
  if (integer_inputs) MIMIC_RETURN_IF_ERROR(MeasureIntegerInputs(device, cost));
  return cost;
}

}  // namespace mimic::replay
