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

TensorStore::TensorStore(const proto::Workload& w, c10::Device device, uint64_t seed)
    : w_(w), device_(device), gen_(at::make_generator<at::CPUGeneratorImpl>(seed)), ranges_(w) {}

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

}  // namespace

Status TensorStore::Prepare(const std::vector<int>& ops) {
  // Walk the ops in order, as the replay will: an input that no earlier op produced (neither
  // its table entry nor its storage) is a leaf and needs a prepared buffer.
  std::unordered_set<int> produced;
  std::unordered_map<int64_t, proto::DType> produced_storages;  // storage id -> producer's dtype
  std::unordered_map<int64_t, int64_t> bytes_of_storage;  // by BufferKey
  std::unordered_map<int64_t, proto::DType> leaf_dtype_of_storage;
  int64_t next_private_key = -1;  // trace storage ids are >= 0
  std::vector<int> leaves;
  std::unordered_set<int> leaf_set;
  for (int index : ops) {
    const proto::Op& op = w_.ops(index);
    ranges_.Consume(op);
    for (const proto::Value& v : op.inputs()) {
      ForEachInputTensor(v, [&](int t) {
        const proto::Tensor& tensor = w_.tensors(t);
        if (produced.count(t)) return;
        if (auto it = produced_storages.find(tensor.storage_id()); it != produced_storages.end()) {
          if (MayAliasProducer(t, it->second)) return;
          own_buffer_.insert(t);
        }
        // Trace storage ids are reused once memory is freed: a leaf of another dtype on an id a
        // leaf already holds is another allocation (Adam's int64 step increment on the id of a
        // float scalar read earlier), with a buffer of its own.
        auto [claim, first_claim] = leaf_dtype_of_storage.emplace(tensor.storage_id(), tensor.dtype());
        if (!first_claim && claim->second != tensor.dtype() && !buffer_key_.count(t)) buffer_key_[t] = next_private_key--;
        int64_t& bytes = bytes_of_storage[BufferKey(t)];
        bytes = std::max(bytes, BytesNeeded(tensor));
        if (leaf_set.insert(t).second) leaves.push_back(t);
      });
    }
    // After the loop above, which gives a leaf on a reused storage id its own buffer key.
    if (NeedsNonNegativeInput(op.name()) && op.inputs_size() > 0)
      ForEachInputTensor(op.inputs(0), [&](int t) { non_negative_buffers_.insert(BufferKey(t)); });
    for (const proto::Value& v : op.outputs()) {
      ForEachInputTensor(v, [&](int t) {
        produced.insert(t);
        produced_storages[w_.tensors(t).storage_id()] = w_.tensors(t).dtype();
      });
    }
  }
  // Refuse what cannot fit before touching memory (a corrupt or hostile trace can claim
  // petabytes).
  int64_t total = 0, largest = 0, largest_storage = 0;
  for (const auto& [storage_id, bytes] : bytes_of_storage) {
    total += bytes;
    if (bytes > largest) largest = bytes, largest_storage = storage_id;
  }
  const int64_t physical = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (device_.is_cpu() && physical > 0 && total > physical)
    return Status::InvalidInput("storage " + std::to_string(largest_storage) + ": the replayed tensors need " +
                                std::to_string(total >> 20) + " MiB (this storage " +
                                std::to_string(largest >> 20) + " MiB), more than this machine's " +
                                std::to_string(physical >> 20) + " MiB of memory");
  c10::Allocator* allocator = c10::GetAllocator(device_.type());
  for (const auto& [storage_id, bytes] : bytes_of_storage) {
    try {
      buffers_.emplace(storage_id, c10::Storage(c10::Storage::use_byte_size_t(), bytes, allocator,
                                                /*resizable=*/true));
    } catch (const c10::Error& e) {
      return Status::Internal("cannot allocate " + std::to_string(bytes) + " bytes for storage " +
                              std::to_string(storage_id) + ": " + e.what_without_backtrace());
    }
    prepared_bytes_ += bytes;
  }
  for (int t : leaves) {
    const proto::Tensor& tensor = w_.tensors(t);
    c10::ScalarType st;
    if (!ToScalarType(tensor.dtype(), &st))
      return Status::Unsupported("tensor " + std::to_string(tensor.tensor_id()) +
                                 " has a dtype Mimic cannot create (" + eg::TypeName(w_, tensor.type()) + ")");
    const int64_t extent = Extent(tensor);
    if (extent == 0) continue;
    at::Tensor flat = at::empty({0}, at::TensorOptions().dtype(st).device(device_));
    flat.set_(buffers_.at(BufferKey(t)), tensor.offset(), {extent}, {1});
    Fill(flat, t);
  }
  if (device_.is_cpu()) {
    std::vector<int64_t> ids;
    for (const auto& [id, storage] : buffers_) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    std::string digests;
    for (int64_t id : ids) {
      const c10::Storage& storage = buffers_.at(id);
      digests += Sha256Hex(std::string_view(static_cast<const char*>(storage.data()), storage.nbytes()));
    }
    inputs_sha256_ = Sha256Hex(digests);
  }
  return Status::Ok();
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
    at::Tensor offsets = std::get<0>(at::randint(0, fill.offsets_total + 1, {n}, gen_, at::kLong).sort());
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

at::Tensor TensorStore::ViewOf(const c10::Storage& storage, int t) {
  const proto::Tensor& tensor = w_.tensors(t);
  c10::ScalarType st = c10::kFloat;
  ToScalarType(tensor.dtype(), &st);
  at::Tensor view = at::empty({0}, at::TensorOptions().dtype(st).device(device_));
  view.set_(storage, tensor.offset(), Shape(tensor), Strides(tensor));
  return view;
}

at::Tensor TensorStore::Get(int t) {
  if (auto it = produced_.find(t); it != produced_.end()) return it->second;
  const proto::Tensor& tensor = w_.tensors(t);
  if (auto it = produced_storage_.find(tensor.storage_id()); it != produced_storage_.end() &&
      !own_buffer_.count(t) && !buffer_key_.count(t) && static_cast<int64_t>(it->second.nbytes()) >= BytesNeeded(tensor))
    return ViewOf(it->second, t);
  if (auto it = buffers_.find(BufferKey(t)); it != buffers_.end()) return ViewOf(it->second, t);
  // The producer of this tensor was skipped: give the consumer a fresh tensor of the recorded
  // metadata, made once and reused by every iteration.
  if (auto it = fresh_.find(t); it != fresh_.end()) return it->second;
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

void TensorStore::Put(int t, const at::Tensor& tensor) {
  produced_[t] = tensor;
  if (tensor.defined() && tensor.has_storage())
    produced_storage_[w_.tensors(t).storage_id()] = tensor.storage();
}

void TensorStore::NewIteration() {
  produced_.clear();
  produced_storage_.clear();
}

}  // namespace mimic::replay
