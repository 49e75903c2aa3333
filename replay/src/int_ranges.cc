#include "int_ranges.h"

#include <algorithm>
#include <string_view>

namespace mimic::replay {
namespace {

// How one argument of an operator bounds an integer tensor argument.
enum class Bound : uint8_t {
  kDimOfTensor,     // index < tensors[bound_arg].shape[dim]  (dim: constant, or an int argument)
  kIntArg,          // index < ints[bound_arg]
  kNumelOfTensor,   // index < tensors[bound_arg].numel
  kClassDim,        // index < tensors[bound_arg].shape[1] (or [0] when 1-D): class labels
  kOffsetsOf,       // monotonic offsets into tensors[bound_arg] (the indices)
  kListDims,        // Tensor?[] argument: item i < tensors[bound_arg].shape[i]
};

struct Rule {
  std::string_view op;  // qualified name without overload
  int index_arg;        // the integer tensor (or Tensor?[]) argument
  Bound bound;
  int bound_arg;
  int dim = 0;          // kDimOfTensor: the dimension; -(k+1) means "the int argument k"
};

constexpr Rule kRules[] = {
    {"aten::embedding", 1, Bound::kDimOfTensor, 0, 0},
    {"aten::embedding_bag", 1, Bound::kDimOfTensor, 0, 0},
    {"aten::embedding_bag", 2, Bound::kOffsetsOf, 1},
    {"aten::_embedding_bag", 1, Bound::kDimOfTensor, 0, 0},
    {"aten::_embedding_bag", 2, Bound::kOffsetsOf, 1},
    {"aten::_embedding_bag_forward_only", 1, Bound::kDimOfTensor, 0, 0},
    {"aten::_embedding_bag_forward_only", 2, Bound::kOffsetsOf, 1},
    {"aten::embedding_backward", 1, Bound::kIntArg, 2},
    {"aten::embedding_dense_backward", 1, Bound::kIntArg, 2},
    {"aten::_embedding_bag_backward", 1, Bound::kIntArg, 5},
    {"aten::_embedding_bag_dense_backward", 1, Bound::kIntArg, 5},
    {"aten::index_select", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::gather", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::scatter", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::scatter_", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::scatter_add", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::scatter_add_", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::scatter_reduce", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::scatter_reduce_", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::index_add", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::index_add_", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::index_copy", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::index_copy_", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::index_fill", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::index_fill_", 2, Bound::kDimOfTensor, 0, -2},
    {"aten::take", 1, Bound::kNumelOfTensor, 0},
    {"aten::index", 1, Bound::kListDims, 0},
    {"aten::index_put", 1, Bound::kListDims, 0},
    {"aten::index_put_", 1, Bound::kListDims, 0},
    {"aten::_index_put_impl_", 1, Bound::kListDims, 0},
    {"aten::nll_loss", 1, Bound::kClassDim, 0},
    {"aten::nll_loss_forward", 1, Bound::kClassDim, 0},
    {"aten::nll_loss_nd", 1, Bound::kClassDim, 0},
    {"aten::nll_loss2d", 1, Bound::kClassDim, 0},
    {"aten::nll_loss2d_forward", 1, Bound::kClassDim, 0},
    {"aten::cross_entropy_loss", 1, Bound::kClassDim, 0},
    {"aten::nll_loss_backward", 2, Bound::kClassDim, 1},
    {"aten::nll_loss2d_backward", 2, Bound::kClassDim, 1},
    {"aten::one_hot", 0, Bound::kIntArg, 1},
    {"aten::multi_margin_loss", 1, Bound::kClassDim, 0},
};

bool IsIntegerDType(proto::DType d) {
  switch (d) {
    case proto::INT8: case proto::UINT8: case proto::INT16: case proto::INT32: case proto::INT64:
    case proto::UINT16: case proto::UINT32: case proto::UINT64:
      return true;
    default:
      return false;
  }
}

std::string_view BaseName(const std::string& name) {
  // "aten::add.Tensor" -> "aten::add"; names in traces rarely carry the overload.
  const size_t colon = name.find("::");
  const size_t dot = name.find('.', colon == std::string::npos ? 0 : colon);
  return std::string_view(name).substr(0, dot);
}

}  // namespace

void IntRangePlanner::Below(int t, int64_t bound) {
  if (t < 0 || bound <= 0) return;
  IntFill& f = fills_[t];
  if (f.kind == IntFill::Kind::kOffsets) return;
  if (!f.constrained || bound - 1 < f.hi) f.hi = bound - 1;
  f.lo = 0;
  f.constrained = true;
}

void IntRangePlanner::Consume(const proto::Op& op) {
  const std::string_view name = BaseName(op.name());
  ConsumeOutputs(op, name);
  auto tensor_at = [&](int arg) -> const proto::Tensor* {
    if (arg >= op.inputs_size()) return nullptr;
    const proto::Value& v = op.inputs(arg);
    if (v.kind_case() != proto::Value::kTensor || v.tensor() < 0) return nullptr;
    return &w_.tensors(v.tensor());
  };
  auto int_at = [&](int arg, int64_t* out) {
    if (arg >= op.inputs_size() || op.inputs(arg).kind_case() != proto::Value::kIntValue) return false;
    *out = op.inputs(arg).int_value();
    return true;
  };
  auto dim_size = [](const proto::Tensor* t, int64_t dim) -> int64_t {
    if (!t || t->shape_size() == 0) return -1;
    if (dim < 0) dim += t->shape_size();
    return dim >= 0 && dim < t->shape_size() ? t->shape(static_cast<int>(dim)) : -1;
  };
  for (const Rule& r : kRules) {
    if (r.op != name || r.index_arg >= op.inputs_size()) continue;
    const proto::Value& target = op.inputs(r.index_arg);
    if (r.bound == Bound::kListDims) {
      if (target.kind_case() != proto::Value::kList) continue;
      const proto::Tensor* self = tensor_at(r.bound_arg);
      for (int i = 0; i < target.list().items_size(); ++i) {
        const proto::Value& item = target.list().items(i);
        if (item.kind_case() == proto::Value::kTensor && item.tensor() >= 0 &&
            IsIntegerDType(w_.tensors(item.tensor()).dtype()))
          Below(item.tensor(), dim_size(self, i));
      }
      continue;
    }
    if (target.kind_case() != proto::Value::kTensor || target.tensor() < 0) continue;
    const int t = target.tensor();
    if (!IsIntegerDType(w_.tensors(t).dtype())) continue;
    int64_t bound = -1;
    switch (r.bound) {
      case Bound::kDimOfTensor: {
        int64_t dim = r.dim;
        if (dim < 0 && !int_at(-dim - 1, &dim)) continue;
        bound = dim_size(tensor_at(r.bound_arg), dim);
        break;
      }
      case Bound::kIntArg:
        if (!int_at(r.bound_arg, &bound)) continue;
        break;
      case Bound::kNumelOfTensor:
        if (const proto::Tensor* s = tensor_at(r.bound_arg)) bound = s->numel();
        break;
      case Bound::kClassDim: {
        const proto::Tensor* s = tensor_at(r.bound_arg);
        bound = dim_size(s, s && s->shape_size() >= 2 ? 1 : 0);
        break;
      }
      case Bound::kOffsetsOf: {
        const proto::Tensor* indices = tensor_at(r.bound_arg);
        if (!indices) continue;
        IntFill& f = fills_[t];
        f.kind = IntFill::Kind::kOffsets;
        f.offsets_total = indices->numel();
        f.constrained = true;
        continue;
      }
      case Bound::kListDims:
        continue;
    }
    Below(t, bound);
  }
}

// The indices nonzero and argwhere make (a stand-in for them, where the replay's values give
// another count) are ascending coordinates below the input's largest dimension.
void IntRangePlanner::ConsumeOutputs(const proto::Op& op, std::string_view name) {
  if ((name != "aten::nonzero" && name != "aten::argwhere") || op.inputs_size() == 0 ||
      op.outputs_size() == 0 || op.inputs(0).kind_case() != proto::Value::kTensor ||
      op.inputs(0).tensor() < 0 || op.outputs(0).kind_case() != proto::Value::kTensor ||
      op.outputs(0).tensor() < 0)
    return;
  const proto::Tensor& in = w_.tensors(op.inputs(0).tensor());
  int64_t largest = 1;
  for (int64_t d : in.shape()) largest = std::max(largest, d);
  Below(op.outputs(0).tensor(), largest);
  fills_[op.outputs(0).tensor()].sorted = true;
}

IntFill IntRangePlanner::FillFor(int t) const {
  const proto::Tensor& tensor = w_.tensors(t);
  auto it = fills_.find(t);
  IntFill f = it == fills_.end() ? IntFill() : it->second;
  if (!tensor.has_range() || f.kind != IntFill::Kind::kUniform) return f;
  // The recorded range is the truth for real inputs, but the observer also records ranges of
  // uninitialized buffers (a fill_ destination, say): under a consumer's bound, a range that
  // does not fit the bound is such garbage and is ignored.
  const int64_t lo = tensor.range_min(), hi = tensor.range_max();
  if (f.constrained) {
    if (lo >= f.lo && hi <= f.hi && lo <= hi) f.lo = lo, f.hi = hi;
  } else if (lo <= hi) {
    f.lo = lo, f.hi = hi, f.constrained = true;
  }
  return f;
}

}  // namespace mimic::replay
