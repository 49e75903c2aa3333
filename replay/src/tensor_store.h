// The replay's tensors. Storage-aware: every recorded storage that the replay must provide
// itself (a leaf: an input no earlier op produces) gets one buffer, large enough for all of its
// recorded views, and each view is made from it once, by offset, shape and strides. Where each
// op input comes from is resolved once, when the replay is planned (SourceOf); each iteration
// then reads table slots, never a hash map.
//
// Thread-safety: Get, Put and Release may be called from several lanes at once for different
// table entries (the plan orders the uses of one entry); the fallback for inputs whose producer
// was skipped takes a lock. Everything else is for the planning thread.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "int_ranges.h"
#include "mimic/base/status.h"
#include "mimic/eg/op_class.h"
#include "mimic/ops/dispatch.h"
#include "mimic/replay/replayer.h"
#include "proto/workload.pb.h"

namespace mimic::replay {

// Where an op's input tensor comes from in each iteration.
struct InputSource {
  enum class Kind : uint8_t {
    kProduced,   // an earlier op's output of the same table entry, this iteration
    kDerived,    // a view of the storage an earlier op's output `from` holds, this iteration
    kLeaf,       // the prepared view, made once
    kLeafFresh,  // a fresh view of the prepared buffer, for ops that change a view's metadata
  };
  Kind kind = Kind::kLeaf;
  int32_t entry = 0;
  int32_t from = -1;  // kDerived: the producing entry
};

class TensorStore final : public ops::TensorSource {
 public:
  TensorStore(const proto::Workload& w, c10::Device device, at::Generator generator);

  // Walks `ops` (indices into w.ops(), in replay order) as the replay will: resolves where
  // each input comes from and sizes a buffer for every input no earlier op produces. Nothing
  // is allocated yet. Errors: Unsupported for a leaf whose dtype Mimic cannot create.
  Status Plan(const std::vector<int>& ops);
  // Bytes the leaves' buffers take (after Plan).
  int64_t planned_bytes() const { return planned_bytes_; }
  // Leaf entries that require grad once prepared (before Allocate): a training step's
  // parameters, so that the forward records the autograd graph over them as the original's did.
  void RequireGrad(const std::vector<int>& entries) {
    grad_leaves_.insert(entries.begin(), entries.end());
  }
  // Allocates the buffers and fills them with random contents (integer tensors with values
  // valid for their consumers). With `lazy`, nothing is allocated until Acquire.
  // Errors: Internal when allocation fails.
  Status Allocate(bool lazy = false);
  // Lazy allocation: allocates and fills the buffer `key` (BufferKey) and the views of its
  // leaves; Drop frees it. Thread-safe.
  void Acquire(int64_t key);
  void Drop(int64_t key);
  // The buffer a leaf entry `t` lives in, and the bytes of every buffer, by key (after Plan).
  int64_t BufferKey(int t) const {
    auto it = buffer_key_.find(t);
    return it != buffer_key_.end() ? it->second : w_.tensors(t).storage_id();
  }
  const std::unordered_map<int64_t, int64_t>& buffer_bytes() const { return buffer_bytes_; }

  // How input `t` of the op at position `pos` of Plan's list is found.
  InputSource SourceOf(int pos, int t) const;

  // The tensor `source` stands for this iteration.
  at::Tensor Get(const InputSource& source);
  // Registers `tensor` as the value of table entry `t` for the rest of the iteration.
  void Put(int t, at::Tensor tensor) { value_[t] = std::move(tensor); }
  // A tensor of entry `t`'s recorded metadata, filled as a prepared input would be, made once:
  // for an output whose data-dependent shape came out otherwise than recorded.
  at::Tensor StandIn(int t) { return Fallback(t); }
  // Drops this iteration's value of entry `t` (after its last use, so that it can be freed).
  void Release(int t) { value_[t] = at::Tensor(); }
  // Forgets the outputs of the iteration (prepared buffers stay, as do their in-place updates).
  void NewIteration();

  // ops::TensorSource, for a whole stack at once (tests, synth): the prepared view of a leaf,
  // else this iteration's value.
  at::Tensor Get(int t) override;
  const proto::Workload& workload() const override { return w_; }

  int64_t prepared_bytes() const { return prepared_bytes_; }
  int64_t prepared_storages() const { return static_cast<int64_t>(buffers_.size()); }
  // SHA-256 over the prepared buffers' contents, in storage-id order, as Allocate left them:
  // the same workload and seed give the same digest on any machine with the same LibTorch.
  const std::string& inputs_sha256() const { return inputs_sha256_; }
  // The integer leaves (after Plan) and how they are filled: with the capture's saved values
  // (workload.integer_data) where they fit the tensor and its consumers, else from ranges.
  const IntegerInputs& integer_inputs() const { return integer_inputs_; }
  // The float leaves filled with the shares of zeros and subnormals the capture's value profile
  // saw in them (after Plan), for the ops whose time depends on them.
  const InputValueFills& value_fills() const { return value_fills_; }

 private:
  // Whether input `t` may be a view of the storage an earlier op produced with
  // `producer_dtype`. Trace storage ids are reused once memory is freed, so a different dtype
  // means another allocation; and index tensors always get their own buffer with valid values.
  bool MayAliasProducer(int t, proto::DType producer_dtype) const;
  at::Tensor ViewOf(const c10::Storage& storage, int t) const;
  at::Tensor Fallback(int t);
  // Allocates buffer `key`, makes and fills its leaves' views. REQUIRES: lazy_mu_ held or no
  // other thread running.
  Status AllocateBuffer(int64_t key, int64_t bytes);
  void Fill(const at::Tensor& view_of_extent, int t);
  int LatestProducer(int t, int before) const;
  // Walks from input `t` of the op at position `before` back to the prepared leaves it is
  // computed from, up to `depth` producers: at each producer, `next(op, output, follow)` calls
  // `follow(input)` for the inputs to go on from; `at_leaf(leaf)` for each leaf reached.
  template <typename Next, typename AtLeaf>
  void WalkBack(const std::vector<int>& ops, int t, int before, int depth, const Next& next,
                const AtLeaf& at_leaf) const;
  void RequireDomain(const std::vector<int>& ops, int t, int before, eg::ValueDomain domain);
  // The leaf whose buffer input `t` of the op at position `before` is, directly or through ops
  // that updated its storage in place; -1 where that storage is computed in the iteration.
  int StateLeaf(const std::vector<int>& ops, int t, int before) const;
  // Plan's part for the profiled inputs of the op at `pos` (Op.input_values).
  void PlanValues(const std::vector<int>& ops, int pos);
  void FillValues(at::Tensor view, const proto::InputValues& values);
  // The saved values of each integer leaf that has usable ones (after the ranges are known).
  void MatchIntegerData();
  std::string CheckIntegerData(int t, std::string_view bytes) const;

  const proto::Workload& w_;
  c10::Device device_;
  at::Generator gen_;
  IntRangePlanner ranges_;
  // Plan's results.
  std::vector<std::vector<std::pair<int, InputSource>>> sources_;  // by op position
  std::unordered_map<int64_t, int64_t> buffer_bytes_;              // BufferKey -> bytes
  std::vector<int> leaves_;
  std::unordered_map<int, int64_t> buffer_key_;       // leaves that do not share their storage id
  std::unordered_map<int64_t, eg::ValueDomain> domain_;  // BufferKeys read by sqrt, log, BCE, ...
  std::unordered_map<int, std::vector<int>> producers_;  // entry -> positions that wrote it
  std::unordered_map<int64_t, std::vector<int>> storage_producers_;  // storage id -> positions
  std::unordered_map<int, std::string_view> recorded_;  // leaf -> its saved values (integer_data)
  IntegerInputs integer_inputs_;
  std::unordered_map<int, const proto::InputValues*> values_;  // leaf -> the capture's shares
  std::unordered_set<int> grad_leaves_;                        // RequireGrad's entries
  InputValueFills value_fills_;
  int64_t planned_bytes_ = 0;
  // Allocate's results.
  std::unordered_map<int64_t, std::vector<int>> leaves_of_;  // BufferKey -> its leaf entries
  std::unordered_map<int64_t, c10::Storage> buffers_;        // BufferKey -> prepared buffer
  std::mutex lazy_mu_;
  std::vector<at::Tensor> leaf_;  // table entry -> prepared view
  int64_t prepared_bytes_ = 0;
  std::string inputs_sha256_;
  // Each iteration's.
  std::vector<at::Tensor> value_;  // table entry -> this iteration's value
  std::mutex fallback_mu_;
  std::unordered_map<int, at::Tensor> fresh_;  // fallbacks, kept across iterations
};

}  // namespace mimic::replay
