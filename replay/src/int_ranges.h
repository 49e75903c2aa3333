// Valid contents for integer tensors that the replay must create itself (model inputs such as
// token ids, embedding indices and offsets, class labels). Random integers crash index ops, so
// each such tensor gets a range from its recorded tensor_range, or else from what its consumers
// index into (a table of rules, one record per operator argument). Thread-compatible.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "proto/workload.pb.h"

namespace mimic::replay {

struct IntFill {
  enum class Kind : uint8_t { kUniform, kOffsets };
  Kind kind = Kind::kUniform;
  int64_t lo = 0;  // inclusive
  int64_t hi = 1;  // inclusive
  int64_t offsets_total = 0;  // kOffsets: the indices' numel, the largest offset allowed
  bool constrained = false;   // a rule or a recorded range set it
  bool sorted = false;        // ascending, as nonzero makes its indices
};

class IntRangePlanner {
 public:
  explicit IntRangePlanner(const proto::Workload& w) : w_(w) {}
  // Narrows the fills of `op`'s integer tensor inputs by the rules for its operator.
  void Consume(const proto::Op& op);
  // The fill for tensor-table entry `t` (its recorded range, else the narrowest rule seen).
  IntFill FillFor(int t) const;

 private:
  void Below(int t, int64_t bound);
  void ConsumeOutputs(const proto::Op& op, std::string_view name);
  const proto::Workload& w_;
  std::unordered_map<int, IntFill> fills_;
};

}  // namespace mimic::replay
