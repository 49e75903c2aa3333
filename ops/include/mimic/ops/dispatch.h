// The bridge from recorded ops to LibTorch's dispatcher: resolving an op's schema to an
// operator handle and converting its recorded arguments to IValues of the schema's types.
// Arguments are compiled once (CompileArgs: every non-tensor argument built, tensor positions
// noted) and filled with each call's tensors (FillStack). Used by replay/ (real tensors) and
// synth/ (shape propagation on the meta device). Thread-compatible: a CompiledArgs is immutable
// once built and may be filled from several threads, each into its own stack.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::ops {

// Where a recorded tensor goes in a compiled call: stack argument `arg`, item `item` of it when
// the argument is a list (-1: the argument itself), from tensor table entry `entry`. With
// `storage`, the argument is a Storage and takes the tensor's storage.
struct TensorSlot {
  int32_t arg = 0;
  int32_t item = -1;
  int32_t entry = 0;
  bool storage = false;
};

// An op's arguments, built once: every non-tensor argument converted to its schema type;
// tensor positions hold undefined tensors until FillStack puts each call's tensors there.
struct CompiledArgs {
  torch::jit::Stack stack;
  std::vector<TensorSlot> tensors;  // in argument order
  std::vector<int32_t> list_args;   // arguments that are tensor lists with slots in them
};

// `bytes` of fresh, resizable memory on `device`, from the device's own allocator (LibTorch's
// caching allocator on CUDA, started first where nothing has started it yet).
c10::Storage NewStorage(int64_t bytes, c10::Device device);

// Finds the registered operator for a recorded schema string
// ("aten::add.Tensor(Tensor self, ...) -> Tensor"). Errors: NotFound when no operator of that
// name and overload is registered in this LibTorch (e.g. an extension library's op).
Result<c10::OperatorHandle> ResolveOperator(const std::string& schema);

// Compiles `op`'s recorded arguments against `schema`. Recorded accelerator devices are
// remapped to `device`; host devices too when `remap_host_devices` (for the meta device, say).
// Arguments the trace did not record take their schema default.
// Errors: Unsupported naming the argument whose recorded value cannot take its type.
Result<CompiledArgs> CompileArgs(const proto::Op& op, const proto::Workload& w,
                                 const c10::FunctionSchema& schema, c10::Device device,
                                 bool remap_host_devices = false);

// Copies `args.stack` into `*stack` and puts `get(k)` (an at::Tensor) at tensor slot k, for
// every k in args.tensors. Tensor lists are copied first, so `args` is never modified.
template <typename Get>
void FillStack(const CompiledArgs& args, Get&& get, torch::jit::Stack* stack) {
  *stack = args.stack;
  for (int32_t a : args.list_args) {
    c10::IValue& v = (*stack)[a];
    v = v.isTensorList() ? c10::IValue(v.toTensorList().copy())
                         : c10::IValue(v.toOptionalTensorList().copy());
  }
  for (size_t k = 0; k < args.tensors.size(); ++k) {
    const TensorSlot& s = args.tensors[k];
    c10::IValue& v = (*stack)[s.arg];
    if (s.storage) {
      v = c10::IValue(get(k).storage());
    } else if (s.item < 0) {
      v = c10::IValue(get(k));
    } else if (v.isTensorList()) {
      v.toTensorList().set(s.item, get(k));
    } else {
      v.toOptionalTensorList().set(s.item, std::optional<at::Tensor>(get(k)));
    }
  }
}

// Where recorded tensors come from when a whole stack is built at once (BuildStack).
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // The tensor for tensor-table entry `t` of `workload()`.
  virtual at::Tensor Get(int t) = 0;
  virtual const proto::Workload& workload() const = 0;
};

// CompileArgs and FillStack in one call, tensors from `tensors`.
Status BuildStack(const proto::Op& op, const c10::FunctionSchema& schema, TensorSource& tensors,
                  c10::Device device, torch::jit::Stack* stack, bool remap_host_devices = false);

// Whether CompileArgs can build an argument of `type` from some recorded value: every type the
// schemas of real traces use (tensors and their lists, scalars and their lists, optionals,
// strings and Dimnames, devices, dtypes, layouts, memory formats, streams, storages,
// generators as None). False for script objects and types no operator argument recorded by a
// trace takes (futures, RRefs, dicts, ...).
bool IsBuildable(const c10::TypePtr& type);

// proto dtype -> LibTorch scalar type; false for DTYPE_UNKNOWN.
bool ToScalarType(proto::DType dtype, c10::ScalarType* out);

}  // namespace mimic::ops
