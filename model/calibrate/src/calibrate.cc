#include "mimic/calibrate/calibrate.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/_embedding_bag.h>
#include <ATen/ops/_embedding_bag_backward.h>
#include <ATen/ops/add.h>
#include <ATen/ops/addcdiv.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/binary_cross_entropy.h>
#include <ATen/ops/binary_cross_entropy_backward.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/div.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/embedding_bag.h>
#include <ATen/ops/embedding_dense_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/index.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/index_put.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/log.h>
#include <ATen/ops/max_pool2d_with_indices.h>
#include <ATen/ops/max_pool2d_with_indices_backward.h>
#include <ATen/ops/mkldnn_rnn_layer.h>
#include <ATen/ops/mkldnn_rnn_layer_backward.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/native_batch_norm.h>
#include <ATen/ops/native_batch_norm_backward.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/randn_like.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/scatter_add.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/threshold_backward.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "cold_dispatch.h"
#include "mimic/base/clock.h"
#include "mimic/base/host.h"
#include "mimic/base/stats.h"
#include "mimic/model/host_gaps.h"
#include "mimic/model/platform.h"
#include "mimic/replay/executor.h"
#include "mimic/replay/overheads.h"
#include "page_faults.h"

namespace mimic::calibrate {
namespace {

using Clock = std::chrono::steady_clock;

// Every point of the sweep is a probe: a call repeated enough times to last min_trial_ms.
// The trials run in rounds over all probes (round-robin), so that a burst of other work on a
// shared machine hits different points in different rounds instead of every trial of one.
class Probes {
 public:
  Probes(const CalibrateOptions& o, replay::Executor& executor) : o_(o), executor_(executor) {}
  // Waits for the device, as the replay does at the end of an iteration.
  void Sync() { executor_.Synchronize(); }
  // Registers `fn` (warmed up and sized now) and returns its index.
  int Add(std::function<void()> fn) {
    fn();
    Sync();
    const auto t0 = Clock::now();
    fn();
    Sync();
    const double once = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    const int reps = std::clamp(static_cast<int>(std::ceil(o_.min_trial_ms * 1000 / std::max(once, 0.05))), 1, 20000);
    probes_.push_back({std::move(fn), reps, {}});
    return static_cast<int>(probes_.size()) - 1;
  }
  // Each trial first calls its probe once untimed: the model takes these figures as an op's
  // time with its code and operands in cache (it prices what a workload finds cold apart), and
  // without the call a probe of one repetition (a large GEMM or convolution) timed the cold
  // call that followed the other probes, and one of many did not.
  void RunRounds() {
    for (int t = 0; t < o_.trials; ++t)
      for (Probe& p : probes_) {
        p.fn();
        Sync();
        const auto t0 = Clock::now();
        for (int r = 0; r < p.reps; ++r) p.fn();
        Sync();
        p.trials.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / p.reps);
      }
  }
  // Microseconds per call of probe `i`: the median (or minimum) over the rounds.
  double Us(int i) const {
    const std::vector<double>& t = probes_[i].trials;
    return o_.statistic == "min" ? *std::min_element(t.begin(), t.end()) : Median(t);
  }
  size_t size() const { return probes_.size(); }

 private:
  struct Probe {
    std::function<void()> fn;
    int reps;
    std::vector<double> trials;
  };
  const CalibrateOptions& o_;
  replay::Executor& executor_;
  std::vector<Probe> probes_;
};


// Copies of a probe's inputs to cycle through, so that each call reads inputs no call has
// touched since more than twice the last-level cache went by: they come from DRAM (HBM), as a
// workload's activations and weights do when much else ran since their last use.
struct ColdInputs {
  std::vector<at::Tensor> a, b;
  size_t next = 0;
  ColdInputs(at::IntArrayRef shape, const at::TensorOptions& opt, double llc_bytes) {
    double elems = 1;
    for (int64_t d : shape) elems *= static_cast<double>(d);
    const double pair = 2.0 * 4.0 * elems;
    const int copies = static_cast<int>(std::clamp(std::ceil(2 * llc_bytes / pair) + 1, 2.0, 1024.0));
    // Positive, so that the math kinds (sqrt, log) compute numbers, not NaNs.
    for (int i = 0; i < copies; ++i) a.push_back(at::rand(shape, opt).add_(0.5)), b.push_back(at::rand(shape, opt).add_(0.5));
  }
  size_t Next() { return next = (next + 1) % a.size(); }
};

// A probe's time with `overhead_us` (the dispatch, on a CPU) taken off, never below a tenth of
// it (a probe barely above the dispatch would otherwise come out at an absurd rate).
double NetUs(double us, double overhead_us) { return std::max(us - overhead_us, us * 0.1); }

// A memory-bound probe: the bytes it moves a call (inputs + outputs, as the model counts them)
// and the size the model looks its bandwidth up by.
struct Traffic {
  std::string kind;
  double bytes;      // moved per call
  double key_bytes;  // the size the model looks the bandwidth up by
  int probe;
  bool cold = false;       // inputs from DRAM (ColdInputs), not cache
  std::string dtype = {};  // "" for fp32
};

// The fp32 elements of the memory-bound kinds' sizes.
std::vector<int64_t> TrafficElems(const CalibrateOptions& o) {
  if (o.quick) return {1 << 10, 1 << 18};
  return {1 << 8, 1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24};
}

// Cold points start at 256 KiB inputs: below, the fixed cost of an op hides the misses, and a
// thousand copies would not leave the last-level cache.
constexpr int64_t kMinColdElems = 1 << 16;

// The N x 16 x H x H feature maps of `n` elements (H = 8, or 32 from 2^14 elements up) that the
// map kinds (pooling, batch norm) run on, as CNNs run them.
std::vector<int64_t> MapShape(int64_t n) {
  const int64_t h = n >= (1 << 14) ? 32 : 8;
  return {std::max<int64_t>(n / (16 * h * h), 1), 16, h, h};
}

// 2x2 max pooling's backward on map `x` (in its layout), in cache: bytes as the model counts
// them (the pooled gradient and indices read, the input's gradient written).
Traffic PoolBackwardTraffic(const char* kind, const at::Tensor& x, Probes& probes) {
  const double xb = 4.0 * static_cast<double>(x.numel()), moved = xb / 4 + 2 * xb / 4 + 2 * xb;
  const auto pooled = at::max_pool2d_with_indices(x, {2, 2}, {2, 2});
  const at::Tensor gp = at::randn_like(std::get<0>(pooled)), idx = std::get<1>(pooled);
  return {kind, moved, moved, probes.Add([gp, x, idx] {
            (void)at::max_pool2d_with_indices_backward(gp, x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false,
                                                       idx);
          })};
}

// The layout kinds, from 2^10 elements, in cache and from kMinColdElems out of it: ATen's batch
// norm forward and backward on channels-last maps ("batch_norm_channels_last",
// "batch_norm_backward_channels_last": its CPU kernels for that layout are others), and an add
// of a channels-last map and a contiguous one ("mixed_layout": TensorIterator cannot walk the
// two as one flat array), ReLU's backward on the same two ("threshold_backward_mixed_layout":
// a channels-last CNN's, on the contiguous gradient a flatten's view hands it; several times
// slower again than the add), and 2x2 max pooling on channels-last maps ("pool_channels_last",
// and "pool_backward_channels_last" in cache only: the forward's NCHW kernel is a scalar loop
// 10-15x slower than the channels-last one, bench/op_costs.py).
void AddLayoutProbes(const std::vector<int64_t>& elems, const at::TensorOptions& f32, double llc,
                     Probes& probes, std::vector<Traffic>& traffic) {
  constexpr auto kLast = at::MemoryFormat::ChannelsLast;
  for (int64_t n : elems) {
    if (n < 1024) continue;
    const std::vector<int64_t> shape = MapShape(n);
    const int64_t c = shape[1];
    at::Tensor w = at::ones({c}, f32), bias = at::zeros({c}, f32), rm = at::zeros({c}, f32),
               rv = at::ones({c}, f32);
    const at::Tensor x = at::randn(shape, f32).contiguous(kLast);
    const at::Tensor gy = at::randn(shape, f32), gl = gy.contiguous(kLast);
    const auto bn = at::native_batch_norm(x, w, bias, rm, rv, true, 0.1, 1e-5);
    const double xb = 4.0 * static_cast<double>(x.numel());
    // Cold: a pool of channels-last maps (a) and gradients (b), and the gradients contiguous.
    std::shared_ptr<ColdInputs> last, plain;
    if (llc > 0 && n >= kMinColdElems) {
      plain = std::make_shared<ColdInputs>(shape, f32, llc);
      last = std::make_shared<ColdInputs>(*plain);
      for (size_t i = 0; i < last->a.size(); ++i)
        last->a[i] = plain->a[i].contiguous(kLast), last->b[i] = plain->b[i].contiguous(kLast);
    }
    using Op = std::function<void(const at::Tensor&, const at::Tensor&)>;
    auto kind = [&](const char* name, double moved, const Op& op, bool contiguous_b) {
      const at::Tensor b = contiguous_b ? gy : gl;
      traffic.push_back({name, moved, moved, probes.Add([op, x, b] { op(x, b); })});
      if (!last) return;
      traffic.push_back({name, moved, moved, probes.Add([op, last, plain, contiguous_b] {
                           const size_t i = last->Next();
                           op(last->a[i], contiguous_b ? plain->b[i] : last->b[i]);
                         }),
                         /*cold=*/true});
    };
    kind(
        "batch_norm_channels_last", 2 * xb,
        [=](const at::Tensor& in, const at::Tensor&) {
          (void)at::native_batch_norm(in, w, bias, rm, rv, true, 0.1, 1e-5);
        },
        false);
    kind(
        "batch_norm_backward_channels_last", 3 * xb,
        [=](const at::Tensor& in, const at::Tensor& g) {
          (void)at::native_batch_norm_backward(g, in, w, rm, rv, std::get<1>(bn), std::get<2>(bn),
                                               true, 1e-5, {true, true, true});
        },
        false);
    kind(
        "mixed_layout", 3 * xb,
        [](const at::Tensor& a, const at::Tensor& b) { (void)at::add(a, b); }, true);
    kind(
        "threshold_backward_mixed_layout", 3 * xb,
        [](const at::Tensor& self, const at::Tensor& grad) {
          (void)at::threshold_backward(grad, self, 0);
        },
        true);
    // 2x2 max pooling on the channels-last maps (bytes as the NCHW kinds count them); the
    // backward in cache only, as pool_backward.
    kind(
        "pool_channels_last", xb + xb / 4,
        [](const at::Tensor& in, const at::Tensor&) {
          (void)at::max_pool2d_with_indices(in, {2, 2}, {2, 2});
        },
        false);
    traffic.push_back(PoolBackwardTraffic("pool_backward_channels_last", x, probes));
  }
}

// aten::sort of a 1-D int64 tensor by size (what coalescing a sparse tensor sorts: its indices,
// flattened), in cache, up to 2^20 elements; bytes as the model counts them, the input and both
// outputs (values and int64 indices). A sort's time per element grows with its length, which
// the points by size carry.
void AddSortProbes(const std::vector<int64_t>& elems, const at::TensorOptions& f32, Probes& probes,
                   std::vector<Traffic>& traffic) {
  for (int64_t n : elems) {
    if (n > (1 << 20)) continue;
    const at::Tensor keys = at::randint(n * 16, {n}, f32.dtype(at::kLong));
    const double moved = 3 * 8.0 * static_cast<double>(n);
    traffic.push_back({"sort", moved, moved, probes.Add([keys] { (void)at::sort(keys); })});
  }
}

// A traffic probe's figure, with `overhead_us` (the dispatch, on a CPU) taken off its time.
void AddBandwidthPoint(const Traffic& t, double us, double overhead_us, proto::Platform& p) {
  proto::BandwidthPoint* bp = p.add_bandwidth();
  bp->set_kind(t.kind);
  bp->set_bytes(t.key_bytes);
  bp->set_bytes_per_s(t.bytes / (NetUs(us, overhead_us) * 1e-6));
  bp->set_cold(t.cold);
  bp->set_dtype(t.dtype);
}

// Elementwise math whose cost the arithmetic sets, each a bandwidth kind of its own (the
// model's MathKindOf maps op names to these).
using UnaryFn = at::Tensor (*)(const at::Tensor&);
const std::pair<const char*, UnaryFn> kMathKinds[] = {
    {"sqrt", [](const at::Tensor& x) { return at::sqrt(x); }},
    {"rsqrt", [](const at::Tensor& x) { return at::rsqrt(x); }},
    {"exp", [](const at::Tensor& x) { return at::exp(x); }},
    {"log", [](const at::Tensor& x) { return at::log(x); }},
    {"tanh", [](const at::Tensor& x) { return at::tanh(x); }},
    {"sigmoid", [](const at::Tensor& x) { return at::sigmoid(x); }},
    {"gelu", [](const at::Tensor& x) { return at::gelu(x); }},
    {"silu", [](const at::Tensor& x) { return at::silu(x); }},
};

double CpuMhz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("cpu MHz", 0) == 0) return std::atof(line.substr(line.find(':') + 1).c_str());
  return 0;
}

// The capture's cost (replay::MeasureCaptureCost, integer inputs and the host timeline too) into
// c's capture_*, measured min(trials, 5) times (each run is a few seconds) and combined figure
// by figure by the statistic. Returns how, for the platform's sources.
std::string CalibrateCaptureCost(const CalibrateOptions& o, c10::Device device,
                                 proto::CpuOverheads& c,
                                 const std::function<void(const std::string&)>& log) {
  std::vector<eg::CaptureCost> runs;
  std::string error;
  for (int t = 0; t < std::min(o.trials, 5); ++t) {
    Result<eg::CaptureCost> cost = replay::MeasureCaptureCost(device, /*integer_inputs=*/true,
                                                              /*host_timeline=*/true);
    if (!cost.ok()) {
      error = cost.status().message();
      break;
    }
    runs.push_back(*cost);
  }
  if (runs.empty()) return "capture_cost_us not measured (" + error + ")";
  eg::CaptureCost combined;
  for (const eg::CaptureFigure& figure : eg::kCaptureFigures) {
    std::vector<double> v;
    for (const eg::CaptureCost& r : runs) v.push_back(r.*figure.member);
    combined.*figure.member =
        o.statistic == "min" ? *std::min_element(v.begin(), v.end()) : Median(v);
  }
  model::SetCaptureCost(combined, c);
  const std::string figures = combined.Describe();
  log("capture: " + figures);
  return "capture_input_value_us = the slope of the gap before aten::empty_strided of sizes and "
         "strides of 1-48 items against its input values; capture_cost_us, "
         "capture_input_tensor_us = half the intercept and the slope of the gap before aten::cat "
         "of 1-256 one-element tensors against its input tensors, its input values' cost taken "
         "off; capture_range_tensor_us = the slope of the same for int64 tensors, whose ranges "
         "the observer computes, less capture_input_tensor_us; "
         "capture_range_us_per_melem, capture_saved_us_per_mb = the slopes of the gap before "
         "aten::sum of 1e5-1e6 int64 indices (new ones every call), ranged and then saved, "
         "against their elements and bytes; capture_range_strided_us_per_melem = the same for "
         "as many indices broadcast along rows; from C++ loops under Kineto (shapes, memory "
         "events) and the execution-trace observer; capture_timeline_boundary_us = half the "
         "median gap between calls of aten::cat of one tensor under Kineto alone with host "
         "activity only, as the capture's host timeline records (replay::MeasureCaptureCost), " +
         o.statistic + " of " + std::to_string(runs.size()) + " runs: " + figures;
}

// The replay's own cost per op it issues (CPU devices) and the capture's cost
// (CalibrateCaptureCost), into `c`. Returns how, for the platform's sources.
std::string MeasureReplayOverheads(const CalibrateOptions& o, c10::Device device,
                                   proto::CpuOverheads& c,
                                   const std::function<void(const std::string&)>& log) {
  const bool use_min = o.statistic == "min";
  std::string how;
  if (!device.is_cuda()) {
    Result<replay::ReplayOpCost> cost =
        replay::MeasureReplayOpCost(device.str(), o.trials, use_min);
    if (cost.ok()) {
      c.set_framework_us(cost->framework_us());
      how =
          "framework_us = the replay's time per op on a chain of 2000 one-element aten::add ops (" +
          std::to_string(cost->replay_us) + " us) less a bare boxed call of the same op (" +
          std::to_string(cost->boxed_us) + " us); ";
      log("replay: " + std::to_string(cost->replay_us) + " us per tiny op, " +
          std::to_string(cost->framework_us()) + " us beyond the dispatcher call");
    } else {
      how = "framework_us not measured (" + cost.status().message() + "); ";
    }
  }
  return how + CalibrateCaptureCost(o, device, c, log);
}

// The ops eg::ValueDependentKind names, each called with the values under test in its first
// input `x`, and `y` (a uniform fill) wherever it takes more.
using ValueFn = at::Tensor (*)(const at::Tensor& x, const at::Tensor& y);
const std::pair<const char*, ValueFn> kValueKinds[] = {
    {"sqrt", [](const at::Tensor& x, const at::Tensor&) { return at::sqrt(x); }},
    {"rsqrt", [](const at::Tensor& x, const at::Tensor&) { return at::rsqrt(x); }},
    {"pow", [](const at::Tensor& x, const at::Tensor&) { return at::pow(x, 0.5); }},
    {"log", [](const at::Tensor& x, const at::Tensor&) { return at::log(x); }},
    {"exp", [](const at::Tensor& x, const at::Tensor&) { return at::exp(x); }},
    {"reciprocal", [](const at::Tensor& x, const at::Tensor&) { return at::reciprocal(x); }},
    {"div", [](const at::Tensor& x, const at::Tensor& y) { return at::div(x, y); }},
    {"addcdiv", [](const at::Tensor& x, const at::Tensor& y) { return at::addcdiv(x, y, y); }}};

struct ValueProbe {
  const char* kind;
  int uniform, zeros, subnormals;
};

// Each of kValueKinds on 2^18 floats (1 MiB, in cache: the arithmetic sets the time) holding a
// uniform fill in [0.5, 1.5), all zeros and all subnormals (1e-40).
std::vector<ValueProbe> AddValueProbes(Probes& probes, const at::TensorOptions& f32) {
  const int64_t n = 1 << 18;
  const at::Tensor uniform = at::rand({n}, f32).add_(0.5), zeros = at::zeros({n}, f32),
                   subnormals = at::full({n}, 1e-40, f32), y = at::rand({n}, f32).add_(0.5);
  std::vector<ValueProbe> out;
  for (const auto& [kind, fn] : kValueKinds) {
    auto probe = [&probes, fn = fn, y](const at::Tensor& x) {
      return probes.Add([fn, x, y] { fn(x, y); });
    };
    out.push_back({kind, probe(uniform), probe(zeros), probe(subnormals)});
  }
  return out;
}

void RecordValueSlowdowns(const std::vector<ValueProbe>& value, const Probes& probes,
                          const std::string& how, proto::Platform& p) {
  p.clear_value_slowdown();
  for (const ValueProbe& v : value) {
    proto::ValueSlowdown* s = p.add_value_slowdown();
    s->set_kind(v.kind);
    s->set_zeros(probes.Us(v.zeros) / probes.Us(v.uniform));
    s->set_subnormals(probes.Us(v.subnormals) / probes.Us(v.uniform));
  }
  (*p.mutable_sources())["value_slowdown"] =
      how +
      ": sqrt, rsqrt, pow(x, 0.5), log, exp, reciprocal, div(x, y) and addcdiv(x, y, y) on "
      "2^18 floats x all zeros and all subnormals (1e-40), over the same on a uniform fill "
      "in [0.5, 1.5)";
}

// GPUs: one step of PyTorch's EmbeddingBag forward (embedding_bag_step_ns; the model's
// EmbeddingBagSteps): 2,048 bags of 64 random ids each over a 1 GB table, far larger than any
// GPU's L2, as a recommendation model's tables are.
constexpr int64_t kStepProbeRows = 2'000'000, kStepProbeDim = 128, kStepProbeBags = 2048,
                  kStepProbeIdsPerBag = 64;

int AddEmbeddingBagStepProbe(Probes& probes, const at::TensorOptions& f32) {
  const at::Tensor table = at::randn({kStepProbeRows, kStepProbeDim}, f32);
  const at::TensorOptions i64 = f32.dtype(at::kLong);
  const int64_t ids = kStepProbeBags * kStepProbeIdsPerBag;
  const at::Tensor indices = at::randint(kStepProbeRows, {ids}, i64);
  const at::Tensor offsets = at::arange(0, ids, kStepProbeIdsPerBag, i64);
  return probes.Add(
      [table, indices, offsets] { (void)at::embedding_bag(table, indices, offsets); });
}

void SetEmbeddingBagStep(double us, const std::string& measured, proto::Platform& p) {
  const double steps = model::EmbeddingBagSteps(kStepProbeBags, kStepProbeDim,
                                                kStepProbeBags * kStepProbeIdsPerBag, p.sm_count());
  if (!(steps > 0) || !(us > 0)) return;
  p.set_embedding_bag_step_ns(us * 1e3 / steps);
  (*p.mutable_sources())["embedding_bag_step_ns"] =
      measured +
      ": aten::embedding_bag (sum) of 2,048 bags of 64 random ids over a 2,000,000 x "
      "128 fp32 table, its time over the steps its warps take (" +
      std::to_string(static_cast<int>(steps)) + ")" +
      (p.sm_count() > 0 ? "" : "; no SM count known: the whole grid taken as resident");
}

// GPUs: ATen's channels-last batch norm (batch_norm_channels_last; the model's
// ChannelsLastBatchNormUs), a training forward and its backward on a bf16 NHWC activation of
// ResNet-50's (64 x 256 x 56 x 56: 103 MB, more than an H100's L2), in SM cycles per element.
constexpr int64_t kBatchNormProbeShape[] = {64, 256, 56, 56};

// A GPU kernel family's forward and backward probes, whose times over their units of work give
// its KernelCycles figures.
struct PassProbes {
  int forward = -1, backward = -1;
};

// `out` = the probes' times over `forward_units` and `backward_units`, in cycles of the
// platform's SMs at its boost clock; false, nothing set, where the platform has no SM count or
// clock or a probe measured nothing.
bool SetKernelCycles(double forward_us, double backward_us, double forward_units,
                     double backward_units, const proto::Platform& p, proto::KernelCycles& out) {
  const double sm_hz = static_cast<double>(p.sm_count()) * p.boost_clock_mhz() * 1e6;
  if (!(sm_hz > 0) || !(forward_us > 0) || !(backward_us > 0)) return false;
  out.set_forward_cycles(forward_us * 1e-6 * sm_hz / forward_units);
  out.set_backward_cycles(backward_us * 1e-6 * sm_hz / backward_units);
  return true;
}

// "1.150000 and 0.960000": a KernelCycles' forward and backward figures, for the log.
std::string CyclesOf(const proto::KernelCycles& k) {
  return std::to_string(k.forward_cycles()) + " and " + std::to_string(k.backward_cycles());
}

PassProbes AddBatchNormProbes(Probes& probes, const at::TensorOptions& f32) {
  const at::Tensor x = at::randn(kBatchNormProbeShape, f32.dtype(at::kBFloat16))
                           .contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor weight = at::ones({kBatchNormProbeShape[1]}, f32),
                   bias = at::zeros({kBatchNormProbeShape[1]}, f32);
  at::Tensor mean = at::zeros({kBatchNormProbeShape[1]}, f32),
             var = at::ones({kBatchNormProbeShape[1]}, f32);
  const auto [y, save_mean, save_invstd] =
      at::native_batch_norm(x, weight, bias, mean, var, true, 0.1, 1e-5);
  PassProbes ids;
  ids.forward =
      probes.Add([=] { (void)at::native_batch_norm(x, weight, bias, mean, var, true, 0.1, 1e-5); });
  ids.backward = probes.Add([=] {
    (void)at::native_batch_norm_backward(y, x, weight, mean, var, save_mean, save_invstd, true,
                                         1e-5, {true, true, true});
  });
  return ids;
}

void SetChannelsLastBatchNorm(double forward_us, double backward_us, const std::string& measured,
                              proto::Platform& p) {
  double elements = 1;
  for (int64_t d : kBatchNormProbeShape) elements *= static_cast<double>(d);
  if (!SetKernelCycles(forward_us, backward_us, elements, elements, p,
                       *p.mutable_batch_norm_channels_last()))
    return;
  (*p.mutable_sources())["batch_norm_channels_last"] =
      measured +
      ": aten::native_batch_norm (training) and aten::native_batch_norm_backward on a 64 x 256 x "
      "56 x 56 bf16 channels-last input, their time over its elements, in cycles of the "
      "platform's SMs at its boost clock";
}

// GPUs: ATen's channels-last max pooling (max_pool_channels_last; the model's
// ChannelsLastMaxPoolUs), ResNet-50's first pooling (3 x 3 windows, stride 2, padding 1) on a
// bf16 NHWC map of 32 x 64 x 112 x 112 (51 MB), forward and backward, in SM cycles per window
// visit (model::MaxPoolVisits). The backward's time includes its zero fill of grad_input,
// which the model prices apart by its bytes: the figure is a little high by that.
constexpr int64_t kMaxPoolProbeShape[] = {32, 64, 112, 112};
constexpr int64_t kMaxPoolProbeOut = (kMaxPoolProbeShape[2] + 2 * 1 - 3) / 2 + 1;  // 56

PassProbes AddMaxPoolProbes(Probes& probes, const at::TensorOptions& f32) {
  const at::Tensor x = at::randn(kMaxPoolProbeShape, f32.dtype(at::kBFloat16))
                           .contiguous(at::MemoryFormat::ChannelsLast);
  const auto pooled = at::max_pool2d_with_indices(x, {3, 3}, {2, 2}, {1, 1});
  const at::Tensor grad = at::randn_like(std::get<0>(pooled)), indices = std::get<1>(pooled);
  PassProbes ids;
  ids.forward = probes.Add([=] { (void)at::max_pool2d_with_indices(x, {3, 3}, {2, 2}, {1, 1}); });
  ids.backward = probes.Add([=] {
    (void)at::max_pool2d_with_indices_backward(grad, x, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false,
                                               indices);
  });
  return ids;
}

void SetChannelsLastMaxPool(double forward_us, double backward_us, const std::string& measured,
                            proto::Platform& p) {
  const double maps = static_cast<double>(kMaxPoolProbeShape[0] * kMaxPoolProbeShape[1]);
  auto visits = [&](bool backward) {
    const model::PoolDim d{kMaxPoolProbeShape[2], kMaxPoolProbeOut, 3, 2, 1, 1};
    const double per_dim = model::MaxPoolVisits(d, backward);
    return maps * per_dim * per_dim;
  };
  if (!SetKernelCycles(forward_us, backward_us, visits(false), visits(true), p,
                       *p.mutable_max_pool_channels_last()))
    return;
  (*p.mutable_sources())["max_pool_channels_last"] =
      measured +
      ": aten::max_pool2d_with_indices (3 x 3, stride 2, padding 1) and its backward on a 32 x "
      "64 x 112 x 112 bf16 channels-last input, their time over their window visits, in cycles "
      "of the platform's SMs at its boost clock (the backward's includes its zero fill)";
}

// The dispatcher's fixed cost per op, boxed as replay calls it: probes of a view (aten::t), an
// allocating op (aten::add) and an in-place op (aten::mul_) on one-element tensors, where the
// data costs nothing. Their mean is dispatch_us.
std::vector<int> AddDispatchProbes(Probes& probes, const at::TensorOptions& f32) {
  at::Tensor one = at::randn({1, 1}, f32), other = at::randn({1, 1}, f32);
  std::vector<int> ids;
  for (const auto& [name, overload] : {std::pair<const char*, const char*>{"aten::t", ""},
                                       {"aten::add", "Tensor"},
                                       {"aten::mul_", "Tensor"}}) {
    const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
    const bool binary = std::string_view(name) != "aten::t";
    const bool alpha = std::string_view(name) == "aten::add";
    ids.push_back(probes.Add([one, other, op, binary, alpha] {
      torch::jit::Stack stack;
      stack.emplace_back(one);
      if (binary) stack.emplace_back(other);
      if (alpha) stack.emplace_back(c10::Scalar(1));
      op.callBoxed(stack);
    }));
  }
  return ids;
}

// One-element aten::t, aten::add and aten::mul under autograd, with an input that requires grad
// (`with_grad`: each call records an autograd node) or not. The difference of their means is
// what a training forward's op pays for its node (cpu_overheads.autograd_node_us).
std::vector<int> AddAutogradProbes(Probes& probes, const at::TensorOptions& f32, bool with_grad) {
  const at::Tensor one = at::randn({1, 1}, f32).requires_grad_(with_grad),
                   other = at::randn({1, 1}, f32);
  const auto op = [](const char* name, const char* overload) {
    return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  };
  std::vector<int> ids;
  for (const auto& [h, binary] :
       {std::pair{op("aten::t", ""), false}, std::pair{op("aten::add", "Tensor"), true},
        std::pair{op("aten::mul", "Tensor"), true}})
    ids.push_back(probes.Add([one, other, h, binary] {
      at::AutoGradMode grad(true);
      torch::jit::Stack stack{one};
      if (binary) stack.emplace_back(other);
      if (h.schema().name() == "aten::add") stack.emplace_back(c10::Scalar(1));
      h.callBoxed(stack);
    }));
  return ids;
}

double DispatchUs(const Probes& probes, const std::vector<int>& ids) {
  double us = 0;
  for (int i : ids) us += probes.Us(i) / static_cast<double>(ids.size());
  return us;
}

// The tensors of one index call: L = s.indices uniformly random indices into R = s.rows rows of
// D = s.row_width fp32 elements, and L rows to scatter (gather and scatter_add: an index of
// L x D, one row index broadcast along each row, as scatter-by-row code such as torch_scatter
// and PyG's message passing calls them).
struct IndexTensors {
  at::Tensor table, idx, rows, idx2;
  IndexTensors(const model::IndexShape& s, const at::TensorOptions& f32)
      : table(at::randn({s.rows, s.row_width}, f32)),
        idx(at::randint(s.rows, {s.indices}, f32.dtype(at::kLong))),
        rows(at::randn({s.indices, s.row_width}, f32)),
        idx2(idx.unsqueeze(1).expand({s.indices, s.row_width})) {}
  double Bytes() const {
    return static_cast<double>(table.nbytes() + idx.nbytes() + rows.nbytes());
  }
};

// One call of index kind `kind` (eg::IndexOpOf) on `t`, laid out as the model reads the kind's
// tensors; nullptr for a kind this sweep does not know.
std::function<void()> IndexCall(const std::string& k, const IndexTensors& t) {
  const at::Tensor table = t.table, idx = t.idx, rows = t.rows, idx2 = t.idx2;
  c10::List<std::optional<at::Tensor>> list;
  list.push_back(idx);
  if (k == "index_select") return [=] { (void)at::index_select(table, 0, idx); };
  if (k == "index") return [=] { (void)at::index(table, list); };
  if (k == "gather") return [=] { (void)at::gather(table, 0, idx2); };
  if (k == "scatter_add") return [=] { (void)at::scatter_add(table, 0, idx2, rows); };
  if (k == "index_add") return [=] { (void)at::index_add(table, 0, idx, rows); };
  // The in-place twins accumulate into the table itself (the out-of-place ops copy it first).
  if (k == "scatter_add_") return [=]() mutable { at::Tensor(table).scatter_add_(0, idx2, rows); };
  if (k == "index_add_") return [=]() mutable { at::Tensor(table).index_add_(0, idx, rows); };
  // A dense tensor plus a sparse one of those L rows (SGD's and SparseAdam's updates of a table
  // from its sparse gradient): ATen's own loop over the rows, not index_add_'s
  // (bench/op_costs.py sparse: about twice its time on the build VM).
  if (k == "sparse_add_") {
    const at::Tensor grad = at::sparse_coo_tensor(idx.unsqueeze(0), rows, table.sizes());
    return [=]() mutable { at::Tensor(table).add_(grad); };
  }
  if (k == "index_put_accumulate")
    return [=]() mutable { at::Tensor(table).index_put_(list, rows, true); };
  const int64_t r = table.size(0), l = idx.size(0), d = table.size(1);
  if (k == "embedding_dense_backward")
    return [=] { (void)at::embedding_dense_backward(rows, idx, r, -1, false); };
  if (k == "embedding_bag_backward") {
    const int64_t bags = std::max<int64_t>(l / 8, 1);
    at::Tensor offsets = at::arange(0, bags, idx.options()).mul_(l / bags);
    auto fwd = at::_embedding_bag(table, idx, offsets, false, 0);
    at::Tensor grad = at::randn({bags, d}, table.options());
    return [=] {
      (void)at::_embedding_bag_backward(grad, idx, offsets, std::get<1>(fwd), std::get<2>(fwd),
                                        std::get<3>(fwd), r, false, 0, false, {}, -1);
    };
  }
  return nullptr;
}

// Copies of one shape's index tensors that together pass twice the last-level cache: a call on
// the next copy finds its tensors out of cache, as a step's traffic leaves them.
struct ColdIndexTensors {
  std::vector<IndexTensors> copies;
  ColdIndexTensors(const model::IndexShape& s, const at::TensorOptions& f32, double llc_bytes) {
    copies.emplace_back(s, f32);
    const double n = std::clamp(std::ceil(2 * llc_bytes / copies[0].Bytes()) + 1, 2.0, 1024.0);
    while (copies.size() < n) copies.emplace_back(s, f32);
  }
};

// The call of `kind` on each copy in turn.
std::function<void()> ColdIndexCall(const std::string& kind, const ColdIndexTensors& pool) {
  auto calls = std::make_shared<std::vector<std::function<void()>>>();
  for (const IndexTensors& t : pool.copies) calls->push_back(IndexCall(kind, t));
  if (!calls->front()) return nullptr;
  auto next = std::make_shared<size_t>(0);
  return [calls, next] { (*calls)[*next = (*next + 1) % calls->size()](); };
}

constexpr const char* kIndexKinds[] = {"index_select",
                                       "index",
                                       "gather",
                                       "scatter_add",
                                       "scatter_add_",
                                       "index_add",
                                       "index_add_",
                                       "sparse_add_",
                                       "index_put_accumulate",
                                       "embedding_dense_backward",
                                       "embedding_bag_backward"};

// The index sweep: every kind at L x D x R on a grid (and the workloads' own index shapes, fp32),
// registered as probes; on a sub-grid, each also on tensors out of cache (`llc_bytes` > 0).
struct IndexProbe {
  model::IndexShape shape;
  int probe;
  bool cold = false;
};
std::vector<IndexProbe> AddIndexProbes(const CalibrateOptions& o, Probes& probes,
                                       const at::TensorOptions& f32, double llc_bytes) {
  using V = std::vector<int64_t>;
  // L doubles: a kernel's time jumps where the rows it moves outgrow a cache (scatter_add of
  // 128-wide rows into 1,024: 297 us at L = 16384, 1,026 at 32768 on a 2-core EPYC VM), and a
  // coarser grid would spread that jump over the interval as a slope.
  V ls = o.quick ? V{256, 2048} : V{};
  for (int64_t l = 64; !o.quick && l <= 32768; l *= 2) ls.push_back(l);
  const V ds = o.quick ? V{16} : V{1, 16, 128};
  const V rs = o.quick ? V{1024} : V{128, 1024, 16384};
  std::vector<model::IndexShape> shapes;
  for (const char* kind : kIndexKinds)
    for (int64_t l : ls)
      for (int64_t d : ds)
        for (int64_t r : rs) shapes.push_back({kind, l, d, r, "fp32"});
  for (const model::WorkloadShapes& ws : o.workloads)
    for (const model::IndexShape& s : ws.indexes)
      if (s.dtype == "fp32" && std::find(shapes.begin(), shapes.end(), s) == shapes.end())
        shapes.push_back(s);
  std::vector<IndexProbe> out;
  for (const model::IndexShape& s : shapes)
    if (std::function<void()> call = IndexCall(s.kind, IndexTensors(s, f32)))
      out.push_back({s, probes.Add(std::move(call))});
  if (llc_bytes <= 0) return out;
  // Cold on a sub-grid of tables of 64 KiB and more, one pool of copies per shape shared by
  // the kinds (each pool about twice the last-level cache).
  const V cold_ls = o.quick ? V{2048} : V{512, 4096};
  const V cold_ds = o.quick ? V{16} : V{16, 128};
  for (int64_t l : cold_ls)
    for (int64_t d : cold_ds)
      for (int64_t r : rs) {
        if (r * d * 4 < (64 << 10)) continue;
        const ColdIndexTensors pool(model::IndexShape{"", l, d, r, "fp32"}, f32, llc_bytes);
        for (const char* kind : kIndexKinds)  // each call holds the tensors it reads
          if (std::function<void()> call = ColdIndexCall(kind, pool))
            out.push_back({{kind, l, d, r, "fp32"}, probes.Add(std::move(call)), true});
      }
  return out;
}

// The index probes' times (dispatch subtracted, as the other CPU kernels) into `p.index_ops`.
void RecordIndexPoints(const std::vector<IndexProbe>& index, const Probes& probes,
                       double dispatch_us, const std::string& how, proto::Platform& p) {
  p.clear_index_ops();
  for (const IndexProbe& x : index) {
    const double us = probes.Us(x.probe);
    proto::IndexPoint* pt = p.add_index_ops();
    pt->set_kind(x.shape.kind), pt->set_indices(x.shape.indices),
        pt->set_row_width(x.shape.row_width);
    pt->set_rows(x.shape.rows), pt->set_dtype(x.shape.dtype), pt->set_cold(x.cold);
    pt->set_time_us(NetUs(us, dispatch_us));
  }
  (*p.mutable_sources())["index_ops"] =
      how +
      ": index_select, index, gather, scatter_add, index_add, index_put_ (accumulate), "
      "embedding_dense_backward and _embedding_bag_backward (8 lookups per bag) on uniformly "
      "random fp32 rows, L (indices) x D (row width) x R (rows) = " +
      std::to_string(index.size()) +
      " points, dispatch subtracted; cold points (a sub-grid) on copies of the tensors cycled "
      "through twice the last-level cache";
}

// Transposed convolutions (2x2, stride 2: the upsampling layer of decoders and U-Nets),
// forward and backward (grad input + grad weight), on a grid of batch, channels in and out and
// input size, under passes transposed_forward / transposed_backward.
struct ConvProbe {
  proto::EfficiencyPoint point;
  double flops;
  int probe;
};
// One probe of convolution `cs` (fp32, NCHW) and its point: the implicit GEMM the model prices,
// under cs's pass; a backward computes the gradients cs does (its output_mask).
ConvProbe ConvProbeOf(const model::ConvShape& cs, const at::TensorOptions& f32, Probes& probes) {
  const at::Tensor x = at::randn(cs.input, f32), w = at::randn(cs.weight, f32);
  const std::vector<int64_t> out_pad(cs.stride.size(), 0);
  const at::Tensor y =
      at::convolution(x, w, {}, cs.stride, cs.padding, cs.dilation, cs.transposed, out_pad, 1);
  const model::ImplicitGemm g = model::ImplicitGemmOf(cs);
  ConvProbe pt;
  pt.point.set_m(static_cast<int64_t>(g.m)), pt.point.set_n(static_cast<int64_t>(g.n)),
      pt.point.set_k(static_cast<int64_t>(g.k));
  pt.point.set_batch(1), pt.point.set_dtype("fp32"), pt.point.set_pass(model::ConvPassOf(cs));
  pt.flops = 2.0 * g.m * g.n * g.k * (cs.backward ? cs.passes : 1);
  if (cs.backward)
    pt.probe = probes.Add([x, w, y, cs, out_pad] {
      (void)at::convolution_backward(y, x, w, std::nullopt, cs.stride, cs.padding, cs.dilation,
                                     cs.transposed, out_pad, 1, {cs.input_grad, true, false});
    });
  else
    pt.probe = probes.Add([x, w, cs, out_pad] {
      (void)at::convolution(x, w, {}, cs.stride, cs.padding, cs.dilation, cs.transposed, out_pad,
                            1);
    });
  return pt;
}

std::vector<ConvProbe> AddConvTransposeProbes(const CalibrateOptions& o, Probes& probes,
                                              const at::TensorOptions& f32) {
  using V = std::vector<int64_t>;
  std::vector<ConvProbe> out;
  for (int64_t nb : o.quick ? V{8} : V{8, 32})
    for (int64_t ci : o.quick ? V{16} : V{16, 64})
      for (int64_t co : o.quick ? V{16} : V{1, 3, 16, 64})
        for (int64_t hw : o.quick ? V{8} : V{8, 16})
          for (bool backward : {false, true}) {
            const model::ConvShape cs{{nb, ci, hw, hw},
                                      {ci, co, 2, 2},
                                      {2, 2},
                                      {0, 0},
                                      {1, 1},
                                      1,
                                      true,
                                      backward,
                                      2,
                                      "fp32"};
            out.push_back(ConvProbeOf(cs, f32, probes));
          }
  return out;
}

// Stride-2 convolutions (a downsampling layer: 3x3 padding 1, and 1x1, as ResNets' shortcuts
// are), forward, backward and the weight's gradient alone (a first layer's), fp32 NCHW, as the
// implicit GEMMs the model prices (passes "strided_*"): on the build VM their backward took
// 1.3-1.4x a stride-1 one's of the same GEMM, their forward about the same.
std::vector<ConvProbe> AddStridedConvProbes(const CalibrateOptions& o, Probes& probes,
                                            const at::TensorOptions& f32) {
  using V = std::vector<int64_t>;
  std::vector<ConvProbe> out;
  for (int64_t kernel : o.quick ? V{3} : V{1, 3})
    for (int64_t nb : o.quick ? V{8} : V{8, 32})
      for (int64_t ci : o.quick ? V{16} : V{1, 16, 64})
        for (int64_t co : o.quick ? V{16} : V{16, 64})
          for (int64_t hw : o.quick ? V{16} : V{16, 32})
            for (const std::string_view pass : {"forward", "backward", "backward_weight"}) {
              const bool backward = pass != "forward", input_grad = pass == "backward";
              const int64_t pad = kernel / 2;
              const model::ConvShape cs{
                  {nb, ci, hw, hw}, {co, ci, kernel, kernel}, {2, 2}, {pad, pad}, {1, 1}, 1, false,
                  backward,         input_grad ? 2 : 1,       "fp32", input_grad};
              out.push_back(ConvProbeOf(cs, f32, probes));
            }
  return out;
}

// A sweep's convolution points into `p.conv_efficiency` (replacing those of passes beginning
// with `prefix` there), as efficiencies against the platform's fp32 peak, described under
// sources[`source`].
void RecordConvPassPoints(const std::vector<ConvProbe>& points, const Probes& probes,
                          double dispatch_us, const std::string& prefix, const std::string& source,
                          const std::string& description, proto::Platform& p) {
  auto* table = p.mutable_conv_efficiency();
  table->erase(std::remove_if(
                   table->begin(), table->end(),
                   [&](const proto::EfficiencyPoint& e) { return e.pass().rfind(prefix, 0) == 0; }),
               table->end());
  const double peak = model::PeakFlops(p, "fp32", false);
  for (const ConvProbe& x : points) {
    const double us = probes.Us(x.probe), net = NetUs(us, dispatch_us);
    proto::EfficiencyPoint* e = table->Add();
    *e = x.point;
    e->set_time_us(us);
    e->set_efficiency(std::clamp(x.flops / (net * 1e-6) / peak, 1e-4, 1.0));
  }
  (*p.mutable_sources())[source] = description;
}

constexpr const char* kTransposedPoints =
    ": conv_transpose 2x2 stride 2 (convolution with transposed=true), forward and backward "
    "(grad input + weight), N 8, 32 x C_in 16, 64 x C_out 1, 3, 16, 64 x H = W 8, 16, as the "
    "implicit GEMM of the convolution whose data gradient it is (m = N*H_in*W_in, n = C_in, "
    "k = C_out*4)";
constexpr const char* kStridedPoints =
    ": stride-2 convolutions, 3x3 padding 1 and 1x1, forward, backward (grad input + weight) "
    "and the weight's gradient alone, N 8, 32 x C_in 1, 16, 64 x C_out 16, 64 x H = W 16, 32, "
    "fp32 NCHW, as implicit GEMMs (m = N*H_out*W_out, n = C_out, k = C_in*kh*kw)";

// A sweep's traffic points into `p.bandwidth` (replacing those of its kinds there), described
// under sources[`source`].
void RecordTrafficPoints(const std::vector<Traffic>& points, const Probes& probes,
                         double dispatch_us, const std::string& source,
                         const std::string& description, proto::Platform& p) {
  auto* table = p.mutable_bandwidth();
  table->erase(std::remove_if(table->begin(), table->end(),
                              [&](const proto::BandwidthPoint& b) {
                                return std::any_of(
                                    points.begin(), points.end(),
                                    [&](const Traffic& t) { return t.kind == b.kind(); });
                              }),
               table->end());
  for (const Traffic& t : points) AddBandwidthPoint(t, probes.Us(t.probe), dispatch_us, p);
  (*p.mutable_sources())[source] = description;
}

constexpr const char* kLayoutPoints =
    ": batch norm forward and backward and 2x2 max pooling forward and backward (in cache) on "
    "channels-last N x 16 x H x H maps (batch_norm_channels_last, "
    "batch_norm_backward_channels_last, pool_channels_last, pool_backward_channels_last), an "
    "add of a channels-last map and a contiguous one (mixed_layout) and ReLU's backward on the "
    "two (threshold_backward_mixed_layout) by size, in and out of cache, dispatch subtracted";
constexpr const char* kSortPoints =
    ": aten::sort of a 1-D int64 tensor of random values (a sparse tensor's indices, as "
    "coalesce sorts them) by size, in cache; bytes the input and both outputs";

// `--only index`, `conv_transpose`, `conv_strided`, `values`, `layouts` or `sort`: the base
// platform with that sweep's points measured again, nothing else changed.
Result<proto::Platform> CalibrateOnly(const CalibrateOptions& o,
                                      const std::function<void(const std::string&)>& log) {
  if (o.base.empty())
    return Status::InvalidInput("--only " + o.only +
                                ": give --base P, the platform the points go into");
  MIMIC_ASSIGN_OR_RETURN(proto::Platform p, model::FindPlatform(o.base));
  Result<std::unique_ptr<replay::Executor>> executor = replay::CreateExecutor(o.device);
  if (!executor.ok()) return executor.status();
  if ((*executor)->device().is_cuda())
    return Status::InvalidInput("--only " + o.only + ": measures CPU kernels only");
  if (o.threads > 0) at::set_num_threads(o.threads);
  at::NoGradGuard no_grad;
  const std::string heap = RetainFreedHeap();
  Probes probes(o, **executor);
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat);
  try {
    const std::vector<int> dispatch = AddDispatchProbes(probes, f32);
    const std::vector<IndexProbe> index =
        o.only == "index" ? AddIndexProbes(o, probes, f32, LastLevelCacheBytes())
                          : std::vector<IndexProbe>{};
    const std::vector<ConvProbe> transposed = o.only == "conv_transpose"
                                                  ? AddConvTransposeProbes(o, probes, f32)
                                                  : std::vector<ConvProbe>{};
    const std::vector<ConvProbe> strided =
        o.only == "conv_strided" ? AddStridedConvProbes(o, probes, f32) : std::vector<ConvProbe>{};
    const std::vector<ValueProbe> value =
        o.only == "values" ? AddValueProbes(probes, f32) : std::vector<ValueProbe>{};
    std::vector<Traffic> traffic;
    if (o.only == "layouts")
      AddLayoutProbes(TrafficElems(o), f32, LastLevelCacheBytes(), probes, traffic);
    if (o.only == "sort") AddSortProbes(TrafficElems(o), f32, probes, traffic);
    log(std::to_string(index.size() + transposed.size() + strided.size() + 3 * value.size() +
                       traffic.size()) +
        " " + o.only + " probes, " + std::to_string(o.trials) + " rounds");
    probes.RunRounds();
    const std::string where = HostName() + " (" + CpuModel() + ", " +
                              std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " cpus, " +
                              std::to_string(at::get_num_threads()) + " threads)";
    const std::string how = "measured by mimic calibrate --only " + o.only + " on " + where +
                            " at " + UtcNowIso8601() + ", " + o.statistic + " of " +
                            std::to_string(o.trials) + " round-robin trials";
    if (!index.empty()) RecordIndexPoints(index, probes, DispatchUs(probes, dispatch), how, p);
    if (!transposed.empty())
      RecordConvPassPoints(transposed, probes, DispatchUs(probes, dispatch), "transposed_",
                           "conv_efficiency.transposed", how + kTransposedPoints, p);
    if (!strided.empty())
      RecordConvPassPoints(strided, probes, DispatchUs(probes, dispatch), "strided_",
                           "conv_efficiency.strided", how + kStridedPoints, p);
    if (!value.empty()) RecordValueSlowdowns(value, probes, how, p);
    if (!traffic.empty())
      RecordTrafficPoints(traffic, probes, DispatchUs(probes, dispatch), "bandwidth." + o.only,
                          how + (o.only == "sort" ? kSortPoints : kLayoutPoints), p);
  } catch (const c10::Error& e) {
    return Status::Internal(std::string("calibration failed in LibTorch: ") +
                            e.what_without_backtrace());
  }
  MIMIC_RETURN_IF_ERROR(model::CheckPlatform("calibrated platform", p));
  return p;
}

// --only capture and --only cold_dispatch: one group of cpu_overheads measured into a copy of
// --base (a CPU platform of this host, say). `measure` fills them and says how; the platform's
// source `source` and a sentence of its description starting `sentence` say when and where.
Result<proto::Platform> CalibrateOverheadsOnly(
    const CalibrateOptions& o, const std::string& source, std::string_view sentence,
    const std::function<std::string(c10::Device, proto::CpuOverheads&)>& measure) {
  if (o.base.empty())
    return Status::InvalidInput("--only " + o.only +
                                ": give --base P, the platform the figures go into");
  MIMIC_ASSIGN_OR_RETURN(proto::Platform p, model::FindPlatform(o.base));
  Result<std::unique_ptr<replay::Executor>> executor = replay::CreateExecutor(o.device);
  if (!executor.ok()) return executor.status();
  if (o.threads > 0) at::set_num_threads(o.threads);
  const std::string how = measure((*executor)->device(), *p.mutable_cpu_overheads());
  const std::string measured = "measured by `mimic calibrate --only " + o.only + "` on " +
                               HostName() + " (" + CpuModel() + ") at " + UtcNowIso8601();
  (*p.mutable_sources())[source] = measured + ": " + how;
  // The description says which figures came later, and from where (another host, maybe).
  std::string d = p.description();
  if (const size_t at = d.find(sentence); at != std::string::npos) {
    const size_t end = d.find(". ", at);
    d.erase(at, end == std::string::npos ? std::string::npos : end + 1 - at);
  }
  while (!d.empty() && d.back() == ' ') d.pop_back();
  if (!d.empty() && d.back() != '.') d += '.';
  p.set_description(d + std::string(sentence) + measured + ".");
  MIMIC_RETURN_IF_ERROR(model::CheckPlatform("calibrated platform", p));
  return p;
}

// The per-issuer T1s on the given captures, with the capture cost just measured; a failure
// (no capture with a Kineto trace) leaves them out and says why.
void MeasureHostT1(const CalibrateOptions& o, proto::Platform& p,
                   const std::function<void(const std::string&)>& log) {
  if (o.captures.empty()) return;
  Result<std::string> how = model::MeasureIssuerT1(o.captures, p);
  log(how.ok() ? "host gaps: " + *how : "host gaps not measured: " + how.status().message());
}

// A GEMM-shaped probe: the point it measures and the FLOPs its time divides.
struct Point {
  proto::EfficiencyPoint point;
  double flops = 0;
  int probe = -1;
};

at::TensorOptions OfDtype(const at::TensorOptions& f32, const std::string& dtype) {
  return f32.dtype(dtype == "bf16" ? at::kBFloat16 : dtype == "fp16" ? at::kHalf : at::kFloat);
}

// `--only` parts: one part of a calibration into a copy of --base; nullopt for a whole one.
std::optional<Result<proto::Platform>> CalibratePart(
    const CalibrateOptions& o, const std::function<void(const std::string&)>& log) {
  if (o.only.empty()) return std::nullopt;
  if (o.only == "index" || o.only == "conv_transpose" || o.only == "conv_strided" ||
      o.only == "values" || o.only == "layouts" || o.only == "sort")
    return CalibrateOnly(o, log);
  if (o.only == "capture")
    return CalibrateOverheadsOnly(o, "cpu_overheads.capture",
                                  " Capture cost (cpu_overheads.capture_*): ",
                                  [&](c10::Device device, proto::CpuOverheads& c) {
                                    return CalibrateCaptureCost(o, device, c, log);
                                  });
  if (o.only == "cold_dispatch") {
    if (o.device != "cpu")
      return Result<proto::Platform>(
          Status::InvalidInput("--only cold_dispatch: measures the CPU only"));
    return CalibrateOverheadsOnly(o, "cpu_overheads.cold_dispatch",
                                  " Cold dispatch (cpu_overheads.in_turn, after_traffic): ",
                                  [&](c10::Device, proto::CpuOverheads& c) {
                                    return MeasureColdDispatch(std::max(o.trials, 5), c, log);
                                  });
  }
  if (o.only == "page_faults") {
    if (o.device != "cpu")
      return Result<proto::Platform>(
          Status::InvalidInput("--only page_faults: measures the CPU only"));
    return CalibrateOverheadsOnly(
        o, "cpu_overheads.page_fault_us",
        " Page faults (cpu_overheads.page_fault_us): ", [&](c10::Device, proto::CpuOverheads& c) {
          return MeasurePageFaults(std::max(o.trials, 5), c, log);
        });
  }
  return Result<proto::Platform>(Status::InvalidInput(
      "--only " + o.only +
      ": must be index, conv_transpose, conv_strided, values, layouts, sort, capture, "
      "cold_dispatch or page_faults"));
}

// The platform a whole calibration fills in: --base's figures without its measured tables,
// else a new one; named, and stamped with when and where (`where`).
Result<proto::Platform> NewPlatform(const CalibrateOptions& o, bool gpu, std::string* where) {
  proto::Platform p;
  if (!o.base.empty()) {
    MIMIC_ASSIGN_OR_RETURN(p, model::FindPlatform(o.base));
    p.clear_gemm_efficiency();
    p.clear_conv_efficiency();
    p.clear_bandwidth();
    p.clear_attention_efficiency();
    p.clear_rnn_efficiency();
    p.clear_index_ops();
  }
  p.set_name(!o.name.empty() ? o.name : (!o.base.empty() ? p.name() : (gpu ? "local_cuda" : "cpu_host")));
  p.set_device_type(gpu ? "cuda" : "cpu");
  if (o.threads > 0) at::set_num_threads(o.threads);
  p.set_threads(at::get_num_threads());
  *where = HostName() + " (" + CpuModel() + ", " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) +
           " cpus" +
           (gpu ? ", " + o.device : std::string(", ") + std::to_string(p.threads()) + " threads") +
           ")";
  p.set_calibrated_at(UtcNowIso8601());
  p.set_calibrated_on(*where);
  if (p.description().empty())
    p.set_description(gpu ? "Local CUDA device, measured by mimic calibrate"
                          : "This CPU host, measured by mimic calibrate: " + *where);
  return p;
}

// GEMM sweep: m (rows, usually the batch) x n x k, fp32 and bf16 (autocast's CPU dtype, which
// CPUs with AVX-512 BF16 or AMX run faster than fp32, and slower without); then the workloads'
// own GEMMs (their dtype where this device has it).
std::vector<Point> AddGemmProbes(const CalibrateOptions& o, Probes& probes,
                                 const at::TensorOptions& f32, bool gpu) {
  const std::vector<int64_t> ms =
      o.quick ? std::vector<int64_t>{16, 256} : std::vector<int64_t>{8, 32, 128, 512, 2048};
  const std::vector<int64_t> nks =
      o.quick ? std::vector<int64_t>{64, 512} : std::vector<int64_t>{16, 64, 256, 1024};
  std::vector<Point> gemm;
  for (const std::string dt : {"fp32", "bf16"}) {
    const at::TensorOptions opt = OfDtype(f32, dt);
    for (int64_t m : ms)
      for (int64_t n : nks)
        for (int64_t k : nks) {
          at::Tensor a = at::randn({m, k}, opt), b = at::randn({k, n}, opt);
          Point pt;
          pt.point.set_m(m), pt.point.set_n(n), pt.point.set_k(k), pt.point.set_batch(1),
              pt.point.set_dtype(dt);
          pt.flops = 2.0 * m * n * k;
          pt.probe = probes.Add([a, b] { (void)at::mm(a, b); });
          gemm.push_back(pt);
        }
  }
  for (const model::WorkloadShapes& ws : o.workloads)
    for (const model::GemmShape& g : ws.gemms) {
      if (g.dtype != "fp32" && g.dtype != "bf16" && !(gpu && g.dtype == "fp16")) continue;
      if (2.0 * g.batch * g.m * g.n * g.k > 5e10) continue;  // minutes on a CPU
      const at::TensorOptions opt = OfDtype(f32, g.dtype);
      Point pt;
      pt.point.set_m(g.m), pt.point.set_n(g.n), pt.point.set_k(g.k), pt.point.set_batch(g.batch),
          pt.point.set_dtype(g.dtype);
      pt.flops = 2.0 * g.batch * g.m * g.n * g.k;
      if (g.batch > 1) {
        at::Tensor a = at::randn({g.batch, g.m, g.k}, opt), b = at::randn({g.batch, g.k, g.n}, opt);
        pt.probe = probes.Add([a, b] { (void)at::bmm(a, b); });
      } else {
        at::Tensor a = at::randn({g.m, g.k}, opt), b = at::randn({g.k, g.n}, opt);
        pt.probe = probes.Add([a, b] { (void)at::mm(a, b); });
      }
      gemm.push_back(pt);
    }
  return gemm;
}

// The workloads' own convolutions, forward or backward as recorded.
std::vector<Point> AddWorkloadConvProbes(const CalibrateOptions& o, Probes& probes,
                                         const at::TensorOptions& f32, bool gpu) {
  std::vector<Point> conv;
  for (const model::WorkloadShapes& ws : o.workloads)
    for (const model::ConvShape& cs : ws.convs) {
      if (cs.dtype != "fp32" && cs.dtype != "bf16" && !gpu) continue;
      const at::TensorOptions opt = f32.dtype(cs.dtype == "bf16"   ? at::kBFloat16
                                              : cs.dtype == "fp16" ? at::kHalf
                                                                   : at::kFloat);
      at::Tensor x = at::randn(cs.input, opt), w = at::randn(cs.weight, opt);
      if (cs.channels_last) {  // in the memory format the workload ran it in (NHWC, NDHWC)
        const at::MemoryFormat nhwc = cs.input.size() == 5 ? at::MemoryFormat::ChannelsLast3d
                                                           : at::MemoryFormat::ChannelsLast;
        x = x.contiguous(nhwc), w = w.contiguous(nhwc);
      }
      const std::vector<int64_t> out_pad(cs.stride.size(), 0);
      at::Tensor y = at::convolution(x, w, {}, cs.stride, cs.padding, cs.dilation, cs.transposed,
                                     out_pad, cs.groups);
      const model::ImplicitGemm g = model::ImplicitGemmOf(cs);
      Point pt;
      pt.point.set_m(static_cast<int64_t>(g.m)), pt.point.set_n(static_cast<int64_t>(g.n)),
          pt.point.set_k(static_cast<int64_t>(g.k));
      pt.point.set_batch(1), pt.point.set_dtype(cs.dtype), pt.point.set_pass(model::ConvPassOf(cs));
      if (cs.channels_last) pt.point.set_layout("channels_last");
      pt.flops = 2.0 * g.m * g.n * g.k * (cs.backward ? cs.passes : 1);
      if (cs.backward) {
        // The gradients the workload computes: the first layer's backward skips grad-input.
        const bool grad_weight = !cs.input_grad || cs.passes == 2;
        pt.probe = probes.Add([x, w, y, cs, out_pad, grad_weight] {
          (void)at::convolution_backward(y, x, w, std::nullopt, cs.stride, cs.padding, cs.dilation,
                                         cs.transposed, out_pad, cs.groups,
                                         {cs.input_grad, grad_weight, false});
        });
      } else
        pt.probe = probes.Add([x, w, cs, out_pad] {
          (void)at::convolution(x, w, {}, cs.stride, cs.padding, cs.dilation, cs.transposed,
                                out_pad, cs.groups);
        });
      conv.push_back(pt);
    }

  return conv;
}

// The convolution sweep (3x3, padding 1), forward and backward, as implicit GEMMs, onto `conv`.
// One and three channels in and out too (a grayscale or RGB stem, an output head): below a
// vector's width of channels the time stops falling with them, and so the efficiency falls
// with the channels (bench/op_costs.py, 8 maps of 32x32: 1 -> 1 channel 70-76 us, 1 -> 16
// 78-80).
void AddConvSweepProbes(const CalibrateOptions& o, Probes& probes, const at::TensorOptions& f32,
                        std::vector<Point>& conv) {
  const std::vector<int64_t> batches =
      o.quick ? std::vector<int64_t>{8} : std::vector<int64_t>{8, 32};
  const std::vector<int64_t> cins =
      o.quick ? std::vector<int64_t>{16} : std::vector<int64_t>{1, 3, 16, 64};
  const std::vector<int64_t> couts =
      o.quick ? std::vector<int64_t>{32} : std::vector<int64_t>{1, 3, 16, 64, 128};
  const std::vector<int64_t> sizes =
      o.quick ? std::vector<int64_t>{16} : std::vector<int64_t>{8, 32};
  for (const std::string dt : {"fp32", "bf16"})
    for (int64_t nb : batches)
      for (int64_t ci : cins)
        for (int64_t co : couts)
          for (int64_t hw : sizes) {
            const at::TensorOptions opt = f32.dtype(dt == "bf16" ? at::kBFloat16 : at::kFloat);
            at::Tensor x = at::randn({nb, ci, hw, hw}, opt), w = at::randn({co, ci, 3, 3}, opt);
            at::Tensor y = at::convolution(x, w, {}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
            const double m = static_cast<double>(nb * hw * hw);
            // Backward: both gradients, and the weight's alone (a first layer's).
            for (const char* pass : {"forward", "backward", "backward_weight"}) {
              const bool bwd = std::string_view(pass) != "forward";
              const bool grad_input = std::string_view(pass) == "backward";
              Point pt;
              pt.point.set_m(nb * hw * hw), pt.point.set_n(co), pt.point.set_k(ci * 9),
                  pt.point.set_batch(1);
              pt.point.set_dtype(dt), pt.point.set_pass(pass);
              pt.flops = 2.0 * m * static_cast<double>(co) * static_cast<double>(ci * 9) *
                         (grad_input ? 2 : 1);
              if (bwd)
                pt.probe = probes.Add([x, w, y, grad_input] {
                  (void)at::convolution_backward(y, x, w, std::nullopt, {1, 1}, {1, 1}, {1, 1},
                                                 false, {0, 0}, 1, {grad_input, true, false});
                });
              else
                pt.probe = probes.Add([x, w] {
                  (void)at::convolution(x, w, {}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
                });
              conv.push_back(pt);
            }
          }
}

// Fused attention, forward: a grid of batch x heads, sequence length and head size (the fused
// kernels run far from GEMM efficiency at small head sizes), and the workloads' own.
std::vector<Point> AddAttentionProbes(const CalibrateOptions& o, Probes& probes,
                                      const at::TensorOptions& f32, bool gpu) {
  std::vector<Point> attention;
  auto add_attention = [&](const model::AttentionShape& as) {
    const at::TensorOptions opt = f32.dtype(as.dtype == "bf16"   ? at::kBFloat16
                                            : as.dtype == "fp16" ? at::kHalf
                                                                 : at::kFloat);
    at::Tensor q = at::randn(as.query, opt), k = at::randn(as.key, opt),
               v = at::randn(as.value, opt);
    const int64_t bh = as.query[0] * as.query[1];
    Point pt;
    pt.point.set_m(bh * as.query[2]), pt.point.set_n(as.key[2]), pt.point.set_k(as.query[3]),
        pt.point.set_batch(1);
    pt.point.set_dtype(as.dtype);
    pt.flops = 4.0 * bh * as.query[2] * as.key[2] * as.query[3];
    pt.probe = probes.Add([q, k, v] { (void)at::scaled_dot_product_attention(q, k, v); });
    attention.push_back(pt);
  };
  for (int64_t bh : o.quick ? std::vector<int64_t>{8} : std::vector<int64_t>{8, 32})
    for (int64_t l : o.quick ? std::vector<int64_t>{64} : std::vector<int64_t>{64, 256})
      for (int64_t e : o.quick ? std::vector<int64_t>{32} : std::vector<int64_t>{32, 64})
        for (const std::string dt : {"fp32", "bf16"})
          add_attention({{1, bh, l, e}, {1, bh, l, e}, {1, bh, l, e}, dt});
  for (const model::WorkloadShapes& ws : o.workloads)
    for (const model::AttentionShape& as : ws.attentions)
      if (as.dtype == "fp32" || gpu) add_attention(as);

  return attention;
}

// oneDNN's LSTM layer (CPU only: CUDA runs cuDNN's), forward and backward, on a grid of steps,
// batch and hidden size (input = hidden), and the workloads' own layers.
std::vector<Point> AddRnnProbes(const CalibrateOptions& o, Probes& probes,
                                const at::TensorOptions& f32, bool gpu) {
  std::vector<Point> rnn;
  auto add_rnn = [&](const model::RnnShape& r) {
    if (gpu || r.dtype != "fp32" || r.gates_hidden != 4 * r.hidden) return;
    at::Tensor x = at::randn({r.steps, r.batch, r.input}, f32),
               w_ih = at::randn({r.gates_hidden, r.input}, f32),
               w_hh = at::randn({r.gates_hidden, r.hidden}, f32),
               b_ih = at::randn({r.gates_hidden}, f32), b_hh = at::randn({r.gates_hidden}, f32),
               h0 = at::zeros({r.batch, r.hidden}, f32), c0 = h0.clone();
    const int64_t lstm = 2, h = r.hidden;  // mode: cuDNN's numbering, as nn.LSTM passes it
    // In training mode, as the workloads run it: the forward keeps its workspace only with
    // gradients enabled (the sweep runs without them otherwise).
    auto forward = [=] {
      at::AutoGradMode grad(true);
      return at::mkldnn_rnn_layer(x, w_ih, w_hh, b_ih, b_hh, h0, c0, false, {}, lstm, h, 1, true,
                                  false, false, true);
    };
    const auto [y, hy, cy, workspace] = forward();
    at::Tensor gy = at::randn_like(y);
    Point pt;
    pt.point.set_m(r.steps * r.batch), pt.point.set_n(r.gates_hidden),
        pt.point.set_k(r.input + r.hidden);
    pt.point.set_batch(1), pt.point.set_dtype("fp32"),
        pt.point.set_pass(r.backward ? "backward" : "forward");
    pt.flops = model::RnnFlops(r);
    if (r.backward)
      pt.probe = probes.Add([=, y = y, hy = hy, cy = cy, workspace = workspace] {
        (void)at::mkldnn_rnn_layer_backward(x, w_ih, w_hh, b_ih, b_hh, h0, c0, y, hy, cy, gy,
                                            std::nullopt, std::nullopt, false, lstm, h, 1, true,
                                            true, false, {}, false, workspace);
      });
    else
      pt.probe = probes.Add([forward] { (void)forward(); });
    rnn.push_back(pt);
  };
  for (int64_t t : o.quick ? std::vector<int64_t>{16} : std::vector<int64_t>{16, 64})
    for (int64_t b : o.quick ? std::vector<int64_t>{8} : std::vector<int64_t>{8, 32})
      for (int64_t hs : o.quick ? std::vector<int64_t>{64} : std::vector<int64_t>{64, 256})
        for (bool backward : {false, true}) add_rnn({t, b, hs, hs, 4 * hs, backward, "fp32"});
  for (const model::WorkloadShapes& ws : o.workloads)
    for (const model::RnnShape& r : ws.rnns) add_rnn(r);

  return rnn;
}

// Memory-bound kinds by size, bytes as the model counts them (inputs + outputs), hot and (on
// inputs cycled through copies of twice the last-level cache `llc`) cold; layouts, sorts, the
// workloads' embedding bags and embedding-bag gathers by working set.
std::vector<Traffic> AddTrafficProbes(const CalibrateOptions& o, Probes& probes,
                                      const at::TensorOptions& f32, double llc, bool gpu,
                                      c10::Device device) {
  std::vector<Traffic> traffic;
  const std::vector<int64_t> elems = TrafficElems(o);
  using BinaryOp = std::function<void(const at::Tensor&, const at::Tensor&)>;
  auto add = [&](const char* kind, double moved, std::function<void()> fn, bool cold,
                 const char* dtype = "") {
    traffic.push_back({kind, moved, moved, probes.Add(std::move(fn)), cold, dtype});
  };
  // A kind measured in cache only, on tensors of `dtype` ("": fp32).
  auto in_cache = [&](const char* kind, const char* dtype, double moved, std::function<void()> fn) {
    add(kind, moved, std::move(fn), /*cold=*/false, dtype);
  };
  // A kind on the same inputs every call (cache-hot), and where `pool` is given, cold: on the
  // next copy of its inputs each call.
  auto hot_and_cold = [&](const char* name, double moved, BinaryOp op, const at::Tensor& x,
                          const at::Tensor& y, const std::shared_ptr<ColdInputs>& pool) {
    add(
        name, moved, [op, x, y] { op(x, y); }, /*cold=*/false);
    if (pool)
      add(
          name, moved,
          [op, pool] {
            const size_t i = pool->Next();
            op(pool->a[i], pool->b[i]);
          },
          /*cold=*/true);
  };
  for (int64_t n : elems) {
    const int64_t cols = std::min<int64_t>(n, 256);
    at::Tensor a = at::randn({n / cols, cols}, f32), b = at::randn({n / cols, cols}, f32);
    at::Tensor dst = at::empty_like(a);
    at::Tensor lw = at::randn({cols}, f32), lb = at::randn({cols}, f32);
    const double bytes = 4.0 * n;
    // Each kind on the same inputs every call (cache-hot), and where cold points are due on
    // the next copy of a pool of inputs (one pool per size, shared by the kinds).
    auto pool =
        llc > 0 && n >= kMinColdElems ? std::make_shared<ColdInputs>(a.sizes(), f32, llc) : nullptr;
    at::Tensor positive = at::rand({n / cols, cols}, f32).add_(0.5);  // math kinds: sqrt, log
    auto kind = [&](const char* name, double moved, BinaryOp op, const at::Tensor& hot_a) {
      hot_and_cold(name, moved, std::move(op), hot_a, b, pool);
    };
    kind(
        "copy", 2 * bytes, [dst](const at::Tensor& x, const at::Tensor&) mutable { dst.copy_(x); },
        a);
    kind(
        "unary", 2 * bytes, [](const at::Tensor& x, const at::Tensor&) { (void)at::relu(x); }, a);
    kind(
        "binary", 3 * bytes, [](const at::Tensor& x, const at::Tensor& y) { (void)at::add(x, y); },
        a);
    kind(
        "reduction", bytes + bytes / cols,
        [](const at::Tensor& x, const at::Tensor&) { (void)at::sum(x, {-1}); }, a);
    kind(
        "softmax", 2 * bytes,
        [](const at::Tensor& x, const at::Tensor&) { (void)at::softmax(x, -1); }, a);
    kind(
        "norm", 2 * bytes,
        [lw, lb, cols](const at::Tensor& x, const at::Tensor&) {
          (void)at::layer_norm(x, {cols}, lw, lb);
        },
        a);
    kind(
        "dropout", 2 * bytes,
        [](const at::Tensor& x, const at::Tensor&) { (void)at::dropout(x, 0.1, true); }, a);
    for (const auto& [name, fn] : kMathKinds)
      kind(
          name, 2 * bytes, [fn = fn](const at::Tensor& x, const at::Tensor&) { (void)fn(x); },
          positive);
    if (n <= (1 << 22)) {
      // The plain kinds and the math again on bf16 tensors (autocast's CPU dtype), in cache:
      // a CPU converts to fp32 to compute, so a bf16 element costs about an fp32 one.
      const at::Tensor x = a.to(at::kBFloat16), y = b.to(at::kBFloat16), out = at::empty_like(x);
      const at::Tensor pos = positive.to(at::kBFloat16);
      in_cache("copy", "bf16", bytes, [out, x]() mutable { out.copy_(x); });
      in_cache("unary", "bf16", bytes, [x] { (void)at::relu(x); });
      in_cache("binary", "bf16", 1.5 * bytes, [x, y] { (void)at::add(x, y); });
      for (const auto& [name, fn] : kMathKinds)
        in_cache(name, "bf16", bytes, [fn = fn, pos] { (void)fn(pos); });
      // Binary cross-entropy (mean), whose CPU kernels are scalar loops: forward, two logs an
      // element, takes 15-25x log's time (bench/op_costs.py). Its input must hold
      // probabilities; in cache only.
      const at::Tensor prob = at::rand({n / cols, cols}, f32).clamp_(0.01, 0.99);
      const at::Tensor target = at::rand({n / cols, cols}, f32), one = at::ones({}, f32);
      in_cache("binary_cross_entropy", "", 2 * bytes,
               [prob, target] { (void)at::binary_cross_entropy(prob, target); });
      in_cache("binary_cross_entropy_backward", "", 3 * bytes,
               [one, prob, target] { (void)at::binary_cross_entropy_backward(one, prob, target); });
    }
    // 2x2 max pooling and training-mode batch norm over N x 16 x H x H feature maps, as
    // CNNs run them; bytes as the model counts them (the tensors in and out).
    if (n >= 1024) {
      at::Tensor x = at::randn(MapShape(n), f32);
      const double xb = 4.0 * static_cast<double>(x.numel());
      traffic.push_back(PoolBackwardTraffic("pool_backward", x, probes));
      at::Tensor w = at::ones({16}, f32), bias = at::zeros({16}, f32), rm = at::zeros({16}, f32),
                 rv = at::ones({16}, f32);
      auto bn = at::native_batch_norm(x, w, bias, rm, rv, true, 0.1, 1e-5);
      at::Tensor gy = at::randn_like(x);
      // Hot on (x, gy); cold on a pool of feature maps (a: the input, b: the gradient).
      auto maps = llc > 0 && n >= kMinColdElems ? std::make_shared<ColdInputs>(x.sizes(), f32, llc)
                                                : nullptr;
      auto map_kind = [&](const char* name, double moved, BinaryOp op) {
        hot_and_cold(name, moved, std::move(op), x, gy, maps);
      };
      map_kind("pool", xb + xb / 4, [](const at::Tensor& in, const at::Tensor&) {
        (void)at::max_pool2d_with_indices(in, {2, 2}, {2, 2});
      });
      map_kind("batch_norm", 2 * xb, [w, bias, rm, rv](const at::Tensor& in, const at::Tensor&) {
        (void)at::native_batch_norm(in, w, bias, rm, rv, true, 0.1, 1e-5);
      });
      map_kind("batch_norm_backward", 3 * xb,
               [w, rm, rv, bn](const at::Tensor& in, const at::Tensor& grad) {
                 (void)at::native_batch_norm_backward(grad, in, w, rm, rv, std::get<1>(bn),
                                                      std::get<2>(bn), true, 1e-5,
                                                      {true, true, true});
               });
    }
  }
  AddLayoutProbes(elems, f32, llc, probes, traffic);
  AddSortProbes(elems, f32, probes, traffic);
  // The workloads' embedding bags: forward by working set ("gather"), backward by the
  // bytes the model counts for it (the dense gradient written, the gradient rows read twice).
  for (const model::WorkloadShapes& ws : o.workloads)
    for (const model::EmbeddingShape& e : ws.embeddings) {
      if (e.dtype != "fp32" && !gpu) continue;
      at::Tensor table = at::randn({e.num_weights, e.dim}, f32);
      at::Tensor idx = at::randint(e.num_weights, {e.lookups}, f32.dtype(at::kLong));
      at::Tensor offsets = at::empty({e.bags}, at::TensorOptions().dtype(at::kLong));
      for (int64_t b = 0; b < e.bags; ++b) offsets.data_ptr<int64_t>()[b] = b * e.lookups / e.bags;
      offsets = offsets.to(device);
      const double row = 4.0 * e.dim, gathered = row * e.lookups;
      traffic.push_back({"gather", gathered + 8.0 * (e.lookups + e.bags) + row * e.bags,
                         std::min(row * e.num_weights, gathered), probes.Add([table, idx, offsets] {
                           (void)at::embedding_bag(table, idx, offsets, false, 0);
                         })});
      auto fwd = at::_embedding_bag(table, idx, offsets, false, 0);
      at::Tensor grad = at::randn({e.bags, e.dim}, f32);
      const double bwd_bytes = row * e.num_weights + 2 * row * e.bags;
      traffic.push_back({"embedding_backward", bwd_bytes, bwd_bytes, probes.Add([=] {
                           (void)at::_embedding_bag_backward(
                               grad, idx, offsets, std::get<1>(fwd), std::get<2>(fwd),
                               std::get<3>(fwd), e.num_weights, false, 0, false, {}, -1);
                         })});
    }
  // Embedding-bag gathers: bandwidth by the working set (the touched rows), so that tables
  // that fit in cache come out faster than DRAM-resident ones.
  const std::vector<int64_t> rows = o.quick
                                        ? std::vector<int64_t>{1 << 12}
                                        : std::vector<int64_t>{1 << 10, 1 << 13, 1 << 16, 1 << 19};
  for (int64_t v : rows) {
    const int64_t d = 64, lookups = 1 << 14, bags = lookups / 16;
    at::Tensor table = at::randn({v, d}, f32);
    at::Tensor idx = at::randint(v, {lookups}, f32.dtype(at::kLong));
    at::Tensor offsets = at::arange(0, lookups, lookups / bags, f32.dtype(at::kLong));
    const double gathered = 4.0 * lookups * d;
    traffic.push_back({"gather", gathered + 8.0 * (lookups + bags) + 4.0 * bags * d,
                       std::min(4.0 * v * d, gathered), probes.Add([table, idx, offsets] {
                         (void)at::embedding_bag(table, idx, offsets, false, 0);
                       })});
  }

  return traffic;
}

}  // namespace

Result<proto::Platform> Calibrate(const CalibrateOptions& o, const LogFn& log_fn) {
  auto log = [&](const std::string& s) {
    if (log_fn) log_fn(s);
  };
  if (o.statistic != "median" && o.statistic != "min")
    return Status::InvalidInput("--statistic " + o.statistic + ": must be median or min");
  if (std::optional<Result<proto::Platform>> part = CalibratePart(o, log)) return *std::move(part);
  // The replay's executor: the same device selection, allocator and synchronization.
  Result<std::unique_ptr<replay::Executor>> executor = replay::CreateExecutor(o.device);
  if (!executor.ok()) return executor.status();
  const c10::Device device = (*executor)->device();
  const bool gpu = device.is_cuda();
  std::string where;
  MIMIC_ASSIGN_OR_RETURN(proto::Platform p, NewPlatform(o, gpu, &where));
  const std::string measured =
      "measured by mimic calibrate on " + where + " at " + p.calibrated_at();

  // The cache whose misses make inputs cold (CPU: the last-level cache; GPU: the base
  // platform's L2).
  const double llc = gpu ? p.l2_bytes() : LastLevelCacheBytes();
  at::NoGradGuard no_grad;
  // As replay does (docs/cli.md): the probes' outputs are freed and allocated again every call,
  // and must not page-fault in afresh when glibc trims its heap.
  const std::string heap = RetainFreedHeap();
  Probes probes(o, **executor);
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  try {
    // Register every probe first; time them all in rounds; then turn times into figures.
    const std::vector<int> dispatch_probes = AddDispatchProbes(probes, f32);
    const std::vector<int> node_probes =
                               gpu ? std::vector<int>{} : AddAutogradProbes(probes, f32, true),
                           plain_probes =
                               gpu ? std::vector<int>{} : AddAutogradProbes(probes, f32, false);
    const std::vector<ValueProbe> value =
        gpu ? std::vector<ValueProbe>{} : AddValueProbes(probes, f32);
    int launch_probe = -1, embedding_bag_probe = -1;
    PassProbes batch_norm_probes, max_pool_probes;
    if (gpu) {
      at::Tensor small = at::zeros({32}, f32);
      launch_probe = probes.Add([small]() mutable { small.add_(1.0); });
      embedding_bag_probe = AddEmbeddingBagStepProbe(probes, f32);
      batch_norm_probes = AddBatchNormProbes(probes, f32);
      max_pool_probes = AddMaxPoolProbes(probes, f32);
    }
    std::vector<Point> gemm = AddGemmProbes(o, probes, f32, gpu);
    std::vector<Point> conv = AddWorkloadConvProbes(o, probes, f32, gpu);
    std::vector<Point> attention = AddAttentionProbes(o, probes, f32, gpu);
    std::vector<Point> rnn = AddRnnProbes(o, probes, f32, gpu);
    AddConvSweepProbes(o, probes, f32, conv);
    const std::vector<Traffic> traffic = AddTrafficProbes(o, probes, f32, llc, gpu, device);
    // Index- and scatter-style ops, measured as such (CPU: their kernels sort, loop serially
    // or accumulate, far from a copy's rate).
    const std::vector<IndexProbe> index =
        gpu ? std::vector<IndexProbe>{} : AddIndexProbes(o, probes, f32, llc);
    const std::vector<ConvProbe> transposed = AddConvTransposeProbes(o, probes, f32);
    const std::vector<ConvProbe> strided = AddStridedConvProbes(o, probes, f32);

    log(std::to_string(probes.size()) + " probes (" + std::to_string(gemm.size()) + " gemm, " +
        std::to_string(conv.size()) + " conv, " + std::to_string(attention.size()) +
        " attention, " + std::to_string(rnn.size()) + " rnn, " + std::to_string(traffic.size()) +
        " bandwidth), " + std::to_string(o.trials) + " rounds");
    probes.RunRounds();

    const double dispatch_us = DispatchUs(probes, dispatch_probes);
    p.mutable_cpu_overheads()->set_dispatch_us(dispatch_us);
    if (!gpu)
      p.mutable_cpu_overheads()->set_autograd_node_us(
          std::max(0.0, DispatchUs(probes, node_probes) - DispatchUs(probes, plain_probes)));
    if (gpu) p.mutable_cpu_overheads()->set_t4_us(std::max(0.0, probes.Us(launch_probe) - dispatch_us));
    if (gpu) {
      SetEmbeddingBagStep(probes.Us(embedding_bag_probe), measured, p);
      log("embedding bag: " + std::to_string(p.embedding_bag_step_ns()) + " ns a step");
      SetChannelsLastBatchNorm(probes.Us(batch_norm_probes.forward),
                               probes.Us(batch_norm_probes.backward), measured, p);
      log("channels-last batch norm: " + CyclesOf(p.batch_norm_channels_last()) +
          " SM cycles an element (forward, backward)");
      SetChannelsLastMaxPool(probes.Us(max_pool_probes.forward),
                             probes.Us(max_pool_probes.backward), measured, p);
      log("channels-last max pooling: " + CyclesOf(p.max_pool_channels_last()) +
          " SM cycles a window visit (forward, backward)");
    }
    const std::string per_device =
        gpu ? "t4_us = a tiny aten::add_ launch minus dispatch"
            : MeasureColdDispatch(std::max(o.trials, 5), *p.mutable_cpu_overheads(), log) + "; " +
                  MeasurePageFaults(std::max(o.trials, 5), *p.mutable_cpu_overheads(), log);
    (*p.mutable_sources())["cpu_overheads"] =
        measured +
        ": dispatch_us = mean boxed call of aten::t, aten::add, aten::mul_ on one-element "
        "tensors; " +
        (gpu ? std::string()
             : "autograd_node_us = the mean boxed call of aten::t, aten::add, aten::mul under "
               "autograd with an input requiring grad less the same without; ") +
        per_device + "; " + MeasureReplayOverheads(o, device, *p.mutable_cpu_overheads(), log);
    log("dispatch: " + std::to_string(dispatch_us) + " us per op" +
        (gpu ? std::string()
             : ", " + std::to_string(p.cpu_overheads().autograd_node_us()) +
                   " us more recording an autograd node"));
    MeasureHostT1(o, p, log);
    // CPU kernels run inside the dispatch they are timed with; subtract it (never below 10%).
    auto net_us = [&](double us) { return NetUs(us, gpu ? 0.0 : dispatch_us); };

    // Peaks: a datasheet base keeps its figures; otherwise the best throughput measured.
    auto best = [&](std::string_view dtype) {
      double flops = 0;
      for (const std::vector<Point>* points : {&gemm, &conv})
        for (const Point& pt : *points)
          if (pt.point.dtype() == dtype)
            flops = std::max(flops, pt.flops / (net_us(probes.Us(pt.probe)) * 1e-6));
      return flops;
    };
    if (o.base.empty() || model::PeakFlops(p, "fp32", false) <= 0) {
      (*p.mutable_peak_flops())["fp32"].set_no_tensor_core(best("fp32"));
      (*p.mutable_sources())["peak_flops"] = measured + ": the best fp32 GEMM/conv throughput of the sweep (not a datasheet peak)";
    }
    // A CPU's bf16 runs on its vector units at a rate of its own: the best bf16 throughput.
    if (!gpu && !p.peak_flops().contains("bf16")) {
      (*p.mutable_peak_flops())["bf16"].set_no_tensor_core(best("bf16"));
      (*p.mutable_sources())["peak_flops"] +=
          "; bf16: the best bf16 GEMM/conv throughput of the sweep";
    }
    // Efficiency against the peak the model prices that dtype with (tensor cores below fp32).
    auto record = [&](std::vector<Point>& points, google::protobuf::RepeatedPtrField<proto::EfficiencyPoint>* table) {
      for (Point& pt : points) {
        const double us = probes.Us(pt.probe);
        pt.point.set_time_us(us);
        const double peak = model::PeakFlops(p, pt.point.dtype(), pt.point.dtype() != "fp32");
        pt.point.set_efficiency(std::clamp(pt.flops / (net_us(us) * 1e-6) / peak, 1e-4, 1.0));
        *table->Add() = pt.point;
      }
    };
    record(gemm, p.mutable_gemm_efficiency());
    record(conv, p.mutable_conv_efficiency());
    record(attention, p.mutable_attention_efficiency());
    record(rnn, p.mutable_rnn_efficiency());
    const std::string how = o.statistic + " of " + std::to_string(o.trials) + " round-robin trials";
    (*p.mutable_sources())["gemm_efficiency"] = measured + ": aten::mm, fp32 and bf16, " + how +
                                                ", dispatch subtracted" +
                                                (heap.empty() ? "" : ", heap " + heap);
    (*p.mutable_sources())["conv_efficiency"] =
        measured +
        ": aten::convolution / convolution_backward 3x3 (both gradients, and the weight's alone: "
        "pass backward_weight), fp32 and bf16, m = N*H*W, n = C_out, k = C_in*9, " +
        how;
    double dram = 0;
    for (const Traffic& t : traffic) {
      AddBandwidthPoint(t, probes.Us(t.probe), gpu ? 0.0 : dispatch_us, p);
      if (t.kind == "copy" && !t.cold && t.dtype.empty())
        dram = p.bandwidth().rbegin()->bytes_per_s();  // the largest size comes last
    }
    if (o.base.empty()) {
      p.set_memory_bandwidth_bytes_per_s(dram);
      (*p.mutable_sources())["memory_bandwidth_bytes_per_s"] = measured + ": copy_ of the largest size swept";
    }
    (*p.mutable_sources())["bandwidth"] =
        measured +
        ": copy_, relu, add, sum, softmax, layer_norm, dropout, sqrt, rsqrt, exp, log, tanh, "
        "sigmoid, gelu, silu, 2x2 max pooling and batch norm (forward and backward; both "
        "again on channels-last maps), an add of a channels-last map and a contiguous one and "
        "ReLU's backward on the two (mixed_layout, threshold_backward_mixed_layout), "
        "aten::sort of int64 keys (sort), "
        "embedding_bag by size; copy_, relu, add and the math again on bf16 "
        "tensors" +
        (o.workloads.empty() ? "" : ", the workloads' embedding bags and their backward") + ", " +
        how + ", dispatch subtracted; cold points (" +
        (llc > 0 ? "inputs cycled through copies of 2x the " +
                       std::to_string(static_cast<int64_t>(llc)) + "-byte last-level cache"
                 : "none: the cache size is unknown") +
        ")";
    if (!rnn.empty())
      (*p.mutable_sources())["rnn_efficiency"] =
          measured + ": aten::mkldnn_rnn_layer and its backward (LSTM), " +
          (o.quick ? "steps 16 x batch 8 x hidden 64"
                   : "steps 16, 64 x batch 8, 32 x hidden 64, 256") +
          (o.workloads.empty() ? "" : " and the workloads' layers") + ", " + how;
    if (!index.empty()) RecordIndexPoints(index, probes, dispatch_us, measured + ", " + how, p);
    if (!value.empty()) RecordValueSlowdowns(value, probes, measured + ", " + how, p);
    RecordConvPassPoints(transposed, probes, gpu ? 0.0 : dispatch_us, "transposed_",
                         "conv_efficiency.transposed", measured + ", " + how + kTransposedPoints,
                         p);
    RecordConvPassPoints(strided, probes, gpu ? 0.0 : dispatch_us, "strided_",
                         "conv_efficiency.strided", measured + ", " + how + kStridedPoints, p);
    (*p.mutable_sources())["attention_efficiency"] =
        measured +
        ": scaled_dot_product_attention, batch x heads 8, 32, sequence 64, 256, head size 32, 64" +
        (o.workloads.empty() ? "" : " and the workloads' shapes") + ", " + how;
  } catch (const c10::Error& e) {
    return Status::Internal(std::string("calibration failed in LibTorch: ") + e.what_without_backtrace());
  }
  if (!gpu) {
    p.set_sm_count(p.threads());
    p.set_boost_clock_mhz(CpuMhz());
    if (llc > 0) p.set_l2_bytes(llc);
    (*p.mutable_sources())["sm_count"] = "CPU: intra-op threads used (" + where + ")";
    (*p.mutable_sources())["boost_clock_mhz"] = "CPU: /proc/cpuinfo 'cpu MHz'";
    (*p.mutable_sources())["l2_bytes"] = "CPU: the last-level cache cpu0 sees (sysfs cpu0/cache, else sysconf)";
    (*p.mutable_sources())["collectives"] = "not measured: calibrate measures collectives only where ranks are present";
  }
  MIMIC_RETURN_IF_ERROR(model::CheckPlatform("calibrated platform", p));
  return p;
}

namespace {

// How calibrate timed a table, from its source ("... min of 7 round-robin trials ..."): the
// statistic and the trials into `o`; calibrate's defaults where the source does not say.
void TimedAsSourceSays(const std::string& source, CalibrateOptions& o) {
  for (const char* statistic : {"min", "median"}) {
    const size_t at = source.find(std::string(statistic) + " of ");
    if (at == std::string::npos) continue;
    o.statistic = statistic;
    o.trials = std::max(1, std::atoi(source.c_str() + at + std::strlen(statistic) + 4));
    return;
  }
}

// Up to four of the platform's fp32 one-matrix GEMM points that took 50 us to 5 ms when
// measured (long enough for the dispatch not to matter, short enough to re-time in a moment),
// spread over that range.
std::vector<const proto::EfficiencyPoint*> SpeedPoints(const proto::Platform& p) {
  std::vector<const proto::EfficiencyPoint*> all;
  for (const proto::EfficiencyPoint& e : p.gemm_efficiency())
    if (e.dtype() == "fp32" && e.batch() <= 1 && e.time_us() >= 50 && e.time_us() <= 5000)
      all.push_back(&e);
  std::sort(all.begin(), all.end(),
            [](const auto* a, const auto* b) { return a->time_us() < b->time_us(); });
  constexpr size_t kMost = 4;
  if (all.size() <= kMost) return all;
  std::vector<const proto::EfficiencyPoint*> spread;
  for (size_t i = 0; i < kMost; ++i) spread.push_back(all[i * (all.size() - 1) / (kMost - 1)]);
  return spread;
}

}  // namespace

Result<HostSpeed> RetimeGemmPoints(const proto::Platform& platform, const std::string& device) {
  HostSpeed speed;
  const std::vector<const proto::EfficiencyPoint*> points = SpeedPoints(platform);
  if (points.empty()) return speed;
  CalibrateOptions o;
  o.device = device;
  auto source = platform.sources().find("gemm_efficiency");
  if (source != platform.sources().end()) TimedAsSourceSays(source->second, o);
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<replay::Executor> executor,
                         replay::CreateExecutor(device));
  const int threads = at::get_num_threads();
  if (platform.threads() > 0) at::set_num_threads(static_cast<int>(platform.threads()));
  at::NoGradGuard no_grad;
  Probes probes(o, *executor);
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat).device(executor->device());
  std::vector<double> ratios;
  Status failed = Status::Ok();
  try {
    std::vector<int> ids;
    for (const proto::EfficiencyPoint* e : points) {
      // Into an output of its own: no allocation, whatever the heap's state (a replay's choice).
      at::Tensor a = at::randn({e->m(), e->k()}, f32), b = at::randn({e->k(), e->n()}, f32),
                 c = at::empty({e->m(), e->n()}, f32);
      ids.push_back(probes.Add([a, b, c]() mutable { (void)at::mm_out(c, a, b); }));
    }
    probes.RunRounds();
    for (size_t i = 0; i < points.size(); ++i)
      ratios.push_back(probes.Us(ids[i]) / points[i]->time_us());
  } catch (const c10::Error& e) {
    failed = Status::Internal(std::string("re-timing GEMM points failed in LibTorch: ") +
                              e.what_without_backtrace());
  }
  at::set_num_threads(threads);
  if (!failed.ok()) return failed;
  speed.points = static_cast<int>(points.size());
  speed.ratio = Median(ratios);
  speed.how = "aten::mm into a preallocated output, " + o.statistic + " of " +
              std::to_string(o.trials) + " round-robin trials each";
  return speed;
}

}  // namespace mimic::calibrate
