// The replay loop: select the ops, resolve each against the dispatcher once, prepare the leaf
// tensors, then run warm-up and measured iterations. An op that cannot be replayed is skipped,
// counted by reason and listed (or, with --strict, fails the replay).

#include "mimic/replay/replayer.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <map>
#include <memory>
#include <thread>
#include <chrono>
#include <optional>
#include <unordered_map>

#include "device.h"
#include "mimic/base/file.h"
#include "mimic/eg/workload.h"
#include "mimic/ops/dispatch.h"
#include "tensor_store.h"

namespace mimic::replay {
namespace {

using ops::BuildStack;
using ops::ResolveOperator;
using ops::ToScalarType;

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

struct PlannedOp {
  int index;                                 // into workload.ops()
  std::optional<c10::OperatorHandle> handle;  // unset: skipped (or a delay)
  double delay_us = -1;                      // >= 0: a mimic::delay standing in for an op
};

// Busy-waits `us` microseconds: a substituted op's time kept on the replaying thread.
void Spin(double us) {
  const auto until = Clock::now() + std::chrono::duration<double, std::micro>(us);
  while (Clock::now() < until) {
  }
}

// Picks the segment to replay; -1 for the whole trace.
Result<int> SelectSegment(const proto::Workload& w, const eg::OpTree& tree,
                          const ReplayOptions& options, std::string* selection) {
  if (!options.label.empty()) {
    std::string label = options.label;
    if (label.rfind("## ", 0) != 0) label = "## " + label + " ##";
    for (const proto::Segment& s : w.segments())
      if (s.kind() == proto::Segment::LABEL && s.name() == label)
        return *selection = s.name(), tree.IndexOf(s.op_id());
    return Status::InvalidInput("--label \"" + options.label + "\": no such label in the trace");
  }
  const proto::Segment* first = nullptr;
  for (const proto::Segment& s : w.segments()) {
    if (s.kind() != proto::Segment::ITERATION) continue;
    if (options.iteration >= 0 && s.step() == options.iteration)
      return *selection = s.name(), tree.IndexOf(s.op_id());
    if (!first) first = &s;
  }
  if (options.iteration >= 0)
    return Status::InvalidInput("--iteration " + std::to_string(options.iteration) +
                                ": no ProfilerStep#" + std::to_string(options.iteration) + " in the trace");
  if (first) return *selection = first->name(), tree.IndexOf(first->op_id());
  *selection = "whole trace";
  return -1;
}

bool SameShape(const at::Tensor& t, const proto::Tensor& rec) {
  if (static_cast<int>(t.dim()) != rec.shape_size()) return false;
  for (int i = 0; i < rec.shape_size(); ++i)
    if (t.size(i) != rec.shape(i)) return false;
  return true;
}

class Runner {
 public:
  Runner(const proto::Workload& w, const ReplayOptions& options, Device& device, ReplayResult& result)
      : w_(w), options_(options), device_(device), result_(result),
        store_(w, device.torch_device(), options.seed) {}

  Status Plan(const std::vector<int>& selected) {
    for (int index : selected) {
      PlannedOp p{index, std::nullopt};
      const proto::Op& op = w_.ops(index);
      if (eg::IsDelayOp(op)) {
        auto it = op.attrs().find("delay_us");
        p.delay_us = it == op.attrs().end() ? 0 : it->second.double_value();
        plan_.push_back(std::move(p));
        continue;
      }
      if (eg::IsCompiledKernel(op)) {
        // Traces are untrusted input: Mimic never runs code that came with one.
        MIMIC_RETURN_IF_ERROR(Skip(op, "compiled_kernel",
                                   op.kernel_backend() + " kernel " + op.kernel_file() +
                                       ": Mimic does not execute code carried by a trace"));
        plan_.push_back(std::move(p));
        continue;
      }
      if (eg::IsCollectiveOp(op)) {
        // Collectives need the job's process groups: the multi-rank replay runs them.
        MIMIC_RETURN_IF_ERROR(Skip(op, "collective", "needs a process group (multi-rank replay)"));
        plan_.push_back(std::move(p));
        continue;
      }
      Result<c10::OperatorHandle> handle = ResolveOperator(w_.schemas(op.schema()));
      if (handle.ok()) {
        p.handle = *handle;
      } else {
        MIMIC_RETURN_IF_ERROR(Skip(op, "unknown_operator", handle.status().message()));
      }
      plan_.push_back(std::move(p));
    }
    return store_.Prepare(selected);
  }

  // Runs one iteration; returns its wall time. Per-op times go to op_ms_ when `measure`. An
  // error means the replay must stop (cancelled, out of memory, --strict).
  Result<double> Iterate(bool first, bool measure) {
    store_.NewIteration();
    at::NoGradGuard no_grad;
    torch::jit::Stack stack;
    const auto t0 = Clock::now();
    for (size_t i = 0; i < plan_.size(); ++i) {
      PlannedOp& p = plan_[i];
      if (p.delay_us >= 0) {
        const auto delay_t0 = Clock::now();
        Spin(p.delay_us);
        if (measure) op_ms_[i] += MsSince(delay_t0);
        continue;
      }
      if (!p.handle) continue;
      const proto::Op& op = w_.ops(p.index);
      const auto op_t0 = Clock::now();
      Status st;
      try {
        st = BuildStack(op, p.handle->schema(), store_, device_.torch_device(), &stack);
      } catch (const c10::Error& e) {
        st = Status::Unsupported(FirstLine(e.what_without_backtrace()));
      }
      if (!st.ok()) {
        MIMIC_RETURN_IF_ERROR(Skip(op, "unsupported_argument", st.message()));
        p.handle.reset();
        continue;
      }
      if (options_.cancel && options_.cancel->load(std::memory_order_relaxed))
        return Status::Internal(options_.cancel_reason);
      try {
        p.handle->callBoxed(&stack);
      } catch (const c10::OutOfMemoryError& e) {
        return Status::Internal("out of memory in op " + std::to_string(op.id()) + " (" + op.name() +
                                "): " + FirstLine(e.what_without_backtrace()));
      } catch (const c10::Error& e) {
        MIMIC_RETURN_IF_ERROR(Skip(op, "exception", FirstLine(e.what_without_backtrace())));
        p.handle.reset();
        continue;
      } catch (const std::exception& e) {
        MIMIC_RETURN_IF_ERROR(Skip(op, "exception", FirstLine(e.what())));
        p.handle.reset();
        continue;
      }
      if (measure) op_ms_[i] += MsSince(op_t0);
      RegisterOutputs(op, stack, first);
    }
    device_.Synchronize();
    return MsSince(t0);
  }

  void Finish(int measured_iters) {
    int64_t replayed = 0;
    for (const PlannedOp& p : plan_) replayed += p.handle.has_value() || p.delay_us >= 0;
    result_.total_ops = static_cast<int64_t>(plan_.size());
    result_.replayed_ops = replayed;
    result_.preallocated_bytes = store_.prepared_bytes();
    result_.storages_preallocated = store_.prepared_storages();
    result_.inputs_sha256 = store_.inputs_sha256();
    std::unordered_map<std::string, OpNameStats> by_name;
    for (size_t i = 0; i < plan_.size(); ++i) {
      const proto::Op& op = w_.ops(plan_[i].index);
      OpNameStats& s = by_name[op.name()];
      s.name = op.name();
      ++s.calls;
      if ((plan_[i].handle || plan_[i].delay_us >= 0) && measured_iters > 0) s.replay_ms += op_ms_[i] / measured_iters;
      if (op.has_cpu_span()) s.original_ms = std::max(s.original_ms, 0.0) + op.cpu_duration_us() / 1000.0;
    }
    for (auto& [name, s] : by_name) result_.per_op.push_back(s);
    std::sort(result_.per_op.begin(), result_.per_op.end(),
              [](const OpNameStats& a, const OpNameStats& b) { return a.replay_ms > b.replay_ms; });
  }

  void ResetOpTimes() { op_ms_.assign(plan_.size(), 0.0); }

 private:
  // Records that `op` is not replayed; under --strict that stops the replay (an error Status).
  Status Skip(const proto::Op& op, const std::string& reason, const std::string& detail) {
    if (options_.strict)
      return Status::InvalidInput("op " + std::to_string(op.id()) + " (" + op.name() +
                                  ") cannot be replayed (--strict): " + reason + ": " + detail);
    ++result_.skipped_by_reason[reason];
    result_.skipped.push_back({op.id(), op.name(), reason, detail});
    return Status::Ok();
  }

  void Check(const at::Tensor& t, int entry) {
    const proto::Tensor& rec = w_.tensors(entry);
    ++result_.outputs_checked;
    c10::ScalarType expected;
    const bool dtype_ok = !ToScalarType(rec.dtype(), &expected) || t.scalar_type() == expected;
    if (SameShape(t, rec) && dtype_ok) return;
    ++result_.outputs_mismatched;
    if (result_.mismatches.size() < 20)
      result_.mismatches.push_back("tensor " + std::to_string(rec.tensor_id()) + ": replayed " +
                                   c10::toString(t.scalar_type()) + std::string(" ") +
                                   c10::str(t.sizes()) + ", recorded " + eg::TypeName(w_, rec.type()) + " " +
                                   c10::str(c10::IntArrayRef(rec.shape().data(), rec.shape_size())));
  }

  void Register(const c10::IValue& iv, const proto::Value& rec, bool check) {
    if (iv.isTensor() && rec.kind_case() == proto::Value::kTensor && rec.tensor() >= 0) {
      const at::Tensor& t = iv.toTensor();
      if (!t.defined()) return;
      store_.Put(rec.tensor(), t);
      if (check) Check(t, rec.tensor());
    } else if (iv.isTensorList() && rec.kind_case() == proto::Value::kList) {
      const auto list = iv.toTensorList();
      for (size_t k = 0; k < list.size() && k < static_cast<size_t>(rec.list().items_size()); ++k)
        Register(c10::IValue(list.get(k)), rec.list().items(static_cast<int>(k)), check);
    }
  }

  void RegisterOutputs(const proto::Op& op, const torch::jit::Stack& stack, bool check) {
    for (size_t i = 0; i < stack.size() && i < static_cast<size_t>(op.outputs_size()); ++i)
      Register(stack[i], op.outputs(static_cast<int>(i)), check);
  }

  const proto::Workload& w_;
  const ReplayOptions& options_;
  Device& device_;
  ReplayResult& result_;
  TensorStore store_;
  std::vector<PlannedOp> plan_;
  std::vector<double> op_ms_;
};

}  // namespace

std::string BestDevice() { return "cpu"; }

std::string TorchVersion() { return MIMIC_TORCH_VERSION; }

Result<ReplayResult> Replay(const proto::Workload& w, const ReplayOptions& options,
                            const ProgressFn& progress) {
  if (options.iters < 1) return Status::InvalidInput("--iters must be at least 1");
  if (options.warmup < 0) return Status::InvalidInput("--warmup must not be negative");
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<Device> device,
                         CreateDevice(options.device.empty() ? BestDevice() : options.device));
  if (options.num_threads > 0) at::set_num_threads(options.num_threads);

  ReplayResult result;
  result.num_threads = at::get_num_threads();
  result.device = device->Describe();
  const auto setup_t0 = Clock::now();
  const eg::OpTree tree(w);
  MIMIC_ASSIGN_OR_RETURN(const int segment, SelectSegment(w, tree, options, &result.selection));
  const std::vector<int> selected = eg::ReplayableOps(w, tree, segment, /*include_compiled=*/true);
  if (selected.empty()) return Status::InvalidInput("nothing to replay: no top-level op with a schema in " + result.selection);

  // A concurrent mix (synth's --compose concurrent) holds one tenant range per part: each
  // tenant replays on its own thread, with its own tensors, and an iteration lasts until the
  // last tenant is done.
  std::vector<int> tenants;
  if (segment >= 0)
    for (int c : tree.Children(segment))
      if (w.ops(c).name().rfind("## mimic:tenant:", 0) == 0) tenants.push_back(c);
  std::vector<ReplayResult> partials(std::max<size_t>(tenants.size(), 1));
  std::vector<std::unique_ptr<Runner>> runners;
  for (size_t k = 0; k < partials.size(); ++k) {
    runners.push_back(std::make_unique<Runner>(w, options, *device, partials[k]));
    const std::vector<int> ops =
        tenants.empty() ? selected : eg::ReplayableOps(w, tree, tenants[k], /*include_compiled=*/true);
    MIMIC_RETURN_IF_ERROR(runners.back()->Plan(ops));
    runners.back()->ResetOpTimes();
  }
  result.setup_ms = MsSince(setup_t0);

  const int total = options.warmup + options.iters;
  std::vector<Result<double>> outcome(runners.size(), 0.0);
  for (int it = 0; it < total; ++it) {
    const bool measure = it >= options.warmup;
    const auto t0 = Clock::now();
    if (runners.size() == 1) {
      outcome[0] = runners[0]->Iterate(/*first=*/it == 0, measure);
    } else {
      std::vector<std::thread> threads;
      for (size_t k = 0; k < runners.size(); ++k)
        threads.emplace_back([&, k] { outcome[k] = runners[k]->Iterate(/*first=*/it == 0, measure); });
      for (std::thread& t : threads) t.join();
    }
    const double ms = runners.size() == 1 && outcome[0].ok() ? *outcome[0] : MsSince(t0);
    bool stopped = false;
    for (const Result<double>& o : outcome) {
      if (!o.ok() && !stopped) {  // the iteration in flight is dropped; completed ones are reported
        result.stop_reason = o.status().message();
        stopped = true;
      }
    }
    if (stopped) break;
    if (measure) result.iteration_ms.push_back(ms);
    if (progress) progress(it + 1, total, ms);
  }
  const int measured = static_cast<int>(result.iteration_ms.size());
  std::map<std::string, OpNameStats> by_name;
  for (size_t k = 0; k < runners.size(); ++k) {
    runners[k]->Finish(measured);
    const ReplayResult& p = partials[k];
    result.total_ops += p.total_ops;
    result.replayed_ops += p.replayed_ops;
    for (const auto& [reason, n] : p.skipped_by_reason) result.skipped_by_reason[reason] += n;
    result.skipped.insert(result.skipped.end(), p.skipped.begin(), p.skipped.end());
    result.outputs_checked += p.outputs_checked;
    result.outputs_mismatched += p.outputs_mismatched;
    result.mismatches.insert(result.mismatches.end(), p.mismatches.begin(), p.mismatches.end());
    result.preallocated_bytes += p.preallocated_bytes;
    result.storages_preallocated += p.storages_preallocated;
    result.inputs_sha256 = runners.size() == 1 ? p.inputs_sha256 : Sha256Hex(result.inputs_sha256 + p.inputs_sha256);
    for (const OpNameStats& s : p.per_op) {
      OpNameStats& m = by_name[s.name];
      m.name = s.name;
      m.calls += s.calls;
      m.replay_ms += s.replay_ms;
      if (s.original_ms >= 0) m.original_ms = std::max(m.original_ms, 0.0) + s.original_ms;
    }
  }
  for (auto& [name, s] : by_name) result.per_op.push_back(s);
  std::sort(result.per_op.begin(), result.per_op.end(),
            [](const OpNameStats& a, const OpNameStats& b) { return a.replay_ms > b.replay_ms; });
  if (tenants.size() > 1) result.selection += " (" + std::to_string(tenants.size()) + " concurrent tenants)";
  return result;
}

}  // namespace mimic::replay
