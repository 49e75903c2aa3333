// The replay's tensors. Storage-aware: every recorded storage that the replay must provide
// itself gets one buffer, large enough for all of its recorded views, and each view is made
// from it by offset, shape and strides. Outputs of replayed ops are registered by their tensor
// table entry (and storage) so later ops consume them. Not thread-safe.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "int_ranges.h"
#include "mimic/base/status.h"
#include "mimic/ops/dispatch.h"
#include "proto/workload.pb.h"

namespace mimic::replay {

class TensorStore final : public ops::TensorSource {
 public:
  TensorStore(const proto::Workload& w, c10::Device device, uint64_t seed);

  // Plans buffers for the inputs of `ops` (indices into w.ops(), in replay order) that no
  // earlier op in the list produces, then allocates them and fills them with random contents
  // (integer tensors with values valid for their consumers). Errors: Unsupported for a tensor
  // whose dtype is unknown; Internal when allocation fails.
  Status Prepare(const std::vector<int>& ops);

  // The tensor for table entry `t`: this iteration's output if one was registered, else a view
  // of a registered output's storage, else a view of the prepared buffer, else a fresh tensor
  // (for inputs of ops whose producer was skipped).
  at::Tensor Get(int t) override;
  // Registers `tensor` as the value of table entry `t` for the rest of the iteration.
  void Put(int t, const at::Tensor& tensor);
  // Forgets the outputs of the iteration (prepared buffers stay, as do their in-place updates).
  void NewIteration();

  const proto::Workload& workload() const override { return w_; }
  int64_t prepared_bytes() const { return prepared_bytes_; }
  // SHA-256 over the prepared buffers' contents, in storage-id order, as Prepare left them:
  // the same workload and seed give the same digest on any machine with the same LibTorch.
  const std::string& inputs_sha256() const { return inputs_sha256_; }
  int64_t prepared_storages() const { return static_cast<int64_t>(buffers_.size()); }

 private:
  // Whether input `t` may be a view of the storage an earlier op produced with
  // `producer_dtype`. Trace storage ids are reused once memory is freed, so a different dtype
  // means another allocation; and index tensors always get their own buffer with valid values.
  bool MayAliasProducer(int t, proto::DType producer_dtype) const;
  at::Tensor ViewOf(const c10::Storage& storage, int t);
  // The prepared buffer of table entry `t`: its trace storage id, or a private key (< 0).
  int64_t BufferKey(int t) const {
    auto it = buffer_key_.find(t);
    return it != buffer_key_.end() ? it->second : w_.tensors(t).storage_id();
  }
  void Fill(const at::Tensor& view_of_extent, int t);
  const proto::Workload& w_;
  c10::Device device_;
  at::Generator gen_;
  IntRangePlanner ranges_;
  std::unordered_map<int64_t, c10::Storage> buffers_;    // BufferKey -> prepared buffer
  std::unordered_map<int, int64_t> buffer_key_;          // leaves that do not share their storage id
  std::unordered_set<int64_t> non_negative_buffers_;     // BufferKeys read by sqrt, log, ...: filled in [0, bound)
  std::unordered_map<int, at::Tensor> produced_;         // table entry -> this iteration's value
  std::unordered_map<int64_t, c10::Storage> produced_storage_;
  std::unordered_map<int, at::Tensor> fresh_;            // fallbacks, kept across iterations
  std::unordered_set<int> own_buffer_;  // leaves whose storage id an earlier output reused
  int64_t prepared_bytes_ = 0;
  std::string inputs_sha256_;
};

}  // namespace mimic::replay
