#include "mimic/synth/batch.h"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "meta_kernels.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/schema_args.h"
#include "mimic/eg/workload.h"
#include "mimic/ops/dispatch.h"

namespace mimic::synth {
namespace {

using eg::ForEachTensor;

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

// The strides of a dense tensor of `sizes` whose dimensions are laid out in the order of the
// recorded tensor's strides (outermost first; equal strides, as size-1 dimensions have, in
// dimension order): a channels-last activation stays channels-last at another batch. Empty
// where the trace recorded no strides, or ones of a view that is not dense.
std::vector<int64_t> DenseStridesLike(const proto::Tensor& rec, c10::IntArrayRef sizes) {
  const int rank = rec.shape_size();
  if (rec.strides_size() != rank || static_cast<int>(sizes.size()) != rank) return {};
  std::vector<int> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return rec.strides(a) > rec.strides(b); });
  std::vector<int64_t> recorded(rank), strides(rank);
  int64_t step = 1, new_step = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int d = order[i];
    recorded[d] = step, strides[d] = new_step;
    step *= std::max<int64_t>(rec.shape(d), 1), new_step *= std::max<int64_t>(sizes[d], 1);
  }
  for (int d = 0; d < rank; ++d)
    if (rec.shape(d) > 1 && rec.strides(d) != recorded[d]) return {};
  return strides;
}

// Strides for a tensor recorded as `rec` at a new `shape`: its recorded layout where it was
// dense, else contiguous.
std::vector<int64_t> StridesFor(const proto::Tensor& rec, const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides = DenseStridesLike(rec, shape);
  return strides.empty() ? Contiguous(shape) : strides;
}

// What an op produced at the new batch, in the dtype and layout the trace recorded: a batch
// changes sizes only. Under autocast an op's recorded inputs are fp32 and its output bf16 (the
// cast is the autocast layer's, which the propagation does not go through); a channels-last
// output stays channels-last.
at::Tensor AsRecorded(const at::Tensor& t, const proto::Tensor& rec) {
  if (t.layout() != c10::kStrided) return t;
  c10::ScalarType st = t.scalar_type();
  ops::ToScalarType(rec.dtype(), &st);
  std::vector<int64_t> strides = DenseStridesLike(rec, t.sizes());
  if (strides.empty() || !t.is_non_overlapping_and_dense())
    strides.assign(t.strides().begin(), t.strides().end());
  if (st == t.scalar_type() &&
      std::equal(strides.begin(), strides.end(), t.strides().begin(), t.strides().end()))
    return t;
  return at::empty_strided(t.sizes(), strides, t.options().dtype(st));
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
    // Another view of a storage an op produced, recorded with that output's shape (saved
    // activations and an RNN's workspace come back under a new tensor id): it is that output,
    // the latest one of the same recorded layout (views of it, a matmul's reshape of a saved
    // softmax, may have been produced on the storage since).
    if (auto it = by_storage_.find(rec.storage_id()); it != by_storage_.end()) {
      for (auto e = it->second.rbegin(); e != it->second.rend(); ++e) {
        const proto::Tensor& producer = w_.tensors(*e);
        if (producer.dtype() != rec.dtype() || producer.offset() != rec.offset() ||
            !std::equal(producer.shape().begin(), producer.shape().end(), rec.shape().begin(),
                        rec.shape().end()))
          continue;
        const at::Tensor& v = values_.at(*e);
        aliased_[t] = std::vector<int64_t>(v.sizes().begin(), v.sizes().end());
        return v;
      }
    }
    c10::ScalarType st = c10::kFloat;
    ops::ToScalarType(rec.dtype(), &st);
    std::vector<int64_t> shape(rec.shape().begin(), rec.shape().end());
    std::vector<int64_t> strides;
    if (auto it = new_shape_.find(t); it != new_shape_.end()) {
      shape = it->second;
      strides = StridesFor(rec, shape);
    } else if (rec.strides_size() == rec.shape_size()) {
      strides.assign(rec.strides().begin(), rec.strides().end());
    } else {
      strides = Contiguous(shape);
    }
    at::Tensor m = at::empty_strided(shape, strides, at::TensorOptions().dtype(st).device(c10::kMeta));
    values_.emplace(t, m);
    return m;
  }

  void Put(int t, const at::Tensor& v) {
    values_[t] = v;
    by_storage_[w_.tensors(t).storage_id()].push_back(t);
  }
  void SetLeafShape(int t, std::vector<int64_t> shape) { new_shape_[t] = std::move(shape); }
  // Back to its recorded shape, for an entry no op has produced.
  void ResetLeaf(int t) { new_shape_.erase(t), values_.erase(t); }
  // Entries that resolved to another entry's value through their shared storage, with the
  // shape they took.
  const std::unordered_map<int, std::vector<int64_t>>& aliased() const { return aliased_; }

 private:
  const proto::Workload& w_;
  std::unordered_map<int, at::Tensor> values_;
  std::unordered_map<int64_t, std::vector<int>>
      by_storage_;  // storage id -> entries produced on it
  std::unordered_map<int, std::vector<int64_t>> aliased_;
  std::unordered_map<int, std::vector<int64_t>> new_shape_;
};

// Each tensor of the stack, alone or in a list, replaced by `fn` of it.
void MapTensors(torch::jit::Stack& stack, const std::function<at::Tensor(const at::Tensor&)>& fn) {
  for (c10::IValue& iv : stack) {
    if (iv.isTensor()) {
      iv = fn(iv.toTensor());
    } else if (iv.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& t : iv.toTensorList().vec()) list.push_back(fn(t));
      iv = list;
    }
  }
}

// The stack's floating tensors in `dtype`.
void CastFloating(torch::jit::Stack& stack, c10::ScalarType dtype) {
  MapTensors(stack, [&](const at::Tensor& t) {
    return t.defined() && at::isFloatingType(t.scalar_type()) ? t.to(dtype) : t;
  });
}

// Runs one op with the stack's meta tensors replaced by small real CPU tensors (zeros: valid
// indices too), for ops that have no meta kernel; dense outputs come back as meta tensors.
void RunOnCpu(const c10::OperatorHandle& handle, torch::jit::Stack& stack) {
  MapTensors(stack, [](const at::Tensor& t) {
    if (!t.defined() || !t.is_meta()) return t;
    return at::zeros(t.sizes(), t.options().device(c10::kCPU));
  });
  for (c10::IValue& iv : stack)
    if (iv.isDevice() && iv.toDevice().is_meta()) iv = c10::Device(c10::kCPU);
  {
    // Kernels that keep state for their backward (oneDNN's RNN workspace) make it only with
    // grad mode on; the inputs require no grad, so nothing is recorded.
    c10::AutoGradMode grad(true);
    handle.callBoxed(&stack);
  }
  // A sparse output stays the CPU tensor it is: a meta one would keep its sizes but lose its
  // number of nonzeros, which the ops that take its values and indices apart need (an
  // embedding bag's sparse gradient holds one row a lookup).
  for (c10::IValue& iv : stack)
    if (iv.isTensor() && iv.toTensor().defined() && iv.toTensor().layout() == c10::kStrided)
      iv = at::empty_strided(iv.toTensor().sizes(), iv.toTensor().strides(),
                             iv.toTensor().options().device(c10::kMeta));
}

bool IsStateArg(const std::string& name) {
  return name == "weight" || name == "bias" || name == "running_mean" || name == "running_var" ||
         name == "per_sample_weights";
}

// Size-list arguments that can carry the batch: view/reshape/expand/new_* "size", and the
// "input_sizes" that backward ops (select_backward, slice_backward, ...) restore.
// For a view-like op (the output holds the input's elements in another shape), the new size
// list: input and output dimensions are grouped where their running products meet, as view
// itself matches them, and each group's output takes the group's change in size on the
// dimension that holds the batch (equal to it, else a multiple of it, else the first). False when the shapes do not group (or hold -1, which view
// infers by itself).
bool RescaleViewSizes(const std::vector<int64_t>& old_in, const std::vector<int64_t>& new_in,
                      int64_t batch, std::vector<int64_t>& sizes) {
  if (old_in.size() != new_in.size()) return false;
  for (int64_t d : sizes)
    if (d < 0) return false;
  std::vector<int64_t> out = sizes;
  size_t i = 0, j = 0;
  while (i < old_in.size() || j < sizes.size()) {
    const size_t i0 = i, j0 = j;
    int64_t pin = 1, pout = 1;
    do {
      if (pin <= pout && i < old_in.size()) pin *= old_in[i++];
      else if (j < sizes.size()) pout *= sizes[j++];
      else return false;
    } while (pin != pout || (i == i0 && j == j0));
    int64_t new_prod = 1, old_prod = 1;
    for (size_t k = i0; k < i; ++k) new_prod *= new_in[k], old_prod *= old_in[k];
    if (new_prod == old_prod) continue;
    if (old_prod == 0 || new_prod % old_prod != 0) return false;
    const int64_t factor = new_prod / old_prod;
    // Within the group, the batch is the dimension equal to it, else one it divides.
    size_t pick = j;
    for (size_t k = j0; k < j && pick == j; ++k)
      if (out[k] == batch) pick = k;
    for (size_t k = j0; k < j && pick == j; ++k)
      if (out[k] > 1 && out[k] % batch == 0) pick = k;
    for (size_t k = j0; k < j && pick == j; ++k)
      if (out[k] > 1) pick = k;
    if (pick == j) return false;
    out[pick] *= factor;
  }
  sizes = out;
  return true;
}

bool IsViewLike(const std::string& name) {
  return name == "aten::view" || name == "aten::reshape" || name == "aten::_reshape_alias" ||
         name == "aten::_unsafe_view";
}

bool IsSizeArg(const std::string& name) {
  return name == "size" || name == "shape" || name == "sizes" || name == "input_sizes" ||
         name == "self_sizes" || name == "input_size";
}

// The batch: of the leading dimensions of the leaf inputs, the one most tensors computed in
// the step lead with too. Data flows at the batch through the whole step ([B, ...] activations
// and their gradients); a parameter that no op writes in the trace (no optimizer step
// recorded, or a weight passed as mat2) is a leaf too, and a model has more of them than data
// inputs, but its leading dimension (GPT-2's hidden size 1280) leads only its own gradient.
// Ties go to the dimension more leaves have, then to the smaller.
int64_t BatchOf(const proto::Workload& w, const std::vector<int>& inputs) {
  std::map<int64_t, std::pair<int, int>> votes;  // leading dim -> (computed tensors, leaves)
  for (int t : inputs) ++votes[w.tensors(t).shape(0)].second;
  std::unordered_set<int> seen;
  for (const proto::Op& op : w.ops())
    for (const proto::Value& v : op.outputs())
      ForEachTensor(v, [&](int t) {
        const proto::Tensor& rec = w.tensors(t);
        if (rec.shape_size() == 0 || !seen.insert(t).second) return;
        if (auto it = votes.find(rec.shape(0)); it != votes.end()) ++it->second.first;
      });
  return std::max_element(votes.begin(), votes.end(),
                          [](const auto& x, const auto& y) {
                            return x.second != y.second ? x.second < y.second : x.first > y.first;
                          })
      ->first;
}

using Shape = std::vector<int64_t>;

Shape ShapeOf(const proto::Tensor& t) { return Shape(t.shape().begin(), t.shape().end()); }

// The model's inputs: leaves (inputs no earlier op produced, at any level, in `order`, the
// top-level ops) whose memory no op ever
// writes, at any level; parameters, optimizer state and views of them all get written.
// "Written" means passed to an argument the schema marks as mutated (Tensor(a!): in-place
// updates, out= buffers, batch norm's running statistics), or passed by name as module state
// (weights, biases, batch norm statistics) even where the schema does not mark it mutated.
// Parameters that no op writes (no optimizer step in the trace) are leaves too; each gets a
// gradient of its shape, which AccumulateGrad takes. Data (ids, images, labels) gets none: where
// a shape's gradients outnumber the storages written at it (the parameters an optimizer
// stepped) by at least its leaves, those leaves are parameters, not data.
std::vector<int> ModelInputs(const proto::Workload& w, const eg::OpTree& tree,
                             const std::vector<int>& order) {
  std::unordered_set<int64_t> written;                  // storage ids
  std::map<Shape, std::set<int64_t>> written_of_shape;  // shape -> storages written at it
  std::map<Shape, std::set<int64_t>> grads_of_shape;
  for (const proto::Op& op : w.ops()) {
    if (op.name() == "torch::autograd::AccumulateGrad")
      for (const proto::Value& v : op.inputs())
        ForEachTensor(v, [&](int t) {
          grads_of_shape[ShapeOf(w.tensors(t))].insert(w.tensors(t).storage_id());
        });
    if (op.schema() < 0) continue;
    const std::vector<eg::SchemaArg> args = eg::ParseSchemaArgs(w.schemas(op.schema()));
    for (int a = 0; a < op.inputs_size() && a < static_cast<int>(args.size()); ++a) {
      if (args[a].mutated)
        ForEachTensor(op.inputs(a), [&](int t) {
          written_of_shape[ShapeOf(w.tensors(t))].insert(w.tensors(t).storage_id());
        });
      if (args[a].mutated || IsStateArg(args[a].name))
        ForEachTensor(op.inputs(a), [&](int t) { written.insert(w.tensors(t).storage_id()); });
    }
  }
  // What the ops produced, their nested ops' outputs included (batch norm's saved statistics
  // come out of cudnn_batch_norm inside batch_norm), and by storage, shape and offset too (a
  // saved activation comes back under a new tensor id: MetaTensors resolves it the same way).
  std::unordered_set<int> produced;
  std::set<std::tuple<int64_t, int64_t, Shape>> produced_at;  // storage, offset, shape
  auto is_produced = [&](int t) {
    const proto::Tensor& rec = w.tensors(t);
    return produced.count(t) || produced_at.count({rec.storage_id(), rec.offset(), ShapeOf(rec)});
  };
  std::function<void(int)> produce = [&](int i) {
    for (const proto::Value& v : w.ops(i).outputs())
      ForEachTensor(v, [&](int t) {
        const proto::Tensor& rec = w.tensors(t);
        produced.insert(t);
        produced_at.insert({rec.storage_id(), rec.offset(), ShapeOf(rec)});
      });
    for (int child : tree.Children(i)) produce(child);
  };
  std::vector<int> inputs;
  for (int i : order) {
    for (const proto::Value& v : w.ops(i).inputs())
      ForEachTensor(v, [&](int t) {
        if (is_produced(t) || written.count(w.tensors(t).storage_id())) return;
        const proto::Tensor& rec = w.tensors(t);
        if (rec.shape_size() >= 1 && rec.shape(0) > 1 &&
            std::find(inputs.begin(), inputs.end(), t) == inputs.end())
          inputs.push_back(t);
      });
    produce(i);
  }
  std::map<Shape, int64_t> leaves_of_shape;
  for (int t : inputs) ++leaves_of_shape[ShapeOf(w.tensors(t))];
  std::erase_if(inputs, [&](int t) {
    const Shape s = ShapeOf(w.tensors(t));
    auto g = grads_of_shape.find(s);
    if (g == grads_of_shape.end()) return false;
    auto wr = written_of_shape.find(s);
    const int64_t unstepped =
        static_cast<int64_t>(g->second.size()) -
        (wr == written_of_shape.end() ? 0 : static_cast<int64_t>(wr->second.size()));
    return unstepped >= leaves_of_shape[s];
  });
  return inputs;
}

// Recorded shape -> new shape, for the shapes that changed one way only (a recorded shape that
// became two different ones, like attention's [B*H, S, D] and [B*H, D, S] at S = D, says
// nothing about a size list equal to it).
class Reshapes {
 public:
  void Note(const Shape& from, const Shape& to) {
    if (ambiguous_.count(from)) return;
    auto [it, fresh] = reshaped_.emplace(from, to);
    if (!fresh && it->second != to) {
      reshaped_.erase(it);
      ambiguous_.insert(from);
    }
  }
  const Shape* Find(const Shape& from) const {
    auto it = reshaped_.find(from);
    return it == reshaped_.end() ? nullptr : &it->second;
  }

 private:
  std::map<Shape, Shape> reshaped_;
  std::set<Shape> ambiguous_;
};

// A batch change carried through the workload: every op with a schema run on meta tensors of
// the new shapes (on the CPU where it has no meta kernel), nested ops too (backward ops consume
// tensors that nested forward ops produced, saved activations, and those must follow the batch
// as well); communication has no meta kernel and changes no shape: it moves what the ops made.
class BatchPropagation {
 public:
  BatchPropagation(const proto::Workload& w, const std::vector<int>& order, int64_t b, int64_t nb,
                   BatchReport& rep)
      : w_(w),
        tree_(w),
        b_(b),
        nb_(nb),
        rep_(rep),
        out_(w),
        meta_(out_),
        top_level_(order.begin(), order.end()) {}

  // The model's inputs at the new batch: their leading dimension scaled where it holds the
  // batch a whole number of times.
  void ScaleInputs(const std::vector<int>& inputs) {
    for (int t : inputs) {
      const proto::Tensor& rec = w_.tensors(t);
      if (rec.shape(0) % b_ != 0) continue;
      Shape shape = ShapeOf(rec);
      shape[0] = shape[0] / b_ * nb_;
      meta_.SetLeafShape(t, shape);
      new_shapes_[t] = shape;
      unread_leaves_.insert(t);
      ++rep_.leaves_scaled;
    }
    for (const auto& [t, shape] : new_shapes_) reshapes_.Note(ShapeOf(w_.tensors(t)), shape);
  }

  Status PropagateAll() {
    at::NoGradGuard no_grad;
    for (int i = 0; i < w_.ops_size(); ++i)
      if (w_.ops(i).schema() >= 0 && !eg::IsWrapperOp(w_.ops(i)) && !eg::IsCollectiveOp(w_.ops(i)))
        MIMIC_RETURN_IF_ERROR(Propagate(i));
    return Status::Ok();
  }

  // The workload at the new batch: every tensor whose shape changed rewritten, the original's
  // measurements dropped (it ran at its own batch size), the transformation recorded.
  proto::Workload Finish() && {
    for (const auto& [t, shape] : meta_.aliased())
      if (!new_shapes_.count(t) && shape != ShapeOf(w_.tensors(t))) new_shapes_[t] = shape;
    for (const auto& [t, shape] : new_shapes_) {
      proto::Tensor& rec = *out_.mutable_tensors(t);
      rec.clear_shape();
      for (int64_t d : shape) rec.add_shape(d);
      if (rec.strides_size() > 0) {
        rec.clear_strides();
        auto it = new_strides_.find(t);
        for (int64_t s : it != new_strides_.end() ? it->second : StridesFor(w_.tensors(t), shape))
          rec.add_strides(s);
      }
      rec.set_numel(Numel(shape));
      if (auto it = new_offsets_.find(t); it != new_offsets_.end()) rec.set_offset(it->second);
      ++rep_.tensors_reshaped;
    }
    out_.clear_original();
    proto::Transformation& tr = *out_.add_transformations();
    tr.set_name("batch");
    (*tr.mutable_params())["batch"] = std::to_string(nb_);
    tr.set_summary("batch " + std::to_string(b_) + " -> " + std::to_string(nb_) + ": " +
                   std::to_string(rep_.leaves_scaled) + " inputs scaled, " +
                   std::to_string(rep_.tensors_reshaped) +
                   " tensors reshaped by meta-device propagation, " +
                   std::to_string(rep_.size_args_rewritten) + " size arguments rewritten, " +
                   std::to_string(rep_.cpu_fallbacks) + " ops propagated on the CPU, " +
                   std::to_string(rep_.portable_equivalents) +
                   " vendor ops propagated as their portable equivalents");
    eg::AnnotateCollectives(out_);  // collective sizes follow the tensors
    return std::move(out_);
  }

 private:
  // Runs op `index` at the new batch, its size lists rewritten where it depends on the batch
  // (else, or where that fails, as recorded), and takes what it produced.
  Status Propagate(int index) {
    proto::Op& op = *out_.mutable_ops(index);
    // Only ops that consume a tensor whose shape changed get their size lists rewritten (a
    // gradient computed from the batch is not batch-shaped itself), and ops the replay runs
    // where a list equals the recorded shape of a tensor whose shape changed (a reduction's
    // backward expands its scalar gradient back to its input's shape: SumBackward0's expand).
    // A factory the model calls (zeros, ones, empty, full: no tensor in; not one inside another
    // op's kernel, like batch norm's statistics) sized from the batch makes state of the batch's
    // size, an RNN's initial hidden state [layers, B, H] say: its size list's entry equal to the
    // batch scales with it.
    const bool top_level = top_level_.count(index) > 0;
    bool depends = false, factory = top_level;
    for (const proto::Value& v : op.inputs())
      ForEachTensor(v, [&](int t) {
        depends |= new_shapes_.count(t) > 0;
        factory = false;
      });
    MIMIC_ASSIGN_OR_RETURN(c10::OperatorHandle handle,
                           ops::ResolveOperator(out_.schemas(op.schema())));
    proto::Op patched = op;
    const int64_t rewritten = depends || top_level ? RewriteSizeArgs(op, handle.schema(), factory,
                                                                     !depends && !factory, patched)
                                                   : 0;
    const proto::Op* used = RunAtNewBatch(handle, op, patched, rewritten > 0);
    if (!used && RunPortable(op, index)) return Status::Ok();
    if (!used && top_level) used = RunWithAParameterBack(handle, op);
    if (!used) {
      // Nested ops are best-effort (implementation details of their parent, like addmm's
      // internal expand + copy_, need not follow); the ops a replay runs must.
      if (!top_level) return Status::Ok();
      return Status::InvalidInput("op " + std::to_string(op.id()) + " (" + op.name() +
                                  "): shapes cannot be propagated at batch " + std::to_string(nb_));
    }
    if (used == &patched) {
      rep_.size_args_rewritten += rewritten;
      op = patched;
    }
    for (const proto::Value& v : op.inputs())
      ForEachTensor(v, [&](int t) { unread_leaves_.erase(t); });
    TakeOutputs(op, index);
    return Status::Ok();
  }

  // A model input that no op read yet may be a parameter of the batch's size (param-pt2's
  // [4, 4] weight at batch 4): where the first op to read it fails at the new batch, it runs
  // with one such input back at its recorded shape, the op's last first (mm, linear and conv
  // take their weight after their input), which stays so.
  const proto::Op* RunWithAParameterBack(const c10::OperatorHandle& handle, const proto::Op& op) {
    std::vector<int> unread;
    for (const proto::Value& v : op.inputs())
      ForEachTensor(v, [&](int t) {
        if (unread_leaves_.count(t)) unread.push_back(t);
      });
    for (auto t = unread.rbegin(); t != unread.rend(); ++t) {
      meta_.ResetLeaf(*t);
      if (const proto::Op* used = RunAtNewBatch(handle, op, op, false)) {
        new_shapes_.erase(*t);
        --rep_.leaves_scaled;
        return used;
      }
      meta_.SetLeafShape(*t, new_shapes_.at(*t));
    }
    return nullptr;
  }

  // Explicit size lists of an op on batch-dependent tensors hold the batch too (view, reshape,
  // expand, new_zeros, ...), rewritten into `patched`: a view-like op's list regrouped against
  // its input's new shape; a list equal to the recorded shape of a tensor whose shape changed
  // one way only takes its new shape (backward ops restore forward shapes this way); otherwise
  // the first entry that is a multiple of the batch (a factory's: equal to it) scales with it.
  // With `known_only`, only lists equal to such a recorded shape that no op's output kept
  // (cnn_bn's batch of 32 is also its first layer's channels: a momentum buffer is [32] too).
  // Returns how many entries it rewrote.
  int64_t RewriteSizeArgs(const proto::Op& op, const c10::FunctionSchema& schema, bool factory,
                          bool known_only, proto::Op& patched) {
    const auto& args = schema.arguments();
    int64_t rewritten = 0;
    for (int a = 0; a < patched.inputs_size() && a < static_cast<int>(args.size()); ++a) {
      proto::Value& v = *patched.mutable_inputs(a);
      if (!IsSizeArg(args[a].name()) || v.kind_case() != proto::Value::kList) continue;
      Shape sizes;
      for (const proto::Value& item : v.list().items())
        sizes.push_back(item.kind_case() == proto::Value::kIntValue ? item.int_value() : -1);
      auto set = [&](const Shape& to) {
        for (int k = 0; k < v.list().items_size(); ++k)
          v.mutable_list()->mutable_items(k)->set_int_value(to[k]);
      };
      if (Shape resized = sizes; !known_only && RegroupedView(op, resized)) {
        set(resized);
        rewritten += resized != sizes;
      } else if (const Shape* known = reshapes_.Find(sizes);
                 known && (!known_only || !kept_.count(sizes))) {
        set(*known);
        ++rewritten;
      } else if (!known_only) {
        for (proto::Value& item : *v.mutable_list()->mutable_items()) {
          if (item.kind_case() == proto::Value::kIntValue && item.int_value() > 0 &&
              (factory ? item.int_value() == b_ : item.int_value() % b_ == 0)) {
            item.set_int_value(item.int_value() / b_ * nb_);
            ++rewritten;
            break;
          }
        }
      }
    }
    return rewritten;
  }

  // A view-like op's size list regrouped against its input's new shape (RescaleViewSizes). A -1
  // (view(-1, hidden), view(b, s, -1)) is regrouped as the size it was inferred to, and stays
  // -1: regrouping scales the batch's dimension, never the hidden size (which may well be a
  // multiple of the batch). False where the op is not a view of a tensor, or it cannot be.
  bool RegroupedView(const proto::Op& op, Shape& sizes) {
    if (!IsViewLike(op.name()) || op.inputs(0).kind_case() != proto::Value::kTensor ||
        op.inputs(0).tensor() < 0)
      return false;
    const Shape in = ShapeOf(w_.tensors(op.inputs(0).tensor()));
    const at::Tensor now = meta_.Get(op.inputs(0).tensor());
    const auto inferred = std::find(sizes.begin(), sizes.end(), -1);
    if (inferred != sizes.end()) {
      const int64_t known =
          -std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<int64_t>());
      *inferred = known > 0 ? Numel(in) / known : -1;
    }
    if (!RescaleViewSizes(in, {now.sizes().begin(), now.sizes().end()}, b_, sizes)) return false;
    if (inferred != sizes.end()) *inferred = -1;
    return true;
  }

  // Runs `op` at the new batch: with its rewritten size lists (`patched`, where `rewritten`)
  // else as recorded; on meta tensors, else on the CPU; as called, else as autocast ran it.
  // Returns the form that ran (its outputs on the stack), or nullptr.
  const proto::Op* RunAtNewBatch(const c10::OperatorHandle& handle, const proto::Op& op,
                                 const proto::Op& patched, bool rewritten) {
    const std::optional<c10::ScalarType> autocast = AutocastDtypeOf(op);
    for (std::optional<c10::ScalarType> cast : {std::optional<c10::ScalarType>(), autocast}) {
      for (bool on_cpu : {false, true}) {
        const proto::Op* used = rewritten && Run(handle, patched, on_cpu, cast) ? &patched
                                : Run(handle, op, on_cpu, cast)                 ? &op
                                                                                : nullptr;
        if (used) {
          rep_.cpu_fallbacks += on_cpu;
          return used;
        }
      }
      if (!autocast) break;
    }
    return nullptr;
  }

  // The dtype autocast ran `op` in, where its recorded inputs are floating tensors of more
  // than one dtype and its first floating output has one of them (GPT-2's linear under bf16
  // autocast: a bf16 activation, an fp32 weight, a bf16 output). The recorded inputs are what
  // the model passed; autocast's casts happened inside the call, where the propagation, on meta
  // tensors, does not go.
  std::optional<c10::ScalarType> AutocastDtypeOf(const proto::Op& op) const {
    std::set<int> in;
    for (const proto::Value& v : op.inputs())
      ForEachTensor(v, [&](int t) {
        if (eg::IsFloatingDType(w_.tensors(t).dtype())) in.insert(w_.tensors(t).dtype());
      });
    std::optional<int> out;
    for (const proto::Value& v : op.outputs())
      ForEachTensor(v, [&](int t) {
        if (!out && eg::IsFloatingDType(w_.tensors(t).dtype())) out = w_.tensors(t).dtype();
      });
    c10::ScalarType st;
    if (in.size() < 2 || !out || !in.count(*out) ||
        !ops::ToScalarType(static_cast<proto::DType>(*out), &st))
      return std::nullopt;
    return st;
  }

  // Runs `candidate` on meta tensors (or, `on_cpu`, on the CPU), its floating tensors cast to
  // `cast` where given, leaving its outputs on the stack; false where its arguments cannot be
  // built or it throws.
  bool Run(const c10::OperatorHandle& handle, const proto::Op& candidate, bool on_cpu,
           std::optional<c10::ScalarType> cast = std::nullopt) {
    if (!ops::BuildStack(candidate, handle.schema(), meta_, c10::Device(c10::kMeta), &stack_, true)
             .ok())
      return false;
    if (cast) CastFloating(stack_, *cast);
    try {
      if (on_cpu)
        RunOnCpu(handle, stack_);
      else
        handle.callBoxed(&stack_);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  // A vendor op with neither a meta nor a CPU kernel (cuDNN's batch norm and its backward) run
  // as its portable equivalent, which computes the same outputs (eg::PortableOf), on meta
  // tensors only: a CPU kernel trusts its inputs' shapes, and a nested op that failed to
  // propagate can leave one of them at the recorded batch. The op itself stays as recorded.
  bool RunPortable(const proto::Op& op, int index) {
    const eg::PortableEquivalent* e = eg::PortableOf(op.name());
    proto::Op portable = op;
    if (!e || !eg::RewriteAsPortable(*e, &portable, &out_)) return false;
    Result<c10::OperatorHandle> handle = ops::ResolveOperator(std::string(e->schema));
    if (!handle.ok()) return false;
    if (!Run(*handle, portable, false)) return false;
    ++rep_.portable_equivalents;
    TakeOutputs(portable, index);
    return true;
  }

  // Records what `op` (index `index`) left on the stack as its outputs.
  void TakeOutputs(const proto::Op& op, int index) {
    for (size_t k = 0; k < stack_.size() && k < static_cast<size_t>(op.outputs_size()); ++k)
      Take(stack_[k], op.outputs(static_cast<int>(k)), index,
           eg::OutputShapeIsTheDevices(op.name(), static_cast<int>(k)) && !RecordedOnCpu(op));
  }

  // Whether the trace recorded `op`'s tensors on the CPU, whose kernels the propagation runs.
  bool RecordedOnCpu(const proto::Op& op) const {
    bool cpu = true;
    for (const proto::Value& v : op.inputs())
      ForEachTensor(v, [&](int t) { cpu &= eg::TargetOf(w_.tensors(t).device()) == "cpu"; });
    return cpu;
  }

  // Records what op `index` produced at the new batch. A nested op never overrides what one of
  // its ancestors produced (empty_like's inner empty_strided returns the same tensor, made from
  // the recorded sizes): the ancestor computed it from the new shapes. An output whose shape
  // each device's kernel chooses (embedding_bag's offset2bag: empty from one, full from
  // another) recorded on a GPU passes on to the ops after it, but keeps its recorded shape:
  // the propagation's kernels are the CPU's.
  void Take(const c10::IValue& iv, const proto::Value& rec, int index, bool devices_choice) {
    if (iv.isTensorList() && rec.kind_case() == proto::Value::kList) {
      const auto list = iv.toTensorList();
      for (size_t k = 0; k < list.size() && k < static_cast<size_t>(rec.list().items_size()); ++k)
        Take(c10::IValue(list.get(k)), rec.list().items(static_cast<int>(k)), index,
             devices_choice);
      return;
    }
    if (!iv.isTensor() || rec.kind_case() != proto::Value::kTensor || rec.tensor() < 0 ||
        !iv.toTensor().defined())
      return;
    if (auto p = producer_.find(rec.tensor());
        p != producer_.end() && p->second != index && tree_.IsWithin(index, p->second))
      return;
    producer_[rec.tensor()] = index;
    const at::Tensor t = AsRecorded(iv.toTensor(), w_.tensors(rec.tensor()));
    meta_.Put(rec.tensor(), t);
    const Shape old = ShapeOf(w_.tensors(rec.tensor()));
    const Shape shape(t.sizes().begin(), t.sizes().end());
    // A batch of at least one never empties a tensor nor fills an empty one: where the
    // propagation did, its kernel took another device's path (log_sigmoid's buffer is empty
    // from CUDA's, full from the CPU's), or a nested op of the recording device's own kernel read
    // such an output.
    if (shape == old) kept_.insert(old);
    if (shape == old || devices_choice || (Numel(shape) == 0) != (Numel(old) == 0)) return;
    new_shapes_[rec.tensor()] = shape;
    new_strides_[rec.tensor()] = Shape(t.strides().begin(), t.strides().end());
    new_offsets_[rec.tensor()] = t.storage_offset();
    reshapes_.Note(old, shape);
  }

  const proto::Workload& w_;
  const eg::OpTree tree_;
  const int64_t b_, nb_;
  BatchReport& rep_;
  proto::Workload out_;
  MetaTensors meta_;  // over out_
  const std::unordered_set<int> top_level_;
  std::unordered_map<int, Shape> new_shapes_;
  std::unordered_map<int, Shape> new_strides_;    // as the meta kernels laid them out
  std::unordered_map<int, int64_t> new_offsets_;  // views into batch-sized storage move too
  std::unordered_map<int, int> producer_;         // entry -> the op (index) whose value it holds
  Reshapes reshapes_;
  std::set<Shape> kept_;  // recorded shapes an op's output kept at the new batch
  std::unordered_set<int> unread_leaves_;  // scaled model inputs no op has read yet
  torch::jit::Stack stack_;
};

}  // namespace

Result<proto::Workload> ScaleBatch(const proto::Workload& w, const BatchSpec& spec,
                                   BatchReport* report) {
  int iterations = 0;
  for (const proto::Segment& s : w.segments()) iterations += s.kind() == proto::Segment::ITERATION;
  if (iterations > 1)
    return Status::InvalidInput(
        "batch scaling needs a workload of one iteration (select one first)");
  const eg::OpTree tree(w);
  const std::vector<int> order = eg::ReplayableOps(w, tree);
  const std::vector<int> inputs = ModelInputs(w, tree, order);
  if (inputs.empty())
    return Status::InvalidInput(
        "no batch dimension: the workload has no model inputs with a leading dimension");
  const int64_t b = BatchOf(w, inputs);
  const int64_t nb =
      spec.batch > 0 ? spec.batch : static_cast<int64_t>(std::llround(b * spec.factor));
  if (nb < 1) return Status::InvalidInput("the new batch size must be at least 1");

  RegisterMissingMetaKernels();
  BatchReport rep;
  rep.old_batch = b;
  rep.new_batch = nb;
  BatchPropagation propagation(w, order, b, nb, rep);
  propagation.ScaleInputs(inputs);
  MIMIC_RETURN_IF_ERROR(propagation.PropagateAll());
  proto::Workload out = std::move(propagation).Finish();
  if (report) *report = rep;
  return out;
}

}  // namespace mimic::synth
