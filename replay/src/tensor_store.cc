#include "tensor_store.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randperm.h>
#include <c10/core/TensorOptions.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "mimic/base/file.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/workload.h"

namespace mimic::replay {

using ops::ToScalarType;
namespace {

std::vector<int64_t> Shape(const proto::Tensor& t) { return {t.shape().begin(), t.shape().end()}; }

std::vector<int64_t> Strides(const proto::Tensor& t) {
  if (t.strides_size() == t.shape_size()) return {t.strides().begin(), t.strides().end()};
  std::vector<int64_t> s(t.shape_size());  // contiguous, as the trace did not record strides
  int64_t step = 1;
  for (int i = t.shape_size() - 1; i >= 0; --i) {
    s[i] = step;
    step *= std::max<int64_t>(t.shape(i), 1);
  }
  return s;
}

// Elements spanned by the view, from its first to its last element.
int64_t Extent(const proto::Tensor& t) {
  const std::vector<int64_t> strides = Strides(t);
  int64_t extent = 1;
  for (int i = 0; i < t.shape_size(); ++i) {
    if (t.shape(i) == 0) return 0;
    extent += (t.shape(i) - 1) * std::abs(strides[i]);
  }
  return extent;
}

std::string FirstLineOf(const std::string& s) { return s.substr(0, s.find('\n')); }

// False for a tensor recorded without storage ([id,0,0,0,0,""]: a sparse tensor): nothing can
// alias it, and the replay cannot make one of its own.
bool HasStorage(const proto::Tensor& t) { return t.itemsize() > 0; }

int64_t BytesNeeded(const proto::Tensor& t) {
  return (t.offset() + std::max<int64_t>(Extent(t), 0)) * std::max<int64_t>(t.itemsize(), 1);
}

// The values random_ can draw for an integer dtype, as [min, max] (max one below the type's, as
// random_'s upper bound is exclusive and must itself be representable).
std::pair<int64_t, int64_t> IntLimits(c10::ScalarType s) {
  switch (s) {
    case c10::kChar: return {INT8_MIN, INT8_MAX - 1};
    case c10::kByte: return {0, UINT8_MAX - 1};
    case c10::kShort: return {INT16_MIN, INT16_MAX - 1};
    case c10::kInt: return {INT32_MIN, INT32_MAX - 1};
    case c10::ScalarType::UInt16: return {0, UINT16_MAX - 1};
    case c10::ScalarType::UInt32: return {0, int64_t{UINT32_MAX} - 1};
    case c10::ScalarType::UInt64: return {0, INT64_MAX - 1};
    default: return {INT64_MIN, INT64_MAX - 1};
  }
}

bool IsFloating(c10::ScalarType s) { return c10::isFloatingType(s) || c10::isComplexType(s); }

}  // namespace

TensorStore::TensorStore(const proto::Workload& w, c10::Device device, at::Generator generator)
    : w_(w), device_(device), gen_(std::move(generator)), ranges_(w), value_(w.tensors_size()) {}

bool TensorStore::MayAliasProducer(int t, proto::DType producer_dtype) const {
  const proto::Tensor& tensor = w_.tensors(t);
  if (tensor.dtype() != producer_dtype) return false;
  c10::ScalarType st;
  return ToScalarType(tensor.dtype(), &st) && !c10::isIntegralType(st, /*includeBool=*/false);
}

namespace {

}  // namespace

Status TensorStore::Plan(const std::vector<int>& ops) {
  // Walk the ops in order, as the replay will: an input that no earlier op produced (neither
  // its table entry nor its storage) is a leaf and needs a prepared buffer.
  std::vector<bool> produced(w_.tensors_size(), false);
  // storage id -> the latest producer's entry and dtype
  std::unordered_map<int64_t, std::pair<int, proto::DType>> produced_storages;
  std::unordered_map<int64_t, proto::DType> leaf_dtype_of_storage;
  std::unordered_set<int> leaf_set;
  int64_t next_private_key = -1;  // trace storage ids are >= 0
  sources_.assign(ops.size(), {});
  for (size_t pos = 0; pos < ops.size(); ++pos) {
    const proto::Op& op = w_.ops(ops[pos]);
    ranges_.Consume(op);
    const bool fresh_views = eg::ChangesViewMetadata(op.name());
    auto resolve = [&](int t) -> InputSource {
      const proto::Tensor& tensor = w_.tensors(t);
      if (produced[t] || !HasStorage(tensor)) return {InputSource::Kind::kProduced, t, -1};
      // A leaf read again after an op made a view of it (a weight's t() at each step of an
      // RNN) is the leaf still: the same buffer, and for autograd the same tensor.
      if (leaf_set.count(t))
        return {fresh_views ? InputSource::Kind::kLeafFresh : InputSource::Kind::kLeaf, t, -1};
      if (auto it = produced_storages.find(tensor.storage_id()); it != produced_storages.end()) {
        if (MayAliasProducer(t, it->second.second))
          return {InputSource::Kind::kDerived, t, it->second.first};
        buffer_key_.emplace(t,
                            next_private_key--);  // an index tensor on a reused id: its own buffer
      }
      // Trace storage ids are reused once memory is freed: a leaf of another dtype on an id a
      // leaf already holds is another allocation (Adam's int64 step increment on the id of a
      // float scalar read earlier), with a buffer of its own.
      auto [claim, first_claim] =
          leaf_dtype_of_storage.emplace(tensor.storage_id(), tensor.dtype());
      if (!first_claim && claim->second != tensor.dtype() && !buffer_key_.count(t))
        buffer_key_[t] = next_private_key--;
      int64_t& bytes = buffer_bytes_[BufferKey(t)];
      bytes = std::max(bytes, BytesNeeded(tensor));
      if (leaf_set.insert(t).second) leaves_.push_back(t);
      return {fresh_views ? InputSource::Kind::kLeafFresh : InputSource::Kind::kLeaf, t, -1};
    };
    for (const proto::Value& v : op.inputs())
      eg::ForEachTensor(v, [&](int t) {
        for (const auto& [seen, source] : sources_[pos])
          if (seen == t) return;
        sources_[pos].emplace_back(t, resolve(t));
      });
    // After the loop above, which gives a leaf on a reused storage id its own buffer key.
    for (const eg::InputDomain& r : eg::InputDomainsOf(op.name()))
      if (r.arg < op.inputs_size())
        eg::ForEachTensor(op.inputs(r.arg), [&](int t) { RequireDomain(ops, t, pos, r.domain); });
    PlanValues(ops, static_cast<int>(pos));
    for (const proto::Value& v : op.outputs()) {
      eg::ForEachTensor(v, [&](int t) {
        produced[t] = true;
        producers_[t].push_back(static_cast<int>(pos));
        if (HasStorage(w_.tensors(t))) {
          produced_storages[w_.tensors(t).storage_id()] = {t, w_.tensors(t).dtype()};
          storage_producers_[w_.tensors(t).storage_id()].push_back(static_cast<int>(pos));
        }
      });
    }
  }
  for (int t : leaves_) {
    c10::ScalarType st;
    if (!ToScalarType(w_.tensors(t).dtype(), &st))
      return Status::Unsupported("tensor " + std::to_string(w_.tensors(t).tensor_id()) +
                                 " has a dtype Mimic cannot create (" +
                                 eg::TypeName(w_, w_.tensors(t).type()) + ")");
  }
  planned_bytes_ = 0;
  for (const auto& [key, bytes] : buffer_bytes_) planned_bytes_ += bytes;
  MatchIntegerData();
  return Status::Ok();
}

// The capture's saved values (workload.integer_data) of each integer leaf: those of the first
// op, by id, that saved the tensor, where CheckIntegerData accepts them.
void TensorStore::MatchIntegerData() {
  std::unordered_map<int64_t, std::vector<const proto::IntegerData*>> by_op;
  for (const proto::IntegerData& d : w_.integer_data()) by_op[d.op_id()].push_back(&d);
  std::unordered_map<int, const proto::IntegerData*> saved;
  if (!by_op.empty())
    for (const proto::Op& op : w_.ops())
      if (auto it = by_op.find(op.id()); it != by_op.end())
        for (const proto::IntegerData* d : it->second)
          if (const int t = eg::InputTensorByOrdinal(op, d->ordinal()); t >= 0) saved.emplace(t, d);
  for (int t : leaves_) {
    c10::ScalarType st;
    if (!ToScalarType(w_.tensors(t).dtype(), &st) ||
        !c10::isIntegralType(st, /*includeBool=*/false))
      continue;
    ++integer_inputs_.leaves;
    auto it = saved.find(t);
    if (it == saved.end()) continue;
    if (std::string why = CheckIntegerData(t, it->second->data()); !why.empty()) {
      integer_inputs_.rejected.push_back(it->second->file() + ": " + why);
      continue;
    }
    recorded_[t] = it->second->data();
    ++integer_inputs_.recorded;
  }
}

namespace {

// The saved bytes of an integer tensor as int64 values; empty for a dtype Mimic does not decode.
std::vector<int64_t> Decode(std::string_view bytes, c10::ScalarType st) {
  auto as = [&](auto zero) {
    using T = decltype(zero);
    std::vector<int64_t> out(bytes.size() / sizeof(T));
    for (size_t i = 0; i < out.size(); ++i) {
      T v;
      std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
      out[i] = static_cast<int64_t>(v);
    }
    return out;
  };
  switch (st) {
    case c10::kByte:
      return as(uint8_t{});
    case c10::kChar:
      return as(int8_t{});
    case c10::kShort:
      return as(int16_t{});
    case c10::kInt:
      return as(int32_t{});
    case c10::kLong:
      return as(int64_t{});
    case c10::ScalarType::UInt16:
      return as(uint16_t{});
    case c10::ScalarType::UInt32:
      return as(uint32_t{});
    case c10::ScalarType::UInt64:
      return as(uint64_t{});
    default:
      return {};
  }
}

}  // namespace

// Why the saved bytes cannot stand for leaf `t` ("" when they can): a size other than the
// tensor's, a view the observer did not save faithfully (torch 2.11 reads from the storage's
// start plus the view's offset counted in bytes, and numel elements in memory order, so only
// dense views at offset 0 come out right), or values outside what the trace recorded for the
// tensor (its tensor_range) or what its consumers can index.
std::string TensorStore::CheckIntegerData(int t, std::string_view bytes) const {
  const proto::Tensor& rec = w_.tensors(t);
  int64_t expected = 0;
  if (__builtin_mul_overflow(rec.numel(), rec.itemsize(), &expected))
    return "a tensor of more bytes than 64 bits count";
  if (static_cast<int64_t>(bytes.size()) != expected)
    return std::to_string(bytes.size()) + " bytes for a tensor of " + std::to_string(expected);
  if (rec.offset() != 0 && rec.itemsize() != 1)
    return "a view at storage offset " + std::to_string(rec.offset()) +
           ", which the observer saves from the wrong place";
  if (Extent(rec) != rec.numel()) return "a view with gaps between its elements";
  c10::ScalarType st = c10::kLong;
  ToScalarType(rec.dtype(), &st);
  if (rec.numel() == 0) return "an empty tensor";
  const std::vector<int64_t> v = Decode(bytes, st);
  if (static_cast<int64_t>(v.size()) != rec.numel()) return "a dtype Mimic does not decode";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  if (rec.has_range() && (*lo != rec.range_min() || *hi != rec.range_max()))
    return "values " + std::to_string(*lo) + ".." + std::to_string(*hi) + ", the trace recorded " +
           std::to_string(rec.range_min()) + ".." + std::to_string(rec.range_max());
  const IntFill fill = ranges_.FillFor(t);
  if (fill.kind == IntFill::Kind::kOffsets) {
    if (v.front() != 0 || !std::is_sorted(v.begin(), v.end()) || v.back() > fill.offsets_total)
      return "not offsets into " + std::to_string(fill.offsets_total) + " indices";
  } else if (fill.constrained && (*lo < fill.lo || *hi > fill.hi)) {
    return "values " + std::to_string(*lo) + ".." + std::to_string(*hi) + " outside " +
           std::to_string(fill.lo) + ".." + std::to_string(fill.hi) + ", what its consumers index";
  }
  return "";
}

// The position of the op that last wrote input `t` of the op at position `before` (for a view
// the trace did not see made, the last that wrote its storage); -1 for a prepared input.
int TensorStore::LatestProducer(int t, int before) const {
  auto latest = [before](const std::vector<int>& positions) {
    auto it = std::lower_bound(positions.begin(), positions.end(), before);
    return it == positions.begin() ? -1 : *std::prev(it);
  };
  const InputSource source = SourceOf(before, t);
  if (source.kind == InputSource::Kind::kProduced) {
    auto it = producers_.find(t);
    return it == producers_.end() ? -1 : latest(it->second);
  }
  if (source.kind != InputSource::Kind::kDerived) return -1;
  auto it = storage_producers_.find(w_.tensors(t).storage_id());
  return it == storage_producers_.end() ? -1 : latest(it->second);
}

template <typename Next, typename AtLeaf>
void TensorStore::WalkBack(const std::vector<int>& ops, int t, int before, int depth,
                           const Next& next, const AtLeaf& at_leaf) const {
  const InputSource::Kind kind = SourceOf(before, t).kind;
  if (kind == InputSource::Kind::kLeaf || kind == InputSource::Kind::kLeafFresh) {
    at_leaf(t);
    return;
  }
  const int pos = LatestProducer(t, before);
  if (pos < 0 || depth == 0) return;
  next(w_.ops(ops[pos]), t, [&](int in) { WalkBack(ops, in, pos, depth - 1, next, at_leaf); });
}

// Input `t` of the op at position `before` must lie in `domain`: so must the prepared tensor it
// is, or, for a non-negative one, the prepared tensors it is computed from through ops that pass
// their inputs' sign on (eg::KeepsSign), up to 8 ops back. SparseAdam's sqrt reads its
// exp_avg_sq state through sparse_mask, _values and add_; filled symmetric, the state would make
// NaNs from the second iteration on.
void TensorStore::RequireDomain(const std::vector<int>& ops, int t, int before,
                                eg::ValueDomain domain) {
  auto float_inputs_keeping_sign = [&](const proto::Op& op, int, const auto& follow) {
    if (domain != eg::ValueDomain::kNonNegative || !eg::KeepsSign(op.name())) return;
    for (const proto::Value& v : op.inputs())
      eg::ForEachTensor(v, [&](int in) {
        c10::ScalarType st;
        if (ToScalarType(w_.tensors(in).dtype(), &st) && IsFloating(st)) follow(in);
      });
  };
  WalkBack(ops, t, before, 8, float_inputs_keeping_sign,
           [&](int leaf) { domain_[BufferKey(leaf)] = domain; });
}

int TensorStore::StateLeaf(const std::vector<int>& ops, int t, int before) const {
  auto same_storage = [&](const proto::Op& op, int out, const auto& follow) {
    if (!HasStorage(w_.tensors(out))) return;
    int same = -1;  // the producer's input on out's storage: an in-place update's self
    for (const proto::Value& v : op.inputs())
      eg::ForEachTensor(v, [&](int in) {
        if (same < 0 && HasStorage(w_.tensors(in)) &&
            w_.tensors(in).storage_id() == w_.tensors(out).storage_id())
          same = in;
      });
    if (same >= 0) follow(same);
  };
  int leaf = -1;
  WalkBack(ops, t, before, 8, same_storage, [&](int l) { leaf = l; });
  return leaf;
}

// An optimizer's sqrt reads its state after the step's in-place updates (Adam's mul_ and
// addcmul_ of exp_avg_sq): the state's prepared buffer is what gets the capture's shares.
void TensorStore::PlanValues(const std::vector<int>& ops, int pos) {
  const proto::Op& op = w_.ops(ops[pos]);
  if (op.input_values().empty() || !eg::TimeDependsOnValues(op.name())) return;
  for (const proto::InputValues& v : op.input_values()) {
    ++value_fills_.inputs;
    const int t = eg::InputTensorByOrdinal(op, v.input());
    const int leaf = t < 0 ? -1 : StateLeaf(ops, t, pos);
    c10::ScalarType st;
    if (leaf >= 0 && ToScalarType(w_.tensors(leaf).dtype(), &st) && IsFloating(st) &&
        values_.emplace(leaf, &v).second)
      ++value_fills_.leaves;
  }
}

InputSource TensorStore::SourceOf(int pos, int t) const {
  for (const auto& [seen, source] : sources_[pos])
    if (seen == t) return source;
  return {InputSource::Kind::kProduced, t,
          -1};  // not an input Plan saw: whatever this iteration has
}

Status TensorStore::AllocateBuffer(int64_t key, int64_t bytes) {
  try {
    buffers_[key] = ops::NewStorage(bytes, device_);
  } catch (const c10::Error& e) {
    return Status::Internal("cannot allocate " + std::to_string(bytes) + " bytes for storage " +
                            std::to_string(key) + ": " + FirstLineOf(e.what_without_backtrace()));
  }
  const c10::Storage& buffer = buffers_.at(key);
  // Leaves with the capture's saved values last, so that no random fill of another view of
  // the same buffer overwrites them.
  for (bool saved : {false, true})
    for (int t : leaves_of_[key]) {
      if (recorded_.count(t) != static_cast<size_t>(saved)) continue;
      const proto::Tensor& tensor = w_.tensors(t);
      leaf_[t] = ViewOf(buffer, t);
      const int64_t extent = Extent(tensor);
      if (extent == 0) continue;
      at::Tensor flat = at::empty({0}, leaf_[t].options());
      flat.set_(buffer, tensor.offset(), {extent}, {1});
      Fill(flat, t);
    }
  // The capture's values last, over every random fill of the buffer's views.
  for (int t : leaves_of_[key])
    if (auto v = values_.find(t); v != values_.end() && leaf_[t].defined()) {
      try {
        FillValues(leaf_[t], *v->second);
      } catch (const c10::Error&) {  // out of memory, say: the leaf keeps its uniform fill
      }
    }
  for (int t : leaves_of_[key])
    if (grad_leaves_.count(t) && leaf_[t].defined() && IsFloating(leaf_[t].scalar_type()))
      leaf_[t].set_requires_grad(true);
  return Status::Ok();
}

namespace {

// Half the smallest normal number of a floating dtype (a subnormal); 0 for the float8 types,
// which Mimic does not fill with values.
double SubnormalOf(c10::ScalarType st) {
  switch (st) {
    case c10::kFloat:
    case c10::kBFloat16:
      return std::numeric_limits<float>::min() / 2;
    case c10::kDouble:
      return std::numeric_limits<double>::min() / 2;
    case c10::kHalf:
      return 6.103515625e-05 / 2;
    default:
      return 0;
  }
}

}  // namespace

// Over the uniform fill: whole rows of zeros first (an embedding's state on the rows no batch
// reached yet), then zeros and subnormals scattered over the other elements, each in the
// capture's share of the whole.
void TensorStore::FillValues(at::Tensor v, const proto::InputValues& values) {
  at::NoGradGuard no_grad;
  // A view whose elements share memory (expanded) cannot be written element by element.
  if (v.numel() == 0 || at::has_internal_overlap(v) != at::MemOverlap::No) return;
  double row_share = 0;
  if (v.dim() >= 2 && v.size(0) > 0) {
    const int64_t rows = v.size(0), k = std::llround(values.zero_rows() * rows);
    if (k > 0)
      v.index_fill_(0, at::randperm(rows, gen_, v.options().dtype(at::kLong)).narrow(0, 0, k), 0);
    row_share = static_cast<double>(k) / rows;
  }
  if (row_share >= 1) return;
  // Drawn over every element, shares of the elements outside the zero rows: the rows' own
  // elements are zero already, and stay so.
  const double zeros = std::clamp((values.zeros() - row_share) / (1 - row_share), 0.0, 1.0);
  const double subnormals = std::clamp(values.subnormals() / (1 - row_share), 0.0, 1.0 - zeros);
  const double subnormal = SubnormalOf(v.scalar_type());
  if (zeros == 0 && (subnormals == 0 || subnormal == 0)) return;
  const at::Tensor u = at::empty(v.sizes(), v.options().dtype(at::kFloat)).uniform_(0, 1, gen_);
  if (subnormals > 0 && subnormal > 0) {  // with the element's sign; none in the zero rows
    const at::Tensor band = u.ge(zeros).logical_and_(u.lt(zeros + subnormals));
    v.masked_fill_(v.gt(0).logical_and_(band), subnormal);
    v.masked_fill_(v.lt(0).logical_and_(band), -subnormal);
  }
  if (zeros > 0) v.masked_fill_(u.lt(zeros), 0);
}

Status TensorStore::Allocate(bool lazy) {
  leaf_.assign(w_.tensors_size(), at::Tensor());
  for (int t : leaves_) leaves_of_[BufferKey(t)].push_back(t);
  if (lazy) return Status::Ok();
  // Keys in order, so that the same seed fills the same buffers with the same values.
  std::vector<int64_t> keys;
  for (const auto& [key, bytes] : buffer_bytes_) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  for (int64_t key : keys) {
    MIMIC_RETURN_IF_ERROR(AllocateBuffer(key, buffer_bytes_.at(key)));
    prepared_bytes_ += buffer_bytes_.at(key);
  }
  if (device_.is_cpu()) {
    std::string digests;
    for (int64_t key : keys) {
      const c10::Storage& storage = buffers_.at(key);
      digests += Sha256Hex(std::string_view(static_cast<const char*>(storage.data()), storage.nbytes()));
    }
    inputs_sha256_ = Sha256Hex(digests);
  }
  return Status::Ok();
}

void TensorStore::Acquire(int64_t key) {
  std::lock_guard<std::mutex> lock(lazy_mu_);
  if (buffers_.count(key)) return;
  // A failed allocation leaves the leaves undefined: their consumers take the fallback, and
  // the out-of-memory of the op that needed them stops the replay.
  (void)AllocateBuffer(key, buffer_bytes_.at(key));
}

void TensorStore::Drop(int64_t key) {
  std::lock_guard<std::mutex> lock(lazy_mu_);
  for (int t : leaves_of_[key]) leaf_[t] = at::Tensor();
  buffers_.erase(key);
}

// Fills the elements a view spans (given as one flat run, so that views whose strides overlap
// are filled too).
void TensorStore::Fill(const at::Tensor& flat, int t) {
  const c10::ScalarType st = flat.scalar_type();
  at::NoGradGuard no_grad;
  if (IsFloating(st)) {
    const proto::Tensor& rec = w_.tensors(t);
    if (rec.shape_size() == 0) {
      // A 0-dim float is nearly always a Python number the framework wrapped: an optimizer's
      // beta, learning rate, bias correction or epsilon, positive in practice. A symmetric
      // fill would flip signs and divide by numbers near zero, and Adam would take the sqrt of
      // negative moments: NaNs, which this project's CPU host computes 9x more slowly.
      flat.uniform_(0.5, 1.0, gen_);
      return;
    }
    // Symmetric, at the scale PyTorch initializes weights with (1/sqrt(fan_in), fan_in the
    // product of all but the first dimension; 1 for vectors); [0, bound) where an op needs
    // non-negative input, [0, 1) where it needs a probability (eg::InputDomainsOf). At unit scale a
    // replayed MLP's activations grow 10x per layer and its recorded SGD steps blow the weights up
    // to inf within 7 iterations.
    double fan_in = 1;
    for (int d = 1; d < rec.shape_size(); ++d) fan_in *= static_cast<double>(std::max<int64_t>(rec.shape(d), 1));
    const double bound = 1.0 / std::sqrt(fan_in);
    auto domain = domain_.find(BufferKey(t));
    if (domain == domain_.end())
      flat.uniform_(-bound, bound, gen_);
    else if (domain->second == eg::ValueDomain::kNonNegative)
      flat.uniform_(0.0, bound, gen_);
    else
      flat.uniform_(0.0, 1.0, gen_);
    return;
  }
  if (st == c10::kBool) {
    flat.random_(0, 2, gen_);
    return;
  }
  if (auto it = recorded_.find(t); it != recorded_.end()) {  // a dense view at offset 0
    const std::string_view bytes = it->second;
    flat.copy_(at::from_blob(const_cast<char*>(bytes.data()), {flat.numel()},
                             at::TensorOptions().dtype(st)));
    return;
  }
  const IntFill fill = ranges_.FillFor(t);
  if (fill.kind == IntFill::Kind::kOffsets) {
    const int64_t n = flat.numel();
    at::Tensor offsets =
        std::get<0>(at::randint(0, fill.offsets_total + 1, {n}, gen_,
                                at::TensorOptions().dtype(at::kLong).device(device_))
                        .sort());
    offsets[0] = 0;
    flat.copy_(offsets);
    return;
  }
  // Keep the range inside the dtype (random_'s upper bound is exclusive).
  int64_t lo = fill.lo, hi = fill.hi;
  const auto [type_min, type_max] = IntLimits(st);
  lo = std::clamp(lo, type_min, type_max);
  hi = std::clamp(hi, lo, type_max);
  flat.random_(lo, hi + 1, gen_);
  if (fill.sorted) flat.copy_(std::get<0>(flat.sort()));
}

at::Tensor TensorStore::ViewOf(const c10::Storage& storage, int t) const {
  const proto::Tensor& tensor = w_.tensors(t);
  c10::ScalarType st = c10::kFloat;
  ToScalarType(tensor.dtype(), &st);
  // On the storage's own device: a host op's output stays on the host in a device replay. What
  // at::empty({0}).set_(...) makes, without two dispatcher calls: this runs for a view input
  // of every op that takes one, each iteration.
  const c10::DispatchKeySet keys(c10::computeDispatchKey(st, c10::kStrided, storage.device()));
  at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(storage), keys,
                                                             c10::scalarTypeToTypeMeta(st));
  view.unsafeGetTensorImpl()->set_sizes_and_strides(Shape(tensor), Strides(tensor),
                                                    tensor.offset());
  return view;
}

at::Tensor TensorStore::Get(const InputSource& s) {
  switch (s.kind) {
    case InputSource::Kind::kProduced:
      if (const at::Tensor& v = value_[s.entry]; v.defined()) return v;
      break;
    case InputSource::Kind::kDerived:
      if (const at::Tensor& from = value_[s.from];
          from.defined() && from.has_storage() &&
          static_cast<int64_t>(from.storage().nbytes()) >= BytesNeeded(w_.tensors(s.entry)))
        return ViewOf(from.storage(), s.entry);
      break;
    case InputSource::Kind::kLeaf:
      if (const at::Tensor& v = leaf_[s.entry]; v.defined()) return v;
      break;
    case InputSource::Kind::kLeafFresh:
      if (const at::Tensor& v = leaf_[s.entry]; v.defined()) return ViewOf(v.storage(), s.entry);
      break;
  }
  return Fallback(s.entry);
}

at::Tensor TensorStore::Get(int t) {
  if (value_[t].defined()) return value_[t];
  if (static_cast<size_t>(t) < leaf_.size() && leaf_[t].defined()) return leaf_[t];
  return Fallback(t);
}

// The producer of this tensor was skipped: give the consumer a fresh tensor of the recorded
// metadata, made once and reused by every iteration.
at::Tensor TensorStore::Fallback(int t) {
  std::lock_guard<std::mutex> lock(fallback_mu_);
  if (auto it = fresh_.find(t); it != fresh_.end()) return it->second;
  const proto::Tensor& tensor = w_.tensors(t);
  if (!HasStorage(tensor)) return at::Tensor();  // its consumer fails, and is skipped
  c10::Storage storage = ops::NewStorage(BytesNeeded(tensor), device_);
  at::Tensor view = ViewOf(storage, t);
  const int64_t extent = Extent(tensor);
  if (extent > 0) {
    at::Tensor flat = at::empty({0}, view.options());
    flat.set_(storage, tensor.offset(), {extent}, {1});
    Fill(flat, t);
  }
  fresh_.emplace(t, view);
  return view;
}

void TensorStore::NewIteration() {
  for (at::Tensor& v : value_) v = at::Tensor();
}

}  // namespace mimic::replay
