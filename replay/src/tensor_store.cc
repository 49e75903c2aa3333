#include "tensor_store.h"

#include "mimic/base/file.h"
#include "mimic/eg/workload.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/randint.h>
#include <c10/core/Allocator.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_set>

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

void ForEachInputTensor(const proto::Value& v, const std::function<void(int)>& fn) {
  if (v.kind_case() == proto::Value::kTensor && v.tensor() >= 0) fn(v.tensor());
  if (v.kind_case() == proto::Value::kList)
    for (const proto::Value& item : v.list().items()) ForEachInputTensor(item, fn);
}

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

// Operators defined on non-negative inputs only. Fed the symmetric fill, they would compute
// NaNs, which some CPUs produce far more slowly (sqrt of negatives: 9x on this project's AMD
// host); their inputs in a real job (Adam's exp_avg_sq, variances) are non-negative.
bool NeedsNonNegativeInput(std::string_view name) {
  name = name.substr(0, name.find('.'));
  for (std::string_view n : {"aten::sqrt", "aten::sqrt_", "aten::rsqrt", "aten::rsqrt_", "aten::log", "aten::log_",
                             "aten::log2", "aten::log2_", "aten::log10", "aten::log10_", "aten::_foreach_sqrt",
                             "aten::_foreach_sqrt_", "aten::_foreach_log", "aten::_foreach_log_"})
    if (name == n) return true;
  return false;
}

// Operators that change their input view's own metadata (shape, strides, storage): a prepared
// view shared by every use must not reach them.
bool ChangesViewMetadata(std::string_view name) {
  name = name.substr(0, name.find('.'));
  for (std::string_view n :
       {"aten::resize_", "aten::resize_as_", "aten::set_", "aten::as_strided_", "aten::t_",
        "aten::transpose_", "aten::swapdims_", "aten::swapaxes_", "aten::squeeze_",
        "aten::unsqueeze_", "aten::_resize_output_", "aten::detach_"})
    if (name == n) return true;
  return false;
}

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
    const bool fresh_views = ChangesViewMetadata(op.name());
    auto resolve = [&](int t) -> InputSource {
      const proto::Tensor& tensor = w_.tensors(t);
      if (produced[t]) return {InputSource::Kind::kProduced, t, -1};
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
      ForEachInputTensor(v, [&](int t) {
        for (const auto& [seen, source] : sources_[pos])
          if (seen == t) return;
        sources_[pos].emplace_back(t, resolve(t));
      });
    // After the loop above, which gives a leaf on a reused storage id its own buffer key.
    if (NeedsNonNegativeInput(op.name()) && op.inputs_size() > 0)
      ForEachInputTensor(op.inputs(0), [&](int t) { non_negative_buffers_.insert(BufferKey(t)); });
    for (const proto::Value& v : op.outputs()) {
      ForEachInputTensor(v, [&](int t) {
        produced[t] = true;
        produced_storages[w_.tensors(t).storage_id()] = {t, w_.tensors(t).dtype()};
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
  return Status::Ok();
}

InputSource TensorStore::SourceOf(int pos, int t) const {
  for (const auto& [seen, source] : sources_[pos])
    if (seen == t) return source;
  return {InputSource::Kind::kProduced, t,
          -1};  // not an input Plan saw: whatever this iteration has
}

Status TensorStore::AllocateBuffer(int64_t key, int64_t bytes) {
  try {
    buffers_[key] =
        c10::Storage(c10::Storage::use_byte_size_t(), bytes, c10::GetAllocator(device_.type()),
                     /*resizable=*/true);
  } catch (const c10::Error& e) {
    return Status::Internal("cannot allocate " + std::to_string(bytes) + " bytes for storage " +
                            std::to_string(key) + ": " + FirstLineOf(e.what_without_backtrace()));
  }
  const c10::Storage& buffer = buffers_.at(key);
  for (int t : leaves_of_[key]) {
    const proto::Tensor& tensor = w_.tensors(t);
    leaf_[t] = ViewOf(buffer, t);
    const int64_t extent = Extent(tensor);
    if (extent == 0) continue;
    at::Tensor flat = at::empty({0}, leaf_[t].options());
    flat.set_(buffer, tensor.offset(), {extent}, {1});
    Fill(flat, t);
  }
  return Status::Ok();
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
    // non-negative input. At unit scale a replayed MLP's activations grow 10x per layer and its
    // recorded SGD steps blow the weights up to inf within 7 iterations.
    double fan_in = 1;
    for (int d = 1; d < rec.shape_size(); ++d) fan_in *= static_cast<double>(std::max<int64_t>(rec.shape(d), 1));
    const double bound = 1.0 / std::sqrt(fan_in);
    flat.uniform_(non_negative_buffers_.count(BufferKey(t)) ? 0.0 : -bound, bound, gen_);
    return;
  }
  if (st == c10::kBool) {
    flat.random_(0, 2, gen_);
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
}

at::Tensor TensorStore::ViewOf(const c10::Storage& storage, int t) const {
  const proto::Tensor& tensor = w_.tensors(t);
  c10::ScalarType st = c10::kFloat;
  ToScalarType(tensor.dtype(), &st);
  at::Tensor view = at::empty({0}, at::TensorOptions().dtype(st).device(device_));
  view.set_(storage, tensor.offset(), Shape(tensor), Strides(tensor));
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
  c10::Storage storage(c10::Storage::use_byte_size_t(), BytesNeeded(tensor),
                       c10::GetAllocator(device_.type()), true);
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
