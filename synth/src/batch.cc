#include "mimic/synth/batch.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "mimic/eg/schema_args.h"
#include "mimic/eg/workload.h"
#include "mimic/ops/dispatch.h"

namespace mimic::synth {
namespace {

std::vector<int64_t> Contiguous(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t step = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    s[i] = step;
    step *= std::max<int64_t>(shape[i], 1);
  }
  return s;
}

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void ForEachTensor(const proto::Value& v, const std::function<void(int)>& fn) {
  if (v.kind_case() == proto::Value::kTensor && v.tensor() >= 0) fn(v.tensor());
  if (v.kind_case() == proto::Value::kList)
    for (const proto::Value& item : v.list().items()) ForEachTensor(item, fn);
}

// Tensors for the propagation: meta tensors of the (possibly new) shapes; ops' outputs once
// they ran.
class MetaTensors final : public ops::TensorSource {
 public:
  explicit MetaTensors(const proto::Workload& w) : w_(w) {}
  const proto::Workload& workload() const override { return w_; }

  at::Tensor Get(int t) override {
    if (auto it = values_.find(t); it != values_.end()) return it->second;
    const proto::Tensor& rec = w_.tensors(t);
    c10::ScalarType st = c10::kFloat;
    ops::ToScalarType(rec.dtype(), &st);
    std::vector<int64_t> shape(rec.shape().begin(), rec.shape().end());
    std::vector<int64_t> strides;
    if (auto it = new_shape_.find(t); it != new_shape_.end()) {
      shape = it->second;
      strides = Contiguous(shape);
    } else if (rec.strides_size() == rec.shape_size()) {
      strides.assign(rec.strides().begin(), rec.strides().end());
    } else {
      strides = Contiguous(shape);
    }
    at::Tensor m = at::empty_strided(shape, strides, at::TensorOptions().dtype(st).device(c10::kMeta));
    values_.emplace(t, m);
    return m;
  }

  void Put(int t, const at::Tensor& v) { values_[t] = v; }
  void SetLeafShape(int t, std::vector<int64_t> shape) { new_shape_[t] = std::move(shape); }

 private:
  const proto::Workload& w_;
  std::unordered_map<int, at::Tensor> values_;
  std::unordered_map<int, std::vector<int64_t>> new_shape_;
};

// Runs one op with the stack's meta tensors replaced by small real CPU tensors (zeros: valid
// indices too), for ops that have no meta kernel; outputs come back as meta tensors.
void RunOnCpu(const c10::OperatorHandle& handle, torch::jit::Stack& stack) {
  auto to_cpu = [](const at::Tensor& t) {
    if (!t.defined() || !t.is_meta()) return t;
    return at::zeros(t.sizes(), t.options().device(c10::kCPU));
  };
  for (c10::IValue& iv : stack) {
    if (iv.isTensor()) {
      iv = to_cpu(iv.toTensor());
    } else if (iv.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : iv.toTensorList().vec()) list.push_back(to_cpu(t));
      iv = list;
    } else if (iv.isDevice() && iv.toDevice().is_meta()) {
      iv = c10::Device(c10::kCPU);
    }
  }
  handle.callBoxed(&stack);
  for (c10::IValue& iv : stack)
    if (iv.isTensor() && iv.toTensor().defined())
      iv = at::empty_strided(iv.toTensor().sizes(), iv.toTensor().strides(), iv.toTensor().options().device(c10::kMeta));
}

bool IsStateArg(const std::string& name) {
  return name == "weight" || name == "bias" || name == "running_mean" || name == "running_var" ||
         name == "per_sample_weights";
}

bool IsSizeArg(const std::string& name) { return name == "size" || name == "shape" || name == "sizes"; }

}  // namespace

Result<proto::Workload> ScaleBatch(const proto::Workload& w, const BatchSpec& spec, BatchReport* report) {
  int iterations = 0;
  for (const proto::Segment& s : w.segments()) iterations += s.kind() == proto::Segment::ITERATION;
  if (iterations > 1) return Status::InvalidInput("batch scaling needs a workload of one iteration (select one first)");
  const eg::OpTree tree(w);
  const std::vector<int> order = eg::ReplayableOps(w, tree);

  // Leaves (inputs no earlier op produced) whose memory no op ever writes, at any level, are
  // the model's inputs: parameters, optimizer state and views of them all get written.
  // "Written" means passed to an argument the schema marks as mutated (Tensor(a!): in-place
  // updates, out= buffers, batch norm's running statistics).
  std::unordered_set<int> produced;
  std::unordered_set<int64_t> written;  // storage ids
  for (const proto::Op& op : w.ops()) {
    if (op.schema() < 0) continue;
    const std::vector<eg::SchemaArg> args = eg::ParseSchemaArgs(w.schemas(op.schema()));
    for (int a = 0; a < op.inputs_size() && a < static_cast<int>(args.size()); ++a)
      if (args[a].mutated) ForEachTensor(op.inputs(a), [&](int t) { written.insert(w.tensors(t).storage_id()); });
  }
  // Module state passed by name (weights, biases, batch norm statistics) is not an input
  // either, even where the schema does not mark it mutated.
  for (const proto::Op& op : w.ops()) {
    if (op.schema() < 0) continue;
    const std::vector<eg::SchemaArg> args = eg::ParseSchemaArgs(w.schemas(op.schema()));
    for (int a = 0; a < op.inputs_size() && a < static_cast<int>(args.size()); ++a)
      if (IsStateArg(args[a].name)) ForEachTensor(op.inputs(a), [&](int t) { written.insert(w.tensors(t).storage_id()); });
  }
  std::vector<int> inputs;
  for (int i : order) {
    for (const proto::Value& v : w.ops(i).inputs())
      ForEachTensor(v, [&](int t) {
        if (produced.count(t) || written.count(w.tensors(t).storage_id())) return;
        const proto::Tensor& rec = w.tensors(t);
        if (rec.shape_size() >= 1 && rec.shape(0) > 1 &&
            std::find(inputs.begin(), inputs.end(), t) == inputs.end())
          inputs.push_back(t);
      });
    for (const proto::Value& v : w.ops(i).outputs()) ForEachTensor(v, [&](int t) { produced.insert(t); });
  }
  std::map<int64_t, int> votes;  // leading dimension -> how many inputs have it
  for (int t : inputs) ++votes[w.tensors(t).shape(0)];
  if (votes.empty()) return Status::InvalidInput("no batch dimension: the workload has no model inputs with a leading dimension");
  const int64_t b = std::max_element(votes.begin(), votes.end(), [](auto& x, auto& y) {
                      return x.second != y.second ? x.second < y.second : x.first > y.first;
                    })->first;
  const int64_t nb = spec.batch > 0 ? spec.batch : static_cast<int64_t>(std::llround(b * spec.factor));
  if (nb < 1) return Status::InvalidInput("the new batch size must be at least 1");

  BatchReport rep;
  rep.old_batch = b;
  rep.new_batch = nb;
  proto::Workload out = w;
  MetaTensors meta(out);
  std::unordered_map<int, std::vector<int64_t>> new_shapes;
  for (int t : inputs) {
    const proto::Tensor& rec = w.tensors(t);
    if (rec.shape(0) % b != 0) continue;
    std::vector<int64_t> shape(rec.shape().begin(), rec.shape().end());
    shape[0] = shape[0] / b * nb;
    meta.SetLeafShape(t, shape);
    new_shapes[t] = shape;
    ++rep.leaves_scaled;
  }

  // Every op with a schema runs, nested ones too: backward ops consume tensors that nested
  // forward ops produced (saved activations), and those must follow the batch as well.
  std::vector<int> all;
  for (int i = 0; i < w.ops_size(); ++i)
    if (w.ops(i).schema() >= 0 && !eg::IsWrapperOp(w.ops(i))) all.push_back(i);
  const std::unordered_set<int> top_level(order.begin(), order.end());
  std::unordered_set<int> tainted;  // entries computed from a scaled input
  std::unordered_set<int> from_top;  // entries whose value a top-level op produced
  for (const auto& [t, shape] : new_shapes) tainted.insert(t);

  at::NoGradGuard no_grad;
  torch::jit::Stack stack;
  for (int index : all) {
    proto::Op& op = *out.mutable_ops(index);
    bool depends = false;
    for (const proto::Value& v : op.inputs()) ForEachTensor(v, [&](int t) { depends |= tainted.count(t) > 0; });
    MIMIC_ASSIGN_OR_RETURN(c10::OperatorHandle handle, ops::ResolveOperator(out.schemas(op.schema())));
    const auto& args = handle.schema().arguments();
    // Explicit size lists of ops on batch-dependent tensors hold the batch too (view, reshape,
    // expand, new_zeros, ...): the first entry that is a multiple of the batch scales with it.
    // If the op then fails, it is retried with the recorded sizes.
    proto::Op patched = op;
    int64_t rewritten = 0;
    for (int a = 0; depends && a < patched.inputs_size() && a < static_cast<int>(args.size()); ++a) {
      proto::Value& v = *patched.mutable_inputs(a);
      if (!IsSizeArg(args[a].name()) || v.kind_case() != proto::Value::kList) continue;
      for (proto::Value& item : *v.mutable_list()->mutable_items()) {
        if (item.kind_case() == proto::Value::kIntValue && item.int_value() > 0 && item.int_value() % b == 0) {
          item.set_int_value(item.int_value() / b * nb);
          ++rewritten;
          break;
        }
      }
    }
    auto attempt = [&](const proto::Op& candidate, bool on_cpu) -> bool {
      if (!ops::BuildStack(candidate, handle.schema(), meta, c10::Device(c10::kMeta), &stack, true).ok()) return false;
      try {
        if (on_cpu) RunOnCpu(handle, stack);
        else handle.callBoxed(&stack);
        return true;
      } catch (const std::exception&) {
        return false;
      }
    };
    const proto::Op* used = nullptr;
    for (bool on_cpu : {false, true}) {
      if (rewritten > 0 && attempt(patched, on_cpu)) used = &patched;
      else if (attempt(op, on_cpu)) used = &op;
      if (used) {
        rep.cpu_fallbacks += on_cpu;
        break;
      }
    }
    if (!used) {
      // Nested ops are best-effort (implementation details of their parent, like addmm's
      // internal expand + copy_, need not follow); the ops a replay runs must.
      if (!top_level.count(index)) continue;
      return Status::InvalidInput("op " + std::to_string(op.id()) + " (" + op.name() +
                                  "): shapes cannot be propagated at batch " + std::to_string(nb));
    }
    if (used == &patched) {
      rep.size_args_rewritten += rewritten;
      op = patched;
    }
    // Record what the op produced at the new batch. A nested op never overrides what a
    // top-level op (its parent, say, which returns the same tensor) produced.
    const bool top = top_level.count(index) > 0;
    std::function<void(const c10::IValue&, const proto::Value&)> take = [&](const c10::IValue& iv, const proto::Value& rec) {
      if (iv.isTensor() && rec.kind_case() == proto::Value::kTensor && rec.tensor() >= 0 && iv.toTensor().defined()) {
        if (top) from_top.insert(rec.tensor());
        else if (from_top.count(rec.tensor())) return;
        const at::Tensor& t = iv.toTensor();
        meta.Put(rec.tensor(), t);
        const proto::Tensor& old = w.tensors(rec.tensor());
        std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
        if (!std::equal(shape.begin(), shape.end(), old.shape().begin(), old.shape().end()))
          new_shapes[rec.tensor()] = shape;
      } else if (iv.isTensorList() && rec.kind_case() == proto::Value::kList) {
        const auto list = iv.toTensorList();
        for (size_t k = 0; k < list.size() && k < static_cast<size_t>(rec.list().items_size()); ++k)
          take(c10::IValue(list.get(k)), rec.list().items(static_cast<int>(k)));
      }
    };
    for (size_t k = 0; k < stack.size() && k < static_cast<size_t>(op.outputs_size()); ++k)
      take(stack[k], op.outputs(static_cast<int>(k)));
    if (depends)
      for (const proto::Value& v : op.outputs()) ForEachTensor(v, [&](int t) { tainted.insert(t); });
  }

  for (const auto& [t, shape] : new_shapes) {
    proto::Tensor& rec = *out.mutable_tensors(t);
    rec.clear_shape();
    for (int64_t d : shape) rec.add_shape(d);
    if (rec.strides_size() > 0) {
      rec.clear_strides();
      for (int64_t s : Contiguous(shape)) rec.add_strides(s);
    }
    rec.set_numel(Numel(shape));
    ++rep.tensors_reshaped;
  }
  out.clear_original();  // the original ran at its own batch size
  proto::Transformation& tr = *out.add_transformations();
  tr.set_name("batch");
  (*tr.mutable_params())["batch"] = std::to_string(nb);
  tr.set_summary("batch " + std::to_string(b) + " -> " + std::to_string(nb) + ": " +
                 std::to_string(rep.leaves_scaled) + " inputs scaled, " + std::to_string(rep.tensors_reshaped) +
                 " tensors reshaped by meta-device propagation, " + std::to_string(rep.size_args_rewritten) +
                 " size arguments rewritten, " + std::to_string(rep.cpu_fallbacks) + " ops propagated on the CPU");
  if (report) *report = rep;
  return out;
}

}  // namespace mimic::synth
