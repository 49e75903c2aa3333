#include "mimic/calibrate/calibrate.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/add.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/embedding_bag.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <vector>

#include "mimic/base/clock.h"
#include "mimic/base/stats.h"
#include "mimic/model/platform.h"

namespace mimic::calibrate {
namespace {

using Clock = std::chrono::steady_clock;

class Timer {
 public:
  Timer(const CalibrateOptions& o, c10::Device d) : o_(o), device_(d) {
    if (!device_.is_cpu()) flag_ = at::zeros({1}, at::TensorOptions().device(device_));
  }
  // Waits for the device: CPU ops are done when they return; a device copy to the host
  // waits for every kernel queued before it.
  void Sync() {
    if (!device_.is_cpu()) (void)flag_.sum().item<float>();
  }
  // Median microseconds per call of `f` over the trials.
  template <typename F>
  double Us(F&& f) {
    f();
    Sync();
    auto t0 = Clock::now();
    f();
    Sync();
    const double once = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    const int reps = std::clamp(static_cast<int>(std::ceil(o_.min_trial_ms * 1000 / std::max(once, 0.05))), 1, 20000);
    std::vector<double> trials;
    for (int t = 0; t < o_.trials; ++t) {
      t0 = Clock::now();
      for (int r = 0; r < reps; ++r) f();
      Sync();
      trials.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps);
    }
    return o_.statistic == "min" ? *std::min_element(trials.begin(), trials.end()) : Median(trials);
  }

 private:
  const CalibrateOptions& o_;
  c10::Device device_;
  at::Tensor flag_;
};

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown cpu";
}

double CpuMhz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("cpu MHz", 0) == 0) return std::atof(line.substr(line.find(':') + 1).c_str());
  return 0;
}

std::string HostName() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

Result<proto::Platform> Calibrate(const CalibrateOptions& o, const LogFn& log_fn) {
  auto log = [&](const std::string& s) {
    if (log_fn) log_fn(s);
  };
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(o.device);
  } catch (const c10::Error&) {
    return Status::InvalidInput("--device " + o.device + ": not a device name (try cpu or cuda:0)");
  }
  if (device.is_cuda() && !at::hasCUDA())
    return Status::Unsupported("--device " + o.device + ": no CUDA device visible to this build of LibTorch");
  if (o.statistic != "median" && o.statistic != "min")
    return Status::InvalidInput("--statistic " + o.statistic + ": must be median or min");
  if (!device.is_cpu() && !device.is_cuda())
    return Status::Unsupported("--device " + o.device + ": only cpu and cuda are calibrated");
  const bool gpu = device.is_cuda();

  proto::Platform p;
  if (!o.base.empty()) {
    MIMIC_ASSIGN_OR_RETURN(p, model::FindPlatform(o.base));
    p.clear_gemm_efficiency();
    p.clear_conv_efficiency();
    p.clear_bandwidth();
  }
  p.set_name(!o.name.empty() ? o.name : (!o.base.empty() ? p.name() : (gpu ? "local_cuda" : "cpu_host")));
  p.set_device_type(gpu ? "cuda" : "cpu");
  if (o.threads > 0) at::set_num_threads(o.threads);
  p.set_threads(at::get_num_threads());
  const std::string when = UtcNowIso8601();
  const std::string where = HostName() + " (" + CpuModel() + ", " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) +
                            " cpus" + (gpu ? ", " + o.device : std::string(", ") + std::to_string(p.threads()) + " threads") + ")";
  p.set_calibrated_at(when);
  p.set_calibrated_on(where);
  const std::string measured = "measured by mimic calibrate on " + where + " at " + when;
  if (p.description().empty())
    p.set_description(gpu ? "Local CUDA device, measured by mimic calibrate" : "This CPU host, measured by mimic calibrate: " + where);

  at::NoGradGuard no_grad;
  Timer timer(o, device);
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  try {
    // The fixed cost of one op through the dispatcher, boxed as replay calls it: a view op
    // (no data, no allocation) on a one-element tensor.
    at::Tensor one = at::randn({1, 1}, f32);
    const c10::OperatorHandle t_op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::t", "");
    torch::jit::Stack stack;
    const double dispatch_us = timer.Us([&] {
      stack.clear();
      stack.emplace_back(one);
      t_op.callBoxed(stack);
    });
    p.mutable_cpu_overheads()->set_dispatch_us(dispatch_us);
    p.mutable_sources()->insert({"cpu_overheads", measured + ": dispatch_us = median boxed aten::t call" +
                                                      std::string(gpu ? "; t4_us = a tiny aten::add_ launch minus dispatch" : "")});
    if (gpu) {
      at::Tensor small = at::zeros({32}, f32);
      const double launch_us = timer.Us([&] { small.add_(1.0); });
      p.mutable_cpu_overheads()->set_t4_us(std::max(0.0, launch_us - dispatch_us));
    }
    log("dispatch: " + std::to_string(dispatch_us) + " us per op");
    auto net_us = [&](double us) { return std::max(us - (gpu ? 0.0 : dispatch_us), us * 0.1); };

    // GEMM sweep: m (rows, usually the batch) x n x k, fp32 (and bf16 on a GPU).
    const std::vector<int64_t> ms = o.quick ? std::vector<int64_t>{16, 256} : std::vector<int64_t>{8, 32, 128, 512, 2048};
    const std::vector<int64_t> nks = o.quick ? std::vector<int64_t>{64, 512} : std::vector<int64_t>{16, 64, 256, 1024};
    std::vector<std::string> dtypes = {"fp32"};
    if (gpu) dtypes.push_back("bf16");
    struct Raw {
      proto::EfficiencyPoint point;
      double flops_per_s;
    };
    std::vector<Raw> gemm;
    for (const std::string& dt : dtypes) {
      const at::TensorOptions opt = f32.dtype(dt == "bf16" ? at::kBFloat16 : at::kFloat);
      for (int64_t m : ms)
        for (int64_t n : nks)
          for (int64_t k : nks) {
            at::Tensor a = at::randn({m, k}, opt), b = at::randn({k, n}, opt);
            const double us = timer.Us([&] { (void)at::mm(a, b); });
            Raw r;
            r.point.set_m(m), r.point.set_n(n), r.point.set_k(k), r.point.set_batch(1), r.point.set_dtype(dt);
            r.point.set_time_us(us);
            r.flops_per_s = 2.0 * m * n * k / (net_us(us) * 1e-6);
            gemm.push_back(r);
          }
    }
    log("gemm: " + std::to_string(gemm.size()) + " shapes");

    // Convolution sweep (3x3, padding 1), forward and backward, as implicit GEMMs.
    std::vector<Raw> conv;
    const std::vector<int64_t> batches = o.quick ? std::vector<int64_t>{8} : std::vector<int64_t>{8, 32};
    const std::vector<int64_t> cins = o.quick ? std::vector<int64_t>{16} : std::vector<int64_t>{3, 16, 64};
    const std::vector<int64_t> couts = o.quick ? std::vector<int64_t>{32} : std::vector<int64_t>{16, 64, 128};
    const std::vector<int64_t> sizes = o.quick ? std::vector<int64_t>{16} : std::vector<int64_t>{8, 32};
    for (int64_t nb : batches)
      for (int64_t ci : cins)
        for (int64_t co : couts)
          for (int64_t hw : sizes) {
            at::Tensor x = at::randn({nb, ci, hw, hw}, f32), w = at::randn({co, ci, 3, 3}, f32);
            at::Tensor y = at::convolution(x, w, {}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1);
            const double m = static_cast<double>(nb * hw * hw), n = static_cast<double>(co), k = static_cast<double>(ci * 9);
            for (const char* pass : {"forward", "backward"}) {
              const bool bwd = std::string_view(pass) == "backward";
              const double us = bwd ? timer.Us([&] {
                (void)at::convolution_backward(y, x, w, std::nullopt, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1, {true, true, false});
              })
                                    : timer.Us([&] { (void)at::convolution(x, w, {}, {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1); });
              Raw r;
              r.point.set_m(static_cast<int64_t>(m)), r.point.set_n(co), r.point.set_k(ci * 9), r.point.set_batch(1);
              r.point.set_dtype("fp32"), r.point.set_pass(pass), r.point.set_time_us(us);
              r.flops_per_s = 2.0 * m * n * k * (bwd ? 2 : 1) / (net_us(us) * 1e-6);
              conv.push_back(r);
            }
          }
    log("conv: " + std::to_string(conv.size()) + " shapes");

    // Peaks: a datasheet base keeps its figures; otherwise the best throughput measured.
    double best = 0;
    for (const Raw& r : gemm)
      if (r.point.dtype() == "fp32") best = std::max(best, r.flops_per_s);
    for (const Raw& r : conv) best = std::max(best, r.flops_per_s);
    if (o.base.empty() || model::PeakFlops(p, "fp32", false) <= 0) {
      (*p.mutable_peak_flops())["fp32"].set_no_tensor_core(best);
      (*p.mutable_sources())["peak_flops"] = measured + ": the best fp32 GEMM/conv throughput of the sweep (not a datasheet peak)";
    }
    for (Raw& r : gemm) {
      const double peak = model::PeakFlops(p, r.point.dtype(), r.point.dtype() != "fp32");
      r.point.set_efficiency(std::clamp(r.flops_per_s / peak, 1e-4, 1.0));
      *p.add_gemm_efficiency() = r.point;
    }
    for (Raw& r : conv) {
      r.point.set_efficiency(std::clamp(r.flops_per_s / model::PeakFlops(p, "fp32", false), 1e-4, 1.0));
      *p.add_conv_efficiency() = r.point;
    }
    (*p.mutable_sources())["gemm_efficiency"] = measured + ": aten::mm, " + o.statistic + " of " + std::to_string(o.trials) + " trials, dispatch subtracted";
    (*p.mutable_sources())["conv_efficiency"] = measured + ": aten::convolution / convolution_backward 3x3, m = N*H*W, n = C_out, k = C_in*9";

    // Memory-bound kinds by size: bytes as the model counts them (inputs + outputs).
    const std::vector<int64_t> elems = o.quick ? std::vector<int64_t>{1 << 10, 1 << 18}
                                               : std::vector<int64_t>{1 << 8, 1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24};
    for (int64_t n : elems) {
      const int64_t cols = std::min<int64_t>(n, 256);
      at::Tensor a = at::randn({n / cols, cols}, f32), b = at::randn({n / cols, cols}, f32);
      at::Tensor dst = at::empty_like(a);
      at::Tensor lw = at::randn({cols}, f32), lb = at::randn({cols}, f32);
      const double bytes = 4.0 * n;
      struct Kind {
        const char* kind;
        double bytes;
        std::function<void()> fn;
      };
      const Kind kinds[] = {
          {"copy", 2 * bytes, [&] { dst.copy_(a); }},
          {"unary", 2 * bytes, [&] { (void)at::relu(a); }},
          {"binary", 3 * bytes, [&] { (void)at::add(a, b); }},
          {"reduction", bytes + bytes / cols, [&] { (void)at::sum(a, {-1}); }},
          {"softmax", 2 * bytes, [&] { (void)at::softmax(a, -1); }},
          {"norm", 2 * bytes, [&] { (void)at::layer_norm(a, {cols}, lw, lb); }},
      };
      for (const Kind& k : kinds) {
        const double us = timer.Us(k.fn);
        proto::BandwidthPoint* bp = p.add_bandwidth();
        bp->set_kind(k.kind);
        bp->set_bytes(k.bytes);
        bp->set_bytes_per_s(k.bytes / (net_us(us) * 1e-6));
      }
    }
    // Embedding-bag gathers: bandwidth by the working set (the touched rows), so that tables
    // that fit in cache come out faster than DRAM-resident ones.
    const std::vector<int64_t> rows = o.quick ? std::vector<int64_t>{1 << 12} : std::vector<int64_t>{1 << 10, 1 << 13, 1 << 16, 1 << 19};
    for (int64_t v : rows) {
      const int64_t d = 64, lookups = 1 << 14, bags = lookups / 16;
      at::Tensor table = at::randn({v, d}, f32);
      at::Tensor idx = at::randint(v, {lookups}, f32.dtype(at::kLong));
      at::Tensor offsets = at::arange(0, lookups, lookups / bags, f32.dtype(at::kLong));
      const double us = timer.Us([&] { (void)at::embedding_bag(table, idx, offsets, false, 0); });
      const double gathered = 4.0 * lookups * d;
      const double bytes = gathered + 8.0 * (lookups + bags) + 4.0 * bags * d;
      proto::BandwidthPoint* bp = p.add_bandwidth();
      bp->set_kind("gather");
      bp->set_bytes(std::min(4.0 * v * d, gathered));
      bp->set_bytes_per_s(bytes / (net_us(us) * 1e-6));
    }
    double dram = 0;
    for (const proto::BandwidthPoint& b : p.bandwidth())
      if (b.kind() == "copy") dram = b.bytes_per_s();  // the largest size comes last
    if (o.base.empty()) {
      p.set_memory_bandwidth_bytes_per_s(dram);
      (*p.mutable_sources())["memory_bandwidth_bytes_per_s"] = measured + ": copy_ of the largest size swept";
    }
    (*p.mutable_sources())["bandwidth"] = measured + ": copy_, relu, add, sum, softmax, layer_norm, embedding_bag by size, dispatch subtracted";
    log("bandwidth: " + std::to_string(p.bandwidth_size()) + " points");
  } catch (const c10::Error& e) {
    return Status::Internal(std::string("calibration failed in LibTorch: ") + e.what_without_backtrace());
  }
  if (!gpu) {
    p.set_sm_count(p.threads());
    p.set_boost_clock_mhz(CpuMhz());
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) p.set_l2_bytes(static_cast<double>(l3));
    (*p.mutable_sources())["sm_count"] = "CPU: intra-op threads used (" + where + ")";
    (*p.mutable_sources())["boost_clock_mhz"] = "CPU: /proc/cpuinfo 'cpu MHz'";
    (*p.mutable_sources())["l2_bytes"] = "CPU: last-level cache, sysconf(_SC_LEVEL3_CACHE_SIZE)";
    (*p.mutable_sources())["collectives"] = "not measured: calibrate measures collectives only where ranks are present";
  }
  MIMIC_RETURN_IF_ERROR(model::CheckPlatform("calibrated platform", p));
  return p;
}

}  // namespace mimic::calibrate
