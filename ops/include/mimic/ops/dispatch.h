// The bridge from recorded ops to LibTorch's dispatcher: resolving an op's schema to an
// operator handle and converting its recorded arguments to IValues of the schema's types.
// Used by replay/ (real tensors) and synth/ (shape propagation on the meta device).
// Not thread-safe (borrows the TensorSource).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <optional>
#include <string>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::ops {

// Where recorded tensors come from when arguments are built.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // The tensor for tensor-table entry `t` of `workload()`.
  virtual at::Tensor Get(int t) = 0;
  virtual const proto::Workload& workload() const = 0;
};

// Finds the registered operator for a recorded schema string
// ("aten::add.Tensor(Tensor self, ...) -> Tensor"). Errors: NotFound when no operator of that
// name and overload is registered in this LibTorch (e.g. an extension library's op).
Result<c10::OperatorHandle> ResolveOperator(const std::string& schema);

// Builds the call stack for `op` against `schema`. Recorded accelerator devices are remapped to
// `device`; host devices too when `remap_host_devices` (for the meta device, say).
// Errors: Unsupported naming the argument that cannot be converted.
Status BuildStack(const proto::Op& op, const c10::FunctionSchema& schema, TensorSource& tensors,
                  c10::Device device, torch::jit::Stack* stack, bool remap_host_devices = false);

// proto dtype -> LibTorch scalar type; false for DTYPE_UNKNOWN.
bool ToScalarType(proto::DType dtype, c10::ScalarType* out);

}  // namespace mimic::ops
