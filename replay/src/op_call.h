// Turning a recorded op into a boxed dispatcher call: resolving its schema to an operator
// handle and converting its recorded arguments to IValues of the schema's types.
// Not thread-safe (borrows the TensorStore).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <optional>
#include <string>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"
#include "tensor_store.h"

namespace mimic::replay {

// Finds the registered operator for a recorded schema string
// ("aten::add.Tensor(Tensor self, ...) -> Tensor"). Errors: NotFound when no operator of that
// name and overload is registered in this LibTorch (e.g. an extension library's op).
Result<c10::OperatorHandle> ResolveOperator(const std::string& schema);

// Builds the call stack for `op` against `schema`. Recorded devices are remapped to `device`.
// Errors: Unsupported naming the argument that cannot be converted.
Status BuildStack(const proto::Op& op, const c10::FunctionSchema& schema, TensorStore& store,
                  c10::Device device, torch::jit::Stack* stack);

}  // namespace mimic::replay
