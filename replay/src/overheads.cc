#include "mimic/replay/overheads.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/ones.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "mimic/base/stats.h"
#include "mimic/replay/replayer.h"

namespace mimic::replay {
namespace {

constexpr const char* kAddSchema =
    "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";

double Combine(const std::vector<double>& v, bool use_min) {
  return use_min ? *std::min_element(v.begin(), v.end()) : Median(v);
}

// Microseconds per call of `ops` bare boxed aten::add.Tensor calls on one-element tensors, one
// sample per loop of `iters`.
std::vector<double> BoxedAddUs(const std::string& device, int ops, int iters) {
  const c10::OperatorHandle add =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::add", "Tensor");
  const at::Tensor a = at::ones({1}, at::TensorOptions().device(device));
  const at::Tensor c = at::ones({1}, at::TensorOptions().device(device));
  const std::vector<torch::jit::Stack> stacks(ops,
                                              torch::jit::Stack{a, c, c10::IValue(int64_t{1})});
  torch::jit::Stack stack;
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const torch::jit::Stack& s : stacks) {
      stack = s;
      add.callBoxed(&stack);
    }
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        ops);
  }
  return us;
}

}  // namespace

proto::Workload TinyOpChain(int n, const std::string& device) {
  proto::Workload w;
  w.mutable_format()->set_major(1);
  w.add_types("");
  w.add_types("Tensor(float)");
  w.add_types("Int");
  w.add_schemas(kAddSchema);
  auto add_tensor = [&](int64_t id) {
    proto::Tensor* t = w.add_tensors();
    t->set_tensor_id(id);
    t->set_storage_id(id);
    t->set_numel(1);
    t->set_itemsize(4);
    t->set_dtype(proto::FLOAT32);
    t->add_shape(1);
    t->add_strides(1);
    t->set_device(device);
    t->set_type(1);
    return w.tensors_size() - 1;
  };
  auto tensor_value = [](int entry) {
    proto::Value v;
    v.set_tensor(entry);
    v.set_type(1);
    return v;
  };
  const int constant = add_tensor(int64_t{1} << 40);
  int prev = add_tensor(1);
  for (int i = 0; i < n; ++i) {
    const int next = add_tensor(i + 2);
    proto::Op* op = w.add_ops();
    op->set_id(i + 1);
    op->set_name("aten::add");
    op->set_schema(0);
    op->set_thread(1);
    *op->add_inputs() = tensor_value(prev);
    *op->add_inputs() = tensor_value(constant);
    proto::Value* alpha = op->add_inputs();
    alpha->set_int_value(1);
    alpha->set_type(2);
    *op->add_outputs() = tensor_value(next);
    prev = next;
  }
  return w;
}

Result<ReplayOpCost> MeasureReplayOpCost(const std::string& device, int rounds, bool use_min,
                                         int ops) {
  const proto::Workload w = TinyOpChain(ops, device);
  ReplayOptions options;
  options.device = device;
  options.warmup = 1;
  options.iters = 3;
  options.host_gaps = HostGaps::kNone;
  std::vector<double> replay_us, boxed_us;
  for (int r = 0; r < std::max(rounds, 1); ++r) {
    MIMIC_ASSIGN_OR_RETURN(const ReplayResult result, Replay(w, options));
    if (result.replayed_ops != ops || result.iteration_ms.empty())
      return Status::Internal("the chain of " + std::to_string(ops) + " tiny ops replayed " +
                              std::to_string(result.replayed_ops) + " ops");
    for (double ms : result.iteration_ms) replay_us.push_back(ms * 1000 / ops);
    for (double us : BoxedAddUs(device, ops, options.iters)) boxed_us.push_back(us);
  }
  return ReplayOpCost{Combine(replay_us, use_min), Combine(boxed_us, use_min)};
}

}  // namespace mimic::replay
