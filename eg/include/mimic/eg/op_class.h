// Operator classes (GEMM, convolution, attention, ...), by table: one record per class with
// the operator names that belong to it. Used to filter workloads and to report per class.
// Immutable data; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "proto/workload.pb.h"

namespace mimic::eg {

enum class OpClass {
  kGemm,
  kConv,
  kAttention,
  kEmbedding,
  kReductionNorm,
  kMemcpy,
  kCollective,
  kElementwise,
  kOther,
};

// The class of an operator by its name ("aten::addmm" -> kGemm).
OpClass ClassOf(std::string_view op_name);
// "gemm", "conv", "attention", "embedding", "reduction_norm", "memcpy", "collective",
// "elementwise", "other".
std::string_view OpClassName(OpClass c);
// The class named `name`; false when there is none.
bool ParseOpClass(std::string_view name, OpClass* out);

}  // namespace mimic::eg
